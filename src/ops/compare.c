/*
 * compare.c — `thermap compare`: runs several policies on one cluster,
 * profile and job, plays each placement in the event-level simulator with
 * thermal feedback (sim.c), and tabulates them against torchrun's default
 * placement of the job as given: iteration time and gain, tokens/s, peak
 * temperature, throttled time, energy, solver status, moved ranks. With a
 * recording instead of a profile (replay), it plans on each window and
 * scores the plan on the next one, as a policy re-planned at every window
 * would have fared. docs/compare.md describes the table.
 *
 * Each comparison is computed first into rows (a struct per policy, or
 * per step and policy, holding every number and status shown), then
 * rendered by one renderer per output format (enum tm_format: text,
 * markdown, csv, json), picked from a table; no function both computes
 * and prints. A new format is a renderer here for each of the two
 * tables. The windows of a recording come from replay.c.
 */
#include <stdlib.h>
#include <string.h>


#include "ops/ops.h"

/* ---- one profile: the rows ---------------------------------------------- */

/* One policy's result on one profile. */
typedef struct row {
	const tm_policy *pol;
	int rc;              /* 0, or why the policy could not place */
	char error[1024];
	char status[16];
	double gap;
	double model_ms;     /* the model's prediction (plan.json) */
	tm_sim sim;          /* the simulator's, with feedback */
	double gain_pct;     /* simulated iteration time over the baseline's */
	double tokens_per_s; /* NAN when the job gives no tokens */
	int moved;           /* ranks not on their identity GPU */
	int verdict;         /* the evidence rule's (enum tm_verdict) */
	char *reason;        /* and its reason, when it kept torchrun's */
	char *layers;        /* "17 15" when the policy changed them */
	int *flat;           /* rank → GPU, NULL after a failure */
	const tm_problem *pb;/* the run's problem, while the run lives */
} row;

/* A comparison on one profile: the baseline and a row per policy. */
typedef struct table {
	const tm_cluster *c;
	const tm_profile *p;
	const tm_job *j;
	tm_sim id;           /* the identity placement, simulated */
	bool tok;            /* the job gives tokens per iteration */
	int n;               /* policies */
	row *rows;           /* n rows in the order given */
} table;

static const char *const verdict_name[] = {
	[TM_VERDICT_NONE] = "none", [TM_VERDICT_SAME] = "same",
	[TM_VERDICT_MOVE] = "move", [TM_VERDICT_KEEP] = "keep",
};

static double gain(double t, double t0)
{
	return t0 > 0 ? (t0 - t) / t0 * 100 : 0;
}

/* The identity placement of the job as given, simulated: the baseline of
 * every gain. */
static int identity_sim(const tm_cluster *c, const tm_profile *p,
                        const tm_job *j, bool allow, tm_sim *out,
                        tm_error *err)
{
	tm_policy *pol = NULL;
	tm_problem *pb = NULL;
	int *flat = NULL, rc;

	memset(out, 0, sizeof *out);
	if ((rc = tm_policy_default(&pol, err)))
		return rc;
	pol->tp_nvlink = false;
	if (!(rc = tm_problem_new(c, p, j, pol, allow, &pb, err))) {
		flat = xmalloc(sizeof(int) * (size_t)pb->nranks);
		tm_identity(pb, flat);
		if (tm_simulate(pb, flat, true, out) < 0)
			rc = tm_fail(err, TM_EINPUT, "%s: the simulator cannot play "
			             "this schedule (an interleaved schedule needs "
			             "microbatches a multiple of pp; at most 4·10⁶ "
			             "microbatch passes)", j->file);
	}
	free(flat);
	tm_problem_free(pb);
	tm_policy_free(pol);
	return rc;
}

/* Runs and simulates one policy; a policy that cannot place gets rc and
 * the message, not a failure of the whole comparison. run stays alive for
 * the SVG, freed by the caller. The gains are filled against the baseline
 * id. */
static void run_row(const tm_cluster *c, const tm_profile *p, const tm_job *j,
                    const tm_policy *pol, bool allow, const tm_sim *id,
                    row *w, tm_run *run)
{
	tm_error e = { 0, "" };
	memset(w, 0, sizeof *w);
	w->pol = pol;
	w->rc = tm_run_policy(c, p, j, pol, allow, run, &e);
	if (w->rc) {
		snprintf(w->error, sizeof w->error, "%s", e.msg);
		snprintf(w->status, sizeof w->status, "%s",
		         w->rc == TM_EINFEASIBLE ? "infeasible" :
		         w->rc == TM_ELIMIT ? "limit" : "error");
		return;
	}
	w->pb = run->pb;
	w->flat = xmalloc(sizeof(int) * (size_t)run->pb->nranks);
	tm_placement_to_flat(run->pb, run->sol.pl, w->flat);
	snprintf(w->status, sizeof w->status, "%s", run->sol.status);
	w->gap = run->sol.gap;
	w->model_ms = run->sol.ev.iteration_ms;
	w->moved = run->sol.ev.moves;
	w->verdict = run->sol.rule.verdict;
	if (w->verdict == TM_VERDICT_KEEP)
		w->reason = xstrdup(run->sol.rule.reason);
	if (tm_simulate(run->pb, w->flat, true, &w->sim) < 0) {
		w->rc = TM_EINPUT;
		snprintf(w->error, sizeof w->error, "the simulator cannot play "
		         "this schedule");
		snprintf(w->status, sizeof w->status, "error");
	}
	if (!w->rc) {
		w->gain_pct = gain(w->sim.iteration_ms, id->iteration_ms);
		w->tokens_per_s = isfinite(j->tokens_per_iteration) ?
		                  j->tokens_per_iteration / w->sim.iteration_ms *
		                  1e3 : NAN;
	}
	if (run->layers) {
		strbuf b;
		sb_init(&b);
		for (int k = 0; k < j->nstages; k++)
			sb_addf(&b, "%s%d", k ? " " : "", run->layers[k]);
		w->layers = b.s;
	}
}

static void row_clear(row *w)
{
	tm_sim_clear(&w->sim);
	free(w->reason);
	free(w->layers);
	free(w->flat);
}

/* ---- one profile: the renderers -------------------------------------------- */

int tm_compare_format(const char *s)
{
	return tm_format_lookup(s, TM_FORMATS_COMPARE);
}

/* CSV fields: quoted when they hold a comma, a quote or a line break */
static void csv_str(strbuf *b, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		sb_add(b, s);
		return;
	}
	sb_add(b, "\"");
	for (; *s; s++)
		sb_addf(b, "%s%c", *s == '"' ? "\"" : "", *s);
	sb_add(b, "\"");
}

/* A policy's name as a table shows it: on one line and without control
 * characters (tm_text), in markdown (md) with '|' escaped so that the row
 * keeps its cells. The caller frees it. */
static char *shown(const char *name, bool md)
{
	strbuf b, m;
	sb_init(&b);
	sb_add_text(&b, name);
	if (!md || !strchr(b.s, '|'))
		return b.s;
	sb_init(&m);
	for (const char *c = b.s; *c; c++)
		sb_addf(&m, "%s%c", *c == '|' ? "\\" : "", *c);
	sb_free(&b);
	return m.s;
}

/* The notes under a text or markdown table: what the gain is over, what
 * was simulated, why a policy placed nothing or kept torchrun's, and the
 * unsettled clocks. md: as a markdown list. */
static void notes(strbuf *b, const table *T, bool md)
{
	const char *item = md ? "- " : "";
	bool unconv = false;
	sb_addf(b, "%sgain: over torchrun's placement of the job as given "
	        "(identity, %.2f ms simulated)\n", md ? "\n- " : "",
	        T->id.iteration_ms);
	sb_addf(b, "%stimes, temperatures, throttling and energy: one "
	        "simulated iteration with thermal feedback "
	        "(docs/model.md, 14)\n", item);
	for (int i = 0; i < T->n; i++) {
		const row *r = &T->rows[i];
		const char *why = r->rc ? r->error : r->reason;
		if (why) {
			char *name = shown(r->pol->name, md);
			sb_addf(b, "%s%s: ", item, name);
			sb_add_text(b, why);
			sb_add(b, "\n");
			free(name);
		}
		if (!r->rc && !r->sim.converged)
			unconv = true;
	}
	if (unconv)
		sb_addf(b, "%s*: the clocks did not settle in 200 feedback "
		        "rounds; the last round is shown\n", item);
}

static void render_text(strbuf *b, const table *T)
{
	const tm_job *j = T->j;
	sb_addf(b, "%d ranks (tp %d, pp %d, dp %d, vpp %d), %s, %d "
	        "microbatches\n", j->world, j->size[TM_TP], j->size[TM_PP],
	        j->size[TM_DP], j->vpp, j->sched == TM_SCHED_GPIPE ? "gpipe" :
	        j->sched == TM_SCHED_INTERLEAVED ? "interleaved 1f1b" : "1f1b",
	        j->microbatches);
	sb_addf(b, "%-16s %-10s %12s %8s%s %9s %11s %9s %8s %5s  %s\n",
	        "policy", "status", "iteration ms", "gain %",
	        T->tok ? "   tokens/s" : "", "peak °C", "throttle ms",
	        "energy J", "bubble %", "moved", "layers");
	for (int i = 0; i < T->n; i++) {
		const row *r = &T->rows[i];
		char tk[32] = "", st[32];
		char *name = shown(r->pol->name, false);
		if (r->rc) {
			sb_addf(b, "%-16s %-10s %12s\n", name, r->status, "–");
			free(name);
			continue;
		}
		if (T->tok)
			snprintf(tk, sizeof tk, "%.0f", r->tokens_per_s);
		snprintf(st, sizeof st, "%s%s", r->status,
		         r->sim.converged ? "" : "*");
		sb_addf(b, "%-16s %-10s %12.2f %+8.2f", name, st,
		        r->sim.iteration_ms, r->gain_pct);
		if (T->tok)
			sb_addf(b, " %10s", tk);
		sb_addf(b, " %8.1f %11.1f %9.1f %8.1f %5d  %s\n",
		        r->sim.peak_temp_c, r->sim.throttle_total_ms,
		        r->sim.energy_j, r->sim.bubble * 100, r->moved,
		        r->layers ? r->layers : "as job");
		free(name);
	}
	notes(b, T, false);
}

static void render_markdown(strbuf *b, const table *T)
{
	sb_addf(b, "| policy | status | iteration ms | gain %% |%s "
	        "peak °C | throttle ms | energy J | bubble %% | moved | "
	        "layers |\n|---|---|--:|--:|%s--:|--:|--:|--:|--:|---|\n",
	        T->tok ? " tokens/s |" : "", T->tok ? "--:|" : "");
	for (int i = 0; i < T->n; i++) {
		const row *r = &T->rows[i];
		char tk[32] = "", st[32];
		char *name = shown(r->pol->name, true);
		if (r->rc) {
			sb_addf(b, "| %s | %s | – | – |%s – | – | – | – | – | – |\n",
			        name, r->status, T->tok ? " – |" : "");
			free(name);
			continue;
		}
		if (T->tok)
			snprintf(tk, sizeof tk, "%.0f", r->tokens_per_s);
		snprintf(st, sizeof st, "%s%s", r->status,
		         r->sim.converged ? "" : "*");
		sb_addf(b, "| %s | %s | %.2f | %+.2f |", name, st,
		        r->sim.iteration_ms, r->gain_pct);
		if (T->tok)
			sb_addf(b, " %s |", tk);
		sb_addf(b, " %.1f | %.1f | %.1f | %.1f | %d | %s |\n",
		        r->sim.peak_temp_c, r->sim.throttle_total_ms,
		        r->sim.energy_j, r->sim.bubble * 100, r->moved,
		        r->layers ? r->layers : "as job");
		free(name);
	}
	notes(b, T, true);
}

static void render_csv(strbuf *b, const table *T)
{
	sb_add(b, "policy,method,status,gap,model_ms,iteration_ms,"
	       "gain_pct,tokens_per_s,peak_temp_c,throttle_ms,energy_j,"
	       "bubble_pct,moved_ranks,decision,layers,converged,error\n");
	for (int i = 0; i < T->n; i++) {
		const row *r = &T->rows[i];
		char *name = shown(r->pol->name, false);
		csv_str(b, name);
		free(name);
		sb_addf(b, ",%s,%s,", tm_method_name(r->pol->method), r->status);
		if (r->rc) {
			sb_add(b, ",,,,,,,,,,,,,");
			csv_str(b, r->error);
			sb_add(b, "\n");
			continue;
		}
		if (isfinite(r->gap))
			sb_addf(b, "%.6f", r->gap);
		sb_addf(b, ",%.4f,%.4f,%.3f,", r->model_ms, r->sim.iteration_ms,
		        r->gain_pct);
		if (T->tok)
			sb_addf(b, "%.1f", r->tokens_per_s);
		sb_addf(b, ",%.2f,%.3f,%.2f,%.2f,%d,%s,%s,%s,\n",
		        r->sim.peak_temp_c, r->sim.throttle_total_ms,
		        r->sim.energy_j, r->sim.bubble * 100, r->moved,
		        verdict_name[r->verdict], r->layers ? r->layers : "",
		        r->sim.converged ? "true" : "false");
	}
}

static void render_json(strbuf *b, const table *T)
{
	jw w;
	jw_init(&w, b);
	jw_obj(&w, NULL, false);
	jw_str(&w, "format", "thermap.compare/1");
	jw_obj(&w, "inputs", true);
	jw_str(&w, "cluster", T->c->sha256);
	jw_str(&w, "profile", T->p->sha256);
	jw_str(&w, "job", T->j->sha256);
	jw_end_obj(&w);
	jw_obj(&w, "baseline", true);
	jw_str(&w, "policy", "identity");
	jw_num(&w, "iteration_ms", T->id.iteration_ms, 4);
	jw_num(&w, "peak_temp_c", T->id.peak_temp_c, 2);
	jw_end_obj(&w);
	jw_arr(&w, "policies", false);
	for (int i = 0; i < T->n; i++) {
		const row *x = &T->rows[i];
		jw_obj(&w, NULL, true);
		jw_str(&w, "policy", x->pol->name);
		jw_str(&w, "method", tm_method_name(x->pol->method));
		jw_str(&w, "status", x->status);
		if (x->rc) {
			jw_str(&w, "error", x->error);
			jw_end_obj(&w);
			continue;
		}
		jw_num(&w, "gap", x->gap, 6);
		jw_num(&w, "model_iteration_ms", x->model_ms, 4);
		jw_num(&w, "iteration_ms", x->sim.iteration_ms, 4);
		jw_num(&w, "gain_pct", x->gain_pct, 3);
		if (T->tok)
			jw_num(&w, "tokens_per_s", x->tokens_per_s, 1);
		jw_num(&w, "peak_temp_c", x->sim.peak_temp_c, 2);
		jw_num(&w, "throttle_ms", x->sim.throttle_total_ms, 3);
		jw_num(&w, "energy_j", x->sim.energy_j, 2);
		jw_num(&w, "bubble", x->sim.bubble, 4);
		jw_int(&w, "moved_ranks", x->moved);
		jw_str(&w, "decision", verdict_name[x->verdict]);
		jw_bool(&w, "converged", x->sim.converged);
		if (x->layers)
			jw_str(&w, "layers", x->layers);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
	sb_add(b, "\n");
}

/* One renderer per output format. */
static void (*const render[TM_NFORMATS])(strbuf *, const table *) = {
	[TM_FORMAT_TEXT] = render_text,
	[TM_FORMAT_MARKDOWN] = render_markdown,
	[TM_FORMAT_CSV] = render_csv,
	[TM_FORMAT_JSON] = render_json,
};

/* ---- one profile: the picture ----------------------------------------------- */

static int write_svg(const char *path, const table *T, const double *scale,
                     tm_error *err)
{
	const tm_cluster *c = T->c;
	const row *w = T->rows;
	int n = T->n;
	tm_svg_scale sc = { TM_SVG_LO_C, TM_SVG_HI_C };
	int ngpu = 0, rc;
	tm_svg_panel *P = xcalloc((size_t)n, sizeof *P);
	const char **host = xmalloc(sizeof(char *) * (size_t)c->nnodes);
	int *ng = xmalloc(sizeof(int) * (size_t)c->nnodes);
	double *temp;
	char **label, (*sub)[128];

	for (int h = 0; h < c->nnodes; h++) {
		host[h] = c->nodes[h].host;
		ng[h] = c->nodes[h].ngpus;
		ngpu += ng[h];
	}
	temp = xmalloc(sizeof(double) * (size_t)ngpu * (size_t)n);
	label = xcalloc((size_t)ngpu * (size_t)n, sizeof(char *));
	sub = xcalloc((size_t)n, sizeof *sub);
	for (int i = 0; i < n; i++) {
		double *t = &temp[(size_t)i * (size_t)ngpu];
		char **l = &label[(size_t)i * (size_t)ngpu];
		for (int g = 0; g < ngpu; g++)
			t[g] = NAN;
		P[i].title = w[i].pol->name;
		P[i].nhosts = c->nnodes;
		P[i].host = host;
		P[i].ngpus = ng;
		P[i].temp_c = t;
		P[i].label = (const char *const *)l;
		if (w[i].rc) {
			snprintf(sub[i], sizeof sub[i], "%s", w[i].status);
			P[i].subtitle = sub[i];
			continue;
		}
		/* the row's headline numbers, as the table has them */
		snprintf(sub[i], sizeof sub[i], "%.1f ms/iter (%+.2f %%), peak "
		         "%.1f °C, %d moved%s", w[i].sim.iteration_ms,
		         w[i].gain_pct, w[i].sim.peak_temp_c, w[i].moved,
		         w[i].verdict == TM_VERDICT_KEEP ? " (kept)" : "");
		P[i].subtitle = sub[i];
		for (int r = 0; r < w[i].pb->nranks; r++) {
			const tm_problem *pb = w[i].pb;
			int g = w[i].flat[r];
			char buf[48];
			t[g] = w[i].sim.temp_c[r];
			if (pb->nrep > 1)
				snprintf(buf, sizeof buf, "s%d/d%d", pb->rank_stage[r],
				         pb->rank_rep[r]);
			else
				snprintf(buf, sizeof buf, "s%d", pb->rank_stage[r]);
			l[g] = xstrdup(buf);
		}
	}
	if (scale) {
		sc.lo = scale[0];
		sc.hi = scale[1];
	}
	rc = tm_svg_write(path, P, n, &sc, err);
	for (size_t k = 0; k < (size_t)ngpu * (size_t)n; k++)
		free(label[k]);
	free(label);
	free(temp);
	free(sub);
	free(host);
	free(ng);
	free(P);
	return rc;
}

/* ---- one profile ------------------------------------------------------------ */

int tm_compare(const tm_cluster *c, const tm_profile *p, const tm_job *j,
               tm_policy *const *pols, int npol, bool allow, int fmt,
               const char *svg, const double *svg_scale, char **out,
               tm_error *err)
{
	table T;
	tm_run *runs;
	strbuf b;
	int rc;

	*out = NULL;
	if (fmt < 0 || fmt >= TM_NFORMATS || !render[fmt])
		return tm_fail(err, TM_EUSAGE, "compare: unknown output format %d",
		               fmt);
	memset(&T, 0, sizeof T);
	T.c = c;
	T.p = p;
	T.j = j;
	T.tok = isfinite(j->tokens_per_iteration);
	T.n = npol;
	T.rows = xcalloc((size_t)npol, sizeof *T.rows);
	runs = xcalloc((size_t)npol, sizeof *runs);
	if ((rc = identity_sim(c, p, j, allow, &T.id, err)))
		goto out;
	for (int i = 0; i < npol; i++)
		run_row(c, p, j, pols[i], allow, &T.id, &T.rows[i], &runs[i]);
	if (svg && (rc = write_svg(svg, &T, svg_scale, err)))
		goto out;
	sb_init(&b);
	render[fmt](&b, &T);
	*out = b.s;
out:
	for (int i = 0; i < npol; i++) {
		row_clear(&T.rows[i]);
		tm_run_clear(&runs[i]);
	}
	tm_sim_clear(&T.id);
	free(T.rows);
	free(runs);
	return rc;
}

/* ---- replay over a recording: the steps ------------------------------------- */

/* One policy's (or the baseline's) result at one step: planned on window
 * k, scored on window k + 1. */
typedef struct step_res {
	int rc;              /* 0, or the policy could not place */
	char status[16];
	double t;            /* simulated iteration time, ms */
	double gain;         /* over the baseline, % */
	double peak;         /* peak temperature, °C */
	double throttle;     /* throttled time, ms */
	double energy;       /* J */
} step_res;

/* One policy over the steps scored. */
typedef struct replay_sum {
	int steps;           /* steps scored */
	double mean_t;       /* mean iteration time, ms (steps > 0) */
	double mean_gain;    /* mean gain, % (steps > 0) */
	double worst_peak;   /* highest peak, °C (steps > 0) */
	int faster, slower;  /* steps more than 0.1 % faster, slower */
} replay_sum;

/* A comparison over a recording. */
typedef struct replay_table {
	double window;       /* seconds per window */
	double span;         /* the recording's, s */
	int nw;              /* windows */
	char *const *why;    /* per window: why it was skipped, or NULL */
	int npol;
	tm_policy *const *pols;
	int nsteps;          /* nw − 1 */
	step_res *res;       /* nsteps × (npol + 1): [0] the identity
	                        baseline, whose rc marks a step not scored */
	replay_sum *sum;     /* per policy */
} replay_table;

/* The result of policy i (0: the baseline) at step k. */
static const step_res *at(const replay_table *T, int k, int i)
{
	return &T->res[(size_t)k * (size_t)(T->npol + 1) + (size_t)i];
}

/* Plans pol on profile a, then plays that placement on profile b. */
static void replay_one(const tm_cluster *c, const tm_profile *a,
                       const tm_profile *b, const tm_job *j,
                       const tm_policy *pol, bool allow, double t0,
                       step_res *s)
{
	tm_run run;
	tm_problem *pb = NULL;
	tm_error e = { 0, "" };
	tm_sim sim;
	int *flat;

	memset(s, 0, sizeof *s);
	memset(&sim, 0, sizeof sim);
	s->rc = tm_run_policy(c, a, j, pol, allow, &run, &e);
	if (s->rc) {
		snprintf(s->status, sizeof s->status, "%s",
		         s->rc == TM_EINFEASIBLE ? "infeasible" : "error");
		return;
	}
	snprintf(s->status, sizeof s->status, "%s", run.sol.status);
	flat = xmalloc(sizeof(int) * (size_t)run.pb->nranks);
	tm_placement_to_flat(run.pb, run.sol.pl, flat);
	if ((s->rc = tm_problem_new(c, b, run.job ? run.job : j, pol, allow,
	                            &pb, &e)) ||
	    tm_simulate(pb, flat, true, &sim) < 0) {
		if (!s->rc)
			s->rc = TM_EINPUT;
		snprintf(s->status, sizeof s->status, "error");
	} else {
		s->t = sim.iteration_ms;
		s->gain = gain(sim.iteration_ms, t0);
		s->peak = sim.peak_temp_c;
		s->throttle = sim.throttle_total_ms;
		s->energy = sim.energy_j;
	}
	tm_sim_clear(&sim);
	tm_problem_free(pb);
	free(flat);
	tm_run_clear(&run);
}

/* Every step: the baseline on window k + 1, then each policy planned on
 * window k and scored there. */
static void replay_steps(const tm_cluster *c, tm_profile *const *prof,
                         const tm_job *j, bool allow, replay_table *T)
{
	for (int k = 0; k < T->nsteps; k++) {
		step_res *s = &T->res[(size_t)k * (size_t)(T->npol + 1)];
		tm_sim id;
		tm_error e = { 0, "" };
		memset(&id, 0, sizeof id);
		if (!prof[k] || !prof[k + 1] ||
		    identity_sim(c, prof[k + 1], j, allow, &id, &e)) {
			s[0].rc = TM_EINPUT;
			tm_sim_clear(&id);
			continue;
		}
		s[0].t = id.iteration_ms;
		s[0].peak = id.peak_temp_c;
		for (int i = 0; i < T->npol; i++)
			replay_one(c, prof[k], prof[k + 1], j, T->pols[i], allow,
			           id.iteration_ms, &s[i + 1]);
		tm_sim_clear(&id);
	}
}

/* Each policy over the steps scored. */
static void replay_sums(replay_table *T)
{
	for (int i = 1; i <= T->npol; i++) {
		replay_sum *S = &T->sum[i - 1];
		int n = 0, faster = 0, slower = 0;
		double st = 0, sg = 0, pk = -INFINITY;
		for (int k = 0; k < T->nsteps; k++) {
			const step_res *x = at(T, k, i);
			if (at(T, k, 0)->rc || x->rc)
				continue;
			n++;
			st += x->t;
			sg += x->gain;
			pk = fmax(pk, x->peak);
			/* a tenth of a per cent is inside the model's noise */
			faster += x->gain > 0.1;
			slower += x->gain < -0.1;
		}
		S->steps = n;
		S->mean_t = n ? st / n : NAN;
		S->mean_gain = n ? sg / n : NAN;
		S->worst_peak = n ? pk : NAN;
		S->faster = faster;
		S->slower = slower;
	}
}

/* ---- replay over a recording: the renderers ---------------------------------- */

/* What text and markdown say before the table: the windows, and those
 * skipped. */
static void replay_head(strbuf *b, const replay_table *T, bool md)
{
	sb_addf(b, "replay: %.1f s in %d windows of %g s%s; plan on each "
	        "window, score on the next (simulated with thermal feedback)\n",
	        T->span, T->nw, T->window, T->span - T->nw * T->window > 1e-9 ?
	        " (the tail after the last whole window is not used)" : "");
	for (int k = 0; k < T->nw; k++) {
		if (!T->why[k])
			continue;
		sb_addf(b, "%swindow %d (%g–%g s) skipped: ", md ? "- " : "", k,
		        k * T->window, (k + 1) * T->window);
		sb_add_text(b, T->why[k]);
		sb_add(b, "\n");
	}
	sb_add(b, "\n");
}

static void replay_text(strbuf *b, const replay_table *T)
{
	replay_head(b, T, false);
	sb_addf(b, "%4s  %-16s %-10s %12s %8s %9s %11s\n", "step", "policy",
	        "status", "iteration ms", "gain %", "peak °C", "throttle ms");
	for (int k = 0; k < T->nsteps; k++) {
		if (at(T, k, 0)->rc)
			continue;
		for (int i = 1; i <= T->npol; i++) {
			const step_res *x = at(T, k, i);
			char *nm = shown(T->pols[i - 1]->name, false);
			if (x->rc)
				sb_addf(b, "%4d  %-16s %-10s\n", k + 1, nm, x->status);
			else
				sb_addf(b, "%4d  %-16s %-10s %12.2f %+8.2f %8.1f "
				        "%11.1f\n", k + 1, nm, x->status, x->t, x->gain,
				        x->peak, x->throttle);
			free(nm);
		}
	}
	sb_addf(b, "\n%-16s %5s %17s %11s %14s %15s\n", "policy", "steps",
	        "mean iteration ms", "mean gain %", "worst peak °C",
	        "faster / slower");
	for (int i = 0; i < T->npol; i++) {
		const replay_sum *S = &T->sum[i];
		char *nm = shown(T->pols[i]->name, false);
		if (!S->steps)
			sb_addf(b, "%-16s %5d\n", nm, 0);
		else
			sb_addf(b, "%-16s %5d %17.2f %+11.2f %13.1f %9d / %d\n", nm,
			        S->steps, S->mean_t, S->mean_gain, S->worst_peak,
			        S->faster, S->slower);
		free(nm);
	}
}

static void replay_markdown(strbuf *b, const replay_table *T)
{
	replay_head(b, T, true);
	sb_add(b, "| step | policy | status | iteration ms | gain % | peak °C "
	       "| throttle ms |\n|--:|---|---|--:|--:|--:|--:|\n");
	for (int k = 0; k < T->nsteps; k++) {
		if (at(T, k, 0)->rc)
			continue;
		for (int i = 1; i <= T->npol; i++) {
			const step_res *x = at(T, k, i);
			char *nm = shown(T->pols[i - 1]->name, true);
			if (x->rc)
				sb_addf(b, "| %d | %s | %s | – | – | – | – |\n", k + 1, nm,
				        x->status);
			else
				sb_addf(b, "| %d | %s | %s | %.2f | %+.2f | %.1f | %.1f "
				        "|\n", k + 1, nm, x->status, x->t, x->gain, x->peak,
				        x->throttle);
			free(nm);
		}
	}
	sb_add(b, "\n| policy | steps | mean iteration ms | mean gain % | "
	       "worst peak °C | faster / slower |\n|---|--:|--:|--:|--:|--:|\n");
	for (int i = 0; i < T->npol; i++) {
		const replay_sum *S = &T->sum[i];
		char *nm = shown(T->pols[i]->name, true);
		if (!S->steps)
			sb_addf(b, "| %s | 0 | – | – | – | – |\n", nm);
		else
			sb_addf(b, "| %s | %d | %.2f | %+.2f | %.1f | %d / %d |\n", nm,
			        S->steps, S->mean_t, S->mean_gain, S->worst_peak,
			        S->faster, S->slower);
		free(nm);
	}
}

static void replay_csv(strbuf *b, const replay_table *T)
{
	double w = T->window;
	sb_add(b, "step,plan_from_s,plan_to_s,score_from_s,score_to_s,"
	       "policy,status,iteration_ms,gain_pct,peak_temp_c,"
	       "throttle_ms,energy_j\n");
	for (int k = 0; k < T->nsteps; k++) {
		if (at(T, k, 0)->rc)
			continue;
		for (int i = 1; i <= T->npol; i++) {
			const step_res *x = at(T, k, i);
			char *nm = shown(T->pols[i - 1]->name, false);
			sb_addf(b, "%d,%g,%g,%g,%g,", k + 1, k * w, (k + 1) * w,
			        (k + 1) * w, (k + 2) * w);
			csv_str(b, nm);
			if (x->rc)
				sb_addf(b, ",%s,,,,,\n", x->status);
			else
				sb_addf(b, ",%s,%.4f,%.3f,%.2f,%.3f,%.2f\n", x->status,
				        x->t, x->gain, x->peak, x->throttle, x->energy);
			free(nm);
		}
	}
}

static void replay_json(strbuf *b, const replay_table *T)
{
	jw w;
	jw_init(&w, b);
	jw_obj(&w, NULL, false);
	jw_str(&w, "format", "thermap.compare-replay/1");
	jw_num(&w, "window_s", T->window, 3);
	jw_num(&w, "span_s", T->span, 3);
	jw_arr(&w, "windows", false);
	for (int k = 0; k < T->nw; k++) {
		jw_obj(&w, NULL, true);
		jw_int(&w, "window", k);
		jw_num(&w, "from_s", k * T->window, 3);
		jw_num(&w, "to_s", (k + 1) * T->window, 3);
		if (T->why[k])
			jw_str(&w, "skipped", T->why[k]);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_arr(&w, "steps", false);
	for (int k = 0; k < T->nsteps; k++) {
		if (at(T, k, 0)->rc)
			continue;
		for (int i = 0; i <= T->npol; i++) {
			const step_res *x = at(T, k, i);
			jw_obj(&w, NULL, true);
			jw_int(&w, "step", k + 1);
			jw_int(&w, "plan_window", k);
			jw_int(&w, "score_window", k + 1);
			jw_str(&w, "policy", i ? T->pols[i - 1]->name :
			       "identity-baseline");
			if (i)
				jw_str(&w, "status", x->status);
			if (!x->rc) {
				jw_num(&w, "iteration_ms", x->t, 4);
				if (i) {
					jw_num(&w, "gain_pct", x->gain, 3);
					jw_num(&w, "throttle_ms", x->throttle, 3);
				}
				jw_num(&w, "peak_temp_c", x->peak, 2);
			}
			jw_end_obj(&w);
		}
	}
	jw_end_arr(&w);
	jw_arr(&w, "summary", false);
	for (int i = 0; i < T->npol; i++) {
		const replay_sum *S = &T->sum[i];
		jw_obj(&w, NULL, true);
		jw_str(&w, "policy", T->pols[i]->name);
		jw_int(&w, "steps", S->steps);
		if (S->steps) {
			jw_num(&w, "mean_iteration_ms", S->mean_t, 4);
			jw_num(&w, "mean_gain_pct", S->mean_gain, 3);
			jw_num(&w, "worst_peak_temp_c", S->worst_peak, 2);
		}
		jw_int(&w, "faster", S->faster);
		jw_int(&w, "slower", S->slower);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
	sb_add(b, "\n");
}

/* One renderer per output format. */
static void (*const replay_render[TM_NFORMATS])(strbuf *,
                                                const replay_table *) = {
	[TM_FORMAT_TEXT] = replay_text,
	[TM_FORMAT_MARKDOWN] = replay_markdown,
	[TM_FORMAT_CSV] = replay_csv,
	[TM_FORMAT_JSON] = replay_json,
};

/* ---- replay over a recording ------------------------------------------------- */

int tm_compare_replay(const tm_cluster *c, const tm_tele_input *in, int nin,
                      double window, const tm_job *j, tm_policy *const *pols,
                      int npol, bool allow, int fmt, char **out,
                      tm_error *err)
{
	tm_windows W;
	replay_table T;
	strbuf b;
	int rc;

	*out = NULL;
	if (fmt < 0 || fmt >= TM_NFORMATS || !replay_render[fmt])
		return tm_fail(err, TM_EUSAGE, "compare: unknown output format %d",
		               fmt);
	if ((rc = tm_windows_read(c, in, nin, window, j, pols[0], allow, &W,
	                          err)))
		return rc;
	T.window = window;
	T.span = W.span;
	T.nw = W.n;
	T.why = W.why;
	T.npol = npol;
	T.pols = pols;
	T.nsteps = W.n - 1;
	T.res = xcalloc((size_t)T.nsteps * (size_t)(npol + 1), sizeof *T.res);
	T.sum = xcalloc((size_t)(npol ? npol : 1), sizeof *T.sum);
	replay_steps(c, W.prof, j, allow, &T);
	replay_sums(&T);
	sb_init(&b);
	replay_render[fmt](&b, &T);
	*out = b.s;
	tm_windows_clear(&W);
	free(T.res);
	free(T.sum);
	return 0;
}
