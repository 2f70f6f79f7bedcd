/*
 * phases.c — the load phases of `thermap profile --phases`
 * (docs/profile.md, "Neighbours: --phases"). A phases file, written by
 * the script that loaded the GPUs, says when each phase ran; it is read
 * here as untrusted input. At the end of a run the phase means of every
 * GPU (kept by stats.c) become, host by host, the steady states of the
 * joint fit of format/coupling.c: a GPU whose neighbours' power the
 * phases move apart from its own gets a coupling, and its ambient and
 * slope without their heat.
 *
 * It calls stats.c (the means), parse.c (times) and the format layer;
 * sink.c calls it at the end, read.c to read the file.
 */
#include <stdlib.h>
#include <string.h>

#include "telemetry/telemetry.h"

/* ---- the file ------------------------------------------------------------- */

void tl_phases_free(tl_phases *ph)
{
	if (!ph)
		return;
	free(ph->file);
	free(ph->p);
	free(ph);
}

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The blank-separated words of line[0..n): up to max of them into w/wn;
 * returns how many there are (also past max). */
static int words(const char *line, size_t n, const char **w, size_t *wn,
                 int max)
{
	int k = 0;
	size_t i = 0;
	while (i < n) {
		size_t j;
		while (i < n && blank(line[i]))
			i++;
		if (i == n)
			break;
		for (j = i; j < n && !blank(line[j]); j++)
			;
		if (k < max) {
			w[k] = line + i;
			wn[k] = j - i;
		}
		k++;
		i = j;
	}
	return k;
}

/* START or END of a phase: a time tl_parse_time reads, within the range
 * of sample times. */
static int phase_time(const char *file, long line, const char *what,
                      const char *w, size_t n, double *t, tm_error *err)
{
	char msg[256];
	if (!tl_parse_time(w, n, t))
		return tm_fail(err, TM_EINPUT, "%s:%ld: %s '%.*s': expected a "
		               "time: seconds since 1970 (1795796994.08), or ISO "
		               "8601 without blanks (2026-11-27T16:29:54.08Z)", file,
		               line, what, (int)(n < 60 ? n : 60), w);
	if (tl_check_time(*t, msg, sizeof msg))
		return tm_fail(err, TM_EINPUT, "%s:%ld: %s: %s", file, line, what,
		               msg);
	return 0;
}

/* One line that is neither blank nor a comment: a phase into *p. */
static int phase_line(const char *file, long line, const char *text,
                      size_t n, tl_phase *p, tm_error *err)
{
	const char *w[3];
	size_t wn[3];
	int k = words(text, n, w, wn, 3), rc;

	if (k != 3)
		return tm_fail(err, TM_EINPUT, "%s:%ld: %d word%s; expected START "
		               "END LABEL separated by blanks", file, line, k,
		               k == 1 ? "" : "s");
	if ((rc = phase_time(file, line, "START", w[0], wn[0], &p->start,
	                     err)) ||
	    (rc = phase_time(file, line, "END", w[1], wn[1], &p->end, err)))
		return rc;
	if (!(p->end > p->start))
		return tm_fail(err, TM_EINPUT, "%s:%ld: END '%.*s' is not after "
		               "START '%.*s'; expected a phase that ends after it "
		               "starts", file, line, (int)(wn[1] < 60 ? wn[1] : 60),
		               w[1], (int)(wn[0] < 60 ? wn[0] : 60), w[0]);
	for (size_t i = 0; i < wn[2]; i++)
		if (wn[2] > TL_PHASE_LABEL_MAX || (unsigned char)w[2][i] < 0x21 ||
		    (unsigned char)w[2][i] > 0x7e)
			return tm_fail(err, TM_EINPUT, "%s:%ld: LABEL '%.*s': "
			               "expected one word of at most %d printable "
			               "ASCII bytes (idle, all, all-but-0)", file,
			               line, (int)(wn[2] < 70 ? wn[2] : 70), w[2],
			               TL_PHASE_LABEL_MAX);
	memcpy(p->label, w[2], wn[2]);
	p->label[wn[2]] = '\0';
	p->line = line;
	/* the samples that count (docs/profile.md) */
	p->lo = p->start + TL_PHASE_SETTLE_S;
	p->hi = p->end - TL_PHASE_GUARD_S;
	return 0;
}

static int by_start(const void *a, const void *b, void *ctx)
{
	const tl_phase *x = a, *y = b;
	(void)ctx;
	return (x->start > y->start) - (x->start < y->start);
}

int tl_phases_parse(const char *file, const char *text, size_t len,
                    tl_phases **out, tm_error *err)
{
	tl_phases *ph = xcalloc(1, sizeof *ph);
	const char *p = text, *e = text + len;
	long line = 0;
	int cap = 0, rc = 0;

	*out = NULL;
	ph->file = xstrdup(file);
	while (p < e && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t n = (size_t)((nl ? nl : e) - p), i = 0;
		line++;
		if (n && p[n - 1] == '\r')
			n--;
		if (n > TL_PHASE_LINE_MAX) {
			rc = tm_fail(err, TM_EINPUT, "%s:%ld: line longer than %d "
			             "bytes; expected START END LABEL", file, line,
			             TL_PHASE_LINE_MAX);
		} else if (memchr(p, '\0', n)) {
			rc = tm_fail(err, TM_EINPUT, "%s:%ld: NUL byte: binary data; "
			             "expected text lines START END LABEL", file, line);
		} else {
			while (i < n && blank(p[i]))
				i++;
			if (i < n && p[i] != '#') {
				if (ph->n == TL_PHASES_MAX)
					rc = tm_fail(err, TM_EINPUT, "%s:%ld: more than %d "
					             "phases; expected at most %d", file, line,
					             TL_PHASES_MAX, TL_PHASES_MAX);
				if (!rc && ph->n == cap) {
					cap = cap ? 2 * cap : 16;
					ph->p = xrealloc(ph->p, sizeof *ph->p * (size_t)cap);
				}
				if (!rc)
					rc = phase_line(file, line, p, n, &ph->p[ph->n++],
					                err);
			}
		}
		p = nl ? nl + 1 : e;
	}
	if (!rc && ph->n == 0)
		rc = tm_fail(err, TM_EINPUT, "%s: no phases; expected a line "
		             "START END LABEL for each (# starts a comment)", file);
	if (!rc) {
		/* in time order, whatever the file's; a sample belongs to one
		 * phase at most */
		tm_sort(ph->p, (size_t)ph->n, sizeof *ph->p, by_start, NULL);
		for (int i = 1; i < ph->n && !rc; i++) {
			const tl_phase *a = &ph->p[i - 1], *b = &ph->p[i];
			if (b->start < a->end)
				rc = tm_fail(err, TM_EINPUT, "%s:%ld: phase %s starts "
				             "%.3f s before phase %s of line %ld ends; "
				             "expected phases that do not overlap", file,
				             b->line, b->label, a->end - b->start,
				             a->label, a->line);
		}
	}
	if (rc) {
		tl_phases_free(ph);
		return rc;
	}
	*out = ph;
	return 0;
}

int tl_phases_read(const char *file, tl_phases **out, tm_error *err)
{
	char *text;
	size_t len;
	int rc;

	*out = NULL;
	if ((rc = tm_read_file(file, TL_PHASES_MAX_BYTES, &text, &len, err)))
		return rc;
	rc = tl_phases_parse(file, text, len, out, err);
	free(text);
	return rc;
}

/* ---- the couplings --------------------------------------------------------- */


/* "host h GPU 1" (or its UUID, or its bus id, where it has no index) */
static const char *gpu_name(const tl_ident *g, char *buf, size_t cap)
{
	if (g->index >= 0)
		snprintf(buf, cap, "host %s GPU %d", g->host, g->index);
	else
		snprintf(buf, cap, "host %s GPU %s", g->host,
		         g->uuid ? g->uuid : g->pci ? g->pci : "?");
	return buf;
}

/* Where the GPUs left without a coupling are, per reason: the report,
 * and the last host (the position of its first entry) counted for each
 * reason. */
typedef struct tally {
	tl_couple_report *rep;
	int last_host[TL_NNC];
} tally;

/* GPU g, of the host whose entries start at h0, left without a coupling,
 * for its reason's line. */
static void no_coupling(tally *t, int kind, const tl_ident *g, int h0,
                        const char *why)
{
	tl_couple_report *rep = t->rep;
	char name[320];
	if (rep->no[kind].gpus++ == 0)
		snprintf(rep->no[kind].first, sizeof rep->no[kind].first,
		         "%s: %s", gpu_name(g, name, sizeof name), why);
	if (t->last_host[kind] != h0) {
		t->last_host[kind] = h0;
		rep->no[kind].hosts++;
	}
}

static const int kind_of_fit[TM_FIT_NKINDS] = {
	[TM_FIT_FEW] = TL_NC_FEW, [TM_FIT_NOT_FINITE] = TL_NC_MISSING,
	[TM_FIT_SINGULAR] = TL_NC_SINGULAR,
	[TM_FIT_UNCERTAIN] = TL_NC_UNCERTAIN,
	[TM_FIT_NOT_PHYSICAL] = TL_NC_PHYSICAL,
};

/* The phases counted for a host: those where every GPU of it has
 * TL_PHASE_MIN_SAMPLES samples in the counted span. */
static int counted_phases(const tl_phases *ph, tl_gpu_stats *const *st,
                          int g, int ng, int *which)
{
	int n = 0;
	for (int i = 0; i < ph->n; i++) {
		bool all = true;
		double t, p;
		for (int k = 0; k < ng && all; k++)
			all = tl_gpu_stats_phase(st[g + k], i, &t, &p) >=
			      TL_PHASE_MIN_SAMPLES;
		if (all)
			which[n++] = i;
	}
	return n;
}

/* "thermap profile: joint fit over 10 phases of FILE (idle, only-0, ...),
 * residual sd 0.40 °C": the labels once each, in time order, at most 8. */
static char *how_line(const tl_phases *ph, const int *which, int n,
                      double sd)
{
	strbuf b;
	int shown = 0;
	sb_init(&b);
	sb_addf(&b, "thermap profile: joint fit over %d phases of %s (", n,
	        ph->file);
	for (int i = 0; i < n; i++) {
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = !strcmp(ph->p[which[j]].label, ph->p[which[i]].label);
		if (seen)
			continue;
		if (shown == 8) {
			sb_add(&b, ", …");
			break;
		}
		sb_addf(&b, "%s%s", shown ? ", " : "", ph->p[which[i]].label);
		shown++;
	}
	sb_addf(&b, "), residual sd %.2f °C", tm_round_as_written(sd, 2));
	return b.s;
}

/* GPU g of the host whose entries are out[h0 .. h0+ng): its coupling over
 * the counted phases, fitted; on the entry when identified. */
static void couple_gpu(const tl_phases *ph, const tl_ident *id,
                       tl_gpu_stats *const *st, tm_gpu_profile *out,
                       int h0, int ng, int g, const int *which, int nw,
                       tally *t)
{
	tm_coupling *c = xcalloc(1, sizeof *c);
	double *idle = xcalloc((size_t)ng, sizeof *idle);
	int w = 1 + ng, k = 0;
	tm_thermal_fit fit;
	tm_gpu_profile *o = &out[g];
	char why[300];

	c->nfrom = ng - 1;
	c->from = xcalloc((size_t)ng, sizeof *c->from);
	for (int s = h0; s < h0 + ng; s++) {
		if (s == g)
			continue;
		c->from[k].index = id[s].index;
		c->from[k].uuid = id[s].uuid ? xstrdup(id[s].uuid) : NULL;
		c->from[k].c_per_w = 0;
		c->from[k].sd_c_per_w = NAN;
		/* the model subtracts the idle power the profile holds */
		idle[k] = out[s].power_idle_w;
		if (id[s].index < 0 && !id[s].uuid) {
			char name[320];
			snprintf(why, sizeof why, "%s has neither an index nor a "
			         "UUID to name it by as a neighbour",
			         gpu_name(&id[s], name, sizeof name));
			no_coupling(t, TL_NC_MISSING, &id[g], h0, why);
			goto out;
		}
		if (isnan(idle[k])) {
			char name[320];
			snprintf(why, sizeof why, "%s has no power_idle_w",
			         gpu_name(&id[s], name, sizeof name));
			no_coupling(t, TL_NC_MISSING, &id[g], h0, why);
			goto out;
		}
		k++;
	}
	c->npoints = nw;
	c->points = xcalloc((size_t)nw * (size_t)w, sizeof(double));
	c->point_source = xcalloc((size_t)nw, sizeof(char *));
	for (int i = 0; i < nw; i++) {
		double *q = &c->points[(size_t)i * (size_t)w], temp, power;
		tl_gpu_stats_phase(st[g], which[i], &temp, &power);
		q[0] = tm_round_as_written(temp, 2);
		q[1] = tm_round_as_written(power, 2);
		k = 2;
		for (int s = h0; s < h0 + ng; s++)
			if (s != g) {
				tl_gpu_stats_phase(st[s], which[i], &temp, &power);
				q[k++] = tm_round_as_written(power, 2);
			}
		c->point_source[i] = xmalloc(strlen(ph->p[which[i]].label) + 7);
		sprintf(c->point_source[i], "phase %s", ph->p[which[i]].label);
	}
	if (!tm_coupling_fit(c, idle, &fit)) {
		no_coupling(t, kind_of_fit[fit.kind], &id[g], h0, fit.why);
		goto out;
	}
	c->how = how_line(ph, which, nw, fit.sd_c);
	/* the joint fit replaces the own one: its ambient and slope are the
	 * GPU's without its neighbours' heat, and they are measured */
	o->ambient_c = fit.ambient_c;
	o->r_c_per_w = fit.r_c_per_w;
	o->temp_fit_sd_c = fit.sd_c;
	tm_gpu_profile_mark(o, false, TM_PF_AMBIENT_C, NULL);
	tm_gpu_profile_mark(o, false, TM_PF_R_C_PER_W, NULL);
	tm_gpu_profile_mark(o, false, TM_PF_TEMP_FIT_SD_C, NULL);
	tm_gpu_profile_round(o);
	tm_coupling_free(o->coupling);
	o->coupling = c;
	c = NULL;
	t->rep->coupled++;
out:
	tm_coupling_free(c);
	free(idle);
}

/* One warning per reason: how many GPUs on how many hosts, and the
 * first of them, so that a fleet gets a few lines, not one per GPU. */
static void warn_report(const tl_couple_report *rep)
{
	static const char *const what[TL_NNC] = {
		[TL_NC_FEW] = "too few phases count",
		[TL_NC_MISSING] = "a number or a name the fit needs is missing",
		/* (one string in parentheses: clang's -Wstring-concatenation) */
		[TL_NC_SINGULAR] = ("the phases never move a neighbour's power "
		                    "apart from the others'"),
		[TL_NC_UNCERTAIN] = "a neighbour's coupling is too uncertain",
		[TL_NC_PHYSICAL] = "the joint fit is not physical",
	};
	for (int r = 0; r < TL_NNC; r++)
		if (rep->no[r].gpus)
			tm_warn("%s: %ld GPU%s on %ld host%s get%s no coupling and "
			        "keep%s %s own fit: %s (first: %s)", rep->file,
			        rep->no[r].gpus, rep->no[r].gpus == 1 ? "" : "s",
			        rep->no[r].hosts, rep->no[r].hosts == 1 ? "" : "s",
			        rep->no[r].gpus == 1 ? "s" : "",
			        rep->no[r].gpus == 1 ? "s" : "",
			        rep->no[r].gpus == 1 ? "its" : "their", what[r],
			        rep->no[r].first);
}

int tl_couple(const tl_phases *ph, const tl_ident *id,
              tl_gpu_stats *const *st, int m, tm_gpu_profile *out,
              tl_couple_report *rep, tm_error *err)
{
	int *which = xmalloc(sizeof(int) * (size_t)(ph->n ? ph->n : 1));
	long numbers = 0;
	int rc = 0;
	tally t = { rep, { 0 } };

	memset(rep, 0, sizeof *rep);
	for (int r = 0; r < TL_NNC; r++)
		t.last_host[r] = -1;
	rep->file = ph->file;
	rep->nphases = ph->n;
	rep->counted_min = rep->counted_max = -1;
	for (int h0 = 0, h1; h0 < m && !rc; h0 = h1) {
		int ng, nw;
		for (h1 = h0 + 1; h1 < m && !strcmp(id[h1].host, id[h0].host); h1++)
			;
		ng = h1 - h0;
		rep->hosts++;
		rep->gpus += ng;
		if (ng == 1) {
			rep->alone++;
			continue;
		}
		nw = counted_phases(ph, st, h0, ng, which);
		if (rep->counted_min < 0 || nw < rep->counted_min)
			rep->counted_min = nw;
		if (nw > rep->counted_max)
			rep->counted_max = nw;
		if (nw > TM_COUPLING_MAX_POINTS) {
			rc = tm_fail(err, TM_EINPUT, "%s: %d phases count for host "
			             "%s; a profile's coupling holds at most %d steady "
			             "states: give at most %d phases", ph->file, nw,
			             id[h0].host, TM_COUPLING_MAX_POINTS,
			             TM_COUPLING_MAX_POINTS);
			break;
		}
		if (nw >= ng + 2) {
			/* what the host's couplings will hold, at most */
			numbers += (long)nw * (ng + 1) * ng;
			if (numbers > TL_MAX_COUPLING_NUMBERS) {
				rc = tm_fail(err, TM_EINPUT, "%s: the couplings would "
				             "hold more than %ld numbers, more than a "
				             "profile can: profile the hosts in parts",
				             ph->file, TL_MAX_COUPLING_NUMBERS);
				break;
			}
		}
		for (int g = h0; g < h1; g++) {
			if (nw < ng + 2) {
				char why[300];
				snprintf(why, sizeof why, "%d of the %d phases count "
				         "for its host (every GPU needs %d samples from "
				         "%.0f s after a phase starts to %.0f s before it "
				         "ends); the fit of %d GPUs needs %d", nw, ph->n,
				         TL_PHASE_MIN_SAMPLES, TL_PHASE_SETTLE_S,
				         TL_PHASE_GUARD_S, ng, ng + 2);
				no_coupling(&t, TL_NC_FEW, &id[g], h0, why);
			} else {
				couple_gpu(ph, id, st, out, h0, ng, g, which, nw, &t);
			}
		}
	}
	free(which);
	if (!rc)
		warn_report(rep);
	return rc;
}

void tl_couple_summary(jw *w, const tl_couple_report *rep)
{
	static const char *const name[TL_NNC] = {
		[TL_NC_FEW] = "too_few_phases", [TL_NC_MISSING] = "missing",
		[TL_NC_SINGULAR] = "not_separable",
		[TL_NC_UNCERTAIN] = "uncertain",
		[TL_NC_PHYSICAL] = "not_physical",
	};
	jw_obj(w, "phases", false);
	jw_str(w, "file", rep->file);
	jw_int(w, "phases", rep->nphases);
	if (rep->counted_min < 0) {
		jw_null(w, "counted_min");
		jw_null(w, "counted_max");
	} else {
		jw_int(w, "counted_min", rep->counted_min);
		jw_int(w, "counted_max", rep->counted_max);
	}
	jw_int(w, "hosts", rep->hosts);
	jw_int(w, "gpus", rep->gpus);
	jw_int(w, "coupled", rep->coupled);
	jw_int(w, "alone", rep->alone);
	jw_arr(w, "not_coupled", false);
	for (int r = 0; r < TL_NNC; r++) {
		if (!rep->no[r].gpus)
			continue;
		jw_obj(w, NULL, true);
		jw_str(w, "reason", name[r]);
		jw_int(w, "gpus", rep->no[r].gpus);
		jw_int(w, "hosts", rep->no[r].hosts);
		jw_str(w, "first", rep->no[r].first);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_end_obj(w);
}
