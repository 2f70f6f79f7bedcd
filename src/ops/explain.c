/*
 * explain.c — the reasons thermap gives for a plan, in words: why each
 * stage runs where it does (tm_why_stage: its work, headroom, link,
 * derate and predicted temperature against the identity placement), why
 * the evidence rule had nothing to say (tm_why_no_verdict), and the
 * summary that `thermap plan` prints (tm_plan_summary: the solver, the
 * predictions against identity, the decision, each stage's reason, the
 * layers chosen and the problem's notes).
 *
 * It decides nothing and writes no file: plan.c puts the same reasons
 * into plan.json, and replan.c words its own decision.
 *
 * Layer: ops (above solve, model, format and base).
 */
#include <stdlib.h>
#include <string.h>


#include "ops/ops.h"


/* ---- the "why" of a stage ----------------------------------------------- */

static int cmp_dbl_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

int *tm_stage_ranks(const tm_problem *pb, int **at)
{
	int *by = xmalloc(sizeof *by * (size_t)pb->nranks);
	int *next = xmalloc(sizeof *next * (size_t)pb->npp);
	*at = xcalloc((size_t)pb->npp + 1, sizeof **at);
	for (int r = 0; r < pb->nranks; r++)
		(*at)[pb->rank_stage[r] + 1]++;
	for (int s = 0; s < pb->npp; s++) {
		(*at)[s + 1] += (*at)[s];
		next[s] = (*at)[s];
	}
	for (int r = 0; r < pb->nranks; r++)
		by[next[pb->rank_stage[r]]++] = r;
	free(next);
	return by;
}

void tm_why_stage(const tm_problem *pb, const int *flat, const int *base,
                  double t, int s, const int *sr, int nsr, strbuf *b)
{
	int npp = pb->npp, heavier = 0, lighter = 0, cnt = 0, used = 0;
	double hsum_sel[64], *hall, min_sel = INFINITY, max_sel = -INFINITY;
	double temp = -INFINITY, btemp = -INFINITY, busy = 0, tsd = 0;
	bool known = true;

	for (int q = 0; q < npp; q++) {
		heavier += pb->work[q] > pb->work[s] * (1 + 1e-9);
		lighter += pb->work[q] < pb->work[s] * (1 - 1e-9);
	}
	if (npp == 1)
		sb_add(b, "the only stage");
	else if (!heavier && !lighter)
		sb_add(b, "all stages do equal work");
	else if (!heavier)
		sb_add(b, "heaviest stage");
	else if (!lighter)
		sb_add(b, "lightest stage");
	else
		sb_addf(b, "stage %d of %d by work", heavier + 1, npp);
	for (int i = 0; i < nsr; i++) {
		int r = sr[i];
		double x;
		busy = fmax(busy, tm_rank_busy(pb, r, flat[r], t));
		x = tm_rank_temp_in(pb, flat, r, t);
		if (x > temp) {
			temp = x;
			tsd = tm_rank_temp_sd_in(pb, flat, r, t);
		}
		btemp = fmax(btemp, tm_rank_temp_in(pb, base, r, t));
		if (cnt < 64)
			hsum_sel[cnt] = pb->headroom[flat[r]];
		cnt++;
		known = known && isfinite(pb->headroom[flat[r]]);
		min_sel = fmin(min_sel, pb->headroom[flat[r]]);
		max_sel = fmax(max_sel, pb->headroom[flat[r]]);
	}
	sb_addf(b, " (%.1f ms per microbatch, busy %.0f %%) on ", pb->work[s],
	        busy * 100);
	/* host by host: a GPU index alone is ambiguous across hosts */
	for (int k = 0, last = -1; k < nsr && k < 8; k++) {
		int g = flat[sr[k]];
		if (pb->gpu_host[g] != last) {
			if (k)
				sb_add(b, "; ");
			sb_add_text(b, pb->c->nodes[pb->gpu_host[g]].host);
			sb_add(b, " GPU ");
			last = pb->gpu_host[g];
		} else {
			sb_add(b, ",");
		}
		sb_addf(b, "%d", tm_gpu_of(pb, g)->index);
	}
	if (cnt > 8)
		sb_add(b, ",…");
	if (known && cnt <= 64) {
		/* rank the chosen GPUs' headroom among all GPUs in use */
		hall = xmalloc(sizeof(double) * (size_t)pb->nranks);
		for (int r = 0; r < pb->nranks; r++)
			hall[used++] = pb->headroom[flat[r]];
		qsort(hall, (size_t)used, sizeof(double), cmp_dbl_desc);
		if (used > cnt && min_sel >= hall[cnt - 1])
			sb_add(b, ", the most headroom (");
		else if (used > cnt && max_sel <= hall[used - cnt])
			sb_add(b, ", the least headroom (");
		else
			sb_add(b, ", headroom (");
		for (int k = 0; k < cnt && k < 8; k++)
			sb_addf(b, "%s%.1f", k ? ", " : "", hsum_sel[k]);
		sb_add(b, " °C)");
		free(hall);
	}
	if (!pb->uniform_links) {
		/* links differ: say what carries the stage's activations on */
		for (int k = 0; k < pb->nhops; k++) {
			const tm_hop *hp = &pb->hops[k];
			const int *a, *z;
			int ga, gz;
			char name[16];
			if (hp->from != s)
				continue;
			a = &pb->inst_rank[hp->from * pb->nmember];
			z = &pb->inst_rank[hp->to * pb->nmember];
			ga = flat[a[0]];
			gz = flat[z[0]];
			if (pb->gpu_host[ga] != pb->gpu_host[gz]) {
				sb_addf(b, ", to stage %d over the network (%.1f GB/s)",
				        hp->to, tm_bw(pb, ga, gz));
			} else {
				const tm_node *nd = &pb->c->nodes[pb->gpu_host[ga]];
				int i = pb->gpu_pos[ga] * nd->ngpus + pb->gpu_pos[gz];
				sb_addf(b, ", to stage %d over %s (%.1f GB/s)", hp->to,
				        tm_link_name(nd->link[i], nd->nv[i], name),
				        tm_bw(pb, ga, gz));
			}
			break;
		}
	}
	if (!pb->uniform_derate) {
		/* speeds differ somewhere: say what this stage runs at */
		double d = 1, sd = 0;
		for (int i = 0; i < nsr; i++)
			if (pb->derate[flat[sr[i]]] >= d) {
				d = pb->derate[flat[sr[i]]];
				sd = pb->derate_sd[flat[sr[i]]];
			}
		sb_addf(b, ", derate %.3f ± %.3f", d, sd);
	}
	sb_addf(b, "; predicted %.1f ± %.1f °C", temp, tsd);
	if (fabs(btemp - temp) >= 0.05)
		sb_addf(b, " (identity placement: %.1f °C)", btemp);
}

/* ---- the evidence rule -------------------------------------------------- */

const char *tm_why_no_verdict(const tm_problem *pb)
{
	return pb->ref_custom ? "a replan: its decision against the previous "
	       "plan is under \"replan\"" :
	       !pb->pol->evidence ? "the policy turns the evidence rule off" :
	       pb->job->relayered ? "the policy changes layers; the evidence "
	       "rule weighs placements only" :
	       "the policy's method places by a fixed rule";
}

/* ---- the text a user reads ---------------------------------------------- */

char *tm_plan_summary(const tm_problem *pb, const tm_solution *sol)
{
	int *flat = xmalloc(sizeof(int) * (size_t)pb->nranks);
	int *base = xmalloc(sizeof(int) * (size_t)pb->nranks), *at, *by;
	const tm_eval *e = &sol->ev, *b0 = &sol->baseline;
	double ar, xa;
	strbuf b;

	tm_placement_to_flat(pb, sol->pl, flat);
	tm_identity(pb, base);
	sb_init(&b);
	sb_add(&b, "policy ");
	sb_add_text(&b, pb->pol->name);
	sb_addf(&b, " (%s%s%s): %s", tm_method_name(pb->pol->method),
	        sol->formulation[0] ? ", " : "", sol->formulation, sol->status);
	if (!isnan(sol->bound))
		/* a gap too small for two decimals is not shown as zero */
		sb_addf(&b, ", objective %.3f, bound %.3f, gap %.*f %%",
		        sol->objective, sol->bound,
		        sol->gap > 0 && sol->gap < 1e-4 ? 4 : 2, sol->gap * 100);
	if (!isnan(sol->peak_bound))
		sb_addf(&b, "; peak %.1f °C, bound %.1f °C at that time",
		        e->peak_temp_c, sol->peak_bound);
	sb_addf(&b, ", %.0f ms", sol->time_ms);
	if (sol->stopped)
		sb_addf(&b, ", stopped at time_limit_s %g with the best found",
		        pb->pol->time_limit_s);
	sb_add(&b, "\n");
	sb_addf(&b, "iteration %.2f ms (", e->iteration_ms);
	ar = tm_allreduce_ms(pb, flat);
	xa = tm_alltoall_max_ms(pb, flat);
	if (ar > 0)
		sb_addf(&b, "all-reduce %.2f ms; ", ar);
	if (xa > 0)
		sb_addf(&b, "all-to-all up to %.2f ms per microbatch; ", xa);
	sb_addf(&b, "identity %.2f ms, %+.2f %%); peak "
	        "%.1f °C (identity %.1f °C, %+.1f °C); %d of %d ranks moved\n",
	        b0->iteration_ms,
	        (b0->iteration_ms - e->iteration_ms) / b0->iteration_ms * 100,
	        e->peak_temp_c, b0->peak_temp_c, e->peak_temp_c - b0->peak_temp_c,
	        e->moves, pb->nranks);
	if (sol->rule.verdict != TM_VERDICT_NONE)
		sb_addf(&b, "decision: %s\n", sol->rule.reason);
	by = tm_stage_ranks(pb, &at);
	for (int s = 0; s < pb->npp; s++) {
		sb_addf(&b, "stage %d: ", s);
		tm_why_stage(pb, flat, base, e->iteration_ms, s, &by[at[s]],
		             at[s + 1] - at[s], &b);
		sb_add(&b, "\n");
	}
	free(by);
	free(at);
	if (pb->job->relayered) {
		int first, last;
		char *lay = tm_megatron_layers(pb->job, &first, &last);
		sb_add(&b, "layers per chunk:");
		for (int c = 0; c < pb->job->nstages; c++)
			sb_addf(&b, " %d", pb->job->stages[c].layers);
		sb_addf(&b, "\nMegatron-Core: --pipeline-model-parallel-layout "
		        "'%s'", lay ? lay : "?");
		if (first != -2) {
			sb_add(&b, ", or");
			if (first >= 0)
				sb_addf(&b, " --decoder-first-pipeline-num-layers %d",
				        first);
			if (last >= 0)
				sb_addf(&b, " --decoder-last-pipeline-num-layers %d",
				        last);
			if (first < 0 && last < 0)
				sb_add(&b, " the default even split");
		}
		sb_add(&b, "\n");
		free(lay);
	}
	for (int i = 0; i < pb->nnotes; i++) {
		sb_add(&b, "note: ");
		sb_add_text(&b, pb->notes[i]);
		sb_add(&b, "\n");
	}
	free(flat);
	free(base);
	return b.s;
}
