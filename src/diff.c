/*
 * diff.c — `thermap diff OLD NEW`: reads two plan.json files, checks that
 * they place the same ranks (same world size, same coordinates per rank)
 * and lists the ranks whose GPU differs. A GPU is host + UUID when both
 * plans name the rank's UUID (indices can change across a reboot, UUIDs
 * cannot), else host + nvidia-smi index. The reason for a move is the one
 * `thermap replan` recorded when NEW replaces OLD, else what the two plans'
 * predicted temperatures say. The same inputs give the same bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "diff.h"

static const char *const dim_name[] = { "tp", "cp", "ep", "dp", "pp" };

/* one entry of plan.json "ranks"; strings borrowed from the document */
typedef struct drank {
	const char *host;
	const char *uuid;      /* NULL when null or absent */
	int gpu;               /* gpu_index */
	int node, local;       /* node_rank, local_rank */
	int coord[TM_NDIM];    /* tp, cp, ep, dp, pp */
	double temp;           /* predicted_temp_c, NAN when unknown */
} drank;

typedef struct dplan {
	char *file;            /* DIR/plan.json, for messages */
	json_t *root;          /* owns every borrowed string */
	const char *id;
	const char *job;       /* inputs.job */
	int n;                 /* world size */
	drank *r;              /* n ranks */
	const char *previous;  /* replan.previous, NULL when none */
	const char **why;      /* rank → replan.moves[].why, NULL when none */
} dplan;

static void plan_free(dplan *P)
{
	free(P->file);
	free(P->r);
	free(P->why);
	json_decref(P->root);
}

/* obj[key] as a string borrowed from the document: NULL when absent (not
 * JF_REQ) or null (JF_NULL). Strings with a NUL would print cut short. */
static int bstr(const jin *J, json_t *obj, const char *path, const char *key,
                int flags, const char **out)
{
	json_t *v = json_object_get(obj, key);
	*out = NULL;
	if (!v)
		return flags & JF_REQ ? jin_fail(J, path, key, "missing; expected "
		                                 "a string") : 0;
	if (json_is_null(v))
		return flags & JF_NULL ? 0 : jin_fail(J, path, key, "is null; "
		                                      "expected a string");
	if (!json_is_string(v))
		return jin_fail(J, path, key, "expected a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return jin_fail(J, path, key, "string contains a NUL character");
	*out = json_string_value(v);
	return 0;
}

static bool plan_id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n != 16)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

static int read_rank(const jin *J, json_t *o, int r, drank *d)
{
	char path[48];
	int v, rc;
	snprintf(path, sizeof path, "ranks[%d]", r);
	if (!json_is_object(o))
		return jin_fail(J, path, NULL, "expected an object");
	if ((rc = jin_int(J, o, path, "rank", JF_REQ, 0, TM_MAX_RANKS, &v)))
		return rc;
	if (v != r)
		return jin_fail(J, path, "rank", "%d; expected %d (one entry per "
		                "rank, in rank order)", v, r);
	if ((rc = bstr(J, o, path, "host", JF_REQ, &d->host)))
		return rc;
	/* host names and UUIDs are printed as they are: only sane ones */
	if (!tm_valid_host(d->host))
		return jin_fail(J, path, "host", "expected a host name of "
		                "letters, digits, '.', '-' and '_'");
	if ((rc = jin_int(J, o, path, "node_rank", JF_REQ, 0, TM_MAX_RANKS,
	                  &d->node)) ||
	    (rc = jin_int(J, o, path, "local_rank", JF_REQ, 0, TM_MAX_RANKS,
	                  &d->local)) ||
	    (rc = jin_int(J, o, path, "gpu_index", JF_REQ, 0, TM_MAX_RANKS,
	                  &d->gpu)) ||
	    (rc = bstr(J, o, path, "uuid", JF_NULL, &d->uuid)))
		return rc;
	if (d->uuid && !tm_valid_uuid(d->uuid))
		return jin_fail(J, path, "uuid", "expected \"GPU-…\", \"MIG-…\" "
		                "or null");
	for (int k = 0; k < TM_NDIM; k++)
		if ((rc = jin_int(J, o, path, dim_name[k], JF_REQ, 0, TM_MAX_RANKS,
		                  &d->coord[k])))
			return rc;
	d->temp = NAN;
	return jin_num(J, o, path, "predicted_temp_c", JF_NULL, -300, 10000,
	               &d->temp);
}

/* The "replan" section of a plan made by `thermap replan`: the plan it
 * replaces and one reason per moved rank (the first entry of a rank). */
static int read_replan(const jin *J, json_t *root, dplan *P)
{
	json_t *rp, *moves;
	int rc;
	if ((rc = jin_obj(J, root, "", "replan", JF_NULL, &rp)) || !rp)
		return rc;
	if ((rc = bstr(J, rp, "replan", "previous", JF_NULL, &P->previous)) ||
	    (rc = jin_arr(J, rp, "replan", "moves", JF_NULL, &moves)) || !moves)
		return rc;
	if (json_array_size(moves) > (size_t)P->n)
		return jin_fail(J, "replan", "moves", "%zu entries for %d ranks",
		                json_array_size(moves), P->n);
	P->why = xcalloc((size_t)P->n, sizeof *P->why);
	for (size_t i = 0; i < json_array_size(moves); i++) {
		json_t *m = json_array_get(moves, i);
		const char *why;
		char path[48];
		int r;
		snprintf(path, sizeof path, "replan.moves[%zu]", i);
		if (!json_is_object(m))
			return jin_fail(J, path, NULL, "expected an object");
		if ((rc = jin_int(J, m, path, "rank", JF_REQ, 0, P->n - 1, &r)) ||
		    (rc = bstr(J, m, path, "why", JF_REQ | JF_NULL, &why)))
			return rc;
		if (!P->why[r])
			P->why[r] = why;
	}
	return 0;
}

static int load_plan(const char *dir, dplan *P, tm_error *err)
{
	struct stat st;
	size_t dl = strlen(dir);
	json_t *inputs, *ranks;
	strbuf f;
	jin J;
	int rc;

	memset(P, 0, sizeof *P);
	if (dl == 0 || dl > 4000)
		return tm_fail(err, TM_EINPUT, "plan directory name is empty or "
		               "too long");
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	sb_init(&f);
	sb_addf(&f, "%.*s%splan.json", (int)dl, dir,
	        dir[dl - 1] == '/' ? "" : "/");
	P->file = f.s;
	if (stat(dir, &st) != 0)
		return tm_fail(err, TM_EINPUT, "%s: %s; expected a plan directory",
		               dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return tm_fail(err, TM_EINPUT, "%s: not a directory; expected a "
		               "plan directory", dir);
	if (stat(P->file, &st) != 0 && errno == ENOENT)
		return tm_fail(err, TM_EINPUT, "%s: missing; %s is not a plan "
		               "directory", P->file, dir);
	if ((rc = jin_load(P->file, "thermap.plan", &P->root, NULL, err)))
		return rc;
	J.file = P->file;
	J.err = err;
	if ((rc = bstr(&J, P->root, "", "id", JF_REQ, &P->id)))
		return rc;
	if (!plan_id_ok(P->id))
		return jin_fail(&J, "", "id", "expected 16 hex digits");
	if ((rc = jin_obj(&J, P->root, "", "inputs", JF_REQ, &inputs)) ||
	    (rc = bstr(&J, inputs, "inputs", "job", JF_REQ, &P->job)) ||
	    (rc = jin_arr(&J, P->root, "", "ranks", JF_REQ, &ranks)))
		return rc;
	if (json_array_size(ranks) == 0)
		return jin_fail(&J, "", "ranks", "empty; expected one entry per "
		                "rank");
	if (json_array_size(ranks) > TM_MAX_RANKS)
		return jin_fail(&J, "", "ranks", "%zu entries; at most %d are read",
		                json_array_size(ranks), TM_MAX_RANKS);
	P->n = (int)json_array_size(ranks);
	P->r = xcalloc((size_t)P->n, sizeof *P->r);
	for (int r = 0; r < P->n; r++)
		if ((rc = read_rank(&J, json_array_get(ranks, (size_t)r), r,
		                    &P->r[r])))
			return rc;
	return read_replan(&J, P->root, P);
}

/* ---- comparing ----------------------------------------------------------- */

/* A rank's GPU in two plans: by UUID when both know it, else by index. */
static bool same_gpu(const drank *a, const drank *b)
{
	if (strcmp(a->host, b->host) != 0)
		return false;
	if (a->uuid && b->uuid)
		return strcmp(a->uuid, b->uuid) == 0;
	return a->gpu == b->gpu;
}

static int cmp_host_uuid(const void *x, const void *y)
{
	const drank *a = *(const drank *const *)x, *b = *(const drank *const *)y;
	int c = strcmp(a->host, b->host);
	return c ? c : strcmp(a->uuid, b->uuid);
}

static int cmp_host_gpu(const void *x, const void *y)
{
	const drank *a = *(const drank *const *)x, *b = *(const drank *const *)y;
	int c = strcmp(a->host, b->host);
	return c ? c : (a->gpu > b->gpu) - (a->gpu < b->gpu);
}

/* NEW's GPUs sorted three ways, so that "is OLD's GPU still used" costs a
 * binary search, not a pass over a world of up to 2^20 ranks. */
typedef struct gpuset {
	const drank **by_uuid;  /* ranks with a UUID, by host and UUID */
	const drank **bare;     /* ranks without one, by host and index */
	const drank **all;      /* every rank, by host and index */
	size_t nu, nb, na;
} gpuset;

static void gpuset_init(gpuset *S, const dplan *P)
{
	size_t n = (size_t)P->n;
	memset(S, 0, sizeof *S);
	S->by_uuid = xmalloc(n * sizeof *S->by_uuid);
	S->bare = xmalloc(n * sizeof *S->bare);
	S->all = xmalloc(n * sizeof *S->all);
	for (size_t r = 0; r < n; r++) {
		const drank *d = &P->r[r];
		if (d->uuid)
			S->by_uuid[S->nu++] = d;
		else
			S->bare[S->nb++] = d;
		S->all[S->na++] = d;
	}
	qsort(S->by_uuid, S->nu, sizeof *S->by_uuid, cmp_host_uuid);
	qsort(S->bare, S->nb, sizeof *S->bare, cmp_host_gpu);
	qsort(S->all, S->na, sizeof *S->all, cmp_host_gpu);
}

static void gpuset_free(gpuset *S)
{
	free(S->by_uuid);
	free(S->bare);
	free(S->all);
}

/* Whether some rank of the set is on d's GPU under same_gpu's rule. */
static bool gpuset_has(const gpuset *S, const drank *d)
{
	if (!d->uuid)
		return bsearch(&d, S->all, S->na, sizeof *S->all, cmp_host_gpu);
	return bsearch(&d, S->by_uuid, S->nu, sizeof *S->by_uuid,
	               cmp_host_uuid) ||
	       bsearch(&d, S->bare, S->nb, sizeof *S->bare, cmp_host_gpu);
}

/* text a plan carries, on one line: control characters become '?' */
static void add_line(strbuf *b, const char *s)
{
	char *p;
	size_t at = b->len;
	sb_add(b, s);
	for (p = b->s + at; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static void add_gpu(strbuf *b, const drank *d, bool uuid)
{
	sb_addf(b, "%s GPU %d", d->host, d->gpu);
	if (uuid && d->uuid)
		sb_addf(b, " (%s)", d->uuid);
}

static void derive_why(const drank *o, const drank *n, bool freed, strbuf *b)
{
	sb_addf(b, "stage %d", o->coord[TM_PP]);
	if (isfinite(o->temp) && isfinite(n->temp))
		sb_addf(b, ": predicted %.1f °C on the old GPU, %.1f °C on the "
		        "new", o->temp, n->temp);
	if (freed)
		sb_add(b, "; the old GPU is not used by the new plan");
}

static void json_gpu(jw *w, const char *key, const drank *d)
{
	jw_obj(w, key, true);
	jw_str(w, "host", d->host);
	jw_int(w, "gpu_index", d->gpu);
	jw_str(w, "uuid", d->uuid);
	jw_end_obj(w);
}

int tm_plan_diff(const char *old_dir, const char *new_dir, int fmt,
                 char **out, tm_error *err)
{
	dplan O, N;
	gpuset S;
	strbuf b, why;
	jw w;
	bool extra = false, same_job, replaces;
	int *moved = NULL, k = 0, rc;

	*out = NULL;
	if (fmt != 0 && fmt != 1)
		return tm_fail(err, TM_EUSAGE, "diff: unknown output format %d",
		               fmt);
	rc = load_plan(old_dir, &O, err);
	if (!rc)
		rc = load_plan(new_dir, &N, err);
	else
		memset(&N, 0, sizeof N);
	if (rc)
		goto out;
	if (O.n != N.n) {
		rc = tm_fail(err, TM_EINPUT, "%s and %s: %d and %d ranks; diff "
		             "compares plans of one job", O.file, N.file, O.n, N.n);
		goto out;
	}
	/* the same rank must do the same work in both, or a "move" means
	 * nothing */
	for (int r = 0; r < O.n; r++) {
		const drank *a = &O.r[r], *c = &N.r[r];
		const char *what = NULL;
		int x = 0, y = 0;
		for (int d = TM_NDIM - 1; d >= 0 && !what; d--)
			if (a->coord[d] != c->coord[d]) {
				what = dim_name[d];
				x = a->coord[d];
				y = c->coord[d];
			}
		if (!what && a->node != c->node) {
			what = "node_rank";
			x = a->node;
			y = c->node;
		}
		if (!what && a->local != c->local) {
			what = "local_rank";
			x = a->local;
			y = c->local;
		}
		if (what) {
			rc = tm_fail(err, TM_EINPUT, "ranks[%d]: %s %d in %s, %d in %s; "
			             "the plans are of different parallel layouts", r,
			             what, x, O.file, y, N.file);
			goto out;
		}
		for (int d = TM_TP; d <= TM_EP; d++)
			extra = extra || a->coord[d] != 0;
	}
	moved = xmalloc(sizeof(int) * (size_t)O.n);
	for (int r = 0; r < O.n; r++)
		if (!same_gpu(&O.r[r], &N.r[r]))
			moved[k++] = r;
	same_job = strcmp(O.job, N.job) == 0;
	replaces = N.previous && N.why && strcmp(N.previous, O.id) == 0;
	memset(&S, 0, sizeof S);
	if (k)
		gpuset_init(&S, &N);

	sb_init(&b);
	sb_init(&why);
	jw_init(&w, &b);
	if (fmt == 0) {
		sb_addf(&b, "plan %s -> plan %s: ", O.id, N.id);
		if (k)
			sb_addf(&b, "%d of %d ranks move\n", k, O.n);
		else
			sb_add(&b, "no rank moves\n");
		if (!same_job)
			sb_add(&b, "note: the plans were made for different job "
			       "files\n");
	} else {
		jw_obj(&w, NULL, false);
		jw_str(&w, "old", O.id);
		jw_str(&w, "new", N.id);
		jw_int(&w, "world", O.n);
		jw_int(&w, "moved", k);
		jw_bool(&w, "same_job", same_job);
		jw_arr(&w, "moves", false);
	}
	for (int i = 0; i < k; i++) {
		int r = moved[i];
		const drank *a = &O.r[r], *c = &N.r[r];
		/* equal host and index but another UUID: show the UUIDs */
		bool uu = !strcmp(a->host, c->host) && a->gpu == c->gpu;
		const char *reason = replaces ? N.why[r] : NULL;
		if (!reason) {
			why.len = 0;
			why.s[0] = '\0';
			derive_why(a, c, !gpuset_has(&S, a), &why);
			reason = why.s;
		}
		if (fmt == 0) {
			sb_addf(&b, "rank %d (node %d, local %d; pp %d dp %d", r,
			        a->node, a->local, a->coord[TM_PP], a->coord[TM_DP]);
			for (int d = TM_TP; extra && d <= TM_EP; d++)
				sb_addf(&b, " %s %d", dim_name[d], a->coord[d]);
			sb_add(&b, "): ");
			add_gpu(&b, a, uu);
			sb_add(&b, " -> ");
			add_gpu(&b, c, uu);
			sb_add(&b, ": ");
			add_line(&b, reason);
			sb_add(&b, "\n");
		} else {
			jw_obj(&w, NULL, true);
			jw_int(&w, "rank", r);
			jw_int(&w, "node_rank", a->node);
			jw_int(&w, "local_rank", a->local);
			jw_int(&w, "pp", a->coord[TM_PP]);
			jw_int(&w, "dp", a->coord[TM_DP]);
			for (int d = TM_TP; extra && d <= TM_EP; d++)
				jw_int(&w, dim_name[d], a->coord[d]);
			json_gpu(&w, "from", a);
			json_gpu(&w, "to", c);
			jw_str(&w, "why", reason);
			jw_end_obj(&w);
		}
	}
	if (fmt == 1) {
		jw_end_arr(&w);
		jw_end_obj(&w);
	}
	sb_free(&why);
	gpuset_free(&S);
	*out = b.s;
out:
	free(moved);
	plan_free(&O);
	plan_free(&N);
	return rc;
}
