/*
 * testlib.h — builds random but valid clusters, profiles, jobs and policies
 * in memory for the oracle and model tests (no files involved), from a
 * seeded generator so every failure can be replayed.
 */
#ifndef THERMAP_TESTLIB_H
#define THERMAP_TESTLIB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "testutil.h"

/* The builders' sequence: a test that wants its own cases sets
 * tt_seq.s first. */
static tt_rng tt_seq = { 88172645463325252ull };

static inline double tt_unif(double lo, double hi)
{
	return tt_real(&tt_seq, lo, hi);
}

static inline int tt_int(int lo, int hi)  /* inclusive */
{
	return lo + tt_below(&tt_seq, hi - lo + 1);
}

/* The DGX-1 hybrid cube-mesh of fixtures/public/dgx1-v100 (0 = SYS). */
static const int tt_dgx1[8][8] = {
	{ -1, 1, 1, 2, 2, 0, 0, 0 }, { 1, -1, 2, 1, 0, 2, 0, 0 },
	{ 1, 2, -1, 2, 0, 0, 1, 0 }, { 2, 1, 2, -1, 0, 0, 0, 1 },
	{ 2, 0, 0, 0, -1, 1, 1, 2 }, { 0, 2, 0, 0, 1, -1, 2, 1 },
	{ 0, 0, 1, 0, 1, 2, -1, 2 }, { 0, 0, 0, 1, 2, 1, 2, -1 },
};

/* link kinds: 0 all NVLink, 1 DGX-1 submatrix, 2 random mix, 3 uniform */
static inline void tt_links(tm_node *n, int kind)
{
	int ng = n->ngpus;
	int perm[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	for (int i = 7; i > 0; i--) {
		int k = tt_int(0, i), t = perm[i];
		perm[i] = perm[k];
		perm[k] = t;
	}
	n->link = xcalloc((size_t)ng * ng, 1);
	n->nv = xcalloc((size_t)ng * ng, 1);
	n->bw = xcalloc((size_t)ng * ng, sizeof(double));
	for (int i = 0; i < ng; i++)
		for (int k = i; k < ng; k++) {
			int l = TM_LINK_X, nv = 0;
			if (i != k) {
				if (kind == 0 || kind == 3) {
					l = TM_LINK_NV;
					nv = kind == 3 ? 2 : tt_int(1, 2);
				} else if (kind == 1 && ng <= 8) {
					nv = tt_dgx1[perm[i]][perm[k]];
					l = nv ? TM_LINK_NV : TM_LINK_SYS;
				} else {
					int r = tt_int(0, 3);
					l = r == 0 ? TM_LINK_SYS : r == 1 ? TM_LINK_PHB :
					    TM_LINK_NV;
					nv = l == TM_LINK_NV ? tt_int(1, 2) : 0;
				}
			}
			n->link[i * ng + k] = n->link[k * ng + i] = (unsigned char)l;
			n->nv[i * ng + k] = n->nv[k * ng + i] = (unsigned char)nv;
		}
	for (int i = 0; i < ng; i++)
		for (int k = 0; k < ng; k++)
			n->bw[i * ng + k] = tm_link_default_gb_per_s(n->link[i * ng + k],
			                                             n->nv[i * ng + k],
			                                             "Tesla V100");
}

static inline tm_cluster *tt_cluster(int nhost, int ngpu, int kind)
{
	tm_cluster *c = xcalloc(1, sizeof *c);
	c->file = xstrdup("cluster.json");
	snprintf(c->sha256, sizeof c->sha256, "sha256:test");
	c->same_group_gb_per_s = c->cross_group_gb_per_s = NAN;
	c->nnodes = nhost;
	c->nodes = xcalloc((size_t)nhost, sizeof *c->nodes);
	for (int h = 0; h < nhost; h++) {
		tm_node *n = &c->nodes[h];
		char name[16];
		snprintf(name, sizeof name, "h%d", h);
		n->host = xstrdup(name);
		n->ngpus = ngpu;
		n->gpus = xcalloc((size_t)ngpu, sizeof *n->gpus);
		for (int g = 0; g < ngpu; g++) {
			n->gpus[g].index = g;
			n->gpus[g].memory_gib = NAN;
		}
		n->net_gb_per_s = 12.5;
		tt_links(n, kind);
	}
	return c;
}

/* One profile entry per GPU, keyed by host and index. */
static inline tm_profile *tt_profile(const tm_cluster *c, bool uniform)
{
	tm_profile *p = xcalloc(1, sizeof *p);
	int k = 0;
	p->file = xstrdup("profile.json");
	snprintf(p->sha256, sizeof p->sha256, "sha256:test");
	for (int h = 0; h < c->nnodes; h++)
		p->ngpus += c->nodes[h].ngpus;
	p->gpus = xcalloc((size_t)p->ngpus, sizeof *p->gpus);
	for (int h = 0; h < c->nnodes; h++)
		for (int g = 0; g < c->nodes[h].ngpus; g++, k++) {
			tm_gpu_profile *e = &p->gpus[k];
			double *f = &e->samples;
			for (size_t i = 0; i < 18; i++)
				f[i] = NAN;
			/* derates known exactly, unless a test says otherwise */
			e->derate_sd = 0;
			e->temp_fit_sd_c = NAN;
			e->power_wait_w = e->power_wait_sd_w = NAN;
			e->background_power_w = e->background_power_sd_w = NAN;
			e->derate_basis = TM_BASIS_UNSET;
			e->host = xstrdup(c->nodes[h].host);
			e->index = g;
			e->derate = uniform ? 1.0 : tt_int(0, 2) ? 1.0 + 0.01 *
			            tt_int(0, 20) : 1.0;
			e->ambient_c = tt_unif(25, 35);
			e->r_c_per_w = tt_unif(0.02, 0.06);
			e->power_idle_w = tt_unif(60, 90);
			e->power_load_w = tt_unif(300, 700);
			e->headroom_c = tt_unif(10, 30);
		}
	return p;
}

static inline tm_job *tt_job(int world, int nproc, int tp, int pp, int vpp,
                             bool dp_first, bool uniform_work)
{
	tm_job *j = xcalloc(1, sizeof *j);
	j->file = xstrdup("job.json");
	snprintf(j->sha256, sizeof j->sha256, "sha256:test");
	for (int k = 0; k < TM_NDIM; k++)
		j->size[k] = 1;
	j->size[TM_TP] = tp;
	j->size[TM_PP] = pp;
	j->size[TM_DP] = world / tp / pp;
	j->vpp = vpp;
	j->norder = 5;
	j->order[0] = TM_TP;
	j->order[1] = TM_CP;
	j->order[2] = TM_EP;
	j->order[3] = dp_first ? TM_DP : TM_PP;
	j->order[4] = dp_first ? TM_PP : TM_DP;
	j->nproc_per_node = nproc;
	j->sched = vpp > 1 ? TM_SCHED_INTERLEAVED : TM_SCHED_1F1B;
	j->microbatches = tt_int(1, 16);
	j->nstages = pp * vpp;
	j->world = world;
	j->layer_fwd_ms = j->layer_bwd_ms = j->layer_mem_gib = NAN;
	j->tokens_per_iteration = NAN;
	j->stages = xcalloc((size_t)j->nstages, sizeof *j->stages);
	for (int s = 0; s < j->nstages; s++) {
		tm_stage *st = &j->stages[s];
		st->fwd_ms = uniform_work ? 3.0 + s : tt_unif(1, 10);
		st->bwd_ms = 2 * st->fwd_ms;
		st->layers = -1;
		st->act_mib = tt_int(0, 3) ? tt_unif(0, 512) : 0;
		st->mem_gib = NAN;
		st->measured = true;
	}
	return j;
}

/* Frees what a test built; any argument may be NULL. */
static inline void tt_free(tm_problem *pb, tm_policy *pol, tm_job *j,
                           tm_profile *p, tm_cluster *c)
{
	tm_problem_free(pb);
	tm_policy_free(pol);
	tm_job_free(j);
	tm_profile_free(p);
	tm_cluster_free(c);
}

#endif
