/*
 * check.c — `thermap check`: re-derives every rank of a plan from its env
 * files alone, exactly as torchrun would (global rank = NODE_RANK ·
 * NPROC_PER_NODE + local rank; local rank i on the i-th entry of
 * CUDA_VISIBLE_DEVICES), decodes each rank's coordinates with its own
 * odometer over the job's order string, and confirms plan.json and the
 * plan's constraints against the cluster. The first violation is reported.
 * It shares no placement code with the planner on purpose, and no reading
 * code with the other readers of plan.json: format/plancheck.c copies the
 * file's values as they are, and every judgement of them is made here.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ops/ops.h"

typedef struct envf {
	char *host;        /* from the file name */
	char *path;        /* for messages */
	int node_rank, nnodes, nproc;
	char *devices;     /* CUDA_VISIBLE_DEVICES */
	char *master, *plan;
	int seen;          /* bit per required key */
	/* torchrun's PET_* names, when given: PET_NODE_RANK, PET_NNODES,
	 * PET_NPROC_PER_NODE, PET_MASTER_ADDR (pet_seen: bit per key) */
	int pet[3], pet_seen;
	char *pet_master;
	char *numa;        /* THERMAP_NUMA, or NULL */
} envf;

/* For tm_sort, a merge sort: n log n whatever the names. */
static int cmp_str(const void *a, const void *b, void *ctx)
{
	(void)ctx;
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int parse_int(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 0 || v > 1 << 24)
		return -1;
	*out = (int)v;
	return 0;
}

static int read_env(const char *dir, const char *name, envf *e,
                    tm_error *err)
{
	static const char *const keys[] = { "CUDA_VISIBLE_DEVICES",
		"NODE_RANK", "NNODES", "NPROC_PER_NODE", "MASTER_ADDR",
		"THERMAP_PLAN" };
	/* keys an env file may give, each checked when given */
	static const char *const optional[] = { "PET_NODE_RANK", "PET_NNODES",
		"PET_NPROC_PER_NODE", "PET_MASTER_ADDR", "THERMAP_NUMA" };
	char *text, *line, *save = NULL;
	size_t len;
	int lineno = 0, rc;

	e->path = xmalloc(strlen(dir) + strlen(name) + 8);
	sprintf(e->path, "%s/env/%s", dir, name);
	e->host = xstrdup(name);
	e->host[strlen(name) - 4] = '\0';
	if ((rc = tm_read_file(e->path, 1 << 20, &text, &len, err)))
		return rc;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		int k;
		lineno++;
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (!eq) {
			free(text);
			return tm_fail(err, TM_EINPUT, "%s:%d: expected KEY=VALUE",
			               e->path, lineno);
		}
		*eq = '\0';
		for (k = 0; k < 6 && strcmp(line, keys[k]); k++)
			;
		if (k == 6) {
			int q;
			for (q = 0; q < 5 && strcmp(line, optional[q]); q++)
				;
			if (q == 5)
				continue;  /* CUDA_DEVICE_ORDER, MASTER_PORT, … */
			if (q == 4) {
				free(e->numa);
				e->numa = xstrdup(eq + 1);
				continue;
			}
			e->pet_seen |= 1 << q;
			if (q < 3 && parse_int(eq + 1, &e->pet[q])) {
				free(text);
				return tm_fail(err, TM_EINPUT, "%s:%d: %s: expected a "
				               "non-negative integer", e->path, lineno,
				               line);
			}
			if (q == 3) {
				free(e->pet_master);
				e->pet_master = xstrdup(eq + 1);
			}
			continue;
		}
		e->seen |= 1 << k;
		if ((k == 1 && parse_int(eq + 1, &e->node_rank)) ||
		    (k == 2 && parse_int(eq + 1, &e->nnodes)) ||
		    (k == 3 && parse_int(eq + 1, &e->nproc))) {
			free(text);
			return tm_fail(err, TM_EINPUT, "%s:%d: %s: expected a "
			               "non-negative integer", e->path, lineno, line);
		}
		if (k == 0) {
			free(e->devices);
			e->devices = xstrdup(eq + 1);
		} else if (k == 4) {
			free(e->master);
			e->master = xstrdup(eq + 1);
		} else if (k == 5) {
			free(e->plan);
			e->plan = xstrdup(eq + 1);
		}
	}
	free(text);
	for (int k = 0; k < 6; k++)
		if (!(e->seen & 1 << k))
			return tm_fail(err, TM_EINPUT, "%s: %s is not set", e->path,
			               keys[k]);
	return 0;
}

/* Coordinates of every rank by counting through the order string. */
static void odometer(const tm_job *j, int (*coord)[TM_NDIM])
{
	int size[TM_NDIM], digit[TM_NDIM] = { 0 };
	int ep = j->size[TM_EP], dpo = j->size[TM_DP] / ep;
	int pos[TM_NDIM];

	for (int k = 0; k < TM_NDIM; k++)
		pos[k] = -1;
	for (int i = 0; i < j->norder; i++) {
		int d = j->order[i];
		size[i] = d == TM_DP ? dpo : j->size[d];
		pos[d] = i;
	}
	for (int r = 0; r < j->world; r++) {
		int epc = pos[TM_EP] >= 0 ? digit[pos[TM_EP]] : 0;
		int dpc = pos[TM_DP] >= 0 ? digit[pos[TM_DP]] : 0;
		for (int k = 0; k < TM_NDIM; k++)
			coord[r][k] = pos[k] >= 0 ? digit[pos[k]] : 0;
		coord[r][TM_EP] = epc;
		if (ep == 1)
			coord[r][TM_DP] = dpc;
		else if (pos[TM_EP] < pos[TM_DP])
			coord[r][TM_DP] = epc + ep * dpc;
		else
			coord[r][TM_DP] = dpc + dpo * epc;
		for (int i = 0; i < j->norder; i++) {
			if (++digit[i] < size[i])
				break;
			digit[i] = 0;
		}
	}
}

typedef struct chk {
	const tm_cluster *c;
	const tm_job *j;
	const char *dir;
	char pj[4200];        /* path of plan.json */
	int *host, *gpu;      /* rank → node, position */
	int (*coord)[TM_NDIM];
	tm_error *err;
} chk;

/* A host's GPUs sorted for lookups: by UUID and by index, each then by
 * position, so that the first in file order is found, as a pass over
 * them would. A node of a thousand GPUs costs its sort, not a pass per
 * CUDA_VISIBLE_DEVICES entry. */
typedef struct hostgpus {
	const tm_node *n;
	int *uuid;            /* positions of the GPUs with a UUID */
	int *index;           /* positions of every GPU */
	int nu;
} hostgpus;

static int cmp_gpu_uuid(const void *x, const void *y, void *ctx)
{
	const tm_node *n = ctx;
	int a = *(const int *)x, b = *(const int *)y;
	int c = strcmp(n->gpus[a].uuid, n->gpus[b].uuid);
	return c ? c : (a > b) - (a < b);
}

static int cmp_gpu_index(const void *x, const void *y, void *ctx)
{
	const tm_node *n = ctx;
	int a = *(const int *)x, b = *(const int *)y;
	if (n->gpus[a].index != n->gpus[b].index)
		return n->gpus[a].index < n->gpus[b].index ? -1 : 1;
	return (a > b) - (a < b);
}

static void hostgpus_make(const tm_node *n, hostgpus *H)
{
	H->n = n;
	H->nu = 0;
	H->uuid = xmalloc(sizeof(int) * (size_t)n->ngpus);
	H->index = xmalloc(sizeof(int) * (size_t)n->ngpus);
	for (int g = 0; g < n->ngpus; g++) {
		if (n->gpus[g].uuid)
			H->uuid[H->nu++] = g;
		H->index[g] = g;
	}
	tm_sort(H->uuid, (size_t)H->nu, sizeof(int), cmp_gpu_uuid, (void *)n);
	tm_sort(H->index, (size_t)n->ngpus, sizeof(int), cmp_gpu_index,
	        (void *)n);
}

static void hostgpus_free(hostgpus *H)
{
	free(H->uuid);
	free(H->index);
}

/* The first place in H->index whose GPU index is idx or more. */
static int index_at(const hostgpus *H, int idx)
{
	int lo = 0, hi = H->n->ngpus;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (H->n->gpus[H->index[mid]].index < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Resolves one CUDA_VISIBLE_DEVICES entry to a GPU of the host: the
 * first GPU with that UUID, else the first with that index. */
static int resolve(const hostgpus *H, const char *tok)
{
	const tm_node *n = H->n;
	int lo = 0, hi = H->nu, idx;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (strcmp(n->gpus[H->uuid[mid]].uuid, tok) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < H->nu && !strcmp(n->gpus[H->uuid[lo]].uuid, tok))
		return H->uuid[lo];
	if (parse_int(tok, &idx) == 0) {
		lo = index_at(H, idx);
		if (lo < n->ngpus && n->gpus[H->index[lo]].index == idx)
			return H->index[lo];
	}
	return -1;
}

/* Hosts of the cluster (ctx) by name, then file order. */
static int cmp_host_name(const void *x, const void *y, void *ctx)
{
	const tm_cluster *c = ctx;
	int a = *(const int *)x, b = *(const int *)y;
	int k = strcmp(c->nodes[a].host, c->nodes[b].host);
	return k ? k : (a > b) - (a < b);
}

/* The last host named name in file order (byname: the hosts sorted by
 * cmp_host_name), or -1: a binary search, not a pass over the hosts for
 * every env file. */
static int find_host(const tm_cluster *c, const int *byname,
                     const char *name)
{
	int lo = 0, hi = c->nnodes;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (strcmp(c->nodes[byname[mid]].host, name) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && !strcmp(c->nodes[byname[lo - 1]].host, name) ?
	       byname[lo - 1] : -1;
}

static bool nvl(const chk *K, int a, int b)
{
	const tm_node *n = &K->c->nodes[K->host[a]];
	return K->host[a] == K->host[b] &&
	       n->link[K->gpu[a] * n->ngpus + K->gpu[b]] == TM_LINK_NV;
}

static int link_fail(const chk *K, const char *what, int a, int b)
{
	const tm_node *x = &K->c->nodes[K->host[a]], *y = &K->c->nodes[K->host[b]];
	return tm_fail(K->err, TM_EINPUT, "%s: %s: ranks %d (%s GPU %d) and "
	               "%d (%s GPU %d) are not joined by NVLink", K->dir, what,
	               a, x->host, x->gpus[K->gpu[a]].index, b, y->host,
	               y->gpus[K->gpu[b]].index);
}

/* Ranks (ctx: the check) by their coordinates other than dim, which
 * puts the ranks that differ only in dim side by side; then by dim itself
 * when sort_dim, then by rank. */
typedef struct grouping {
	const chk *K;
	int dim;
	bool sort_dim;
} grouping;

static int cmp_group(const void *x, const void *y, void *ctx)
{
	const grouping *G = ctx;
	int a = *(const int *)x, b = *(const int *)y;
	const int *ca = G->K->coord[a], *cb = G->K->coord[b];
	for (int d = 0; d < TM_NDIM; d++)
		if (d != G->dim && ca[d] != cb[d])
			return ca[d] < cb[d] ? -1 : 1;
	if (G->sort_dim && ca[G->dim] != cb[G->dim])
		return ca[G->dim] < cb[G->dim] ? -1 : 1;
	return (a > b) - (a < b);
}

/* The ranks that differ only in dim, as groups: ord holds every rank,
 * group by group (ordered as cmp_group says); rank r sits at ord[at[r]]
 * in the group ord[first[r]] .. ord[end[r] - 1]. Sorting, not comparing
 * every two ranks, so that a world of a million ranks takes a moment. */
typedef struct groups {
	int *ord, *at, *first, *end;
} groups;

static void groups_make(const chk *K, int dim, bool sort_dim, groups *S)
{
	int n = K->j->world;
	grouping G = { K, dim, sort_dim };
	S->ord = xmalloc(sizeof(int) * (size_t)n);
	S->at = xmalloc(sizeof(int) * (size_t)n);
	S->first = xmalloc(sizeof(int) * (size_t)n);
	S->end = xmalloc(sizeof(int) * (size_t)n);
	for (int r = 0; r < n; r++)
		S->ord[r] = r;
	tm_sort(S->ord, (size_t)n, sizeof(int), cmp_group, &G);
	for (int i = 1, g0 = 0; i <= n; i++) {
		bool same = i < n;
		for (int d = 0; d < TM_NDIM && same; d++)
			same = d == dim ||
			       K->coord[S->ord[i]][d] == K->coord[S->ord[i - 1]][d];
		if (same)
			continue;
		for (int k = g0; k < i; k++) {
			S->at[S->ord[k]] = k;
			S->first[S->ord[k]] = g0;
			S->end[S->ord[k]] = i;
		}
		g0 = i;
	}
}

static void groups_free(groups *S)
{
	free(S->ord);
	free(S->at);
	free(S->first);
	free(S->end);
}

/* tp_nvlink as recorded in plan.json: every two ranks that differ only in
 * their tensor-parallel coordinate are joined by NVLink. The first pair
 * that is not, a before b, in rank order: for each rank a, the ranks after
 * it in its group. Every one that passes is on a's host, so a rank costs
 * at most its host's GPUs. */
static int check_tp_nvlink(const chk *K)
{
	const tm_job *j = K->j;
	groups S;
	int rc = 0;
	groups_make(K, TM_TP, false, &S);
	for (int a = 0; a < j->world && !rc; a++)
		for (int i = S.at[a] + 1; i < S.end[a] && !rc; i++)
			if (!nvl(K, a, S.ord[i]))
				rc = link_fail(K, "tp_nvlink", a, S.ord[i]);
	groups_free(&S);
	return rc;
}

/* pp_nvlink: pipeline hops are the chunk-to-chunk transfers that carry
 * activations (act_mib > 0). The first pair that is not joined, in the
 * order of the chunks, then of the sending rank, then of the receiving
 * one. A hop between the same two pipeline ranks is checked once: with
 * virtual stages the hops repeat, and a pair that passed passes again. */
static int check_pp_nvlink(const chk *K)
{
	const tm_job *j = K->j;
	int pp = j->size[TM_PP], rc = 0;
	unsigned char *seen = xcalloc((size_t)pp, 1);
	int *cnt = xcalloc((size_t)pp + 1, sizeof(int));
	int *by_pp = xmalloc(sizeof(int) * (size_t)j->world);
	groups S;

	/* the ranks of each pipeline rank, in rank order */
	for (int r = 0; r < j->world; r++)
		cnt[K->coord[r][TM_PP] + 1]++;
	for (int s = 0; s < pp; s++)
		cnt[s + 1] += cnt[s];
	for (int r = 0; r < j->world; r++)
		by_pp[cnt[K->coord[r][TM_PP]]++] = r;
	for (int s = pp; s > 0; s--)
		cnt[s] = cnt[s - 1];
	cnt[0] = 0;
	/* groups by the other coordinates, each by pipeline rank, then rank */
	groups_make(K, TM_PP, true, &S);
	for (int c = 0; c + 1 < j->nstages && !rc; c++) {
		int from = c % pp, to = (c + 1) % pp;
		if (from == to || !(j->stages[c].act_mib > 0) || seen[from])
			continue;
		seen[from] = 1;  /* to follows from */
		for (int x = cnt[from]; x < cnt[from + 1] && !rc; x++) {
			int a = by_pp[x], lo = S.first[a], hi = S.end[a];
			/* the first of a's group on pipeline rank to */
			while (lo < hi) {
				int mid = lo + (hi - lo) / 2;
				if (K->coord[S.ord[mid]][TM_PP] < to)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (int i = lo; i < S.end[a] && !rc &&
			     K->coord[S.ord[i]][TM_PP] == to; i++)
				if (!nvl(K, a, S.ord[i]))
					rc = link_fail(K, "pp_nvlink", a, S.ord[i]);
		}
	}
	groups_free(&S);
	free(seen);
	free(cnt);
	free(by_pp);
	return rc;
}

/* A plan written by replan: replan.from names each rank's previous GPU
 * ("host:index"); replan.moves must list exactly the ranks off it, to
 * where the env files put them. *moves: how many. */
static int check_replan(const chk *K, const tm_pc_replan *rp, int *moves)
{
	const tm_job *j = K->j;
	char buf[300];
	int listed = 0, rc = 0, *at;

	*moves = 0;
	if (rp->nfrom < 0 || (int)rp->nfrom != j->world || rp->nmoves < 0)
		return tm_fail(K->err, TM_EINPUT, "%s: replan: expected from (one "
		               "\"host:index\" per rank) and moves", K->pj);
	/* each rank's entry in moves, found once */
	at = xmalloc(sizeof(int) * (size_t)j->world);
	for (int r = 0; r < j->world; r++)
		at[r] = -1;
	for (long i = 0; i < rp->nmoves; i++) {
		long long r = rp->moves[i].rank;
		if (r < 0 || r >= j->world || at[r] >= 0) {
			rc = tm_fail(K->err, TM_EINPUT, "%s: replan.moves[%d].rank: "
			             "expected a rank of the job, listed once", K->pj,
			             (int)i);
			goto out;
		}
		at[r] = (int)i;
	}
	for (int r = 0; r < j->world && !rc; r++) {
		const char *f = rp->from[r];
		const tm_node *n = &K->c->nodes[K->host[r]];
		const tm_pc_move *e;
		if (!f) {
			rc = tm_fail(K->err, TM_EINPUT, "%s: replan.from[%d]: "
			             "expected \"host:index\"", K->pj, r);
			break;
		}
		snprintf(buf, sizeof buf, "%s:%d", n->host, n->gpus[K->gpu[r]].index);
		if (!strcmp(f, buf))
			continue;
		e = at[r] >= 0 ? &rp->moves[at[r]] : NULL;
		if (!e)
			rc = tm_fail(K->err, TM_EINPUT, "%s: replan.moves: rank %d "
			             "moves from %s to %s but is not listed", K->pj, r,
			             f, buf);
		else if (!e->to || strcmp(e->to, buf))
			rc = tm_fail(K->err, TM_EINPUT, "%s: replan.moves: rank %d "
			             "goes to %s, not where the list says", K->pj, r,
			             buf);
		(*moves)++;
	}
	listed = (int)rp->nmoves;
	if (!rc && listed != *moves)
		rc = tm_fail(K->err, TM_EINPUT, "%s: replan.moves lists %d ranks; "
		             "%d are off replan.from", K->pj, listed, *moves);
out:
	free(at);
	return rc;
}

/* With --previous: the plan replaces that one, and replan.from is its
 * placement. */
static int check_previous(const chk *K, const tm_pc_replan *rp,
                          const char *prev_dir)
{
	char pj[4200];
	tm_plancheck Q;
	const char *want = rp->previous;
	long nfrom = rp->nfrom < 0 ? 0 : rp->nfrom;
	int rc;

	if (!rp->present)
		return tm_fail(K->err, TM_EINPUT, "%s: not a replan (no replan "
		               "section), so it replaces no previous plan", K->pj);
	snprintf(pj, sizeof pj, "%s/plan.json", prev_dir);
	if ((rc = tm_plancheck_load(pj, &Q, K->err)))
		return rc;
	if (!Q.id || !want || strcmp(Q.id, want))
		rc = tm_fail(K->err, TM_EINPUT, "%s: replan.previous is %s; %s is "
		             "plan %s", K->pj, want ? want : "missing", pj,
		             Q.id ? Q.id : "(no id)");
	else if (Q.nranks < 0 || Q.nranks != nfrom)
		rc = tm_fail(K->err, TM_EINPUT, "%s: ranks: expected %d entries",
		             pj, (int)nfrom);
	for (long r = 0; !rc && r < nfrom; r++) {
		const tm_pc_rank *o = &Q.ranks[r];
		char buf[300];
		snprintf(buf, sizeof buf, "%s:%lld", o->host ? o->host : "?",
		         o->gpu_index);
		if (!o->host || !o->gpu_index_ok || strcmp(buf, rp->from[r]))
			rc = tm_fail(K->err, TM_EINPUT, "%s: replan.from[%d] is %s; "
			             "%s puts rank %d on %s", K->pj, (int)r,
			             rp->from[r], pj, (int)r, buf);
	}
	tm_plancheck_clear(&Q);
	return rc;
}

/* Memory per rank: the sum of mem_gib over its chunks fits its GPU. The
 * sums are made once per pipeline rank, not once per rank. */
static int check_memory(const chk *K)
{
	const tm_job *j = K->j;
	int pp = j->size[TM_PP], rc = 0;
	double *need = xcalloc((size_t)pp, sizeof(double));
	for (int s = 0; s < pp; s++)
		for (int c = s; c < j->nstages; c += pp)
			need[s] += j->stages[c].mem_gib;
	for (int r = 0; r < j->world && !rc; r++) {
		const tm_gpu *g = &K->c->nodes[K->host[r]].gpus[K->gpu[r]];
		double n = need[K->coord[r][TM_PP]];
		if (isfinite(n) && isfinite(g->memory_gib) && n > g->memory_gib)
			rc = tm_fail(K->err, TM_EINPUT, "%s: rank %d needs %.1f GiB; "
			             "%s GPU %d has %.1f GiB", K->dir, r, n,
			             K->c->nodes[K->host[r]].host, g->index,
			             g->memory_gib);
	}
	free(need);
	return rc;
}

/* max_moves (an integer) against torchrun's default placement (node rank
 * n on the n-th host with enough GPUs, local rank i on the GPU with the
 * i-th smallest index), or for a replan against replan.from, off which
 * check_replan counted moves ranks. */
static int check_max_moves(const chk *K, long long mm, bool replan,
                           int moves)
{
	const tm_job *j = K->j;
	int nproc = j->nproc_per_node, n = 0;
	if (replan) {
		if (moves > mm)
			return tm_fail(K->err, TM_EINPUT, "%s: max_moves %lld: %d "
			               "ranks are off the previous plan", K->dir, mm,
			               moves);
		return 0;
	}
	moves = 0;
	for (int h = 0; h < K->c->nnodes && n < j->world / nproc; h++) {
		const tm_node *node = &K->c->nodes[h];
		hostgpus H = { 0 };
		if (node->ngpus < nproc)
			continue;
		for (int i = 0; i < nproc; i++) {
			int r = n * nproc + i;
			if (K->host[r] != h) {
				moves++;
				continue;
			}
			/* rank r stays iff its GPU has exactly i smaller indices */
			if (!H.n)
				hostgpus_make(node, &H);
			moves += index_at(&H, node->gpus[K->gpu[r]].index) != i;
		}
		hostgpus_free(&H);
		n++;
	}
	if (moves > mm)
		return tm_fail(K->err, TM_EINPUT, "%s: max_moves %lld: %d ranks are "
		               "off the default placement", K->dir, mm, moves);
	return 0;
}

/* The evidence rule (docs/model.md, section 16), re-derived: a kept
 * placement is torchrun's; a move's gains over it are the model's, and it
 * loses nothing the uncertainty resolves unless the policy's exchange rate
 * takes the trade, and it wins something beyond its uncertainty. */
static int check_decision(const chk *K, const tm_problem *pb,
                          const tm_pc_decision *dec,
                          const tm_pc_constraints *cons, const int *flat)
{
	const char *v = dec->verdict;
	int *ref;
	tm_gain g;
	bool keep, lost, worth, won;
	double rate, mt, mp;
	int moved = 0, rc = 0;

	if (!v || !strcmp(v, "none"))
		return 0;
	ref = xmalloc(sizeof(int) * (size_t)pb->nranks);
	tm_identity(pb, ref);
	for (int r = 0; r < pb->nranks; r++)
		moved += flat[r] != ref[r];
	keep = !strcmp(v, "keep") || !strcmp(v, "same");
	if (keep || strcmp(v, "move")) {
		if (!keep)
			rc = tm_fail(K->err, TM_EINPUT, "%s: decision.verdict: \"%.20s\" "
			             "is not a verdict; expected move, keep, same or "
			             "none", K->pj, v);
		else if (moved)
			rc = tm_fail(K->err, TM_EINPUT, "%s: decision.verdict is %s, "
			             "but %d rank(s) are off torchrun's placement",
			             K->pj, v, moved);
		free(ref);
		return rc;
	}
	tm_gain_of(pb, ref, flat, &g);
	if (dec->ref_breaks) {
		/* then no gain is needed: torchrun's placement must break the
		 * constraints the plan states */
		tm_policy pol = *pb->pol;
		tm_problem *p2 = NULL;
		tm_eval e;
		char why[256];
		tm_error e2 = { 0, "" };
		pol.tp_nvlink = cons->tp_nvlink;
		pol.pp_nvlink = cons->pp_nvlink;
		pol.max_temp_c = cons->max_temp_c;
		if (tm_problem_clone(pb, &pol, &p2, &e2) == 0 &&
		    tm_constraints_ok(p2, ref, tm_eval_flat(p2, ref, 0, &e), why,
		                      sizeof why))
			rc = tm_fail(K->err, TM_EINPUT, "%s: decision says torchrun's "
			             "placement breaks the policy, but it keeps the "
			             "plan's constraints", K->pj);
		tm_problem_free(p2);
		free(ref);
		return rc;
	}
	if (!(fabs(dec->time_pct - g.time_pct) <= 2e-3) ||
	    !(fabs(dec->peak_c - g.peak_c) <= 0.011) ||
	    !(fabs(dec->time_sd_pct - g.time_sd) <= 2e-3) ||
	    !(fabs(dec->peak_sd_c - g.peak_sd) <= 0.011)) {
		free(ref);
		return tm_fail(K->err, TM_EINPUT, "%s: decision.gain is %.3f ± "
		               "%.3f %% and %.2f ± %.2f °C; the model gives %.3f ± "
		               "%.3f %% and %.2f ± %.2f °C over torchrun's placement",
		               K->pj, dec->time_pct, dec->time_sd_pct, dec->peak_c,
		               dec->peak_sd_c, g.time_pct, g.time_sd, g.peak_c,
		               g.peak_sd);
	}
	rate = dec->exchange_c_per_pct;
	mt = dec->min_time_pct;
	mp = dec->min_peak_c;
	lost = tm_gain_lost(&g);
	worth = lost && tm_gain_worth(&g, rate);
	won = (g.time_pct > g.time_sd && !(g.time_pct < mt)) ||
	      (g.hot_rank > 0 && g.hot_c > 0 && !(g.hot_c < mp));
	if (moved && ((lost && !worth) || (!lost && !won)))
		rc = tm_fail(K->err, TM_EINPUT, "%s: decision: the move %s", K->pj,
		             lost ? "trades time and temperature beyond the "
		             "policy's exchange rate" : "gains nothing beyond the "
		             "model's uncertainty");
	free(ref);
	return rc;
}

/* The gradient all-reduce, counted here from the coordinates: the ranks
 * that differ only in their data-parallel coordinate (ep folded in) form a
 * ring in that coordinate's order; each edge carries 2·(dp−1)/dp of the
 * gradients of its pipeline rank's chunks at the sender's bandwidth to the
 * receiver; a ring is as slow as its slowest edge, the all-reduce as its
 * slowest ring. plan.json writes it only when it is not 0. */
static int check_allreduce(const chk *K, const tm_problem *pb,
                           const tm_pc_predicted *pred)
{
	const tm_job *j = K->j;
	int tp = j->size[TM_TP], cp = j->size[TM_CP], dp = j->size[TM_DP];
	int pp = j->size[TM_PP];
	int *at = xmalloc(sizeof(int) * (size_t)j->world);
	double want = 0, got = pred->allreduce_present ? pred->allreduce_ms : 0;

	/* rank by (pp, cp, tp, dp) coordinates */
	for (int r = 0; r < j->world; r++) {
		const int *c = K->coord[r];
		at[((c[TM_PP] * cp + c[TM_CP]) * tp + c[TM_TP]) * dp + c[TM_DP]] = r;
	}
	for (int s = 0; dp > 1 && s < pp; s++) {
		double grad = 0;
		for (int c = s; c < j->nstages; c += pp)
			grad += j->stages[c].grad_mib;
		if (!(grad > 0))
			continue;
		for (int m = 0; m < cp * tp; m++) {
			const int *ring = &at[(s * cp * tp + m) * dp];
			double slowest = INFINITY;
			for (int d = 0; d < dp; d++) {
				int a = ring[d], b = ring[(d + 1) % dp];
				double bw = tm_bw(pb, pb->host_first[K->host[a]] + K->gpu[a],
				                  pb->host_first[K->host[b]] + K->gpu[b]);
				if (bw < slowest)
					slowest = bw;
			}
			want = fmax(want, 2.0 * (dp - 1) / dp * grad * 1048576.0 /
			            (slowest * 1e6));
		}
	}
	free(at);
	if ((pred->allreduce_present && !pred->allreduce_ok) ||
	    fabs(got - want) > 1e-3 + 1e-6 * want)
		return tm_fail(K->err, TM_EINPUT, "%s: predicted.allreduce_ms is "
		               "%.4f; the data-parallel rings give %.4f for this "
		               "placement", K->pj, got, want);
	return 0;
}

/* The expert-parallel all-to-all, counted here from the coordinates: the
 * ranks whose coordinates differ only in ep (the rest of their data-
 * parallel coordinate equal) exchange tokens at every pipeline rank whose
 * chunks have a2a_mib; each sends a 1/ep share to each peer, at the
 * sender's bandwidth to it, one piece after another; the exchange takes
 * its slowest sender. plan.json writes the slowest exchange of any group
 * and pipeline rank, per microbatch, only when it is not 0. */
static int check_alltoall(const chk *K, const tm_problem *pb,
                          const tm_pc_predicted *pred)
{
	const tm_job *j = K->j;
	int ep = j->size[TM_EP], pp = j->size[TM_PP], n = j->world;
	int dpo = j->size[TM_DP] / ep, epos = -1, dpos = -1;
	double want = 0, got = pred->alltoall_present ? pred->alltoall_ms : 0;
	double *a = xcalloc((size_t)pp, sizeof(double));
	bool any = false;

	for (int c = 0; ep > 1 && c < j->nstages; c++)
		if (j->stages[c].a2a_mib > 0) {
			a[c % pp] += j->stages[c].a2a_mib;
			any = true;
		}
	for (int i = 0; i < j->norder; i++) {
		if (j->order[i] == TM_EP)
			epos = i;
		if (j->order[i] == TM_DP)
			dpos = i;
	}
	if (any) {
		int (*raw)[TM_NDIM] = xmalloc(sizeof *raw * (size_t)n);
		chk K2 = *K;
		groups S;
		/* the data-parallel coordinate without ep's digit */
		for (int r = 0; r < n; r++) {
			const int *c = K->coord[r];
			memcpy(raw[r], c, sizeof raw[r]);
			raw[r][TM_DP] = epos < dpos ? (c[TM_DP] - c[TM_EP]) / ep :
			                c[TM_DP] - dpo * c[TM_EP];
		}
		K2.coord = raw;
		groups_make(&K2, TM_EP, false, &S);
		for (int r = 0; r < n; r++) {
			double x = a[K->coord[r][TM_PP]], sum = 0;
			int gr = pb->host_first[K->host[r]] + K->gpu[r];
			if (!(x > 0))
				continue;
			for (int k = S.first[r]; k < S.end[r]; k++) {
				int b = S.ord[k];
				if (b != r)
					sum += x / ep * 1048576.0 / (tm_bw(pb, gr,
					       pb->host_first[K->host[b]] + K->gpu[b]) * 1e6);
			}
			want = fmax(want, sum);
		}
		groups_free(&S);
		free(raw);
	}
	free(a);
	if ((pred->alltoall_present && !pred->alltoall_ok) ||
	    fabs(got - want) > 1e-3 + 1e-6 * want)
		return tm_fail(K->err, TM_EINPUT, "%s: predicted.alltoall_ms is "
		               "%.4f; the expert-parallel groups give %.4f for this "
		               "placement", K->pj, got, want);
	return 0;
}

static int check_ranks(const chk *K, const tm_plancheck *P)
{
	const tm_job *j = K->j;
	if (P->nranks < 0 || (int)P->nranks != j->world)
		return tm_fail(K->err, TM_EINPUT, "%s: ranks: expected %d entries",
		               K->pj, j->world);
	for (int r = 0; r < j->world; r++) {
		const tm_pc_rank *o = &P->ranks[r];
		const tm_node *n = &K->c->nodes[K->host[r]];
		const tm_gpu *g = &n->gpus[K->gpu[r]];
		const char *host = o->host, *uuid = o->uuid;
		if (o->rank != r)
			return tm_fail(K->err, TM_EINPUT, "%s: ranks[%d].rank: expected "
			               "%d", K->pj, r, r);
		if (!host || strcmp(host, n->host))
			return tm_fail(K->err, TM_EINPUT, "%s: ranks[%d].host: plan "
			               "says %s, the env files put rank %d on %s", K->pj,
			               r, host ? host : "nothing", r, n->host);
		if (!o->gpu_index_ok || o->gpu_index != g->index)
			return tm_fail(K->err, TM_EINPUT, "%s: ranks[%d].gpu_index: plan "
			               "says %lld, the env files give GPU %d", K->pj, r,
			               o->gpu_index, g->index);
		if ((uuid || g->uuid) && (!uuid || !g->uuid || strcmp(uuid, g->uuid)))
			return tm_fail(K->err, TM_EINPUT, "%s: ranks[%d].uuid: plan says "
			               "%s, the env files give %s", K->pj, r,
			               uuid ? uuid : "null", g->uuid ? g->uuid : "null");
		if (o->local_rank != r % j->nproc_per_node ||
		    o->node_rank != r / j->nproc_per_node)
			return tm_fail(K->err, TM_EINPUT, "%s: ranks[%d]: node_rank/"
			               "local_rank disagree with torchrun's layout",
			               K->pj, r);
		for (int d = 0; d < TM_NDIM; d++)
			if (o->coord[d] != K->coord[r][d])
				return tm_fail(K->err, TM_EINPUT, "%s: ranks[%d].%s: plan "
				               "says %lld, the job's order gives %d", K->pj,
				               r, tm_dim_names[d], o->coord[d],
				               K->coord[r][d]);
	}
	return 0;
}

/* torchrun's PET_* names, where an env file gives them, say what its plain
 * names say (torchrun takes them when its flags are not given). */
static int check_pet(const chk *K, const envf *e)
{
	static const char *const names[] = { "PET_NODE_RANK", "PET_NNODES",
		"PET_NPROC_PER_NODE" };
	const int plain[] = { e->node_rank, e->nnodes, e->nproc };
	for (int q = 0; q < 3; q++)
		if (e->pet_seen & 1 << q && e->pet[q] != plain[q])
			return tm_fail(K->err, TM_EINPUT, "%s: %s=%d; %s is %d",
			               e->path, names[q], e->pet[q], names[q] + 4,
			               plain[q]);
	if (e->pet_seen & 1 << 3 && strcmp(e->pet_master, e->master))
		return tm_fail(K->err, TM_EINPUT, "%s: PET_MASTER_ADDR=%s; "
		               "MASTER_ADDR is %s", e->path, e->pet_master,
		               e->master);
	return 0;
}

/* THERMAP_NUMA: the NUMA node of each local rank's GPU in the cluster,
 * in local-rank order, exactly when the cluster knows every one. */
static int check_numa(const chk *K, const envf *e, const tm_node *n)
{
	strbuf b;
	int P = K->j->nproc_per_node, rc = 0;
	bool all = true;
	sb_init(&b);
	for (int i = 0; i < P; i++) {
		const tm_gpu *g = &n->gpus[K->gpu[e->node_rank * P + i]];
		all = all && g->has_numa;
		if (all)
			sb_addf(&b, "%s%d", i ? "," : "", g->numa_node);
	}
	if (all && (!e->numa || strcmp(e->numa, b.s)))
		rc = tm_fail(K->err, TM_EINPUT, "%s: THERMAP_NUMA=%s; the cluster "
		             "puts the GPUs on NUMA nodes %s", e->path,
		             e->numa ? e->numa : "(not set)", b.s);
	else if (!all && e->numa)
		rc = tm_fail(K->err, TM_EINPUT, "%s: THERMAP_NUMA=%s; the cluster "
		             "does not give every GPU's NUMA node", e->path, e->numa);
	sb_free(&b);
	return rc;
}

static int check_envs(chk *K, envf *E, int ne, const char *id)
{
	const tm_job *j = K->j;
	int nnodes = j->world / j->nproc_per_node;
	int *node_file = xmalloc(sizeof(int) * (size_t)nnodes);
	int *byname = xmalloc(sizeof(int) * (size_t)K->c->nnodes);
	int rc = 0;

	for (int n = 0; n < nnodes; n++)
		node_file[n] = -1;
	for (int h = 0; h < K->c->nnodes; h++)
		byname[h] = h;
	tm_sort(byname, (size_t)K->c->nnodes, sizeof(int), cmp_host_name,
	        (void *)K->c);
	if (ne != nnodes)
		rc = tm_fail(K->err, TM_EINPUT, "%s/env: %d env file(s); the job "
		             "needs %d node(s)", K->dir, ne, nnodes);
	for (int i = 0; i < ne && !rc; i++) {
		envf *e = &E[i];
		int h = find_host(K->c, byname, e->host);
		if (h < 0)
			rc = tm_fail(K->err, TM_EINPUT, "%s: host %s is not in %s",
			             e->path, e->host, K->c->file);
		else if (e->nnodes != nnodes)
			rc = tm_fail(K->err, TM_EINPUT, "%s: NNODES=%d; the job needs %d",
			             e->path, e->nnodes, nnodes);
		else if (e->nproc != j->nproc_per_node)
			rc = tm_fail(K->err, TM_EINPUT, "%s: NPROC_PER_NODE=%d; the job "
			             "has nproc_per_node %d", e->path, e->nproc,
			             j->nproc_per_node);
		else if (e->node_rank >= nnodes || node_file[e->node_rank] >= 0)
			rc = tm_fail(K->err, TM_EINPUT, "%s: NODE_RANK=%d is out of "
			             "range or repeats another env file", e->path,
			             e->node_rank);
		else if (strcmp(e->plan, id))
			rc = tm_fail(K->err, TM_EINPUT, "%s: THERMAP_PLAN=%s; plan.json "
			             "is %s", e->path, e->plan, id);
		if (rc)
			break;
		node_file[e->node_rank] = i;
		/* the GPUs, in local-rank order */
		{
			const tm_node *n = &K->c->nodes[h];
			char *dev = xstrdup(e->devices), *save = NULL, *tok;
			unsigned char *taken = xcalloc((size_t)n->ngpus, 1);
			int local = 0;
			hostgpus H;
			hostgpus_make(n, &H);
			for (tok = strtok_r(dev, ",", &save); tok && !rc;
			     tok = strtok_r(NULL, ",", &save), local++) {
				int g = resolve(&H, tok), r;
				if (g < 0)
					rc = tm_fail(K->err, TM_EINPUT, "%s: CUDA_VISIBLE_DEVICES "
					             "entry %d (%s) is not a GPU of host %s",
					             e->path, local, tok, n->host);
				else if (taken[g]++)
					rc = tm_fail(K->err, TM_EINPUT, "%s: CUDA_VISIBLE_DEVICES "
					             "names GPU %s twice", e->path, tok);
				else if (local < j->nproc_per_node) {
					r = e->node_rank * j->nproc_per_node + local;
					K->host[r] = h;
					K->gpu[r] = g;
				}
			}
			if (!rc && local != j->nproc_per_node)
				rc = tm_fail(K->err, TM_EINPUT, "%s: CUDA_VISIBLE_DEVICES "
				             "lists %d GPUs; NPROC_PER_NODE is %d", e->path,
				             local, j->nproc_per_node);
			if (!rc)
				rc = check_numa(K, e, n);
			free(dev);
			free(taken);
			hostgpus_free(&H);
		}
	}
	for (int n = 0; n < nnodes && !rc; n++) {
		const char *m0 = E[node_file[n]].master;
		if (strcmp(m0, E[node_file[0]].host))
			rc = tm_fail(K->err, TM_EINPUT, "%s: MASTER_ADDR=%s; node rank "
			             "0 is %s", E[node_file[n]].path, m0,
			             E[node_file[0]].host);
		else
			rc = check_pet(K, &E[node_file[n]]);
	}
	free(node_file);
	free(byname);
	return rc;
}

/* A plan whose policy chose the layers (plan.json "layers") is checked
 * against the job with those layers: they must be the job's model (same
 * depth, every chunk given by layers) and the layout string must say the
 * same counts. *out: the relayered job, or NULL when the plan has none. */
static int plan_layers(const char *pj, const tm_job *j,
                       const tm_pc_layers *o, tm_job **out, tm_error *err)
{
	int *n, total = 0, rc = 0;

	*out = NULL;
	if (!o->present)
		return 0;
	if (o->n < 0 || (int)o->n != j->nstages)
		return tm_fail(err, TM_EINPUT, "%s: layers.chunks: expected an "
		               "array of pp·vpp = %d layer counts", pj, j->nstages);
	if (!j->by_layers)
		return tm_fail(err, TM_EINPUT, "%s: layers: the plan sets layers "
		               "per chunk, but the stages of %s are not given by "
		               "layers", pj, j->file);
	n = xmalloc(sizeof(int) * (size_t)j->nstages);
	for (int c = 0; c < j->nstages && !rc; c++) {
		long long x = o->chunks[c];
		if (x < 0 || x > 100000)
			rc = tm_fail(err, TM_EINPUT, "%s: layers.chunks[%d]: expected "
			             "a layer count from 0 to 100000", pj, c);
		else
			total += n[c] = (int)x;
	}
	if (!rc && total != tm_job_total_layers(j))
		rc = tm_fail(err, TM_EINPUT, "%s: layers.chunks: %d layers in all; "
		             "the job has %d", pj, total, tm_job_total_layers(j));
	if (!rc && o->layout) {
		tm_layout l;
		char why[200];
		if (tm_layout_parse(o->layout, &l, why, sizeof why))
			rc = tm_fail(err, TM_EINPUT, "%s: layers.pipeline_model_parallel"
			             "_layout: %s", pj, why);
		else {
			for (int c = 0; c < j->nstages && !rc; c++)
				if (l.nstages != j->nstages || l.st[c].dec != n[c])
					rc = tm_fail(err, TM_EINPUT, "%s: layers.pipeline_model"
					             "_parallel_layout does not give chunk %d "
					             "the %d layers of layers.chunks", pj, c,
					             n[c]);
			tm_layout_clear(&l);
		}
	}
	if (!rc)
		*out = tm_job_relayer(j, n);
	free(n);
	return rc;
}

/* ---- the report of each verification ------------------------------------- */

static const char *const step_names[TM_CK_NSTEPS] = {
	[TM_CK_INPUT_FILES] = "input_files", [TM_CK_PLAN_JSON] = "plan_json",
	[TM_CK_INPUTS] = "inputs", [TM_CK_ENV_FILES] = "env_files",
	[TM_CK_RANKS] = "ranks", [TM_CK_LAUNCHERS] = "launchers",
	[TM_CK_TP_NVLINK] = "tp_nvlink",
	[TM_CK_PP_NVLINK] = "pp_nvlink", [TM_CK_MEMORY] = "memory",
	[TM_CK_REPLAN_MOVES] = "replan_moves", [TM_CK_MAX_MOVES] = "max_moves",
	[TM_CK_PREVIOUS] = "previous", [TM_CK_PREDICTIONS] = "predictions",
	[TM_CK_MAX_TEMP] = "max_temp_c", [TM_CK_ALLREDUCE] = "allreduce",
	[TM_CK_ALLTOALL] = "alltoall",
	[TM_CK_EVIDENCE] = "evidence_rule",
};

static const char *const result_names[] = {
	[TM_CK_NOT_RUN] = "not_run", [TM_CK_PASS] = "pass",
	[TM_CK_FAIL] = "fail", [TM_CK_SKIPPED] = "skipped",
	[TM_CK_NOT_APPLICABLE] = "not_applicable",
};

void tm_check_report_init(tm_check_report *R)
{
	memset(R, 0, sizeof *R);
	R->failed = -1;
	R->ranks = R->nodes = -1;
}

/* Records a verification's outcome and passes rc on. */
static int mark(tm_check_report *R, int step, int rc)
{
	R->result[step] = rc ? TM_CK_FAIL : TM_CK_PASS;
	if (rc && R->failed < 0)
		R->failed = step;
	return rc;
}

/* ---- the launcher files ----------------------------------------------------
 * entry.sh must be the plan's entry point, byte for byte and executable;
 * slurm.hostfile, mpi.rankfile and deepspeed.hostfile (and launch.txt's
 * DeepSpeed --include) are read here with their launchers' grammars and
 * must put every rank where the env files do (K->host, K->gpu). A plan
 * written before these files existed has none of them: not applicable. */

/* The next line of text (NUL-terminated in place), its number in *no;
 * NULL at the end. */
static char *next_line(char **at, int *no)
{
	char *s = *at, *nl;
	if (!s || !*s)
		return NULL;
	nl = strchr(s, '\n');
	if (nl) {
		*nl = '\0';
		*at = nl + 1;
	} else {
		*at = NULL;
	}
	++*no;
	return s;
}

static const char *rank_host(const chk *K, int r)
{
	return K->c->nodes[K->host[r]].host;
}

static int check_entry(const chk *K, const char *path, const char *text,
                       size_t len, const char *id)
{
	strbuf b;
	struct stat st;
	int line = 1, rc = 0;
	sb_init(&b);
	tm_launch_entry(id, &b);
	if (len != b.len || memcmp(text, b.s, len)) {
		for (size_t i = 0; i < len && i < b.len && text[i] == b.s[i]; i++)
			line += text[i] == '\n';
		rc = tm_fail(K->err, TM_EINPUT, "%s:%d: differs from the entry "
		             "point of plan %s", path, line, id);
	} else if (stat(path, &st) != 0 || !(st.st_mode & S_IXUSR)) {
		rc = tm_fail(K->err, TM_EINPUT, "%s: is not executable", path);
	}
	sb_free(&b);
	return rc;
}

static int check_slurm_hostfile(const chk *K, const char *path, char *text)
{
	char *at = text, *l;
	int no = 0, w = K->j->world;
	while ((l = next_line(&at, &no))) {
		if (no > w)
			return tm_fail(K->err, TM_EINPUT, "%s:%d: the plan has %d "
			               "ranks, one line each", path, no, w);
		if (strcmp(l, rank_host(K, no - 1)))
			return tm_fail(K->err, TM_EINPUT, "%s:%d: %s; rank %d is on %s",
			               path, no, l, no - 1, rank_host(K, no - 1));
	}
	if (no != w)
		return tm_fail(K->err, TM_EINPUT, "%s: %d lines; the plan has %d "
		               "ranks, one line each", path, no, w);
	return 0;
}

/* Open MPI's rankfile grammar: "rank N=HOST slot=SPEC", # comments. */
static int check_rankfile(const chk *K, const char *path, char *text)
{
	char *at = text, *l;
	int no = 0, w = K->j->world, n = 0, rc = 0;
	unsigned char *seen = xcalloc((size_t)w, 1);
	while (!rc && (l = next_line(&at, &no))) {
		char *end, *host, *slot;
		long r;
		if (l[0] == '#' || l[0] == '\0')
			continue;
		if (strncmp(l, "rank ", 5) ||
		    (r = strtol(l + 5, &end, 10), end == l + 5) || *end != '=' ||
		    !(slot = strstr(end, " slot=")) || !slot[6]) {
			rc = tm_fail(K->err, TM_EINPUT, "%s:%d: expected rank N=HOST "
			             "slot=SPEC", path, no);
			break;
		}
		host = end + 1;
		*slot = '\0';
		if (r < 0 || r >= w || seen[r]++)
			rc = tm_fail(K->err, TM_EINPUT, "%s:%d: rank %ld is out of "
			             "range or repeats another line", path, no, r);
		else if (strcmp(host, rank_host(K, (int)r)))
			rc = tm_fail(K->err, TM_EINPUT, "%s:%d: rank %ld on %s; the "
			             "plan puts it on %s", path, no, r, host,
			             rank_host(K, (int)r));
		n++;
	}
	if (!rc && n != w)
		rc = tm_fail(K->err, TM_EINPUT, "%s: %d ranks; the plan has %d",
		             path, n, w);
	free(seen);
	return rc;
}

/* DeepSpeed's hostfile: "HOST slots=N" per line, # comments; here one per
 * node rank, in node-rank order. */
static int check_ds_hostfile(const chk *K, const char *path, char *text)
{
	char *at = text, *l;
	int no = 0, n = 0, P = K->j->nproc_per_node, N = K->j->world / P;
	while ((l = next_line(&at, &no))) {
		char *sp, *end;
		long k;
		if (l[0] == '#' || l[0] == '\0')
			continue;
		if (!(sp = strstr(l, " slots=")) ||
		    (k = strtol(sp + 7, &end, 10), end == sp + 7) || *end)
			return tm_fail(K->err, TM_EINPUT, "%s:%d: expected HOST "
			               "slots=N", path, no);
		*sp = '\0';
		if (n >= N || strcmp(l, rank_host(K, n * P)) || k != P)
			return tm_fail(K->err, TM_EINPUT, "%s:%d: %s slots=%ld; node "
			               "rank %d is %s slots=%d", path, no, l, k, n,
			               n < N ? rank_host(K, n * P) : "(none)", P);
		n++;
	}
	if (n != N)
		return tm_fail(K->err, TM_EINPUT, "%s: %d hosts; the plan has %d "
		               "node ranks", path, n, N);
	return 0;
}

/* launch.txt's deepspeed line: --include NODE_SPEC[@NODE_SPEC...] with
 * NODE_SPEC = NAME[:SLOT[,SLOT...]], DeepSpeed's grammar; here every node
 * rank's host in order, with its GPU indices in local-rank order. */
static int check_ds_include(const chk *K, const char *path, char *text)
{
	char *at = text, *l, *inc = NULL;
	int no = 0, line = 0, P = K->j->nproc_per_node, N = K->j->world / P;
	while ((l = next_line(&at, &no)))
		if (!strncmp(l, "deepspeed ", 10) && (inc = strstr(l, " --include "))) {
			line = no;
			break;
		}
	if (!inc)
		return tm_fail(K->err, TM_EINPUT, "%s: no deepspeed line with "
		               "--include", path);
	inc += 11;
	inc[strcspn(inc, " ")] = '\0';
	for (int n = 0; n < N; n++) {
		char *spec = inc, *colon;
		inc = strchr(inc, '@');
		if (inc)
			*inc++ = '\0';
		colon = strchr(spec, ':');
		if (!colon || strncmp(spec, rank_host(K, n * P), (size_t)(colon -
		    spec)) || rank_host(K, n * P)[colon - spec])
			return tm_fail(K->err, TM_EINPUT, "%s:%d: --include: host %d "
			               "is not %s:SLOTS", path, line, n + 1,
			               rank_host(K, n * P));
		for (int i = 0; i < P; i++) {
			char *end;
			long g = strtol(colon + 1, &end, 10);
			int want = K->c->nodes[K->host[n * P + i]].gpus[
			           K->gpu[n * P + i]].index;
			if (end == colon + 1 || g != want ||
			    (i + 1 < P ? *end != ',' : *end != '\0'))
				return tm_fail(K->err, TM_EINPUT, "%s:%d: --include: %s: "
				               "slot %d is not GPU %d", path, line,
				               rank_host(K, n * P), i, want);
			colon = end;
		}
		if (n + 1 < N && !inc)
			return tm_fail(K->err, TM_EINPUT, "%s:%d: --include: %d hosts; "
			               "the plan has %d node ranks", path, line, n + 1,
			               N);
	}
	if (inc)
		return tm_fail(K->err, TM_EINPUT, "%s:%d: --include: more hosts "
		               "than the plan's %d node ranks", path, line, N);
	return 0;
}

/* megatron.args, one word per line: the job's sizes, the rank order flag
 * exactly when the plan's order is Megatron's alternative one, and the
 * layout string of plan.json's layers when a policy changed them (else
 * the virtual stages, with vpp > 1). */
static int check_megatron(const chk *K, const char *path, char *text,
                          const char *layout)
{
	const tm_job *j = K->j;
	char *at = text, *l, *w;
	int no = 0, rc = 0;
	strbuf want;
	sb_init(&want);
	sb_addf(&want, "--tensor-model-parallel-size\n%d\n"
	        "--pipeline-model-parallel-size\n%d\n"
	        "--context-parallel-size\n%d\n"
	        "--expert-model-parallel-size\n%d\n%s", j->size[TM_TP],
	        j->size[TM_PP], j->size[TM_CP], j->size[TM_EP],
	        tm_megatron_order(j) == 1 ? "--use-tp-pp-dp-mapping\n" : "");
	if (layout)
		sb_addf(&want, "--pipeline-model-parallel-layout\n%s\n", layout);
	else if (j->vpp > 1)
		sb_addf(&want, "--num-virtual-stages-per-pipeline-rank\n%d\n",
		        j->vpp);
	w = want.s;
	while (!rc && (l = next_line(&at, &no))) {
		size_t k = strcspn(w, "\n");
		if (!*w)
			rc = tm_fail(K->err, TM_EINPUT, "%s:%d: %.200s; the plan's "
			             "Megatron-LM arguments end before it", path, no, l);
		else if (strlen(l) != k || strncmp(l, w, k))
			rc = tm_fail(K->err, TM_EINPUT, "%s:%d: %.200s; the plan's "
			             "Megatron-LM arguments have %.*s there", path, no,
			             l, (int)(k < 200 ? k : 200), w);
		else
			w += k + 1;
	}
	if (!rc && *w)
		rc = tm_fail(K->err, TM_EINPUT, "%s: ends at line %d; the plan's "
		             "Megatron-LM arguments go on with %.*s", path, no,
		             (int)strcspn(w, "\n"), w);
	sb_free(&want);
	return rc;
}

/* 1: none of the launcher files (a plan written before them). */
static int check_launchers(const chk *K, const char *id, const char *layout)
{
	char path[4400], *text = NULL;
	size_t len;
	int rc = 0, absent = 0;
	struct stat st;

	/* every file but launch.txt, which plans always had */
	for (int f = 0; f < TM_NLAUNCH - 1; f++) {
		snprintf(path, sizeof path, "%s/%s", K->dir, tm_launch_files[f]);
		absent += stat(path, &st) != 0 && errno == ENOENT;
	}
	if (absent == TM_NLAUNCH - 1)
		return 1;
	for (int f = 0; f < TM_NLAUNCH && !rc; f++) {
		snprintf(path, sizeof path, "%s/%s", K->dir, tm_launch_files[f]);
		if ((rc = tm_read_file(path, TM_MAX_INPUT_BYTES, &text, &len,
		                       K->err)))
			break;
		if (strlen(text) != len)
			rc = tm_fail(K->err, TM_EINPUT, "%s: holds a NUL byte", path);
		else if (f == 0)
			rc = check_entry(K, path, text, len, id);
		else if (f == 1)
			rc = check_slurm_hostfile(K, path, text);
		else if (f == 2)
			rc = check_rankfile(K, path, text);
		else if (f == 3)
			rc = check_ds_hostfile(K, path, text);
		else if (f == 4)
			rc = check_megatron(K, path, text, layout);
		else
			rc = check_ds_include(K, path, text);
		free(text);
		text = NULL;
	}
	return rc;
}

static int mark_launchers(tm_check_report *R, const chk *K, const char *id,
                          const char *layout)
{
	int rc = check_launchers(K, id, layout);
	if (rc == 1) {
		R->result[TM_CK_LAUNCHERS] = TM_CK_NOT_APPLICABLE;
		return 0;
	}
	return mark(R, TM_CK_LAUNCHERS, rc);
}

static void set_if_run(tm_check_report *R, int step, int result)
{
	if (R->result[step] == TM_CK_NOT_RUN)
		R->result[step] = result;
}

int tm_check_report_fail(tm_check_report *R, int step, int rc)
{
	return mark(R, step, rc);
}

char *tm_check_json(const tm_check_report *R, const char *dir, int code,
                    const char *msg)
{
	strbuf b;
	jw w;
	sb_init(&b);
	jw_init(&w, &b);
	jw_obj(&w, NULL, false);
	jw_str(&w, "format", "thermap.check/1");
	jw_str(&w, "plan_dir", dir);
	jw_bool(&w, "ok", code == 0);
	jw_int(&w, "exit", code);
	jw_str(&w, "plan", R->plan_id[0] ? R->plan_id : NULL);
	if (R->ranks >= 0)
		jw_int(&w, "ranks", R->ranks);
	else
		jw_null(&w, "ranks");
	if (R->nodes >= 0)
		jw_int(&w, "nodes", R->nodes);
	else
		jw_null(&w, "nodes");
	jw_arr(&w, "checks", false);
	for (int s = 0; s < TM_CK_NSTEPS; s++) {
		jw_obj(&w, NULL, true);
		jw_str(&w, "name", step_names[s]);
		jw_str(&w, "result", result_names[R->result[s]]);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	if (code) {
		jw_obj(&w, "failure", true);
		jw_str(&w, "check", R->failed >= 0 ? step_names[R->failed] : NULL);
		jw_str(&w, "message", msg);
		jw_end_obj(&w);
	} else {
		jw_null(&w, "failure");
	}
	jw_end_obj(&w);
	return b.s;
}

int tm_plan_check(const tm_cluster *c, const tm_job *j, const tm_profile *p,
                  const char *dir, const char *prev_dir, char *summary,
                  size_t summary_len, tm_error *err)
{
	tm_check_report R;
	tm_check_report_init(&R);
	return tm_plan_check_ex(c, j, p, dir, prev_dir, summary, summary_len,
	                        &R, err);
}

int tm_plan_check_ex(const tm_cluster *c, const tm_job *j,
                     const tm_profile *p, const char *dir,
                     const char *prev_dir, char *summary, size_t summary_len,
                     tm_check_report *R, tm_error *err)
{
	chk K;
	tm_job *jr = NULL;
	tm_plancheck P;
	const tm_pc_constraints *cons = &P.cons;
	const tm_pc_replan *rp = &P.replan;
	envf *E = NULL;
	char **names = NULL, envdir[4200];
	int ne = 0, nalloc = 0, rc = 0, moves = 0;
	const char *id, *s, *v;
	DIR *d;
	struct dirent *de;

	memset(&K, 0, sizeof K);
	K.c = c;
	K.j = j;
	K.dir = dir;
	K.err = err;
	R->result[TM_CK_INPUT_FILES] = TM_CK_PASS;
	R->ranks = j->world;
	R->nodes = j->world / j->nproc_per_node;
	snprintf(K.pj, sizeof K.pj, "%s/plan.json", dir);
	if ((rc = mark(R, TM_CK_PLAN_JSON, tm_plancheck_load(K.pj, &P, err))))
		goto out;
	if ((rc = mark(R, TM_CK_PLAN_JSON, plan_layers(K.pj, j, &P.layers, &jr,
	                                               err))))
		goto out;
	if (jr)
		K.j = j = jr;
	id = P.id;
	if (!id || !P.inputs.present || !cons->present) {
		rc = mark(R, TM_CK_PLAN_JSON, tm_fail(err, TM_EINPUT, "%s: expected "
		          "id, inputs and constraints", K.pj));
		goto out;
	}
	snprintf(R->plan_id, sizeof R->plan_id, "%s", id);
	s = P.inputs.cluster;
	if (!s || strcmp(s, c->sha256)) {
		rc = mark(R, TM_CK_INPUTS, tm_fail(err, TM_EINPUT, "%s: "
		          "inputs.cluster: the plan was made for another cluster "
		          "file than %s", K.pj, c->file));
		goto out;
	}
	s = P.inputs.job;
	if (!s || strcmp(s, j->sha256)) {
		rc = mark(R, TM_CK_INPUTS, tm_fail(err, TM_EINPUT, "%s: inputs.job: "
		          "the plan was made for another job file than %s", K.pj,
		          j->file));
		goto out;
	}
	mark(R, TM_CK_INPUTS, 0);
	snprintf(envdir, sizeof envdir, "%s/env", dir);
	if (!(d = opendir(envdir))) {
		rc = mark(R, TM_CK_ENV_FILES, tm_fail(err, TM_EINPUT, "%s: no env "
		          "directory", envdir));
		goto out;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n > 4 && !strcmp(de->d_name + n - 4, ".env")) {
			if (ne == nalloc) {
				nalloc = nalloc ? 2 * nalloc : 64;
				names = xrealloc(names, sizeof(char *) *
				                 (size_t)nalloc);
			}
			names[ne++] = xstrdup(de->d_name);
		}
	}
	closedir(d);
	tm_sort(names, (size_t)ne, sizeof(char *), cmp_str, NULL);
	E = xcalloc((size_t)(ne ? ne : 1), sizeof *E);
	for (int i = 0; i < ne && !rc; i++)
		rc = read_env(dir, names[i], &E[i], err);
	if (mark(R, TM_CK_ENV_FILES, rc))
		goto out;
	K.host = xmalloc(sizeof(int) * (size_t)j->world);
	K.gpu = xmalloc(sizeof(int) * (size_t)j->world);
	K.coord = xmalloc(sizeof *K.coord * (size_t)j->world);
	odometer(j, K.coord);
	if (!cons->tp_nvlink)
		R->result[TM_CK_TP_NVLINK] = TM_CK_NOT_APPLICABLE;
	if (!cons->pp_nvlink)
		R->result[TM_CK_PP_NVLINK] = TM_CK_NOT_APPLICABLE;
	if (!rp->present)
		R->result[TM_CK_REPLAN_MOVES] = TM_CK_NOT_APPLICABLE;
	if (!cons->max_moves_ok)
		R->result[TM_CK_MAX_MOVES] = TM_CK_NOT_APPLICABLE;
	if ((rc = mark(R, TM_CK_ENV_FILES, check_envs(&K, E, ne, id))) ||
	    (rc = mark(R, TM_CK_RANKS, check_ranks(&K, &P))) ||
	    (rc = mark_launchers(R, &K, id, jr ? P.layers.layout : NULL)) ||
	    (R->result[TM_CK_TP_NVLINK] == TM_CK_NOT_RUN &&
	     (rc = mark(R, TM_CK_TP_NVLINK, check_tp_nvlink(&K)))) ||
	    (R->result[TM_CK_PP_NVLINK] == TM_CK_NOT_RUN &&
	     (rc = mark(R, TM_CK_PP_NVLINK, check_pp_nvlink(&K)))) ||
	    (rc = mark(R, TM_CK_MEMORY, check_memory(&K))) ||
	    (rp->present && (rc = mark(R, TM_CK_REPLAN_MOVES,
	                               check_replan(&K, rp, &moves)))) ||
	    (cons->max_moves_ok && (rc = mark(R, TM_CK_MAX_MOVES,
	                                      check_max_moves(&K, cons->max_moves,
	                                                      rp->present,
	                                                      moves)))) ||
	    (prev_dir && (rc = mark(R, TM_CK_PREVIOUS, check_previous(&K, rp,
	                                                              prev_dir)))))
		goto out;
	if (p) {
		/* re-predict with the profile, and hold the temperature cap */
		double it = P.pred.iteration_ms, pk = P.pred.peak_temp_c;
		double cap = cons->max_temp_c;
		const char *verdict = P.dec.verdict;
		tm_policy *pol = NULL;
		tm_problem *pb = NULL;
		tm_eval ev;
		int *flat = xmalloc(sizeof(int) * (size_t)j->world);
		if (isnan(cons->max_temp_c))  /* not a number in plan.json */
			R->result[TM_CK_MAX_TEMP] = TM_CK_NOT_APPLICABLE;
		if (!verdict || !strcmp(verdict, "none"))
			R->result[TM_CK_EVIDENCE] = TM_CK_NOT_APPLICABLE;
		rc = tm_policy_default(&pol, err);
		if (!rc) {
			pol->tp_nvlink = false;
			/* a replan may run on hosts that lost GPUs */
			rc = tm_problem_open(c, p, j, pol, true, rp->present, &pb,
			                     err);
		}
		if (!rc) {
			for (int r = 0; r < j->world; r++)
				flat[r] = pb->host_first[K.host[r]] + K.gpu[r];
			tm_eval_flat(pb, flat, 0, &ev);
			if (fabs(ev.iteration_ms - it) > 1e-3 + 1e-6 * it)
				rc = tm_fail(err, TM_EINPUT, "%s: predicted.iteration_ms is "
				             "%.4f; the model gives %.4f for this placement",
				             K.pj, it, ev.iteration_ms);
			else if (fabs(ev.peak_temp_c - pk) > 0.01)
				rc = tm_fail(err, TM_EINPUT, "%s: predicted.peak_temp_c is "
				             "%.2f; the model gives %.2f", K.pj, pk,
				             ev.peak_temp_c);
		}
		if (!mark(R, TM_CK_PREDICTIONS, rc) &&
		    !(R->result[TM_CK_MAX_TEMP] == TM_CK_NOT_RUN &&
		      (rc = mark(R, TM_CK_MAX_TEMP, ev.peak_temp_c > cap + 0.01 ?
		                 tm_fail(err, TM_EINPUT, "%s: max_temp_c %.1f: the "
		                         "placement reaches %.2f °C", K.pj, cap,
		                         ev.peak_temp_c) : 0))) &&
		    !(rc = mark(R, TM_CK_ALLREDUCE, check_allreduce(&K, pb,
		                                                    &P.pred))) &&
		    !(rc = mark(R, TM_CK_ALLTOALL, check_alltoall(&K, pb,
		                                                  &P.pred))) &&
		    R->result[TM_CK_EVIDENCE] == TM_CK_NOT_RUN)
			rc = mark(R, TM_CK_EVIDENCE, check_decision(&K, pb, &P.dec,
			                                            cons, flat));
		free(flat);
		tm_problem_free(pb);
		tm_policy_free(pol);
		if (rc)
			goto out;
	}
	v = P.dec.verdict;
	snprintf(summary, summary_len, "%s: ok: plan %s, %d ranks on %d "
	         "node(s); every rank's GPU in the env files matches plan.json%s%s"
	         "%s%s%s%s%s", dir, id, j->world, j->world / j->nproc_per_node,
	         R->result[TM_CK_LAUNCHERS] == TM_CK_PASS ? "; the launcher files "
	         "agree" : "",
	         cons->tp_nvlink ? "; tp_nvlink holds" : "",
	         cons->pp_nvlink ? "; pp_nvlink holds" : "",
	         p ? "; predictions reproduced" : "",
	         p && v && strcmp(v, "none") ? "; the evidence rule holds" : "",
	         rp->present ? "; replan moves match" : "",
	         prev_dir ? " the previous plan" : "");
out:
	/* what needs an option that was not given was skipped, not failed */
	if (!prev_dir)
		set_if_run(R, TM_CK_PREVIOUS, TM_CK_SKIPPED);
	if (!p) {
		set_if_run(R, TM_CK_PREDICTIONS, TM_CK_SKIPPED);
		set_if_run(R, TM_CK_MAX_TEMP, TM_CK_SKIPPED);
		set_if_run(R, TM_CK_ALLREDUCE, TM_CK_SKIPPED);
		set_if_run(R, TM_CK_EVIDENCE, TM_CK_SKIPPED);
	}
	for (int i = 0; i < ne; i++) {
		free(names[i]);
		free(E[i].host);
		free(E[i].path);
		free(E[i].devices);
		free(E[i].master);
		free(E[i].plan);
		free(E[i].pet_master);
		free(E[i].numa);
	}
	free(names);
	free(E);
	free(K.host);
	free(K.gpu);
	free(K.coord);
	tm_plancheck_clear(&P);
	tm_job_free(jr);
	return rc;
}
