/*
 * problem.c — builds the placement problem from the four inputs: flattens
 * the cluster's GPUs, joins each to its profile entry (host + uuid, else PCI
 * bus id, else index), turns profiles into the per-GPU speed and thermal
 * coefficients of docs/model.md, and lays out the job's ranks the way
 * torchrun and Megatron-Core do. It does not solve anything.
 */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

#define DEFAULT_NET_GBPS 25.0  /* a 200 Gb/s NIC, when nothing is known */

void tm_problem_note(tm_problem *pb, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	pb->notes = xrealloc(pb->notes, sizeof(char *) * (size_t)(pb->nnotes + 1));
	pb->notes[pb->nnotes++] = xstrdup(buf);
}

void tm_problem_free(tm_problem *pb)
{
	if (!pb)
		return;
	free(pb->gpu_host);
	free(pb->gpu_pos);
	free(pb->host_first);
	free(pb->derate);
	free(pb->t_wait);
	free(pb->t_slope);
	free(pb->p_wait);
	free(pb->p_slope);
	free(pb->headroom);
	free(pb->t_wait_sd);
	free(pb->p_unused);
	free(pb->p_idle);
	free(pb->p_bg);
	free(pb->p_bg_sd);
	free(pb->cp_first);
	free(pb->cp_src);
	free(pb->cp_c);
	free(pb->cp_sd);
	free(pb->cp_cov_at);
	free(pb->cp_cov);
	free(pb->t_fit_sd);
	free(pb->derate_sd);
	free(pb->mem_gib);
	free(pb->prof);
	free(pb->nic);
	free(pb->grp);
	free(pb->coord);
	free(pb->rank_stage);
	free(pb->rank_rep);
	free(pb->rank_member);
	free(pb->inst_rank);
	free(pb->work);
	free(pb->fwd);
	free(pb->bwd);
	free(pb->hops);
	free(pb->ep_group);
	free(pb->ep_reps);
	free(pb->a2a);
	free(pb->mem_need);
	free(pb->usable);
	free(pb->ref_gpu);
	free(pb->hint);
	for (int i = 0; i < pb->nnotes; i++)
		free(pb->notes[i]);
	free(pb->notes);
	free(pb);
}

double tm_bw(const tm_problem *pb, int g, int h)
{
	int a = pb->gpu_host[g], b = pb->gpu_host[h];
	if (a == b) {
		const tm_node *n = &pb->c->nodes[a];
		return n->bw[pb->gpu_pos[g] * n->ngpus + pb->gpu_pos[h]];
	}
	return tm_net_bw(pb, a, b);
}

const tm_gpu *tm_gpu_of(const tm_problem *pb, int g)
{
	return &pb->c->nodes[pb->gpu_host[g]].gpus[pb->gpu_pos[g]];
}

bool tm_nvlink(const tm_problem *pb, int g, int h)
{
	int a = pb->gpu_host[g];
	const tm_node *n = &pb->c->nodes[a];
	if (a != pb->gpu_host[h] || g == h)
		return false;
	return n->link[pb->gpu_pos[g] * n->ngpus + pb->gpu_pos[h]] ==
	       TM_LINK_NV;
}

bool tm_fits(const tm_problem *pb, int rank, int g)
{
	double need = pb->mem_need[pb->rank_stage[rank]];
	return !(isfinite(need) && isfinite(pb->mem_gib[g]) &&
	         need > pb->mem_gib[g]);
}

/* torchrun's default: node rank n on the n-th usable host, local rank i on
 * the GPU with the i-th smallest index (CUDA's PCI bus order). */
void tm_flat_to_placement(const tm_problem *pb, const int *flat,
                          tm_placement *pl)
{
	for (int r = 0; r < pb->nranks; r++) {
		pl->host[r] = pb->gpu_host[flat[r]];
		pl->gpu[r] = pb->gpu_pos[flat[r]];
	}
}

void tm_placement_to_flat(const tm_problem *pb, const tm_placement *pl,
                          int *flat)
{
	for (int r = 0; r < pb->nranks; r++)
		flat[r] = pb->host_first[pl->host[r]] + pl->gpu[r];
}

void tm_identity(const tm_problem *pb, int *flat)
{
	for (int n = 0; n < pb->nnodes; n++) {
		int h = pb->usable[n], first = pb->host_first[h];
		const tm_node *node = &pb->c->nodes[h];
		int *order = xmalloc(sizeof(int) * (size_t)node->ngpus);
		for (int i = 0; i < node->ngpus; i++)
			order[i] = i;
		for (int i = 1; i < node->ngpus; i++)
			for (int k = i; k > 0 && node->gpus[order[k - 1]].index >
			     node->gpus[order[k]].index; k--) {
				int t = order[k];
				order[k] = order[k - 1];
				order[k - 1] = t;
			}
		for (int i = 0; i < pb->nproc; i++)
			flat[n * pb->nproc + i] = first + order[i];
		free(order);
	}
}

int tm_ref_host(const tm_problem *pb, int n)
{
	const int *ref = &pb->ref_gpu[n * pb->nproc];
	int h = ref[0] >= 0 && ref[0] < pb->ngpu ? pb->gpu_host[ref[0]] : -1;
	for (int i = 1; i < pb->nproc && h >= 0; i++)
		if (ref[i] < 0 || ref[i] >= pb->ngpu || pb->gpu_host[ref[i]] != h)
			h = -1;
	return h;
}

/* ---- joining profiles to GPUs ------------------------------------------ */

/* Profile entries (ctx: the profile) by host, ties by position. */
static int cmp_prof_host(const void *a, const void *b, void *ctx)
{
	const tm_profile *p = ctx;
	const char *x = p->gpus[*(const int *)a].host;
	const char *y = p->gpus[*(const int *)b].host;
	int c = strcmp(x ? x : "", y ? y : "");
	return c ? c : *(const int *)a - *(const int *)b;
}

/* 3: same uuid, 2: same PCI bus id, 1: same index, 0: not this GPU. */
static int match(const tm_gpu *g, const tm_gpu_profile *e)
{
	if (g->uuid && e->uuid)
		return strcmp(g->uuid, e->uuid) ? 0 : 3;
	if (g->pci_bus_id && e->pci_bus_id)
		return strcmp(g->pci_bus_id, e->pci_bus_id) ? 0 : 2;
	if (e->index >= 0 && !e->uuid && !e->pci_bus_id)
		return g->index == e->index ? 1 : 0;
	if (e->index >= 0 && !(g->uuid && e->uuid) &&
	    !(g->pci_bus_id && e->pci_bus_id))
		return g->index == e->index ? 1 : 0;
	return 0;
}

/* Says, in a few lines, which entries matched no GPU (naming the host
 * names on either side when they differ), and which GPUs were joined
 * without a UUID on the entry: nothing then shows that the entry was
 * measured on that physical GPU. */
/* Cluster hosts by name, ordered for host_in. */
static int cmp_node_host(const void *x, const void *y, void *ctx)
{
	const tm_cluster *c = ctx;
	return strcmp(c->nodes[*(const int *)x].host,
	              c->nodes[*(const int *)y].host);
}

/* Is host h a host of the cluster? o: its hosts sorted by name. */
static bool host_in(const tm_problem *pb, const int *o, const char *h)
{
	int lo = 0, hi = pb->nhost;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		int r = strcmp(pb->c->nodes[o[mid]].host, h);
		if (r == 0)
			return true;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static void join_report(tm_problem *pb, const tm_profile *p, const int *used)
{
	int unmatched = 0, first = -1, weak = 0, wfirst = -1, blind = 0;
	int *o = NULL;
	const char *other = NULL;
	bool host_known = false;

	for (int i = 0; i < p->ngpus; i++) {
		const char *h = p->gpus[i].host;
		if (used[i])
			continue;
		if (!unmatched++)
			first = i;
		/* by binary search: a hostile profile of many entries naming
		 * unknown hosts must not cost entries × hosts */
		if (h && !host_known) {
			if (!o) {
				o = xmalloc(sizeof(int) * (size_t)(pb->nhost + 1));
				for (int k = 0; k < pb->nhost; k++)
					o[k] = k;
				tm_sort(o, (size_t)pb->nhost, sizeof(int),
				        cmp_node_host, (void *)pb->c);
			}
			host_known = host_in(pb, o, h);
		}
		if (h && !other)
			other = h;
		else if (h && other && strcmp(other, h))
			other = "";   /* several */
	}
	free(o);
	if (unmatched == 1)
		tm_warn("%s: gpus[%d]: no GPU of the cluster matches this entry",
		        p->file, first);
	else if (unmatched > 1)
		tm_warn("%s: %d entries (gpus[%d] and more) match no GPU of the "
		        "cluster", p->file, unmatched, first);
	if (unmatched && !host_known && other && *other)
		tm_warn("%s: its entries name host \"%.100s\", which %s has "
		        "not (%s has host \"%.100s\"%s); profile with --host as "
		        "the cluster names it", p->file, other, pb->c->file,
		        pb->c->file, pb->c->nodes[0].host, pb->nhost > 1 ?
		        " and more" : "");
	/* a GPU whose UUID the cluster knows, joined to an entry that does
	 * not name it: warned; where the cluster knows no UUID either (a
	 * topo -m text), a note says the same */
	for (int g = 0; g < pb->ngpu; g++) {
		int e = pb->prof[g];
		const tm_gpu *gpu = &pb->c->nodes[pb->gpu_host[g]].gpus[pb->gpu_pos[g]];
		if (e < 0 || p->gpus[e].uuid)
			continue;
		if (!gpu->uuid) {
			blind++;
			continue;
		}
		if (!weak++)
			wfirst = g;
	}
	if (blind)
		tm_problem_note(pb, "%d GPU(s) were joined to profile entries by "
		                "host and PCI bus id or index, neither side naming "
		                "a UUID: the profile may describe other physical "
		                "GPUs", blind);
	if (weak) {
		const tm_node *n = &pb->c->nodes[pb->gpu_host[wfirst]];
		bool pci = p->gpus[pb->prof[wfirst]].pci_bus_id != NULL;
		if (!p->quiet_join)
			tm_warn("%s: %d entr%s name no GPU UUID and %s joined by "
			        "host and %s only (first: host %s GPU %d): nothing "
			        "shows %s measured on these physical GPUs, and a "
			        "profile of another machine with the same %s would "
			        "join the same way; log uuid with the telemetry",
			        p->file, weak, weak == 1 ? "y" : "ies",
			        weak == 1 ? "is" : "are", pci ? "PCI bus id" : "index",
			        n->host, n->gpus[pb->gpu_pos[wfirst]].index,
			        weak == 1 ? "it was" : "they were",
			        pci ? "bus ids" : "indexes");
		tm_problem_note(pb, "%d GPU(s) were joined to profile entries "
		                "without a UUID (by host and %s): the profile may "
		                "describe other physical GPUs", weak,
		                p->gpus[pb->prof[wfirst]].pci_bus_id ?
		                "PCI bus id" : "index");
	}
}

static int join_profiles(tm_problem *pb, const tm_profile *p,
                         tm_error *err)
{
	int *idx = xmalloc(sizeof(int) * (size_t)p->ngpus);
	int *used = xcalloc((size_t)p->ngpus, sizeof(int));
	int rc = 0;

	for (int i = 0; i < p->ngpus; i++)
		idx[i] = i;
	tm_sort(idx, (size_t)p->ngpus, sizeof(int), cmp_prof_host, (void *)p);
	for (int g = 0; g < pb->ngpu && !rc; g++) {
		const tm_node *n = &pb->c->nodes[pb->gpu_host[g]];
		const tm_gpu *gpu = &n->gpus[pb->gpu_pos[g]];
		int best = -1, bestq = 0, lo = 0, hi = p->ngpus;
		/* entries of this host, then entries without a host */
		for (int pass = 0; pass < 2 && !rc; pass++) {
			const char *want = pass == 0 ? n->host : "";
			lo = 0;
			hi = p->ngpus;
			while (lo < hi) {
				int mid = (lo + hi) / 2;
				const char *h = p->gpus[idx[mid]].host;
				if (strcmp(h ? h : "", want) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (int k = lo; k < p->ngpus; k++) {
				const tm_gpu_profile *e = &p->gpus[idx[k]];
				int q;
				if (strcmp(e->host ? e->host : "", want))
					break;
				q = match(gpu, e);
				if (!q || q < bestq)
					continue;
				if (q == bestq)
					rc = tm_fail(err, TM_EINPUT, "%s: gpus[%d] and gpus[%d] "
					             "both describe host %s GPU %d", p->file,
					             best, idx[k], n->host, gpu->index);
				best = idx[k];
				bestq = q;
			}
			if (best >= 0)
				break;
		}
		if (rc)
			break;
		pb->prof[g] = best;
		if (best >= 0 && used[best]++)
			rc = tm_fail(err, TM_EINPUT, "%s: gpus[%d] matches two GPUs of "
			             "the cluster (host %s GPU %d is the second)",
			             p->file, best, n->host, gpu->index);
	}
	if (!rc)
		join_report(pb, p, used);
	free(idx);
	free(used);
	return rc;
}

/* A rank of a running job that is not computing is not idle: it waits for
 * its neighbours in NCCL kernels that keep the GPU awake. Without a
 * measured power_wait_w (thermap calibrate), it draws this share of the
 * way from idle to full-load power, with this uncertainty: 0.38 to 0.52
 * in the recordings of docs/model.md, section 5. */
#define WAIT_SHARE 0.45
#define WAIT_SHARE_SD 0.07
/* The thermal fit's residual spread when the profile does not give it. */
#define FIT_SD_DEFAULT_C 0.5
/* A derate without its uncertainty: one clock step (15 MHz) of the
 * GPU's load clock, else 1 %. */
#define CLOCK_STEP_MHZ 15.0

/* Speed and thermal coefficients of one GPU from its profile entry. */
static int gpu_model(tm_problem *pb, int g, const tm_gpu_profile *e,
                     const char *file, int entry, tm_error *err)
{
	double pi = e->power_idle_w, pl = e->power_load_w, pw = NAN, pw_sd = NAN;
	double share = WAIT_SHARE, share_sd = WAIT_SHARE_SD;

	pb->p_idle[g] = pi;
	pb->p_bg[g] = e->background_power_w;
	pb->p_bg_sd[g] = isfinite(e->background_power_sd_w) ?
	                 e->background_power_sd_w : 0;
	pb->p_unused[g] = isfinite(e->background_power_w) &&
	                  !(e->background_power_w <= pi) ?
	                  e->background_power_w : pi;
	if (isfinite(e->power_wait_w)) {
		pw = e->power_wait_w;
		pw_sd = isfinite(e->power_wait_sd_w) ? e->power_wait_sd_w :
		        isfinite(pi) && isfinite(pl) ? WAIT_SHARE_SD * (pl - pi) :
		        0.1 * pw;
		if (isfinite(pi) && isfinite(pl) && pl - pi > 1) {
			share = fmin(1, fmax(0, (pw - pi) / (pl - pi)));
			share_sd = pw_sd / (pl - pi);
		}
	} else if (isfinite(pi) && isfinite(pl)) {
		pw = pi + WAIT_SHARE * (pl - pi);
		pw_sd = WAIT_SHARE_SD * fabs(pl - pi);
	}
	/* another process keeps the GPU busy while the rank waits: the GPU
	 * draws the larger of the two (docs/model.md, section 5) */
	if (isfinite(e->background_power_w) && !(e->background_power_w <= pw)) {
		pw = isfinite(pl) ? fmin(pl, e->background_power_w) :
		     e->background_power_w;
		pw_sd = pb->p_bg_sd[g];
		if (isfinite(pi) && isfinite(pl) && pl - pi > 1) {
			share = fmin(1, fmax(0, (pw - pi) / (pl - pi)));
			share_sd = pw_sd / (pl - pi);
		}
	}
	pb->headroom[g] = e->headroom_c;
	pb->p_wait[g] = pw;
	pb->p_slope[g] = isfinite(pw) && isfinite(pl) ? fmax(0, pl - pw) : NAN;
	pb->t_fit_sd[g] = isfinite(e->temp_fit_sd_c) ? e->temp_fit_sd_c
	                                              : FIT_SD_DEFAULT_C;
	if (isfinite(e->ambient_c) && isfinite(e->r_c_per_w) && isfinite(pw) &&
	    isfinite(pl)) {
		pb->t_wait[g] = e->ambient_c + e->r_c_per_w * pw;
		pb->t_slope[g] = e->r_c_per_w * (pl - pw);
		pb->t_wait_sd[g] = e->r_c_per_w * pw_sd;
	} else if (isfinite(e->temp_idle_c) && isfinite(e->temp_load_c)) {
		double span = e->temp_load_c - e->temp_idle_c;
		pb->t_wait[g] = e->temp_idle_c + share * span;
		pb->t_slope[g] = (1 - share) * span;
		pb->t_wait_sd[g] = share_sd * fabs(span);
	} else {
		return tm_fail(err, TM_EINPUT, "%s: gpus[%d]: no thermal model; "
		               "expected ambient_c, r_c_per_w, power_idle_w and "
		               "power_load_w, or temp_idle_c and temp_load_c", file,
		               entry);
	}
	if (pb->t_slope[g] < 0)
		pb->t_slope[g] = 0;
	return 0;
}

/* The derate the evidence supports (docs/profile.md, "Speed"): clocks
 * measured under the power cap are not a speed; a difference inside the
 * derate's uncertainty counts as none. *why: 1 for a power-cap clock
 * dropped, 2 for a difference inside the uncertainty, 0 otherwise. */
static double evidence_derate(const tm_gpu_profile *e, double *sd, int *why)
{
	double d = e->derate;
	int basis = e->derate_basis;

	*why = 0;
	*sd = e->derate_sd;
	if (!isfinite(d)) {
		*sd = NAN;
		return NAN;
	}
	if (!isfinite(*sd))
		*sd = isfinite(e->sm_clock_load_mhz) && e->sm_clock_load_mhz > 0 ?
		      d * CLOCK_STEP_MHZ / e->sm_clock_load_mhz : 0.01 * d;
	/* an older profile that does not say what its derate stands on:
	 * clocks of GPUs held at the power cap and never thermally slowed */
	if (basis == TM_BASIS_UNSET && isfinite(e->power_cap_frac) &&
	    e->power_cap_frac >= 0.5 && !(e->thermal_slowdown_frac >= 0.05))
		basis = TM_BASIS_POWER_CAP;
	if (basis == TM_BASIS_POWER_CAP && d > 1) {
		*sd = fmax(*sd, d - 1);
		*why = 1;
		return 1;
	}
	if (d > 1 && d - 1 <= *sd) {
		*why = 2;
		return 1;
	}
	return d;
}

static int thermal(tm_problem *pb, const tm_profile *p, bool allow_unprofiled,
                   tm_error *err)
{
	int worst = -1, missing = 0, noderate = 0, capped = 0, inside = 0, rc;
	int why;
	tm_gpu_profile w;

	for (int g = 0; g < pb->ngpu; g++) {
		int e = pb->prof[g];
		if (e < 0) {
			missing++;
			continue;
		}
		if ((rc = gpu_model(pb, g, &p->gpus[e], p->file, e, err)))
			return rc;
		pb->derate[g] = evidence_derate(&p->gpus[e], &pb->derate_sd[g],
		                                &why);
		if (why == 1)
			capped++;
		else if (why == 2)
			inside++;
	}
	if (missing && !allow_unprofiled) {
		for (int g = 0; g < pb->ngpu; g++)
			if (pb->prof[g] < 0) {
				const tm_node *n = &pb->c->nodes[pb->gpu_host[g]];
				const tm_gpu *gpu = &n->gpus[pb->gpu_pos[g]];
				return tm_fail(err, TM_EINPUT, "%s: no entry for host %s GPU "
				               "%d (%s); profile every GPU or pass "
				               "--allow-unprofiled", p->file, n->host,
				               gpu->index, gpu->uuid ? gpu->uuid :
				               gpu->pci_bus_id ? gpu->pci_bus_id :
				               "known by index only");
			}
	}
	if (missing) {
		/* the worst profiled GPU: slowest, hottest, least headroom */
		memset(&w, 0, sizeof w);
		w.derate = w.temp_idle_c = w.temp_load_c = NAN;
		w.ambient_c = w.r_c_per_w = w.power_idle_w = w.power_load_w = NAN;
		w.headroom_c = NAN;
		for (int g = 0; g < pb->ngpu; g++) {
			if (pb->prof[g] < 0)
				continue;
			if (worst < 0 || pb->t_wait[g] + pb->t_slope[g] >
			    pb->t_wait[worst] + pb->t_slope[worst])
				worst = g;
			if (isfinite(pb->derate[g]) &&
			    !(pb->derate[g] <= w.derate))
				w.derate = pb->derate[g];
			if (isfinite(pb->headroom[g]) &&
			    !(pb->headroom[g] >= w.headroom_c))
				w.headroom_c = pb->headroom[g];
		}
		if (worst < 0)
			return tm_fail(err, TM_EINPUT, "%s: matches no GPU of the "
			               "cluster", p->file);
		for (int g = 0; g < pb->ngpu; g++) {
			const tm_node *n;
			if (pb->prof[g] >= 0)
				continue;
			n = &pb->c->nodes[pb->gpu_host[g]];
			pb->derate[g] = w.derate;
			pb->derate_sd[g] = NAN;
			pb->headroom[g] = w.headroom_c;
			pb->t_wait[g] = pb->t_wait[worst];
			pb->t_slope[g] = pb->t_slope[worst];
			pb->p_wait[g] = pb->p_wait[worst];
			pb->p_slope[g] = pb->p_slope[worst];
			pb->t_wait_sd[g] = pb->t_wait_sd[worst];
			pb->t_fit_sd[g] = pb->t_fit_sd[worst];
			pb->p_unused[g] = pb->p_unused[worst];
			pb->p_idle[g] = pb->p_idle[worst];
			pb->p_bg[g] = pb->p_bg[worst];
			pb->p_bg_sd[g] = pb->p_bg_sd[worst];
			tm_problem_note(pb, "host %s GPU %d has no profile entry; "
			                "treated as the worst profiled GPU", n->host,
			                n->gpus[pb->gpu_pos[g]].index);
		}
	}
	pb->uniform_derate = true;
	for (int g = 0; g < pb->ngpu; g++) {
		if (!isfinite(pb->derate[g])) {
			pb->derate[g] = 1.0;
			noderate++;
		}
		if (!isfinite(pb->derate_sd[g]))
			pb->derate_sd[g] = 0;
		if (pb->derate[g] != pb->derate[0])
			pb->uniform_derate = false;
	}
	if (noderate)
		tm_problem_note(pb, "%d GPU(s) have no derate in the profile (no "
		                "clock data); their speed is taken as full speed",
		                noderate);
	if (capped)
		tm_problem_note(pb, "%d GPU(s) ran slower clocks only under the "
		                "power cap of the profiling load; a GPU below its "
		                "cap is not slowed by it, so they are taken at full "
		                "speed (thermap calibrate measures the job's own "
		                "speed)", capped);
	if (inside)
		tm_problem_note(pb, "%d GPU(s) have a derate inside its own "
		                "uncertainty; taken at full speed", inside);
	return 0;
}

/* ---- how the GPUs of a host heat each other ------------------------------
 * A profile entry's coupling names other GPUs of its host (by UUID when
 * both sides know one, else by index) and how many °C each W they draw
 * above their idle power adds to this GPU (docs/model.md, section 5).
 * It counts only beside the fit it was fitted with, and only from a
 * source whose idle power is known; a source the cluster lacks is left
 * out, and a note says how many. */

static int coupling_source(const tm_problem *pb, int g,
                           const tm_coupling_src *s)
{
	int h = pb->gpu_host[g];
	const tm_node *n = &pb->c->nodes[h];
	for (int i = 0; i < n->ngpus; i++) {
		const tm_gpu *x = &n->gpus[i];
		int f = pb->host_first[h] + i;
		if (f == g)
			continue;
		if (s->uuid && x->uuid ? !strcmp(s->uuid, x->uuid) :
		    s->index >= 0 && x->index == s->index)
			return f;
	}
	return -1;
}

/* A GPU that runs work that is not the job's changes every claim about
 * it: the plan says so, naming the first and how much it draws. */
static void background_note(tm_problem *pb)
{
	int n = 0, first = -1;
	for (int g = 0; g < pb->ngpu; g++)
		if (isfinite(pb->p_bg[g]) && pb->p_bg[g] > 0) {
			if (first < 0)
				first = g;
			n++;
		}
	if (n) {
		const tm_node *nd = &pb->c->nodes[pb->gpu_host[first]];
		tm_problem_note(pb, "%d GPU(s) run work that is not the job's "
		                "(host %s GPU %d draws %.0f ± %.0f W of it): their "
		                "predictions include that power, whatever the plan "
		                "puts there", n, nd->host,
		                nd->gpus[pb->gpu_pos[first]].index, pb->p_bg[first],
		                pb->p_bg_sd[first]);
	}
}

/* (XᵀX)⁻¹ of GPU g's joint fit over its points, appended to cp_cov:
 * rows 1, its own power, each source's power above the source's idle
 * power (cp_src from cp_first[g] on, in the order of the entry's from,
 * every one of them matched). Left out when the points cannot give it. */
static void coupling_cov(tm_problem *pb, int g, const tm_coupling *c,
                         long *ncov)
{
	int k = 2 + c->nfrom, np = c->npoints, w = 2 + c->nfrom;
	double *X, *y, *xtx, *xty, *b, *inv;

	if (pb->cp_first[g + 1] - pb->cp_first[g] != c->nfrom || np < k + 1)
		return;
	X = xmalloc(sizeof(double) * (size_t)np * (size_t)k);
	y = xmalloc(sizeof(double) * (size_t)np);
	xtx = xmalloc(sizeof(double) * (size_t)k * (size_t)k);
	xty = xmalloc(sizeof(double) * (size_t)k);
	b = xmalloc(sizeof(double) * (size_t)k);
	inv = xmalloc(sizeof(double) * (size_t)k * (size_t)k);
	for (int i = 0; i < np; i++) {
		const double *q = &c->points[(size_t)i * (size_t)w];
		double *x = &X[(size_t)i * (size_t)k];
		y[i] = q[0];
		x[0] = 1;
		x[1] = q[1];
		for (int j = 0; j < c->nfrom; j++)
			x[2 + j] = q[2 + j] - pb->p_idle[pb->cp_src[pb->cp_first[g] + j]];
	}
	tm_lsq_normal(X, y, np, k, xtx, xty);
	if (tm_lsq_solve(xtx, xty, k, NULL, b, inv, NULL) == 0) {
		pb->cp_cov = xrealloc(pb->cp_cov, sizeof(double) *
		                      (size_t)(*ncov + (long)k * k));
		memcpy(&pb->cp_cov[*ncov], inv, sizeof(double) * (size_t)k *
		       (size_t)k);
		pb->cp_cov_at[g] = *ncov;
		*ncov += (long)k * k;
	}
	free(X);
	free(y);
	free(xtx);
	free(xty);
	free(b);
	free(inv);
}

static void coupling(tm_problem *pb, const tm_profile *p)
{
	int n = 0, lost = 0, cap = 0;
	long ncov = 0;
	pb->cp_first = xcalloc((size_t)pb->ngpu + 1, sizeof(int));
	for (int g = 0; g < pb->ngpu; g++) {
		const tm_gpu_profile *e = pb->prof[g] >= 0 ? &p->gpus[pb->prof[g]] :
		                          NULL;
		pb->cp_first[g] = n;
		/* with the fit it came with: the share model has no powers */
		if (!e || !e->coupling || !isfinite(e->ambient_c) ||
		    !isfinite(e->r_c_per_w) || !isfinite(pb->p_wait[g]))
			continue;
		for (int k = 0; k < e->coupling->nfrom; k++) {
			const tm_coupling_src *s = &e->coupling->from[k];
			int h = coupling_source(pb, g, s);
			if (h < 0 || !isfinite(pb->p_idle[h])) {
				lost++;
				continue;
			}
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				pb->cp_src = xrealloc(pb->cp_src, sizeof(int) * (size_t)cap);
				pb->cp_c = xrealloc(pb->cp_c, sizeof(double) * (size_t)cap);
				pb->cp_sd = xrealloc(pb->cp_sd, sizeof(double) * (size_t)cap);
			}
			pb->cp_src[n] = h;
			pb->cp_c[n] = s->c_per_w;
			pb->cp_sd[n] = isfinite(s->sd_c_per_w) ? s->sd_c_per_w : 0;
			n++;
		}
	}
	pb->cp_first[pb->ngpu] = n;
	pb->coupled = n > 0;
	if (pb->coupled) {
		pb->cp_cov_at = xmalloc(sizeof(long) * (size_t)pb->ngpu);
		for (int g = 0; g < pb->ngpu; g++) {
			const tm_gpu_profile *e = pb->prof[g] >= 0 ?
			                          &p->gpus[pb->prof[g]] : NULL;
			pb->cp_cov_at[g] = -1;
			if (e && e->coupling && pb->cp_first[g] < pb->cp_first[g + 1])
				coupling_cov(pb, g, e->coupling, &ncov);
		}
	}
	background_note(pb);
	if (pb->coupled) {
		int ng = 0;
		for (int g = 0; g < pb->ngpu; g++)
			ng += pb->cp_first[g] < pb->cp_first[g + 1];
		tm_problem_note(pb, "%d GPU(s) take the heat of their host's other "
		                "GPUs from the profile's coupling: their predictions "
		                "depend on what their neighbours run", ng);
	}
	if (!pb->coupled) {
		free(pb->cp_first);
		pb->cp_first = NULL;
	}
	if (lost)
		tm_problem_note(pb, "%d coupling source(s) of the profile are not "
		                "GPUs of their host in the cluster, or have no "
		                "power_idle_w: left out", lost);
}

/* ---- cluster and ranks -------------------------------------------------- */

/* ---- the network between hosts ------------------------------------------
 * Not a host × host matrix: a host's NIC (unknown as unlimited) and its
 * net_group give the bandwidth of any pair (tm_net_bw), and a summary per
 * group gives the extremes over every pair (tm_net_range, found once
 * when the problem is built), both in time linear in the hosts. */

/* Host indices by net_group name, hosts without one first. */
static int cmp_group(const void *x, const void *y, void *ctx)
{
	const tm_cluster *c = ctx;
	const char *a = c->nodes[*(const int *)x].net_group;
	const char *b = c->nodes[*(const int *)y].net_group;
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* The bandwidth over a link of nic GB/s (unlimited: unknown) within group
 * bandwidth grp (NAN or infinite: unknown). */
static double net_of(double nic, double grp)
{
	double bw = isfinite(grp) && grp < nic ? grp : nic;
	return isfinite(bw) ? bw : DEFAULT_NET_GBPS;
}

/* (NICs are never NAN: unknown ones are INFINITY) */
double tm_net_bw(const tm_problem *pb, int a, int b)
{
	const tm_cluster *c = pb->c;
	double x = pb->nic[a], y = pb->nic[b];
	return net_of(x < y ? x : y, pb->grp[a] == pb->grp[b] ?
	              c->same_group_gb_per_s : c->cross_group_gb_per_s);
}

/* What a set of partner hosts holds: the two largest and the two smallest
 * finite NICs (with their hosts, -1 when fewer) and how many are unknown. */
typedef struct nicset {
	double hi[2], lo[2];
	int hi_h[2], lo_h[2];
	int ninf;
} nicset;

static void nicset_init(nicset *s)
{
	s->hi[0] = s->hi[1] = -INFINITY;
	s->lo[0] = s->lo[1] = INFINITY;
	s->hi_h[0] = s->hi_h[1] = s->lo_h[0] = s->lo_h[1] = -1;
	s->ninf = 0;
}

static void nicset_add(nicset *s, double x, int h)
{
	if (isinf(x)) {
		s->ninf++;
		return;
	}
	if (x > s->hi[0]) {
		s->hi[1] = s->hi[0], s->hi_h[1] = s->hi_h[0];
		s->hi[0] = x, s->hi_h[0] = h;
	} else if (x > s->hi[1]) {
		s->hi[1] = x, s->hi_h[1] = h;
	}
	if (x < s->lo[0]) {
		s->lo[1] = s->lo[0], s->lo_h[1] = s->lo_h[0];
		s->lo[0] = x, s->lo_h[0] = h;
	} else if (x < s->lo[1]) {
		s->lo[1] = x, s->lo_h[1] = h;
	}
}

/* Widens [*lo, *hi] by the bandwidths from a host of NIC x to the hosts
 * of s other than host a, at group bandwidth grp. Over finite partners the
 * bandwidth grows with the partner's NIC, so the extremes are at the
 * largest and the smallest; unknown partners all give one figure. */
static void nicset_range(const nicset *s, int a, double x, double grp,
                         int ninf_a, double *lo, double *hi)
{
	double big = s->hi_h[0] == a ? s->hi[1] : s->hi[0];
	double small = s->lo_h[0] == a ? s->lo[1] : s->lo[0];
	if (isfinite(big)) {
		*hi = fmax(*hi, net_of(fmin(x, big), grp));
		*lo = fmin(*lo, net_of(fmin(x, small), grp));
	}
	if (s->ninf - ninf_a > 0) {
		*hi = fmax(*hi, net_of(x, grp));
		*lo = fmin(*lo, net_of(x, grp));
	}
}

/* The least and most bandwidth between two usable hosts into pb->net_lo
 * and pb->net_hi (lo > hi when fewer than two): once, when the problem
 * is built. */
static void net_range(tm_problem *pb)
{
	const tm_cluster *c = pb->c;
	nicset *g = xmalloc(sizeof(nicset) * (size_t)pb->ngrp);
	nicset top;     /* the groups' best: hi of the two best groups */
	int hig[2] = { -1, -1 }, log_[2] = { -1, -1 }, ninf = 0;
	double *lo = &pb->net_lo, *hi = &pb->net_hi;

	*lo = INFINITY;
	*hi = -INFINITY;
	for (int k = 0; k < pb->ngrp; k++)
		nicset_init(&g[k]);
	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u];
		nicset_add(&g[pb->grp[h]], pb->nic[h], h);
		ninf += isinf(pb->nic[h]);
	}
	/* the two groups with the largest and the two with the smallest
	 * finite NIC, for the partners outside a host's own group */
	for (int k = 0; k < pb->ngrp; k++) {
		if (!isfinite(g[k].hi[0]))
			continue;
		if (hig[0] < 0 || g[k].hi[0] > g[hig[0]].hi[0])
			hig[1] = hig[0], hig[0] = k;
		else if (hig[1] < 0 || g[k].hi[0] > g[hig[1]].hi[0])
			hig[1] = k;
		if (log_[0] < 0 || g[k].lo[0] < g[log_[0]].lo[0])
			log_[1] = log_[0], log_[0] = k;
		else if (log_[1] < 0 || g[k].lo[0] < g[log_[1]].lo[0])
			log_[1] = k;
	}
	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u], k = pb->grp[h];
		int ha = hig[0] == k ? hig[1] : hig[0];
		int la = log_[0] == k ? log_[1] : log_[0];
		double x = pb->nic[h];
		/* in its own group */
		nicset_range(&g[k], h, x, c->same_group_gb_per_s, isinf(x),
		             lo, hi);
		/* outside it: the best and worst finite NICs of the other
		 * groups, and the unknown ones */
		nicset_init(&top);
		if (ha >= 0)
			nicset_add(&top, g[ha].hi[0], -1);
		if (la >= 0)
			nicset_add(&top, g[la].lo[0], -1);
		top.ninf = ninf - g[k].ninf;
		nicset_range(&top, h, x, c->cross_group_gb_per_s, 0, lo, hi);
	}
	free(g);
}

/* The network of the problem: NICs, group ids, the note on guessed
 * figures and the range over all pairs. */
static void network(tm_problem *pb)
{
	const tm_cluster *c = pb->c;
	int *o = xmalloc(sizeof(int) * (size_t)pb->nhost), *ninf;
	double same = c->same_group_gb_per_s, cross = c->cross_group_gb_per_s;
	bool guessed = false;
	int groups_inf = 0;

	pb->nic = xmalloc(sizeof(double) * (size_t)pb->nhost);
	pb->grp = xmalloc(sizeof(int) * (size_t)pb->nhost);
	for (int h = 0; h < pb->nhost; h++) {
		double x = c->nodes[h].net_gb_per_s;
		pb->nic[h] = isfinite(x) ? x : INFINITY;
		o[h] = h;
	}
	/* group ids: 0 for hosts without a net_group, then one per name */
	tm_sort(o, (size_t)pb->nhost, sizeof(int), cmp_group, (void *)c);
	pb->ngrp = 1;
	for (int i = 0; i < pb->nhost; i++) {
		const char *g = c->nodes[o[i]].net_group;
		if (g && (i == 0 || cmp_group(&o[i - 1], &o[i], (void *)c)))
			pb->ngrp++;
		pb->grp[o[i]] = g ? pb->ngrp - 1 : 0;
	}
	free(o);
	/* a pair of hosts with no figure at all gets the default */
	ninf = xcalloc((size_t)pb->ngrp, sizeof(int));
	for (int h = 0; h < pb->nhost; h++)
		if (isinf(pb->nic[h]) && ninf[pb->grp[h]]++ == 0)
			groups_inf++;
	for (int g = 0; g < pb->ngrp; g++)
		if (!isfinite(same) && ninf[g] >= 2)
			guessed = true;
	if (!isfinite(cross) && groups_inf >= 2)
		guessed = true;
	free(ninf);
	net_range(pb);
	if (guessed && pb->nnodes > 1)
		tm_problem_note(pb, "the cluster gives no network bandwidth; "
		                "transfers between hosts assume %g GB/s",
		                DEFAULT_NET_GBPS);
}

bool tm_net_range(const tm_problem *pb, double *lo, double *hi)
{
	*lo = pb->net_lo;
	*hi = pb->net_hi;
	return *lo <= *hi;
}

/* Does ep vary faster than the rest of dp in the job's order? */
static bool ep_first(const tm_job *j)
{
	for (int i = 0; i < j->norder; i++)
		if (j->order[i] == TM_EP || j->order[i] == TM_DP)
			return j->order[i] == TM_EP;
	return true;
}

static void ranks(tm_problem *pb)
{
	const tm_job *j = pb->job;
	int tp = j->size[TM_TP];
	pb->nmember = tp * j->size[TM_CP];
	pb->nrep = j->size[TM_DP];
	pb->npp = j->size[TM_PP];
	pb->coord = xmalloc(sizeof *pb->coord * (size_t)pb->nranks);
	pb->rank_stage = xmalloc(sizeof(int) * (size_t)pb->nranks);
	pb->rank_rep = xmalloc(sizeof(int) * (size_t)pb->nranks);
	pb->rank_member = xmalloc(sizeof(int) * (size_t)pb->nranks);
	pb->inst_rank = xmalloc(sizeof(int) * (size_t)pb->nranks);
	for (int r = 0; r < pb->nranks; r++) {
		int *c = pb->coord[r];
		tm_job_coords(j, r, c);
		pb->rank_stage[r] = c[TM_PP];
		pb->rank_rep[r] = c[TM_DP];
		pb->rank_member[r] = c[TM_TP] + tp * c[TM_CP];
		pb->inst_rank[(c[TM_DP] * pb->npp + c[TM_PP]) * pb->nmember +
		              pb->rank_member[r]] = r;
	}
	/* is every stage instance inside one node rank (so on one host)? */
	pb->inst_in_node = true;
	for (int i = 0; i < pb->nrep * pb->npp && pb->inst_in_node; i++) {
		const int *m = &pb->inst_rank[i * pb->nmember];
		for (int q = 1; q < pb->nmember; q++)
			if (m[q] / pb->nproc != m[0] / pb->nproc)
				pb->inst_in_node = false;
	}
	pb->work = xcalloc((size_t)pb->npp, sizeof(double));
	pb->fwd = xcalloc((size_t)pb->npp, sizeof(double));
	pb->bwd = xcalloc((size_t)pb->npp, sizeof(double));
	pb->mem_need = xcalloc((size_t)pb->npp, sizeof(double));
	for (int s = 0; s < j->nstages; s++) {
		const tm_stage *st = &j->stages[s];
		int p = s % pb->npp;
		pb->fwd[p] += st->fwd_ms;
		pb->bwd[p] += st->bwd_ms;
		pb->work[p] += st->fwd_ms + st->bwd_ms;
		pb->mem_need[p] += st->mem_gib;  /* NAN stays NAN: unknown */
	}
	/* expert parallelism: the replicas that differ only in their ep
	 * coordinate exchange tokens at the stages with a2a_mib */
	pb->a2a = xcalloc((size_t)pb->npp, sizeof(double));
	pb->nep = 1;
	for (int s = 0; j->size[TM_EP] > 1 && s < j->nstages; s++)
		if (j->stages[s].a2a_mib > 0) {
			pb->a2a[s % pb->npp] += j->stages[s].a2a_mib;
			pb->nep = j->size[TM_EP];
		}
	pb->ep_group = xmalloc(sizeof(int) * (size_t)pb->nrep);
	pb->ep_reps = xmalloc(sizeof(int) * (size_t)pb->nrep);
	for (int d = 0; d < pb->nrep; d++) {
		const int *c = pb->coord[pb->inst_rank[d * pb->npp * pb->nmember]];
		int e = pb->nep > 1 ? c[TM_EP] : 0, dpo = pb->nrep / pb->nep;
		/* the rest of the data-parallel coordinate, without ep's digit
		 * (tm_job_coords folds it in on either side) */
		int o = pb->nep == 1 ? d : ep_first(j) ? (d - e) / pb->nep :
		        d - dpo * e;
		pb->ep_group[d] = o;
		pb->ep_reps[o * pb->nep + e] = d;
	}
	pb->hops = xcalloc((size_t)j->nstages, sizeof(tm_hop));
	for (int s = 0; s + 1 < j->nstages; s++) {
		int from = s % pb->npp, to = (s + 1) % pb->npp;
		if (from == to || j->stages[s].act_mib <= 0)
			continue;
		pb->hops[pb->nhops].from = from;
		pb->hops[pb->nhops].to = to;
		pb->hops[pb->nhops].act_mib = j->stages[s].act_mib;
		pb->nhops++;
	}
}

/* torchrun starts nproc_per_node processes on every host of a multi-node
 * job: the hosts must all have the same GPU count. A job of one node rank
 * may use any host with enough GPUs. */
static int same_gpu_counts(const tm_cluster *c, const tm_job *j,
                           tm_error *err)
{
	if (j->world / j->nproc_per_node <= 1)
		return 0;
	for (int h = 1; h < c->nnodes; h++) {
		const tm_node *a = &c->nodes[0], *b = &c->nodes[h];
		if (b->ngpus != a->ngpus)
			return tm_fail(err, TM_EINPUT, "%s: nodes[%d] (host \"%s\") "
			               "has %d GPU%s but nodes[0] (host \"%s\") has %d: "
			               "a multi-node job needs the same GPU count on "
			               "every host (torchrun starts nproc_per_node "
			               "processes on each)", c->file, h, b->host,
			               b->ngpus, b->ngpus == 1 ? "" : "s", a->host,
			               a->ngpus);
	}
	return 0;
}

static bool names_crit(const tm_policy *pol, int crit)
{
	for (int k = 0; k < pol->ncrit; k++)
		if (pol->crit[k] == crit)
			return true;
	return false;
}

/* max_slowdown_pct: no placement slower than the reference's time by
 * more than that (none while a reference GPU is gone). */
static void slowdown_cap(tm_problem *pb)
{
	tm_eval ev;
	pb->time_cap_ms = INFINITY;
	if (!isfinite(pb->pol->max_slowdown_pct))
		return;
	for (int r = 0; r < pb->nranks; r++)
		if (pb->ref_gpu[r] < 0)
			return;
	pb->time_cap_ms = tm_eval_flat(pb, pb->ref_gpu, 0, &ev) *
	                  (1 + pb->pol->max_slowdown_pct / 100);
}

/* The policy's criteria, wear after the peak and moves last where it
 * does not name them (docs/model.md, section 7). */
static void criteria(tm_problem *pb, const tm_policy *pol)
{
	pb->ncrit = 0;
	for (int k = 0; k < pol->ncrit; k++) {
		pb->crit[pb->ncrit++] = pol->crit[k];
		/* the peak alone ties whenever one GPU sets it whatever it
		 * runs: wear looks past it, unless the policy places it */
		if (pol->crit[k] == TM_CRIT_PEAK && !names_crit(pol, TM_CRIT_WEAR))
			pb->crit[pb->ncrit++] = TM_CRIT_WEAR;
	}
	if (!names_crit(pol, TM_CRIT_MOVES))
		pb->crit[pb->ncrit++] = TM_CRIT_MOVES;
}

tm_problem *tm_problem_view(const tm_problem *pb, const tm_policy *pol)
{
	tm_problem *v = xmalloc(sizeof *v);
	*v = *pb;
	v->pol = pol;
	criteria(v, pol);
	return v;
}

int tm_problem_new(const tm_cluster *c, const tm_profile *p, const tm_job *j,
                   const tm_policy *pol, bool allow_unprofiled,
                   tm_problem **out, tm_error *err)
{
	return tm_problem_open(c, p, j, pol, allow_unprofiled, false, out, err);
}

int tm_problem_open(const tm_cluster *c, const tm_profile *p, const tm_job *j,
                    const tm_policy *pol, bool allow_unprofiled,
                    bool uneven_hosts, tm_problem **out, tm_error *err)
{
	tm_problem *pb = xcalloc(1, sizeof *pb);
	long long ngpu = 0;
	int rc, k;

	*out = NULL;
	pb->c = c;
	pb->job = j;
	pb->pol = pol;
	pb->prof_doc = p;
	pb->allow_unprofiled = allow_unprofiled;
	pb->uneven_hosts = uneven_hosts;
	memcpy(pb->profile_sha256, p->sha256, sizeof pb->profile_sha256);
	pb->nhost = c->nnodes;
	for (int h = 0; h < c->nnodes; h++)
		ngpu += c->nodes[h].ngpus;
	if (ngpu > TM_MAX_RANKS) {
		rc = tm_fail(err, TM_EINPUT, "%s: %lld GPUs; at most %d are "
		             "supported", c->file, ngpu, TM_MAX_RANKS);
		goto fail;
	}
	if (!uneven_hosts && (rc = same_gpu_counts(c, j, err)))
		goto fail;
	pb->ngpu = (int)ngpu;
	pb->gpu_host = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	pb->gpu_pos = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	pb->host_first = xmalloc(sizeof(int) * (size_t)pb->nhost);
	pb->mem_gib = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	k = 0;
	for (int h = 0; h < c->nnodes; h++) {
		pb->host_first[h] = k;
		for (int g = 0; g < c->nodes[h].ngpus; g++, k++) {
			pb->gpu_host[k] = h;
			pb->gpu_pos[k] = g;
			pb->mem_gib[k] = c->nodes[h].gpus[g].memory_gib;
		}
	}
	pb->derate = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->t_wait = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->t_slope = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->p_wait = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->p_slope = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->headroom = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->t_wait_sd = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->t_fit_sd = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->p_unused = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->p_idle = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->p_bg = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->p_bg_sd = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	for (int g = 0; g < pb->ngpu; g++)
		pb->p_unused[g] = pb->p_idle[g] = pb->p_bg[g] = NAN;
	pb->derate_sd = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	pb->time_cap_ms = INFINITY;
	pb->prof = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	if ((rc = join_profiles(pb, p, err)) ||
	    (rc = thermal(pb, p, allow_unprofiled, err)))
		goto fail;
	coupling(pb, p);

	pb->nranks = j->world;
	pb->nproc = j->nproc_per_node;
	pb->nnodes = j->world / j->nproc_per_node;
	pb->usable = xmalloc(sizeof(int) * (size_t)pb->nhost);
	for (int h = 0; h < pb->nhost; h++)
		if (c->nodes[h].ngpus >= pb->nproc)
			pb->usable[pb->nusable++] = h;
	if (pb->nusable < pb->nnodes) {
		rc = tm_fail(err, TM_EINFEASIBLE, "infeasible: the job needs %d "
		             "node(s) of %d GPUs (%d ranks); %s has %d host(s) "
		             "with at least %d GPUs", pb->nnodes, pb->nproc,
		             pb->nranks, c->file, pb->nusable, pb->nproc);
		goto fail;
	}
	network(pb);
	ranks(pb);
	pb->uniform_links = pb->nhost == 1;
	for (int h = 0; h < pb->nhost && pb->uniform_links; h++) {
		const tm_node *n = &c->nodes[h];
		for (int i = 0; i < n->ngpus * n->ngpus; i++)
			if (i / n->ngpus != i % n->ngpus && n->bw[i] != n->bw[1])
				pb->uniform_links = false;
	}
	pb->ref_gpu = xmalloc(sizeof(int) * (size_t)pb->nranks);
	tm_identity(pb, pb->ref_gpu);
	criteria(pb, pol);
	slowdown_cap(pb);
	*out = pb;
	return 0;
fail:
	tm_problem_free(pb);
	return rc;
}

void tm_problem_set_reference(tm_problem *pb, const int *ref,
                              double move_cost_ms, const int *hint)
{
	size_t n = sizeof(int) * (size_t)pb->nranks;
	memcpy(pb->ref_gpu, ref, n);
	pb->ref_custom = true;
	pb->ref_lost = 0;
	for (int r = 0; r < pb->nranks; r++)
		pb->ref_lost += ref[r] < 0;
	pb->move_cost_ms = move_cost_ms;
	slowdown_cap(pb);
	free(pb->hint);
	pb->hint = NULL;
	if (hint) {
		pb->hint = xmalloc(n);
		memcpy(pb->hint, hint, n);
	}
}

int tm_problem_clone(const tm_problem *pb, const tm_policy *pol,
                     tm_problem **out, tm_error *err)
{
	int rc = tm_problem_open(pb->c, pb->prof_doc, pb->job, pol,
	                         pb->allow_unprofiled, pb->uneven_hosts, out,
	                         err);
	if (rc == 0 && pb->ref_custom)
		tm_problem_set_reference(*out, pb->ref_gpu, pb->move_cost_ms,
		                         pb->hint);
	return rc;
}
