/*
 * compare.c — `thermap compare`: runs several policies on one cluster,
 * profile and job, plays each placement in the event-level simulator with
 * thermal feedback (sim.c), and tabulates them against torchrun's default
 * placement of the job as given: iteration time and gain, tokens/s, peak
 * temperature, throttled time, energy, solver status, moved ranks. With a
 * recording instead of a profile (replay), it plans on each window and
 * scores the plan on the next one, as a policy re-planned at every window
 * would have fared. docs/compare.md describes the table.
 */
#include <stdlib.h>
#include <string.h>


#include "ops/ops.h"

/* One policy's result on one profile. */
typedef struct row {
	const tm_policy *pol;
	int rc;              /* 0, or why the policy could not place */
	char error[1024];
	char status[16];
	double gap;
	double model_ms;     /* the model's prediction (plan.json) */
	tm_sim sim;          /* the simulator's, with feedback */
	int moved;           /* ranks not on their identity GPU */
	int verdict;         /* the evidence rule's (enum tm_verdict) */
	char *reason;        /* and its reason, when it kept torchrun's */
	char *layers;        /* "17 15" when the policy changed them */
	int *flat;           /* rank → GPU, NULL after a failure */
	const tm_problem *pb;/* the run's problem, while the run lives */
} row;

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
 * the SVG, freed by the caller. */
static void run_row(const tm_cluster *c, const tm_profile *p, const tm_job *j,
                    const tm_policy *pol, bool allow, row *w, tm_run *run)
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
	if (run->layers) {
		strbuf b;
		sb_init(&b);
		for (int k = 0; k < j->nstages; k++)
			sb_addf(&b, "%s%d", k ? " " : "", run->layers[k]);
		w->layers = b.s;
	}
}

static void row_free(row *w)
{
	tm_sim_free(&w->sim);
	free(w->reason);
	free(w->layers);
	free(w->flat);
}

/* ---- the table ----------------------------------------------------------- */

enum { F_TEXT, F_MARKDOWN, F_CSV, F_JSON };

int tm_compare_format(const char *s)
{
	static const char *const names[] = { "text", "markdown", "csv", "json" };
	for (int i = 0; i < 4; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
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
 * characters (tm_text), in markdown with '|' escaped so that the row keeps
 * its cells. The caller frees it. */
static char *shown(const char *name, int fmt)
{
	strbuf b, m;
	sb_init(&b);
	sb_add_text(&b, name);
	if (fmt != F_MARKDOWN || !strchr(b.s, '|'))
		return b.s;
	sb_init(&m);
	for (const char *c = b.s; *c; c++)
		sb_addf(&m, "%s%c", *c == '|' ? "\\" : "", *c);
	sb_free(&b);
	return m.s;
}

static void table(strbuf *b, int fmt, const tm_job *j, const row *w, int n,
                  const tm_sim *id)
{
	bool tok = isfinite(j->tokens_per_iteration);
	double t0 = id->iteration_ms;
	char *name;

	if (fmt == F_CSV) {
		sb_add(b, "policy,method,status,gap,model_ms,iteration_ms,"
		       "gain_pct,tokens_per_s,peak_temp_c,throttle_ms,energy_j,"
		       "bubble_pct,moved_ranks,decision,layers,converged,error\n");
		for (int i = 0; i < n; i++) {
			const row *r = &w[i];
			name = shown(r->pol->name, fmt);
			csv_str(b, name);
			free(name);
			sb_addf(b, ",%s,%s,", tm_method_name(r->pol->method),
			        r->status);
			if (r->rc) {
				sb_add(b, ",,,,,,,,,,,,,");
				csv_str(b, r->error);
				sb_add(b, "\n");
				continue;
			}
			if (isfinite(r->gap))
				sb_addf(b, "%.6f", r->gap);
			sb_addf(b, ",%.4f,%.4f,%.3f,", r->model_ms,
			        r->sim.iteration_ms, gain(r->sim.iteration_ms, t0));
			if (tok)
				sb_addf(b, "%.1f", j->tokens_per_iteration /
				        r->sim.iteration_ms * 1e3);
			sb_addf(b, ",%.2f,%.3f,%.2f,%.2f,%d,%s,%s,%s,\n",
			        r->sim.peak_temp_c, r->sim.throttle_total_ms,
			        r->sim.energy_j, r->sim.bubble * 100, r->moved,
			        verdict_name[r->verdict], r->layers ? r->layers : "",
			        r->sim.converged ? "true" : "false");
		}
		return;
	}
	if (fmt == F_MARKDOWN) {
		sb_addf(b, "| policy | status | iteration ms | gain %% |%s "
		        "peak °C | throttle ms | energy J | bubble %% | moved | "
		        "layers |\n|---|---|--:|--:|%s--:|--:|--:|--:|--:|---|\n",
		        tok ? " tokens/s |" : "", tok ? "--:|" : "");
	} else {
		sb_addf(b, "%-16s %-10s %12s %8s%s %9s %11s %9s %8s %5s  %s\n",
		        "policy", "status", "iteration ms", "gain %",
		        tok ? "   tokens/s" : "", "peak °C", "throttle ms",
		        "energy J", "bubble %", "moved", "layers");
	}
	for (int i = 0; i < n; i++) {
		const row *r = &w[i];
		char tk[32] = "", st[32];
		name = shown(r->pol->name, fmt);
		if (r->rc) {
			if (fmt == F_MARKDOWN)
				sb_addf(b, "| %s | %s | – | – |%s – | – | – | – | – | – |\n",
				        name, r->status, tok ? " – |" : "");
			else
				sb_addf(b, "%-16s %-10s %12s\n", name, r->status, "–");
			free(name);
			continue;
		}
		if (tok)
			snprintf(tk, sizeof tk, "%.0f", j->tokens_per_iteration /
			         r->sim.iteration_ms * 1e3);
		snprintf(st, sizeof st, "%s%s", r->status,
		         r->sim.converged ? "" : "*");
		if (fmt == F_MARKDOWN) {
			sb_addf(b, "| %s | %s | %.2f | %+.2f |", name, st,
			        r->sim.iteration_ms, gain(r->sim.iteration_ms, t0));
			if (tok)
				sb_addf(b, " %s |", tk);
			sb_addf(b, " %.1f | %.1f | %.1f | %.1f | %d | %s |\n",
			        r->sim.peak_temp_c, r->sim.throttle_total_ms,
			        r->sim.energy_j, r->sim.bubble * 100, r->moved,
			        r->layers ? r->layers : "as job");
		} else {
			sb_addf(b, "%-16s %-10s %12.2f %+8.2f", name, st,
			        r->sim.iteration_ms, gain(r->sim.iteration_ms, t0));
			if (tok)
				sb_addf(b, " %10s", tk);
			sb_addf(b, " %8.1f %11.1f %9.1f %8.1f %5d  %s\n",
			        r->sim.peak_temp_c, r->sim.throttle_total_ms,
			        r->sim.energy_j, r->sim.bubble * 100, r->moved,
			        r->layers ? r->layers : "as job");
		}
		free(name);
	}
}

static void notes(strbuf *b, int fmt, const row *w, int n, const tm_sim *id)
{
	const char *pre = fmt == F_MARKDOWN ? "\n- " : "";
	bool unconv = false;
	sb_addf(b, "%sgain: over torchrun's placement of the job as given "
	        "(identity, %.2f ms simulated)\n", pre, id->iteration_ms);
	sb_addf(b, "%stimes, temperatures, throttling and energy: one "
	        "simulated iteration with thermal feedback "
	        "(docs/model.md, 14)\n", fmt == F_MARKDOWN ? "- " : "");
	for (int i = 0; i < n; i++) {
		const char *why = w[i].rc ? w[i].error : w[i].reason;
		if (why) {
			char *name = shown(w[i].pol->name, fmt);
			sb_addf(b, "%s%s: ", fmt == F_MARKDOWN ? "- " : "", name);
			sb_add_text(b, why);
			sb_add(b, "\n");
			free(name);
		}
		if (!w[i].rc && !w[i].sim.converged)
			unconv = true;
	}
	if (unconv)
		sb_addf(b, "%s*: the clocks did not settle in 200 feedback "
		        "rounds; the last round is shown\n",
		        fmt == F_MARKDOWN ? "- " : "");
}

static void json_rows(jw *w, const tm_job *j, const row *r, int n,
                      const tm_sim *id)
{
	jw_arr(w, "policies", false);
	for (int i = 0; i < n; i++) {
		const row *x = &r[i];
		jw_obj(w, NULL, true);
		jw_str(w, "policy", x->pol->name);
		jw_str(w, "method", tm_method_name(x->pol->method));
		jw_str(w, "status", x->status);
		if (x->rc) {
			jw_str(w, "error", x->error);
			jw_end_obj(w);
			continue;
		}
		jw_num(w, "gap", x->gap, 6);
		jw_num(w, "model_iteration_ms", x->model_ms, 4);
		jw_num(w, "iteration_ms", x->sim.iteration_ms, 4);
		jw_num(w, "gain_pct", gain(x->sim.iteration_ms, id->iteration_ms),
		       3);
		if (isfinite(j->tokens_per_iteration))
			jw_num(w, "tokens_per_s", j->tokens_per_iteration /
			       x->sim.iteration_ms * 1e3, 1);
		jw_num(w, "peak_temp_c", x->sim.peak_temp_c, 2);
		jw_num(w, "throttle_ms", x->sim.throttle_total_ms, 3);
		jw_num(w, "energy_j", x->sim.energy_j, 2);
		jw_num(w, "bubble", x->sim.bubble, 4);
		jw_int(w, "moved_ranks", x->moved);
		jw_str(w, "decision", verdict_name[x->verdict]);
		jw_bool(w, "converged", x->sim.converged);
		if (x->layers)
			jw_str(w, "layers", x->layers);
		jw_end_obj(w);
	}
	jw_end_arr(w);
}

/* ---- the picture ------------------------------------------------------------ */

static int write_svg(const char *path, const tm_cluster *c, const row *w,
                     int n, const tm_sim *id, const double *scale,
                     tm_error *err)
{
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
		         gain(w[i].sim.iteration_ms, id->iteration_ms),
		         w[i].sim.peak_temp_c, w[i].moved,
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
	row *w = xcalloc((size_t)npol, sizeof *w);
	tm_run *runs = xcalloc((size_t)npol, sizeof *runs);
	tm_sim id;
	strbuf b;
	int rc;

	*out = NULL;
	if ((rc = identity_sim(c, p, j, allow, &id, err)))
		goto out;
	for (int i = 0; i < npol; i++)
		run_row(c, p, j, pols[i], allow, &w[i], &runs[i]);
	if (svg && (rc = write_svg(svg, c, w, npol, &id, svg_scale, err)))
		goto out;
	sb_init(&b);
	if (fmt == F_JSON) {
		jw jv;
		jw_init(&jv, &b);
		jw_obj(&jv, NULL, false);
		jw_str(&jv, "format", "thermap.compare/1");
		jw_obj(&jv, "inputs", true);
		jw_str(&jv, "cluster", c->sha256);
		jw_str(&jv, "profile", p->sha256);
		jw_str(&jv, "job", j->sha256);
		jw_end_obj(&jv);
		jw_obj(&jv, "baseline", true);
		jw_str(&jv, "policy", "identity");
		jw_num(&jv, "iteration_ms", id.iteration_ms, 4);
		jw_num(&jv, "peak_temp_c", id.peak_temp_c, 2);
		jw_end_obj(&jv);
		json_rows(&jv, j, w, npol, &id);
		jw_end_obj(&jv);
		sb_add(&b, "\n");
	} else {
		if (fmt == F_TEXT)
			sb_addf(&b, "%d ranks (tp %d, pp %d, dp %d, vpp %d), %s, %d "
			        "microbatches\n", j->world, j->size[TM_TP],
			        j->size[TM_PP], j->size[TM_DP], j->vpp,
			        j->sched == TM_SCHED_GPIPE ? "gpipe" :
			        j->sched == TM_SCHED_INTERLEAVED ? "interleaved 1f1b" :
			        "1f1b", j->microbatches);
		table(&b, fmt, j, w, npol, &id);
		if (fmt != F_CSV)
			notes(&b, fmt, w, npol, &id);
	}
	*out = b.s;
out:
	for (int i = 0; i < npol; i++) {
		row_free(&w[i]);
		tm_run_free(&runs[i]);
	}
	tm_sim_free(&id);
	free(w);
	free(runs);
	return rc;
}

/* ---- replay over a recording ------------------------------------------------ */

typedef struct step_res {
	int rc;              /* 0, or the policy could not place */
	char status[16];
	double t, gain, peak, throttle, energy;
} step_res;

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
	tm_sim_free(&sim);
	tm_problem_free(pb);
	free(flat);
	tm_run_free(&run);
}

int tm_compare_replay(const tm_cluster *c, const tm_tele_input *in, int nin,
                      double window, const tm_job *j, tm_policy *const *pols,
                      int npol, bool allow, int fmt, char **out,
                      tm_error *err)
{
	tm_windows W;
	tm_profile **prof;
	char **why;
	step_res *res = NULL;
	double span;
	int nw, rc, nsteps;
	strbuf b;
	jw jv;

	*out = NULL;
	if ((rc = tm_windows_read(c, in, nin, window, j, pols[0], allow, &W,
	                          err)))
		return rc;
	span = W.span;
	nw = W.n;
	prof = W.prof;
	why = W.why;
	nsteps = nw - 1;
	res = xcalloc((size_t)nsteps * (size_t)(npol + 1), sizeof *res);
	for (int k = 0; k < nsteps; k++) {
		step_res *s = &res[(size_t)k * (size_t)(npol + 1)];
		tm_sim id;
		tm_error e = { 0, "" };
		memset(&id, 0, sizeof id);
		if (!prof[k] || !prof[k + 1] ||
		    identity_sim(c, prof[k + 1], j, allow, &id, &e)) {
			s[0].rc = TM_EINPUT;
			tm_sim_free(&id);
			continue;
		}
		s[0].t = id.iteration_ms;
		s[0].peak = id.peak_temp_c;
		for (int i = 0; i < npol; i++)
			replay_one(c, prof[k], prof[k + 1], j, pols[i], allow,
			           id.iteration_ms, &s[i + 1]);
		tm_sim_free(&id);
	}

	sb_init(&b);
	if (fmt == F_CSV)
		sb_add(&b, "step,plan_from_s,plan_to_s,score_from_s,score_to_s,"
		       "policy,status,iteration_ms,gain_pct,peak_temp_c,"
		       "throttle_ms,energy_j\n");
	if (fmt == F_JSON) {
		jw_init(&jv, &b);
		jw_obj(&jv, NULL, false);
		jw_str(&jv, "format", "thermap.compare-replay/1");
		jw_num(&jv, "window_s", window, 3);
		jw_num(&jv, "span_s", span, 3);
		jw_arr(&jv, "windows", false);
		for (int k = 0; k < nw; k++) {
			jw_obj(&jv, NULL, true);
			jw_int(&jv, "window", k);
			jw_num(&jv, "from_s", k * window, 3);
			jw_num(&jv, "to_s", (k + 1) * window, 3);
			if (why[k])
				jw_str(&jv, "skipped", why[k]);
			jw_end_obj(&jv);
		}
		jw_end_arr(&jv);
		jw_arr(&jv, "steps", false);
	}
	if (fmt == F_TEXT || fmt == F_MARKDOWN) {
		sb_addf(&b, "%sreplay: %.1f s in %d windows of %g s%s; plan on "
		        "each window, score on the next (simulated with thermal "
		        "feedback)\n", fmt == F_MARKDOWN ? "" : "", span, nw,
		        window, span - nw * window > 1e-9 ? " (the tail after the "
		        "last whole window is not used)" : "");
		for (int k = 0; k < nw; k++) {
			if (!why[k])
				continue;
			sb_addf(&b, "%swindow %d (%g–%g s) skipped: ",
			        fmt == F_MARKDOWN ? "- " : "", k, k * window,
			        (k + 1) * window);
			sb_add_text(&b, why[k]);
			sb_add(&b, "\n");
		}
		sb_add(&b, "\n");
		if (fmt == F_MARKDOWN)
			sb_add(&b, "| step | policy | status | iteration ms | gain % "
			       "| peak °C | throttle ms |\n|--:|---|---|--:|--:|--:|"
			       "--:|\n");
		else
			sb_addf(&b, "%4s  %-16s %-10s %12s %8s %9s %11s\n", "step",
			        "policy", "status", "iteration ms", "gain %",
			        "peak °C", "throttle ms");
	}
	for (int k = 0; k < nsteps; k++) {
		step_res *s = &res[(size_t)k * (size_t)(npol + 1)];
		if (s[0].rc)
			continue;
		for (int i = 0; i <= npol; i++) {
			const char *name = i ? pols[i - 1]->name : "(torchrun)";
			const step_res *x = &s[i];
			char *nm;
			if (!i && fmt != F_JSON)
				continue;  /* the baseline is the gain's zero */
			nm = shown(name, fmt);
			if (fmt == F_CSV) {
				sb_addf(&b, "%d,%g,%g,%g,%g,", k + 1, k * window,
				        (k + 1) * window, (k + 1) * window,
				        (k + 2) * window);
				csv_str(&b, nm);
				if (x->rc)
					sb_addf(&b, ",%s,,,,,\n", x->status);
				else
					sb_addf(&b, ",%s,%.4f,%.3f,%.2f,%.3f,%.2f\n",
					        x->status, x->t, x->gain, x->peak,
					        x->throttle, x->energy);
			} else if (fmt == F_JSON) {
				jw_obj(&jv, NULL, true);
				jw_int(&jv, "step", k + 1);
				jw_int(&jv, "plan_window", k);
				jw_int(&jv, "score_window", k + 1);
				jw_str(&jv, "policy", i ? name : "identity-baseline");
				if (i)
					jw_str(&jv, "status", x->status);
				if (!x->rc) {
					jw_num(&jv, "iteration_ms", x->t, 4);
					if (i) {
						jw_num(&jv, "gain_pct", x->gain, 3);
						jw_num(&jv, "throttle_ms", x->throttle, 3);
					}
					jw_num(&jv, "peak_temp_c", x->peak, 2);
				}
				jw_end_obj(&jv);
			} else if (x->rc) {
				sb_addf(&b, fmt == F_MARKDOWN ? "| %d | %s | %s | – | – | "
				        "– | – |\n" : "%4d  %-16s %-10s\n", k + 1, nm,
				        x->status);
			} else {
				sb_addf(&b, fmt == F_MARKDOWN ? "| %d | %s | %s | %.2f | "
				        "%+.2f | %.1f | %.1f |\n" : "%4d  %-16s %-10s "
				        "%12.2f %+8.2f %8.1f %11.1f\n", k + 1, nm,
				        x->status, x->t, x->gain, x->peak, x->throttle);
			}
			free(nm);
		}
	}
	if (fmt == F_JSON)
		jw_end_arr(&jv);
	/* per policy over the steps scored */
	if (fmt == F_JSON)
		jw_arr(&jv, "summary", false);
	else if (fmt != F_CSV)
		sb_addf(&b, fmt == F_MARKDOWN ? "\n| policy | steps | mean "
		        "iteration ms | mean gain %% | worst peak °C | faster / "
		        "slower |\n|---|--:|--:|--:|--:|--:|\n" :
		        "\n%-16s %5s %17s %11s %14s %15s\n", "policy", "steps",
		        "mean iteration ms", "mean gain %", "worst peak °C",
		        "faster / slower");
	for (int i = 1; i <= npol && fmt != F_CSV; i++) {
		int n = 0, faster = 0, slower = 0;
		double st = 0, sg = 0, pk = -INFINITY;
		for (int k = 0; k < nsteps; k++) {
			const step_res *x = &res[(size_t)k * (size_t)(npol + 1) +
			                         (size_t)i];
			if (res[(size_t)k * (size_t)(npol + 1)].rc || x->rc)
				continue;
			n++;
			st += x->t;
			sg += x->gain;
			pk = fmax(pk, x->peak);
			/* a tenth of a per cent is inside the model's noise */
			faster += x->gain > 0.1;
			slower += x->gain < -0.1;
		}
		if (fmt == F_JSON) {
			jw_obj(&jv, NULL, true);
			jw_str(&jv, "policy", pols[i - 1]->name);
			jw_int(&jv, "steps", n);
			if (n) {
				jw_num(&jv, "mean_iteration_ms", st / n, 4);
				jw_num(&jv, "mean_gain_pct", sg / n, 3);
				jw_num(&jv, "worst_peak_temp_c", pk, 2);
			}
			jw_int(&jv, "faster", faster);
			jw_int(&jv, "slower", slower);
			jw_end_obj(&jv);
		} else {
			char *nm = shown(pols[i - 1]->name, fmt);
			if (!n)
				sb_addf(&b, fmt == F_MARKDOWN ? "| %s | 0 | – | – | – | "
				        "– |\n" : "%-16s %5d\n", nm, 0);
			else
				sb_addf(&b, fmt == F_MARKDOWN ? "| %s | %d | %.2f | "
				        "%+.2f | %.1f | %d / %d |\n" : "%-16s %5d %17.2f "
				        "%+11.2f %13.1f %9d / %d\n", nm, n, st / n,
				        sg / n, pk, faster, slower);
			free(nm);
		}
	}
	if (fmt == F_JSON) {
		jw_end_arr(&jv);
		jw_end_obj(&jv);
		sb_add(&b, "\n");
	}
	*out = b.s;
	tm_windows_clear(&W);
	free(res);
	return 0;
}
