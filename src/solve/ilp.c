/*
 * ilp.c — the exact method: the placement problem as a mixed integer
 * program solved by GLPK, one lexicographic criterion at a time (GLPK is
 * included here and in rebalance.c, for its layer program; nowhere else).
 * The formulation (docs/model.md):
 *
 *   x[r,g] ∈ {0,1}   rank r on GPU g          z[n,h] ∈ {0,1}  node n on host h
 *   Σg x[r,g] = 1    Σr x[r,g] ≤ 1            Σ(g∈h) x[r,g] = z[node(r),h]
 *   D[d,s] ≥ Σg δg x[r,g]   for r in stage instance (d,s)    (slowest GPU)
 *   B[d]   ≥ w_s D[d,s]                                       (bottleneck)
 *   C[d,k] ≥ Σh c(g,h) x[b,h] − Cmax (1 − x[a,g])   ∀g        (slowest hop)
 *   A      ≥ Σh a_s(g,h) x[e,h] − Amax_s (1 − x[r,g])  ∀g     (all-reduce)
 *            for every data-parallel ring edge r → e of pipeline rank s
 *   X[o,s] ≥ Σ(b peer of a) Σh e_s(g,h) x[b,h] − Xmax_s (1 − x[a,g])  ∀g
 *            for every sender a of expert-parallel group o's all-to-all
 *            at pipeline rank s; D[d,s] then also bounds the group's other
 *            instances' GPUs, and w_s D[d,s] + X[o,s] is the instance time
 *   T ≥ Σs (w_s D[d,s] + X[o,s]) / v + Σk C[d,k] + (m − 1/v) B[d] + A
 *   P ≥ Σr θ[r,g] x[r,g]   ∀g   with θ the temperature at the reference time
 *
 * Phase 0 minimises T to find the reference time; then each criterion of
 * the policy is minimised with the earlier ones held within tolerance
 * (replan's time criterion is T + c·(W − Σr x[r,ref(r)]), c the price of
 * a moved rank, W the world size; moves are W − Σr x[r,ref(r)]). Each
 * phase's answer is re-evaluated by model.c, and bounds come from those
 * exact values, so the ILP and the model cannot drift apart.
 *
 * tm_write_lp writes phase 0's program, built by the same code, as a CPLEX
 * LP file with named rows and columns, for other solvers.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glpk.h>

#include "solve/solve.h"

#define MAX_BINARIES 4000000  /* beyond this the direct program is too big */

typedef struct ilp {
	const tm_problem *pb;
	glp_prob *P;
	int *xcol;            /* rank*ngpu + g → column, 0 when absent */
	int *zcol;            /* node*nhost + h → column, 0 when fixed */
	int *dcol;            /* replica*npp + stage → column, 0 if constant */
	int *bcol;            /* replica → column */
	int *ccol;            /* replica*nhops + hop → column, 0 if constant */
	int acol;             /* all-reduce time, 0 if constant or none */
	int *ecol;            /* ep group*npp + stage → all-to-all time, 0 if
	                         constant or none */
	double *e_const_ms;   /* stage → the all-to-all's time when constant */
	int tcol, pcol;       /* iteration time, peak temperature */
	int wcol;             /* wear at the reference time */
	int *wgcol;           /* with coupling: GPU → its wear share's column
	                         (0: none), W ≥ Σ_g of them */
	double *tan_lo;       /* with coupling: GPU → first tangent point */
	int *ntan;            /* with coupling: GPU → tangent points */
	int movesrow;         /* Σ x[r,ref(r)] ≥ …, 0 until needed */
	bool names;           /* name rows and columns (for --write-lp) */
	bool use_z;           /* node ranks choose their hosts (z columns) */
	double bwmin;         /* GB/s: the slowest link a hop could use */
	bool comm_const;      /* every GPU pair has the same bandwidth */
	double comm_ms;       /* then the hop time per MiB, forward+backward */
	double ar_const_ms;   /* the all-reduce's time when it is a constant */
	/* sparse row under construction */
	int *ind;
	double *val;
	int nnz, cap;
	/* warm start */
	const int *warm;      /* placement handed to GLPK, or NULL */
	bool warm_used;       /* handed over once per solve */
	double *vec;          /* 1-based column values of warm */
	double t_ref;         /* reference time, 0 before phase 0 */
	/* what the callback saw */
	double bound;         /* best bound of the last solve */
	double deadline;      /* tm_now_ms() at which branch and bound stops */
	/* where a GLPK error returns to: set by the function that calls
	 * GLPK, reached through the error hook's info pointer (this ilp) */
	jmp_buf fail;
} ilp;

/* GLPK's error hook: GLPK cannot go on after an error, so its
 * environment is freed and the caller's setjmp returns 1. */
static void on_glpk_error(void *info)
{
	ilp *L = info;
	glp_free_env();
	longjmp(L->fail, 1);
}

/* Names cost memory and time on large programs and only a written file
 * needs them, so they are given only when L->names is set. */
static void name_item(ilp *L, bool row, int i, const char *fmt, va_list ap)
{
	char name[256];
	if (!L->names)
		return;
	vsnprintf(name, sizeof name, fmt, ap);
	if (row)
		glp_set_row_name(L->P, i, name);
	else
		glp_set_col_name(L->P, i, name);
}

/* Host (position in the cluster file) and nvidia-smi index of flat GPU g,
 * for names: "h0_g3" is GPU 3 of the first host. */
static int name_host(const tm_problem *pb, int g)
{
	return pb->gpu_host[g];
}

static int name_gpu(const tm_problem *pb, int g)
{
	return pb->c->nodes[pb->gpu_host[g]].gpus[pb->gpu_pos[g]].index;
}

static void row_begin(ilp *L)
{
	L->nnz = 0;
}

static void row_add(ilp *L, int col, double v)
{
	if (!col || v == 0)
		return;
	if (L->nnz + 2 > L->cap) {
		L->cap = L->cap ? L->cap * 2 : 256;
		L->ind = xrealloc(L->ind, sizeof(int) * (size_t)L->cap);
		L->val = xrealloc(L->val, sizeof(double) * (size_t)L->cap);
	}
	L->nnz++;
	L->ind[L->nnz] = col;
	L->val[L->nnz] = v;
}

static int row_end(ilp *L, int type, double lo, double hi, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));
static int row_end(ilp *L, int type, double lo, double hi, const char *fmt,
                   ...)
{
	int r = glp_add_rows(L->P, 1);
	va_list ap;
	glp_set_row_bnds(L->P, r, type, lo, hi);
	glp_set_mat_row(L->P, r, L->nnz, L->ind, L->val);
	va_start(ap, fmt);
	name_item(L, true, r, fmt, ap);
	va_end(ap);
	return r;
}

static int add_col(ilp *L, int kind, double lo, double hi, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));
static int add_col(ilp *L, int kind, double lo, double hi, const char *fmt,
                   ...)
{
	int c = glp_add_cols(L->P, 1);
	va_list ap;
	va_start(ap, fmt);
	name_item(L, false, c, fmt, ap);
	va_end(ap);
	glp_set_col_kind(L->P, c, kind);
	if (kind == GLP_BV)
		return c;
	if (isfinite(hi))
		glp_set_col_bnds(L->P, c, GLP_DB, lo, hi);
	else
		glp_set_col_bnds(L->P, c, GLP_LO, lo, 0);
	return c;
}

static double theta(const ilp *L, int r, int g)
{
	return tm_rank_temp(L->pb, r, g, L->t_ref);
}

/* Rank ra on GPU g forces rank rb onto an NVLink neighbour of g. Rows are
 * named tpnv_… for a tensor-parallel pair, ppnv_kK_… for hop K (hop < 0:
 * tensor-parallel). */
static void nvlink_pair(ilp *L, int ra, int rb, int hop)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu;
	for (int g = 0; g < G; g++) {
		if (!L->xcol[ra * G + g])
			continue;
		row_begin(L);
		row_add(L, L->xcol[ra * G + g], 1);
		for (int h = 0; h < G; h++)
			if (tm_nvlink(pb, g, h))
				row_add(L, L->xcol[rb * G + h], -1);
		if (hop < 0)
			row_end(L, GLP_UP, 0, 0, "tpnv_r%d_r%d_h%d_g%d", ra, rb,
			        name_host(pb, g), name_gpu(pb, g));
		else
			row_end(L, GLP_UP, 0, 0, "ppnv_k%d_r%d_r%d_h%d_g%d", hop,
			        ra, rb, name_host(pb, g), name_gpu(pb, g));
	}
}

/* The column that keeps rank r on its reference GPU; 0 when there is none
 * (the GPU is gone, or r cannot run there). */
static int ref_col(const ilp *L, int r)
{
	const tm_problem *pb = L->pb;
	return pb->ref_gpu[r] < 0 ? 0 : L->xcol[r * pb->ngpu + pb->ref_gpu[r]];
}

/* At most `most` ranks off their reference GPU: Σ x[r,ref(r)] ≥ W − most. */
static void moves_row(ilp *L, double most, const char *name)
{
	const tm_problem *pb = L->pb;
	row_begin(L);
	for (int r = 0; r < pb->nranks; r++)
		row_add(L, ref_col(L, r), 1);
	row_end(L, GLP_LO, pb->nranks - most, 0, "%s", name);
}

/* The time criterion with move prices at most b:
 * T + c·(W − Σ x[r,ref(r)]) ≤ b. */
static void cost_row(ilp *L, double b)
{
	const tm_problem *pb = L->pb;
	double c = pb->move_cost_ms;
	row_begin(L);
	row_add(L, L->tcol, 1);
	for (int r = 0; r < pb->nranks; r++)
		row_add(L, ref_col(L, r), -c);
	row_end(L, GLP_UP, 0, b - c * pb->nranks, "hold_cost");
}

/* The error of a phase that returned no placement. */
static int phase_fail(const tm_problem *pb, int prc, tm_error *err)
{
	if (prc == TM_ELIMIT)
		return tm_fail(err, TM_ELIMIT, "solver limit: no feasible placement "
		               "found within time_limit_s %g", pb->pol->time_limit_s);
	return tm_fail(err, TM_EINTERNAL, "ilp: GLPK could not solve the "
	               "program");
}

/* ---- building the program, part by part ------------------------------------
 * build() adds the parts in this order, which fixes the numbers of rows and
 * columns (and so the --write-lp file): the placement's columns, the time
 * columns, the assignment rows, torchrun's host rows, the all-reduce rows,
 * each replica's time rows, the NVLink rows and the moves row. The
 * temperature rows come once the reference time is known. */

/* Columns x[r,g] (rank r on GPU g, where it fits) and z[n,h] (node rank n
 * on host h, when there is a choice of hosts), host by host. */
static void placement_cols(ilp *L)
{
	const tm_problem *pb = L->pb;
	int R = pb->nranks, G = pb->ngpu, H = pb->nhost;

	L->use_z = pb->nusable > 1 || pb->nnodes > 1;
	L->xcol = xcalloc((size_t)R * G, sizeof(int));
	L->zcol = xcalloc((size_t)pb->nnodes * H, sizeof(int));
	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u], f = pb->host_first[h];
		for (int n = 0; L->use_z && n < pb->nnodes; n++)
			L->zcol[n * H + h] = add_col(L, GLP_BV, 0, 1, "z_n%d_h%d",
			                             n, h);
		for (int r = 0; r < R; r++)
			for (int g = f; g < f + pb->c->nodes[h].ngpus; g++)
				if (tm_fits(pb, r, g))
					L->xcol[r * G + g] = add_col(L, GLP_BV, 0, 1,
					        "x_r%d_h%d_g%d", r, h, name_gpu(pb, g));
	}
}

/* The bandwidths a pipeline hop could use, between any two GPUs of usable
 * hosts: the least of them, and whether they are all the same. */
static void link_spread(ilp *L)
{
	const tm_problem *pb = L->pb;
	double bwmin = INFINITY, bwmax = 0;

	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u], f = pb->host_first[h];
		for (int g = f; g < f + pb->c->nodes[h].ngpus; g++)
			for (int w = 0; w < pb->nusable; w++) {
				int h2 = pb->usable[w], f2 = pb->host_first[h2];
				for (int k = f2; k < f2 + pb->c->nodes[h2].ngpus; k++) {
					double b;
					if (k == g)
						continue;
					b = tm_bw(pb, g, k);
					bwmin = fmin(bwmin, b);
					bwmax = fmax(bwmax, b);
				}
			}
	}
	L->bwmin = bwmin;
	L->comm_const = bwmax - bwmin <= 1e-12 * bwmax || !isfinite(bwmin);
	L->comm_ms = isfinite(bwmin) ? 2.0 * 1048576.0 / (bwmin * 1e6) : 0;
}

/* The time columns: D[d,s] (the slowest derate of an instance, unless all
 * derates are equal), B[d] (the bottleneck), C[d,k] (a hop's time, unless
 * every link costs the same), A (the all-reduce, when it depends on the
 * placement; else its time is the constant ar_const_ms) and T. */
static void time_cols(ilp *L)
{
	const tm_problem *pb = L->pb;
	bool any_grad = false;

	L->dcol = xcalloc((size_t)pb->nrep * pb->npp, sizeof(int));
	L->bcol = xcalloc((size_t)pb->nrep, sizeof(int));
	L->ccol = xcalloc((size_t)pb->nrep * (pb->nhops + 1), sizeof(int));
	/* the all-reduce: a column when it depends on the placement, else a
	 * constant, the slowest ring's time at the common bandwidth */
	L->ar_const_ms = 0;
	for (int s = 0; pb->nrep > 1 && s < pb->npp; s++)
		if (tm_grad_mib(pb, s) > 0) {
			if (!L->comm_const)
				any_grad = true;
			else
				L->ar_const_ms = fmax(L->ar_const_ms,
				                      2.0 * (pb->nrep - 1.0) / pb->nrep *
				                      tm_grad_mib(pb, s) * 1048576.0 /
				                      (L->bwmin * 1e6));
		}
	for (int d = 0; d < pb->nrep; d++) {
		for (int s = 0; s < pb->npp && !pb->uniform_derate; s++)
			L->dcol[d * pb->npp + s] = add_col(L, GLP_CV, 1, INFINITY,
			                                   "D_d%d_s%d", d, s);
		L->bcol[d] = add_col(L, GLP_CV, 0, INFINITY, "B_d%d", d);
		for (int k = 0; k < pb->nhops && !L->comm_const; k++)
			L->ccol[d * pb->nhops + k] = add_col(L, GLP_CV, 0, INFINITY,
			                                     "C_d%d_k%d", d, k);
	}
	if (any_grad)
		L->acol = add_col(L, GLP_CV, 0, INFINITY, "A");
	/* the all-to-alls: a column per expert-parallel group and stage, or
	 * a constant, ep − 1 pieces at the common bandwidth */
	L->ecol = xcalloc((size_t)pb->nrep * pb->npp, sizeof(int));
	L->e_const_ms = xcalloc((size_t)pb->npp, sizeof(double));
	for (int s = 0; tm_has_a2a(pb) && s < pb->npp; s++) {
		if (!(pb->a2a[s] > 0))
			continue;
		if (L->comm_const) {
			L->e_const_ms[s] = (pb->nep - 1) * pb->a2a[s] / pb->nep *
			                   1048576.0 / (L->bwmin * 1e6);
			continue;
		}
		for (int o = 0; o < pb->nrep / pb->nep; o++)
			L->ecol[o * pb->npp + s] = add_col(L, GLP_CV, 0, INFINITY,
			                                   "X_o%d_s%d", o, s);
	}
	L->tcol = add_col(L, GLP_CV, 0, pb->time_cap_ms, "T");
}

/* The all-to-alls: like a hop, from each sender to all its peers at once
 * (the pieces add up), for every sender of every group and stage. */
static void alltoall_rows(ilp *L)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu, E = pb->nep;

	for (int o = 0; o < pb->nrep / E && tm_has_a2a(pb); o++)
		for (int s = 0; s < pb->npp; s++) {
			int ec = L->ecol[o * pb->npp + s];
			const int *reps = &pb->ep_reps[o * E];
			double xmax;
			if (!ec)
				continue;
			xmax = (E - 1) * pb->a2a[s] / E * 1048576.0 /
			       (L->bwmin * 1e6);
			for (int q = 0; q < pb->nmember; q++)
				for (int i = 0; i < E; i++) {
					int a = pb->inst_rank[(reps[i] * pb->npp + s) *
					                      pb->nmember + q];
					for (int g = 0; g < G; g++) {
						if (!L->xcol[a * G + g])
							continue;
						row_begin(L);
						row_add(L, ec, 1);
						row_add(L, L->xcol[a * G + g], -xmax);
						for (int k = 0; k < E; k++) {
							int b;
							if (k == i)
								continue;
							b = pb->inst_rank[(reps[k] * pb->npp + s) *
							                  pb->nmember + q];
							for (int h = 0; h < G; h++)
								if (h != g)
									row_add(L, L->xcol[b * G + h],
									        -tm_a2a_piece_ms(pb,
									        pb->a2a[s], g, h));
						}
						row_end(L, GLP_LO, -xmax, 0,
						        "a2a_o%d_s%d_r%d_h%d_g%d", o, s, a,
						        name_host(pb, g), name_gpu(pb, g));
					}
				}
		}
}

/* The all-to-all column of replica d's instance of stage s (0: none or
 * constant). */
static int a2a_col(const ilp *L, int d, int s)
{
	const tm_problem *pb = L->pb;
	return tm_has_a2a(pb) ? L->ecol[pb->ep_group[d] * pb->npp + s] : 0;
}

/* Every rank on one GPU, every GPU at most one rank. */
static void assignment_rows(ilp *L)
{
	const tm_problem *pb = L->pb;
	int R = pb->nranks, G = pb->ngpu;

	for (int r = 0; r < R; r++) {
		row_begin(L);
		for (int g = 0; g < G; g++)
			row_add(L, L->xcol[r * G + g], 1);
		row_end(L, GLP_FX, 1, 1, "assign_r%d", r);
	}
	for (int g = 0; g < G; g++) {
		row_begin(L);
		for (int r = 0; r < R; r++)
			row_add(L, L->xcol[r * G + g], 1);
		if (L->nnz > 1)
			row_end(L, GLP_UP, 0, 1, "gpu_h%d_g%d", name_host(pb, g),
			        name_gpu(pb, g));
	}
}

/* torchrun: a node's ranks on one host, one node per host. */
static void torchrun_rows(ilp *L)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu, H = pb->nhost;

	for (int n = 0; L->use_z && n < pb->nnodes; n++) {
		row_begin(L);
		for (int h = 0; h < H; h++)
			row_add(L, L->zcol[n * H + h], 1);
		row_end(L, GLP_FX, 1, 1, "node_n%d", n);
		for (int i = 0; i < pb->nproc; i++) {
			int r = n * pb->nproc + i;
			for (int u = 0; u < pb->nusable; u++) {
				int h = pb->usable[u], f = pb->host_first[h];
				row_begin(L);
				for (int g = f; g < f + pb->c->nodes[h].ngpus; g++)
					row_add(L, L->xcol[r * G + g], 1);
				row_add(L, L->zcol[n * H + h], -1);
				row_end(L, GLP_FX, 0, 0, "onhost_r%d_h%d", r, h);
			}
		}
	}
	for (int u = 0; L->use_z && u < pb->nusable; u++) {
		int h = pb->usable[u];
		row_begin(L);
		for (int n = 0; n < pb->nnodes; n++)
			row_add(L, L->zcol[n * H + h], 1);
		row_end(L, GLP_UP, 0, 1, "host_h%d", h);
	}
}

/* The all-reduce: like a hop, for every edge of every ring. */
static void allreduce_rows(ilp *L)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu;

	for (int s = 0; L->acol && s < pb->npp; s++) {
		double grad = tm_grad_mib(pb, s), amax;
		if (!(grad > 0))
			continue;
		amax = 2.0 * (pb->nrep - 1.0) / pb->nrep * grad * 1048576.0 /
		       (L->bwmin * 1e6);
		for (int q = 0; q < pb->nmember; q++)
			for (int d = 0; d < pb->nrep; d++) {
				int a = pb->inst_rank[(d * pb->npp + s) * pb->nmember + q];
				int b = tm_ring_rank(pb, a, 1);
				for (int g = 0; g < G; g++) {
					if (!L->xcol[a * G + g])
						continue;
					row_begin(L);
					row_add(L, L->acol, 1);
					row_add(L, L->xcol[a * G + g], -amax);
					for (int h = 0; h < G; h++)
						if (h != g)
							row_add(L, L->xcol[b * G + h],
							        -tm_ring_edge_ms(pb, grad, g, h));
					row_end(L, GLP_LO, -amax, 0, "ring_s%d_r%d_h%d_g%d",
					        s, a, name_host(pb, g), name_gpu(pb, g));
				}
			}
	}
}

/* Replica d's stage instances (each as slow as its slowest GPU) and its
 * bottleneck. */
static void instance_rows(ilp *L, int d)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu;

	for (int s = 0; s < pb->npp; s++) {
		int dc = L->dcol[d * pb->npp + s];
		/* with an all-to-all, the group's instances wait for each
		 * other: D bounds all their GPUs */
		const int *tied;
		int nt = tm_tied_reps(pb, d, s, &tied);
		for (int e = 0; e < nt; e++) {
			const int *mem = &pb->inst_rank[(tied[e] * pb->npp + s) *
			                                pb->nmember];
			for (int k = 0; dc && k < pb->nmember; k++) {
				row_begin(L);
				row_add(L, dc, 1);
				for (int g = 0; g < G; g++)
					row_add(L, L->xcol[mem[k] * G + g], -pb->derate[g]);
				row_end(L, GLP_LO, 0, 0, "slow_d%d_s%d_r%d", d, s,
				        mem[k]);
			}
		}
		row_begin(L);
		row_add(L, L->bcol[d], 1);
		row_add(L, dc, -pb->work[s]);
		row_add(L, a2a_col(L, d, s), -1);
		row_end(L, GLP_LO, (dc ? 0 : pb->work[s] * pb->derate[0]) +
		        L->e_const_ms[s], 0, "bneck_d%d_s%d", d, s);
	}
}

/* Replica d's hops, each as slow as its slowest member pair; returns cst
 * plus the time of the hops whose time is a constant. */
static double hop_rows(ilp *L, int d, double cst)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu;

	for (int k = 0; k < pb->nhops; k++) {
		const tm_hop *hp = &pb->hops[k];
		int cc = L->ccol[d * pb->nhops + k];
		double cmax;
		if (!cc) {
			cst += L->comm_ms * hp->act_mib;
			continue;
		}
		cmax = 2.0 * hp->act_mib * 1048576.0 / (L->bwmin * 1e6);
		for (int q = 0; q < pb->nmember; q++) {
			int a = pb->inst_rank[(d * pb->npp + hp->from) *
			                      pb->nmember + q];
			int b = pb->inst_rank[(d * pb->npp + hp->to) *
			                      pb->nmember + q];
			for (int g = 0; g < G; g++) {
				if (!L->xcol[a * G + g])
					continue;
				row_begin(L);
				row_add(L, cc, 1);
				row_add(L, L->xcol[a * G + g], -cmax);
				for (int h = 0; h < G; h++)
					if (h != g)
						row_add(L, L->xcol[b * G + h],
						        -tm_hop_ms(pb, hp->act_mib, g, h));
				row_end(L, GLP_LO, -cmax, 0, "hop_d%d_k%d_r%d_h%d_g%d",
				        d, k, a, name_host(pb, g), name_gpu(pb, g));
			}
		}
	}
	return cst;
}

/* Replica d's iteration time: fill and drain, its hops, the all-reduce
 * and the bottleneck's steady state; cst holds the constant terms so
 * far. */
static void iteration_row(ilp *L, int d, double cst)
{
	const tm_problem *pb = L->pb;
	double v = pb->job->vpp, m = pb->job->microbatches;

	row_begin(L);
	row_add(L, L->tcol, 1);
	for (int s = 0; s < pb->npp; s++) {
		if (L->dcol[d * pb->npp + s])
			row_add(L, L->dcol[d * pb->npp + s], -pb->work[s] / v);
		else
			cst += pb->work[s] * pb->derate[0] / v;
		row_add(L, a2a_col(L, d, s), -1 / v);
		cst += L->e_const_ms[s] / v;
	}
	for (int k = 0; k < pb->nhops; k++)
		row_add(L, L->ccol[d * pb->nhops + k], -1);
	row_add(L, L->acol, -1);
	row_add(L, L->bcol[d], -(m - 1.0 / v));
	row_end(L, GLP_LO, cst, 0, "iter_d%d", d);
}

/* NVLink constraints: a on g forces b onto an NVLink neighbour of g, for
 * tensor-parallel groups (tp_nvlink) and pipeline hops (pp_nvlink). */
static void nvlink_rows(ilp *L)
{
	const tm_problem *pb = L->pb;
	const tm_policy *pol = pb->pol;
	int R = pb->nranks, tp = pb->job->size[TM_TP];

	for (int i = 0; pol->tp_nvlink && tp > 1 && i < R; i += tp)
		for (int a = 0; a < tp; a++)
			for (int b = a + 1; b < tp; b++)
				nvlink_pair(L, pb->inst_rank[i + a],
				            pb->inst_rank[i + b], -1);
	for (int d = 0; pol->pp_nvlink && d < pb->nrep; d++)
		for (int k = 0; k < pb->nhops; k++)
			for (int q = 0; q < pb->nmember; q++) {
				const tm_hop *hp = &pb->hops[k];
				int ra = pb->inst_rank[(d * pb->npp + hp->from) *
				                       pb->nmember + q];
				int rb = pb->inst_rank[(d * pb->npp + hp->to) *
				                       pb->nmember + q];
				nvlink_pair(L, ra, rb, k);
			}
}

/* The program of phase 0: everything but the temperature rows. */
static void build(ilp *L)
{
	const tm_problem *pb = L->pb;

	placement_cols(L);
	link_spread(L);
	time_cols(L);
	assignment_rows(L);
	torchrun_rows(L);
	allreduce_rows(L);
	alltoall_rows(L);
	for (int d = 0; d < pb->nrep; d++) {
		double cst;
		instance_rows(L, d);
		cst = hop_rows(L, d, L->ar_const_ms);
		iteration_row(L, d, cst);
	}
	nvlink_rows(L);
	if (pb->pol->max_moves >= 0)
		moves_row(L, pb->pol->max_moves, "max_moves");
}

/* Temperature rows, once the reference time is known. A GPU's
 * temperature is one constant per rank it may hold, so its wear share
 * is too: wear is linear in x, W ≥ Σ_r Σ_g wear(θ_r,g) x[r,g]. */
static void coupled_rows(ilp *L);

static void temperature_rows(ilp *L)
{
	const tm_problem *pb = L->pb;
	int R = pb->nranks, G = pb->ngpu;
	L->pcol = add_col(L, GLP_CV, -INFINITY, INFINITY, "P");
	glp_set_col_bnds(L->P, L->pcol, GLP_FR, 0, 0);
	L->wcol = add_col(L, GLP_CV, 0, INFINITY, "W");
	if (pb->coupled) {
		coupled_rows(L);
		return;
	}
	row_begin(L);
	for (int r = 0; r < R; r++)
		for (int g = 0; g < G; g++)
			if (L->xcol[r * G + g])
				row_add(L, L->xcol[r * G + g],
				        -tm_wear_of(theta(L, r, g)));
	row_add(L, L->wcol, 1);
	row_end(L, GLP_LO, 0, 0, "wear");
	for (int g = 0; g < G; g++) {
		row_begin(L);
		for (int r = 0; r < R; r++)
			row_add(L, L->xcol[r * G + g], -theta(L, r, g));
		if (!L->nnz)
			continue;
		row_add(L, L->pcol, 1);
		row_end(L, GLP_LO, 0, 0, "peak_h%d_g%d", name_host(pb, g),
		        name_gpu(pb, g));
		if (isfinite(pb->pol->max_temp_c)) {
			row_begin(L);
			for (int r = 0; r < R; r++)
				row_add(L, L->xcol[r * G + g], theta(L, r, g));
			row_end(L, GLP_UP, 0, pb->pol->max_temp_c, "cap_h%d_g%d",
			        name_host(pb, g), name_gpu(pb, g));
		}
	}
}

/* ---- with coupling: a GPU's temperature from the whole host ------------
 * The neighbours' heat is linear in the powers they draw, and those are
 * linear in x at the reference time, so a GPU's temperature still is:
 *
 *   θ_g(x) = Σ_r θ[r,g] x[r,g] + Σ_k c_k (Σ_r (P[r,h_k] − Pu[h_k]) x[r,h_k]
 *            + Pu[h_k] − Pidle[h_k])
 *
 * over its coupling sources h_k (Pu: its power when unused). It counts
 * only for a GPU in use (u_g = Σ_r x[r,g] = 1): each row takes M·(1 − u_g)
 * off, with M large enough that an unused GPU's row never binds. Wear is
 * a convex function of θ_g: its share of a used GPU is bounded below by
 * tangents every TAN_STEP_C °C over the range θ_g can take, which the
 * minimisation makes tight at the tangent points; between them the share
 * is under-stated by at most (ln 2 · TAN_STEP_C / 20)² / 2 of itself,
 * 3.8·10⁻⁵ at 0.25 °C. The phase's placement is scored by the model
 * (exactly), so the program's value is only a bound. */
#define TAN_STEP_C 0.25
#define LN2 0.69314718055994530942

/* P[r,h] − Pu[h] at the reference time: what rank r on h adds to its
 * coupled neighbours' powers (0 where a power is unknown). */
static double dpower(const ilp *L, int r, int h)
{
	double x = tm_rank_power(L->pb, r, h, L->t_ref) - L->pb->p_unused[h];
	return isfinite(x) ? x : 0;
}

/* The part of θ_g(x) that does not depend on x, and the most and the
 * least the x-dependent coupling can add. */
static void coupling_range(const ilp *L, int g, double *cst, double *most,
                           double *least)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu;
	*cst = *most = *least = 0;
	for (int k = pb->cp_first[g]; k < pb->cp_first[g + 1]; k++) {
		int h = pb->cp_src[k];
		double u = pb->p_unused[h] - pb->p_idle[h], hi = 0, lo = 0;
		if (isfinite(u))
			*cst += pb->cp_c[k] * u;
		for (int r = 0; r < pb->nranks; r++)
			if (L->xcol[r * G + h]) {
				hi = fmax(hi, pb->cp_c[k] * dpower(L, r, h));
				lo = fmin(lo, pb->cp_c[k] * dpower(L, r, h));
			}
		*most += hi;
		*least += lo;
	}
}

/* Adds scale · (θ_g(x) − its constant) − m · u_g to the row under
 * construction: the own terms and the big-M term share the x[r,g]
 * columns, the neighbours' terms are other GPUs' columns. */
static void add_theta(ilp *L, int g, double scale, double m)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu;
	for (int r = 0; r < pb->nranks; r++)
		row_add(L, L->xcol[r * G + g], scale * theta(L, r, g) - m);
	for (int k = pb->cp_first[g]; k < pb->cp_first[g + 1]; k++)
		for (int r = 0; r < pb->nranks; r++)
			row_add(L, L->xcol[r * G + pb->cp_src[k]],
			        scale * pb->cp_c[k] * dpower(L, r, pb->cp_src[k]));
}

static bool gpu_usable(const ilp *L, int g)
{
	for (int r = 0; r < L->pb->nranks; r++)
		if (L->xcol[r * L->pb->ngpu + g])
			return true;
	return false;
}

static void coupled_rows(ilp *L)
{
	const tm_problem *pb = L->pb;
	int R = pb->nranks, G = pb->ngpu;
	double floor_c = INFINITY;   /* no GPU in use is cooler than this */
	L->wgcol = xcalloc((size_t)G, sizeof(int));
	L->tan_lo = xcalloc((size_t)G, sizeof(double));
	L->ntan = xcalloc((size_t)G, sizeof(int));
	for (int g = 0; g < G; g++) {
		double cst, most, least;
		coupling_range(L, g, &cst, &most, &least);
		for (int r = 0; r < R; r++)
			if (L->xcol[r * G + g])
				floor_c = fmin(floor_c, theta(L, r, g) + cst + least);
	}
	for (int g = 0; g < G; g++) {
		double cst, most, least, lo = INFINITY, hi = -INFINITY, m;
		if (!gpu_usable(L, g))
			continue;
		coupling_range(L, g, &cst, &most, &least);
		for (int r = 0; r < R; r++)
			if (L->xcol[r * G + g]) {
				lo = fmin(lo, theta(L, r, g) + cst + least);
				hi = fmax(hi, theta(L, r, g) + cst + most);
			}
		/* an unused GPU's row must not bind: its θ is at most
		 * cst + most, the peak at least floor_c */
		m = fmax(0, cst + most - floor_c) + 1;
		row_begin(L);
		add_theta(L, g, -1, m);
		row_add(L, L->pcol, 1);
		row_end(L, GLP_LO, cst - m, 0, "peak_h%d_g%d", name_host(pb, g),
		        name_gpu(pb, g));
		if (isfinite(pb->pol->max_temp_c)) {
			double mc = fmax(0, cst + most - pb->pol->max_temp_c) + 1;
			row_begin(L);
			add_theta(L, g, 1, -mc);
			row_end(L, GLP_UP, 0, pb->pol->max_temp_c - cst + mc,
			        "cap_h%d_g%d", name_host(pb, g), name_gpu(pb, g));
		}
		L->wgcol[g] = add_col(L, GLP_CV, 0, INFINITY, "W_h%d_g%d",
		                      name_host(pb, g), name_gpu(pb, g));
		L->tan_lo[g] = floor(lo / TAN_STEP_C) * TAN_STEP_C;
		L->ntan[g] = (int)ceil((hi - L->tan_lo[g]) / TAN_STEP_C) + 1;
		for (int k = 0; k < L->ntan[g]; k++) {
			double t = L->tan_lo[g] + k * TAN_STEP_C;
			double f = tm_wear_of(t), d = f * LN2 / 10;
			/* w_g ≥ f + d·(θ_g − t) − mk·(1 − u_g); unused: the
			 * tangent at cst + most at most, so mk ≥ that keeps it
			 * slack */
			double mk = fmax(0, f + d * (cst + most - t)) + 1;
			row_begin(L);
			row_add(L, L->wgcol[g], 1);
			add_theta(L, g, -d, mk);
			row_end(L, GLP_LO, f + d * (cst - t) - mk, 0,
			        "wear_h%d_g%d_t%d", name_host(pb, g), name_gpu(pb, g),
			        k);
		}
	}
	row_begin(L);
	for (int g = 0; g < G; g++)
		row_add(L, L->wgcol[g], -1);
	row_add(L, L->wcol, 1);
	row_end(L, GLP_LO, 0, 0, "wear");
}

/* The tangents' value at temperature t of GPU g: what its wear column
 * holds for a placement at t. */
static double tangent_wear(const ilp *L, int g, double t)
{
	double w = 0;
	for (int k = 0; k < L->ntan[g]; k++) {
		double p = L->tan_lo[g] + k * TAN_STEP_C, f = tm_wear_of(p);
		w = fmax(w, f + f * LN2 / 10 * (t - p));
	}
	return w;
}

/* Column values of a placement, for GLPK's incumbent. */
static void fill(ilp *L, const int *flat)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu, H = pb->nhost, ncol = glp_get_num_cols(L->P);
	double tmax = 0, pk = -INFINITY, wear = 0;
	tm_eval ev;

	L->vec = xrealloc(L->vec, sizeof(double) * (size_t)(ncol + 1));
	for (int c = 0; c <= ncol; c++)
		L->vec[c] = 0;
	for (int r = 0; r < pb->nranks; r++) {
		int c = L->xcol[r * G + flat[r]];
		if (c)
			L->vec[c] = 1;
		if (r % pb->nproc == 0 && L->zcol[r / pb->nproc * H +
		                                  pb->gpu_host[flat[r]]])
			L->vec[L->zcol[r / pb->nproc * H + pb->gpu_host[flat[r]]]] = 1;
		if (pb->coupled && L->pcol) {
			double t = tm_rank_temp_in(pb, flat, r, L->t_ref);
			int w = L->wgcol[flat[r]];
			pk = fmax(pk, t);
			if (w) {
				L->vec[w] = tangent_wear(L, flat[r], t);
				wear += L->vec[w];
			}
			continue;
		}
		if (L->pcol && theta(L, r, flat[r]) > pk)
			pk = theta(L, r, flat[r]);
		if (L->wcol)
			wear += tm_wear_of(theta(L, r, flat[r]));
	}
	for (int d = 0; d < pb->nrep; d++) {
		double b = 0;
		for (int s = 0; s < pb->npp; s++) {
			double t = tm_inst_ms(pb, flat, d, s), x = 0;
			int ec = a2a_col(L, d, s);
			if (ec || L->e_const_ms[s] > 0)
				x = tm_a2a_ms(pb, flat, pb->ep_group[d], s);
			if (ec)
				L->vec[ec] = x;
			if (L->dcol[d * pb->npp + s])
				L->vec[L->dcol[d * pb->npp + s]] = tm_inst_derate(pb,
				                                   flat, d, s);
			b = fmax(b, t);
		}
		L->vec[L->bcol[d]] = b;
		for (int k = 0; k < pb->nhops; k++)
			if (L->ccol[d * pb->nhops + k])
				L->vec[L->ccol[d * pb->nhops + k]] =
					tm_hop_inst_ms(pb, flat, d, &pb->hops[k]);
	}
	if (L->acol)
		L->vec[L->acol] = tm_allreduce_ms(pb, flat);
	tmax = tm_eval_flat(pb, flat, 0, &ev);
	L->vec[L->tcol] = tmax;
	if (L->pcol)
		L->vec[L->pcol] = pk;
	if (L->wcol)
		L->vec[L->wcol] = wear;
}

static void callback(glp_tree *T, void *info)
{
	ilp *L = info;
	int node;
	/* GLPK checks its own limit only between nodes; long branching
	 * computations on big programs would overrun it */
	if (tm_now_ms() > L->deadline) {
		glp_ios_terminate(T);
		return;
	}
	switch (glp_ios_reason(T)) {
	case GLP_IHEUR:
		if (L->warm && !L->warm_used) {
			L->warm_used = true;
			glp_ios_heur_sol(T, L->vec);
		}
		break;
	case GLP_ISELECT:
	case GLP_IBINGO:
		/* a node's bound is -DBL_MAX until its relaxation is solved */
		node = glp_ios_best_node(T);
		if (node && glp_ios_node_bound(T, node) > L->bound &&
		    glp_ios_node_bound(T, node) < 1e300)
			L->bound = glp_ios_node_bound(T, node);
		break;
	default:
		break;
	}
}


/* Phase 0's criterion: the iteration time without move prices, whose
 * optimum is the reference time of the temperature rows. */
#define TIME_BARE (-1)

/* Minimise criterion crit: T, P, or W − Σ_r x[r,ref(r)]. */
static void objective(ilp *L, int crit)
{
	const tm_problem *pb = L->pb;
	int ncol = glp_get_num_cols(L->P);

	for (int c = 1; c <= ncol; c++)
		glp_set_obj_coef(L->P, c, 0);
	glp_set_obj_coef(L->P, 0, 0);
	if (crit == TM_CRIT_TIME || crit == TIME_BARE) {
		/* replan prices moves in the time criterion: c·(W − Σ x_ref) */
		double c = crit == TIME_BARE ? 0 : pb->move_cost_ms;
		glp_set_obj_coef(L->P, L->tcol, 1);
		glp_set_obj_coef(L->P, 0, c * pb->nranks);
		for (int r = 0; c > 0 && r < pb->nranks; r++)
			if (ref_col(L, r))
				glp_set_obj_coef(L->P, ref_col(L, r), -c);
	} else if (crit == TM_CRIT_PEAK) {
		glp_set_obj_coef(L->P, L->pcol, 1);
	} else if (crit == TM_CRIT_WEAR) {
		glp_set_obj_coef(L->P, L->wcol, 1);
	} else {
		glp_set_obj_coef(L->P, 0, pb->nranks);
		for (int r = 0; r < pb->nranks; r++)
			if (ref_col(L, r))
				glp_set_obj_coef(L->P, ref_col(L, r), -1);
	}
	glp_set_obj_dir(L->P, GLP_MIN);
	if (L->names)
		glp_set_obj_name(L->P, crit == TM_CRIT_TIME ||
		                 crit == TIME_BARE ? "iteration_ms" :
		                 crit == TM_CRIT_PEAK ? "peak_temp_c" :
		                 crit == TM_CRIT_WEAR ? "wear" : "moved_ranks");
}

/* One phase: minimise a criterion. Returns 0 with the placement in flat,
 * TM_EINFEASIBLE, or TM_ELIMIT; *optimal says whether it was proven. */
static int phase(ilp *L, int crit, double deadline, int *flat, bool *optimal,
                 double *bound)
{
	const tm_problem *pb = L->pb;
	int G = pb->ngpu, ret, st;
	glp_smcp sp;
	glp_iocp ip;
	double left = deadline - tm_now_ms();

	objective(L, crit);
	if (left < 1)
		left = 1;
	glp_init_smcp(&sp);
	sp.msg_lev = GLP_MSG_OFF;
	sp.tm_lim = (int)fmin(left, 2e9);
	ret = glp_simplex(L->P, &sp);
	st = glp_get_status(L->P);
	if (ret == 0 && (st == GLP_NOFEAS || st == GLP_INFEAS))
		return TM_EINFEASIBLE;
	if (ret != 0 || st != GLP_OPT)
		return ret == GLP_ETMLIM ? TM_ELIMIT : TM_EINTERNAL;
	glp_init_iocp(&ip);
	ip.msg_lev = GLP_MSG_OFF;
	ip.presolve = GLP_OFF;
	ip.tm_lim = (int)fmin(fmax(deadline - tm_now_ms(), 1), 2e9);
	ip.mip_gap = pb->pol->mip_gap;
	ip.cb_func = callback;
	ip.cb_info = L;
	L->deadline = deadline;
	L->warm_used = false;
	L->bound = glp_get_obj_val(L->P);  /* the relaxation bounds the MIP */
	ret = glp_intopt(L->P, &ip);
	st = glp_mip_status(L->P);
	if (st == GLP_NOFEAS)
		return TM_EINFEASIBLE;
	if (st != GLP_OPT && st != GLP_FEAS)
		return ret == GLP_ETMLIM || ret == GLP_ESTOP ? TM_ELIMIT
		                                             : TM_EINTERNAL;
	for (int r = 0; r < pb->nranks; r++) {
		flat[r] = -1;
		for (int g = 0; g < G; g++)
			if (L->xcol[r * G + g] &&
			    glp_mip_col_val(L->P, L->xcol[r * G + g]) > 0.5)
				flat[r] = g;
		if (flat[r] < 0)
			return TM_EINTERNAL;
	}
	*optimal = st == GLP_OPT && ret == 0;
	*bound = *optimal ? glp_mip_obj_val(L->P) : L->bound;
	return 0;
}

/* Holds criterion crit at or below b in the following phases. */
static void hold(ilp *L, int crit, double b)
{
	if (crit == TM_CRIT_TIME && L->pb->move_cost_ms > 0)
		cost_row(L, b);
	else if (crit == TM_CRIT_TIME)
		glp_set_col_bnds(L->P, L->tcol, GLP_DB, 0,
		                 fmin(b, L->pb->time_cap_ms));
	else if (crit == TM_CRIT_PEAK)
		glp_set_col_bnds(L->P, L->pcol, GLP_UP, 0, b);
	else if (crit == TM_CRIT_WEAR)
		glp_set_col_bnds(L->P, L->wcol, GLP_DB, 0, b);
	else
		moves_row(L, b, "hold_moves");
}

/* Programs larger than this (ranks × GPUs) are not solved directly:
 * measured on synthetic clusters (docs/bench.md), GLPK needs tens of
 * seconds at 64 × 64 and still proves less than the bounds of bound.c. */
#define DIRECT_MAX 1024

bool tm_ilp_direct(const tm_problem *pb)
{
	/* THERMAP_DIRECT_MAX moves the limit, to measure the direct program
	 * where it is not used (make bench) */
	const char *env = tm_knob(TM_KNOB_DIRECT_MAX);
	double most = env ? strtod(env, NULL) : DIRECT_MAX;
	return (double)pb->nranks * pb->ngpu <= most;
}

static bool too_large(const tm_problem *pb)
{
	return (double)pb->nranks * pb->ngpu > MAX_BINARIES;
}

static void ilp_free(ilp *L)
{
	free(L->xcol);
	free(L->zcol);
	free(L->dcol);
	free(L->bcol);
	free(L->ccol);
	free(L->ecol);
	free(L->e_const_ms);
	free(L->wgcol);
	free(L->tan_lo);
	free(L->ntan);
	free(L->ind);
	free(L->val);
	free(L->vec);
}

int tm_solve_ilp(const tm_problem *pb, const int *warm, double deadline,
                 int *flat, tm_solution *sol, tm_error *err)
{
	ilp L;
	double bound;
	int *cur = xmalloc(sizeof(int) * (size_t)pb->nranks);
	bool optimal = true, ok;
	volatile int rc = 0;
	tm_eval ev;
	int first_crit = pb->crit[0];

	memset(&L, 0, sizeof L);
	L.pb = pb;
	if (too_large(pb)) {
		free(cur);
		return tm_fail(err, TM_EINTERNAL, "ilp: %d ranks × %d GPUs is too "
		               "large for the direct integer program; use the "
		               "greedy method", pb->nranks, pb->ngpu);
	}
	glp_term_out(GLP_OFF);
	if (setjmp(L.fail)) {
		glp_error_hook(NULL, NULL);
		ilp_free(&L);
		free(cur);
		return tm_fail(err, TM_EINTERNAL, "ilp: GLPK failed");
	}
	glp_error_hook(on_glpk_error, &L);
	L.P = glp_create_prob();
	build(&L);

	/* phase 0: the best time, without the temperature cap */
	if (warm) {
		L.warm = warm;
		fill(&L, warm);
	}
	rc = phase(&L, TIME_BARE, deadline, cur, &ok, &bound);
	if (rc == TM_EINFEASIBLE) {
		rc = tm_explain_infeasible(pb, err);
		goto out;
	}
	if (rc == TM_ELIMIT && warm) {
		memcpy(cur, warm, sizeof(int) * (size_t)pb->nranks);
		ok = false;
		bound = L.bound;
		rc = 0;
	}
	if (rc) {
		rc = phase_fail(pb, rc, err);
		goto out;
	}
	/* the reference time is the best time; when that is not proven, its
	 * lower bound, which overstates temperatures rather than understating */
	L.t_ref = tm_eval_flat(pb, cur, 0, &ev);
	if (!ok && bound > 0 && bound < L.t_ref)
		L.t_ref = bound;
	sol->t_ref_ms = L.t_ref;
	optimal = ok;
	temperature_rows(&L);
	if (first_crit == TM_CRIT_TIME) {
		sol->objective = ev.iteration_ms;
		sol->bound = fmin(bound, ev.iteration_ms);
	}
	memcpy(flat, cur, sizeof(int) * (size_t)pb->nranks);
	for (int k = 0; k < pb->ncrit; k++) {
		int crit = pb->crit[k], prc;
		bool reuse = k == 0 && crit == TM_CRIT_TIME &&
		             !(pb->move_cost_ms > 0) &&
		             !isfinite(pb->pol->max_temp_c);
		if (!reuse) {
			L.warm = flat;
			fill(&L, flat);
			if (k == 0 && isfinite(pb->pol->max_temp_c))
				L.warm = NULL;  /* phase 0's answer may break the cap */
			prc = phase(&L, crit, deadline, cur, &ok, &bound);
			if (prc == TM_EINFEASIBLE && k == 0) {
				rc = tm_fail(err, TM_EINFEASIBLE, "infeasible: no "
				             "placement keeps every GPU at or below "
				             "max_temp_c %.1f °C", pb->pol->max_temp_c);
				goto out;
			}
			if (prc == 0) {
				memcpy(flat, cur, sizeof(int) * (size_t)pb->nranks);
			} else if (k == 0 && !(prc == TM_ELIMIT &&
			           !isfinite(pb->pol->max_temp_c))) {
				rc = phase_fail(pb, prc, err);
				goto out;
			} else {
				/* out of time: the previous phase's answer stands,
				 * unproven (phase 0's too, when there is no cap that
				 * it might break) */
				optimal = false;
				if (k == 0) {
					tm_eval_flat(pb, flat, L.t_ref, &ev);
					sol->objective = tm_crit_value(&ev, crit);
					sol->bound = crit == TM_CRIT_TIME ?
					             fmin(sol->bound, sol->objective) : 0;
				}
				break;
			}
			if (k == 0) {
				tm_eval_flat(pb, flat, L.t_ref, &ev);
				sol->objective = tm_crit_value(&ev, crit);
				sol->bound = fmin(bound, sol->objective);
			}
			optimal = optimal && ok;
		}
		tm_eval_flat(pb, flat, L.t_ref, &ev);
		sol->best[k] = tm_crit_value(&ev, crit);
		hold(&L, crit, tm_crit_bound(pb, crit, sol->best[k]));
	}
	snprintf(sol->status, sizeof sol->status, optimal ? "optimal" :
	         "feasible");
	sol->gap = sol->objective > 0 ? (sol->objective - sol->bound) /
	           sol->objective : 0;
	if (sol->gap < 1e-9)
		sol->gap = 0;
out:
	glp_delete_prob(L.P);
	glp_error_hook(NULL, NULL);
	ilp_free(&L);
	free(cur);
	return rc;
}

/* The program of phase 0 as a file, built by the same code that solve
 * uses, so the file is the program that GLPK solves first. glp_write_lp
 * takes a file name, so it writes the temporary file by name; GLPK would
 * compress a name ending in .gz, which the temporary name never does. */
/* GLPK's LP writer returns 0 even when the last of its buffered output
 * could not be written (it does not check its file's close), so a full
 * disk gives a short file and success. Its file always ends with the
 * line "End"; a writer that lost any of its tail has not. */
static bool lp_complete(int fd)
{
	struct stat st;
	char tail[5];
	return fstat(fd, &st) == 0 && st.st_size >= 5 &&
	       pread(fd, tail, 5, st.st_size - 5) == 5 &&
	       !memcmp(tail, "\nEnd\n", 5);
}

int tm_write_lp(const tm_problem *pb, const char *file, tm_error *err)
{
	ilp L;
	tm_out o;
	char name[4400];
	int rc = 0, e;

	if (too_large(pb))
		return tm_fail(err, TM_EINTERNAL, "%s: not written: %d ranks × %d "
		               "GPUs is too large for the direct integer program",
		               file, pb->nranks, pb->ngpu);
	if ((rc = tm_out_open(&o, file, err)))
		return rc;
	if ((e = tm_out_name(&o, name, sizeof name))) {
		tm_out_abort(&o);
		return tm_fail(err, TM_EINTERNAL, "%s: cannot create: %s", file,
		               strerror(e));
	}
	memset(&L, 0, sizeof L);
	L.pb = pb;
	L.names = true;
	glp_term_out(GLP_OFF);
	if (setjmp(L.fail)) {
		glp_error_hook(NULL, NULL);
		ilp_free(&L);
		tm_out_abort(&o);
		return tm_fail(err, TM_EINTERNAL, "%s: GLPK failed to build or "
		               "write the integer program", file);
	}
	glp_error_hook(on_glpk_error, &L);
	L.P = glp_create_prob();
	glp_set_prob_name(L.P, "thermap phase 0: the best iteration time "
	                  "(docs/model.md, section 10)");
	build(&L);
	objective(&L, TM_CRIT_TIME);
	errno = 0;
	if (glp_write_lp(L.P, NULL, name) != 0 || !lp_complete(o.fd)) {
		rc = tm_fail(err, TM_EINTERNAL, "%s: cannot write: %s", file,
		             errno ? strerror(errno) : "GLPK's LP writer did not finish "
		             "the file");
		tm_out_abort(&o);
	} else {
		rc = tm_out_commit(&o, err);
	}
	glp_delete_prob(L.P);
	glp_error_hook(NULL, NULL);
	ilp_free(&L);
	return rc;
}
