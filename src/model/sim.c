/*
 * sim.c — the event-level simulator of one training iteration
 * (docs/model.md, section 14).
 *
 * Where model.c predicts an iteration with a closed formula, this plays it
 * out: every pipeline rank of every data-parallel replica runs its list of
 * forward and backward passes in the order of the job's schedule (1F1B,
 * interleaved 1F1B or GPipe), each pass waits for the pass it depends on
 * on the neighbouring chunk plus the activation (or gradient) transfer
 * over the link between them, and the gradient all-reduce follows the
 * slowest replica. Thermal feedback then closes the loop: from the busy
 * time of each GPU its power and temperature, and a GPU that would pass
 * its slowdown temperature runs at a lower clock, which changes the
 * iteration, until the clocks settle.
 */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

#define MAX_ROUNDS 200    /* thermal feedback rounds before giving up */
#define SETTLED 1e-9      /* largest clock change of a settled round */
#define MAX_PASSES 4e6    /* most microbatches × chunks played */

enum { OP_F, OP_B };

typedef struct op {
	int kind, mb, chunk;
} op;

/* The passes of pipeline rank p in the schedule's order; returns how many
 * (2·m·v). Interleaving follows Megatron-Core: forward pass k runs
 * microbatch (k / (pp·v))·pp + k mod pp of virtual chunk (k mod pp·v) / pp;
 * backward passes take the chunks in reverse; the warm-up is
 * 2·(pp − p − 1) + (v − 1)·pp forward passes. */
static int schedule(const tm_problem *pb, int p, op *ops)
{
	int pp = pb->npp, v = pb->job->vpp, m = pb->job->microbatches;
	int nf = 0, nb = 0, n = 0, warm, i, j;
	op *f = xmalloc(sizeof(op) * (size_t)(m * v));
	op *b = xmalloc(sizeof(op) * (size_t)(m * v));

	if (v == 1) {
		for (i = 0; i < m; i++) {
			f[nf++] = (op){OP_F, i, p};
			b[nb++] = (op){OP_B, i, p};
		}
		warm = pb->job->sched == TM_SCHED_GPIPE ? m : pp - p - 1;
	} else {
		int group = pp * v;
		/* groups of pp microbatches; a last, partial group keeps the
		 * same order without the microbatches past m */
		for (int k = 0; k < ((m + pp - 1) / pp) * group; k++) {
			int mb = (k / group) * pp + k % pp, c = (k % group) / pp;
			if (mb >= m)
				continue;
			f[nf++] = (op){OP_F, mb, c * pp + p};
			b[nb++] = (op){OP_B, mb, (v - 1 - c) * pp + p};
		}
		warm = 2 * (pp - p - 1) + (v - 1) * pp;
	}
	if (warm > nf)
		warm = nf;
	for (i = 0; i < warm; i++)
		ops[n++] = f[i];
	for (j = 0; i < nf; i++, j++) {     /* one forward, one backward */
		ops[n++] = f[i];
		ops[n++] = b[j];
	}
	for (; j < nb; j++)
		ops[n++] = b[j];
	free(f);
	free(b);
	return n;
}

/* One replica's pipeline with the ranks' derates der (per rank): the time
 * its last pass ends (the flush), and each pipeline rank's compute time
 * (busy, per pipeline rank, at the pace of the instance's slowest member).
 * Returns −1 on a schedule that cannot proceed (an internal error). */
static double replica(const tm_problem *pb, const int *flat, const double *der,
                      int d, double *busy)
{
	int pp = pb->npp, nc = pb->job->nstages, m = pb->job->microbatches;
	int per = 2 * m * pb->job->vpp, left = per * pp;
	double *pace = xmalloc(sizeof(double) * (size_t)pp);
	double *xfer = xcalloc((size_t)nc, sizeof(double));
	double *a2a = xcalloc((size_t)nc, sizeof(double));
	double *endf = xmalloc(sizeof(double) * (size_t)(m * nc));
	double *endb = xmalloc(sizeof(double) * (size_t)(m * nc));
	double *free_at = xcalloc((size_t)pp, sizeof(double)), flush = 0;
	op *ops = xmalloc(sizeof(op) * (size_t)(per * pp));
	int *next = xcalloc((size_t)pp, sizeof(int));
	bool moved = true;

	for (int s = 0; s < pp; s++) {
		/* with an all-to-all at s, the expert-parallel group's
		 * instances wait for the slowest of them */
		const int *tied;
		int nt = tm_tied_reps(pb, d, s, &tied);
		pace[s] = 0;
		for (int e = 0; e < nt; e++) {
			const int *mem = &pb->inst_rank[(tied[e] * pp + s) *
			                                pb->nmember];
			for (int q = 0; q < pb->nmember; q++)
				pace[s] = fmax(pace[s], der[mem[q]]);
		}
		busy[s] = 0;
		schedule(pb, s, &ops[s * per]);
	}
	/* each chunk's all-to-all, half in its forward pass and half in its
	 * backward, its share of the pipeline rank's exchange */
	for (int j = 0; j < nc; j++) {
		double a = pb->job->stages[j].a2a_mib, all = pb->a2a[j % pp];
		if (tm_has_a2a(pb) && a > 0 && all > 0)
			a2a[j] = tm_a2a_ms(pb, flat, pb->ep_group[d], j % pp) *
			         (a / all) / 2;
	}
	/* chunk j → j+1, one way: half of the model's hop (forward and back) */
	for (int j = 0; j + 1 < nc; j++) {
		tm_hop h = {j % pp, (j + 1) % pp, pb->job->stages[j].act_mib};
		if (h.from != h.to && h.act_mib > 0)
			xfer[j] = tm_hop_inst_ms(pb, flat, d, &h) / 2;
	}
	for (int i = 0; i < m * nc; i++)
		endf[i] = endb[i] = -1;
	while (left > 0 && moved) {
		moved = false;
		for (int s = 0; s < pp; s++)
			while (next[s] < per) {
				const op *o = &ops[s * per + next[s]];
				const tm_stage *st = &pb->job->stages[o->chunk];
				int at = o->mb * nc + o->chunk;
				double ready = free_at[s], dur;
				if (o->kind == OP_F && o->chunk > 0) {
					if (endf[at - 1] < 0)
						break;
					ready = fmax(ready, endf[at - 1] +
					             xfer[o->chunk - 1]);
				}
				if (o->kind == OP_B) {
					if (endf[at] < 0)
						break;
					ready = fmax(ready, endf[at]);
					if (o->chunk + 1 < nc) {
						if (endb[at + 1] < 0)
							break;
						ready = fmax(ready, endb[at + 1] +
						             xfer[o->chunk]);
					}
				}
				dur = (o->kind == OP_F ? st->fwd_ms : st->bwd_ms) *
				      pace[s];
				free_at[s] = ready + dur + a2a[o->chunk];
				(o->kind == OP_F ? endf : endb)[at] = free_at[s];
				busy[s] += dur;
				flush = fmax(flush, free_at[s]);
				next[s]++;
				left--;
				moved = true;
			}
	}
	free(pace);
	free(xfer);
	free(a2a);
	free(endf);
	free(endb);
	free(free_at);
	free(ops);
	free(next);
	return left > 0 ? -1 : flush;
}

/* The iteration with the ranks' clock factors clk: fills the timing part
 * of out. */
static int play(const tm_problem *pb, const int *flat, const double *clk,
                tm_sim *out)
{
	double *der = xmalloc(sizeof(double) * (size_t)pb->nranks);
	double *busy = xmalloc(sizeof(double) * (size_t)pb->npp), work = 0;
	int rc = 0;

	for (int r = 0; r < pb->nranks; r++)
		der[r] = pb->derate[flat[r]] / clk[r];
	out->flush_ms = 0;
	for (int d = 0; d < pb->nrep && rc == 0; d++) {
		double f = replica(pb, flat, der, d, busy);
		if (f < 0)
			rc = -1;
		out->flush_ms = fmax(out->flush_ms, f);
		for (int s = 0; s < pb->npp; s++)
			work += busy[s];
	}
	out->allreduce_ms = tm_allreduce_ms(pb, flat);
	out->iteration_ms = out->flush_ms + out->allreduce_ms;
	out->bubble = out->flush_ms > 0 ?
	    1 - work / (pb->nrep * pb->npp * out->flush_ms) : 0;
	free(der);
	free(busy);
	return rc;
}

/* The slowdown temperature of GPU g: the loaded temperature plus the
 * profile's headroom (INFINITY when the headroom is unknown). */
static double slowdown_c(const tm_problem *pb, int g)
{
	return isnan(pb->headroom[g]) ? INFINITY :
	       tm_gpu_temp(pb, g, 1) + pb->headroom[g];
}

/* The heat GPU g gets from its host's other GPUs (docs/model.md, 5)
 * when each GPU h draws gp[h] W. */
static double sim_heat(const tm_problem *pb, int g, const double *gp)
{
	double x = 0;
	for (int k = pb->cp_first[g]; k < pb->cp_first[g + 1]; k++) {
		double dp = gp[pb->cp_src[k]] - pb->p_idle[pb->cp_src[k]];
		if (isfinite(dp))
			x += pb->cp_c[k] * dp;
	}
	return x;
}

/* Every GPU's power (the unused ones' too) at the ranks' utilisation u:
 * NULL without coupling, which alone needs them. */
static double *sim_powers(const tm_problem *pb, const int *flat,
                          const double *u)
{
	double *gp;
	if (!pb->coupled)
		return NULL;
	gp = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	memcpy(gp, pb->p_unused, sizeof(double) * (size_t)pb->ngpu);
	for (int r = 0; r < pb->nranks; r++)
		gp[flat[r]] = tm_gpu_power(pb, flat[r], u[r]);
	return gp;
}

int tm_simulate(const tm_problem *pb, const int *flat, bool feedback,
                tm_sim *out)
{
	int R = pb->nranks, m = pb->job->microbatches;
	double *clk = xmalloc(sizeof(double) * (size_t)R);
	double *a = xmalloc(sizeof(double) * (size_t)R);  /* compute at full
	                                                     clock, ms */
	double *gp = NULL;   /* with coupling: every GPU's power, W */

	memset(out, 0, sizeof *out);
	out->clock = xmalloc(sizeof(double) * (size_t)R);
	out->busy = xmalloc(sizeof(double) * (size_t)R);
	out->power_w = xmalloc(sizeof(double) * (size_t)R);
	out->temp_c = xmalloc(sizeof(double) * (size_t)R);
	out->throttle_ms = xmalloc(sizeof(double) * (size_t)R);
	for (int r = 0; r < R; r++) {
		clk[r] = 1;
		a[r] = m * pb->work[pb->rank_stage[r]] * pb->derate[flat[r]];
	}
	out->converged = true;
	if (pb->job->vpp > 1 && m % pb->npp) {
		free(clk);
		free(a);
		return -2;
	}
	if ((double)m * pb->job->nstages > MAX_PASSES) {
		free(clk);
		free(a);
		return -3;
	}
	for (;;) {
		double change = 0;
		if (play(pb, flat, clk, out) < 0) {
			free(clk);
			free(a);
			return -1;
		}
		out->rounds++;
		if (!feedback)
			break;
		/* the clock at which each GPU settles at its slowdown point:
		 * with a the compute at full clock, the temperature at clock
		 * φ is θ0 + (a / T) · θ1 · φ² (dynamic power goes with the
		 * cube of the clock, the time of the work with its inverse);
		 * the neighbours' heat at this round's powers raises θ0 */
		for (int r = 0; r < R; r++)
			out->busy[r] = a[r] / out->iteration_ms * clk[r] * clk[r];
		gp = sim_powers(pb, flat, out->busy);
		for (int r = 0; r < R; r++) {
			int g = flat[r];
			double room = slowdown_c(pb, g) - pb->t_wait[g], phi = 1;
			if (gp)
				room -= sim_heat(pb, g, gp);
			double heat = a[r] / out->iteration_ms * pb->t_slope[g];
			if (heat > room)
				phi = room > 0 ? sqrt(room / heat) : 0.05;
			phi = fmax(phi, 0.05);
			/* half steps: the clock and the iteration push each
			 * other back and forth */
			phi = clk[r] + 0.5 * (phi - clk[r]);
			change = fmax(change, fabs(phi - clk[r]));
			clk[r] = phi;
		}
		free(gp);
		gp = NULL;
		if (change < SETTLED)
			break;
		if (out->rounds >= MAX_ROUNDS) {
			out->converged = false;
			break;
		}
	}
	out->peak_temp_c = -INFINITY;
	for (int r = 0; r < R; r++)
		out->busy[r] = a[r] / out->iteration_ms * clk[r] * clk[r];
	gp = sim_powers(pb, flat, out->busy);
	for (int r = 0; r < R; r++) {
		int g = flat[r];
		double u = a[r] / out->iteration_ms * clk[r] * clk[r];
		out->clock[r] = clk[r];
		out->busy[r] = fmin(1, a[r] / (clk[r] * out->iteration_ms));
		out->power_w[r] = tm_gpu_power(pb, g, u);
		out->temp_c[r] = tm_gpu_temp(pb, g, u) +
		                 (gp ? sim_heat(pb, g, gp) : 0);
		out->throttle_ms[r] = clk[r] < 1 - 1e-12 ? a[r] / clk[r] : 0;
		out->throttle_total_ms += out->throttle_ms[r];
		out->energy_j += out->power_w[r] * out->iteration_ms / 1000;
		out->peak_temp_c = fmax(out->peak_temp_c, out->temp_c[r]);
	}
	free(gp);
	free(clk);
	free(a);
	return 0;
}

void tm_sim_clear(tm_sim *s)
{
	free(s->clock);
	free(s->busy);
	free(s->power_w);
	free(s->temp_c);
	free(s->throttle_ms);
	memset(s, 0, sizeof *s);
}
