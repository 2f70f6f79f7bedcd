/*
 * profile.c — the thermap.profile/1 document: one thermal and clock
 * summary per physical GPU. It loads and validates one, writes one (the
 * one writer of every profile thermap makes: profile, profile --baseline,
 * calibrate), and fills a window's profile from an earlier one
 * (--baseline, compare --replay). It does not read telemetry nor compute
 * the statistics (telemetry/stats.c: levels, fit, derate), and does not
 * join entries to a cluster (model/problem.c).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format/format.h"

void tm_profile_free(tm_profile *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->ngpus; i++)
		tm_gpu_profile_clear(&p->gpus[i]);
	free(p->gpus);
	free(p->file);
	free(p);
}

void tm_gpu_profile_clear(tm_gpu_profile *g)
{
	free(g->host);
	free(g->uuid);
	free(g->pci_bus_id);
	for (int f = 0; f < TM_PF_N; f++) {
		free(g->estimated_how[f]);
		free(g->calibrated_how[f]);
	}
	for (int i = 0; i < g->nfrom_baseline; i++)
		free(g->from_baseline[i]);
	free(g->from_baseline);
	tm_coupling_free(g->coupling);
	memset(g, 0, sizeof *g);
}

void tm_coupling_free(tm_coupling *c)
{
	if (!c)
		return;
	free(c->how);
	for (int k = 0; k < c->nfrom; k++)
		free(c->from[k].uuid);
	free(c->from);
	for (int i = 0; c->point_source && i < c->npoints; i++)
		free(c->point_source[i]);
	free(c->point_source);
	free(c->points);
	free(c);
}

tm_coupling *tm_coupling_dup(const tm_coupling *c)
{
	tm_coupling *d;
	size_t w;
	if (!c)
		return NULL;
	d = xcalloc(1, sizeof *d);
	w = (size_t)(2 + c->nfrom);
	d->how = c->how ? xstrdup(c->how) : NULL;
	d->nfrom = c->nfrom;
	d->from = xcalloc((size_t)(c->nfrom ? c->nfrom : 1), sizeof *d->from);
	for (int k = 0; k < c->nfrom; k++) {
		d->from[k] = c->from[k];
		d->from[k].uuid = c->from[k].uuid ? xstrdup(c->from[k].uuid) : NULL;
	}
	d->npoints = c->npoints;
	d->points = xmalloc(sizeof(double) * w * (size_t)(c->npoints ?
	                                                   c->npoints : 1));
	memcpy(d->points, c->points, sizeof(double) * w * (size_t)c->npoints);
	d->point_source = xcalloc((size_t)(c->npoints ? c->npoints : 1),
	                          sizeof(char *));
	for (int i = 0; c->point_source && i < c->npoints; i++)
		d->point_source[i] = c->point_source[i] ?
		                     xstrdup(c->point_source[i]) : NULL;
	return d;
}

/* The number fields, in the order of enum tm_profile_field: their JSON
 * names, where they sit in tm_gpu_profile, the range a loaded value must
 * be in, and the decimals the writer rounds to (docs/profile.md). */
static const struct field {
	const char *name;  /* JSON field */
	size_t off;        /* offset in tm_gpu_profile */
	double lo, hi;     /* accepted range */
	int decimals;      /* written with at most this many */
} fields[TM_PF_N] = {
#define F(e, n, lo, hi, d) [e] = { #n, offsetof(tm_gpu_profile, n), lo, hi, d }
	F(TM_PF_SAMPLES, samples, 0, 1e15, 0),
	F(TM_PF_LOAD_SAMPLES, load_samples, 0, 1e15, 0),
	F(TM_PF_SPAN_S, span_s, 0, 1e12, 3),
	F(TM_PF_TEMP_IDLE_C, temp_idle_c, -50, 200, 1),
	F(TM_PF_TEMP_LOAD_C, temp_load_c, -50, 200, 1),
	F(TM_PF_TEMP_P95_C, temp_p95_c, -50, 200, 1),
	F(TM_PF_TEMP_MAX_C, temp_max_c, -50, 200, 1),
	F(TM_PF_HEADROOM_C, headroom_c, -200, 200, 1),
	F(TM_PF_POWER_IDLE_W, power_idle_w, 0, 1e5, 2),
	F(TM_PF_POWER_LOAD_W, power_load_w, 0, 1e5, 2),
	F(TM_PF_POWER_LIMIT_W, power_limit_w, 0, 1e5, 2),
	F(TM_PF_AMBIENT_C, ambient_c, -50, 200, 1),
	F(TM_PF_R_C_PER_W, r_c_per_w, 0, 10, 4),
	F(TM_PF_TEMP_FIT_SD_C, temp_fit_sd_c, 0, 100, 2),
	F(TM_PF_SM_CLOCK_LOAD_MHZ, sm_clock_load_mhz, 0, 1e5, 0),
	F(TM_PF_SM_CLOCK_MAX_MHZ, sm_clock_max_mhz, 0, 1e5, 0),
	F(TM_PF_THERMAL_SLOWDOWN_FRAC, thermal_slowdown_frac, 0, 1, 3),
	F(TM_PF_POWER_CAP_FRAC, power_cap_frac, 0, 1, 3),
	F(TM_PF_DERATE, derate, 1, 100, 3),
	F(TM_PF_DERATE_SD, derate_sd, 0, 100, 4),
	F(TM_PF_POWER_WAIT_W, power_wait_w, 0, 1e5, 2),
	F(TM_PF_POWER_WAIT_SD_W, power_wait_sd_w, 0, 1e5, 2),
	F(TM_PF_BACKGROUND_W, background_power_w, 0, 1e5, 2),
	F(TM_PF_BACKGROUND_SD_W, background_power_sd_w, 0, 1e5, 2),
#undef F
};
#define NFIELDS TM_PF_N

static double *field_of(tm_gpu_profile *g, int f)
{
	return (double *)((char *)g + fields[f].off);
}

static double field_get(const tm_gpu_profile *g, int f)
{
	return *(const double *)((const char *)g + fields[f].off);
}

const char *tm_profile_field_name(int field)
{
	return field >= 0 && field < TM_PF_N ? fields[field].name : "?";
}

void tm_gpu_profile_init(tm_gpu_profile *g)
{
	memset(g, 0, sizeof *g);
	g->index = -1;
	g->derate_basis = TM_BASIS_UNSET;
	for (int f = 0; f < NFIELDS; f++)
		*field_of(g, f) = NAN;
}

/* x as the writer writes it with d decimals, read back: printf rounds the
 * exact binary value to nearest, a tie to even; -0 is written 0. */
double tm_round_as_written(double x, int d)
{
	char buf[64];
	if (!isfinite(x))
		return x;
	snprintf(buf, sizeof buf, "%.*f", d, x);
	x = strtod(buf, NULL);
	return x == 0 ? 0 : x;
}

void tm_gpu_profile_round(tm_gpu_profile *g)
{
	for (int f = 0; f < NFIELDS; f++)
		*field_of(g, f) = tm_round_as_written(*field_of(g, f),
		                                   fields[f].decimals);
}

void tm_gpu_profile_mark(tm_gpu_profile *g, bool calibrated, int field,
                         const char *how)
{
	char **m = calibrated ? &g->calibrated_how[field]
	                      : &g->estimated_how[field];
	unsigned long long *mask = calibrated ? &g->calibrated : &g->estimated;
	free(*m);
	*m = how ? xstrdup(how) : NULL;
	if (how)
		*mask |= 1ull << field;
	else
		*mask &= ~(1ull << field);
}

double *tm_gpu_profile_num(tm_gpu_profile *g, int field)
{
	return field_of(g, field);
}

void tm_gpu_profile_untake(tm_gpu_profile *g, const char *name)
{
	int k = 0;
	for (int i = 0; i < g->nfrom_baseline; i++) {
		if (!strcmp(g->from_baseline[i], name))
			free(g->from_baseline[i]);
		else
			g->from_baseline[k++] = g->from_baseline[i];
	}
	g->nfrom_baseline = k;
}

void tm_gpu_profile_took(tm_gpu_profile *g, const char *name)
{
	g->from_baseline = xrealloc(g->from_baseline,
	                            (size_t)(g->nfrom_baseline + 1) *
	                            sizeof *g->from_baseline);
	g->from_baseline[g->nfrom_baseline++] = xstrdup(name);
}

/* ---- writing ------------------------------------------------------------ */

/* A number field: with its decimals where that reads back as v (every
 * value the builder makes, as it rounds to them), else exactly. */
static void put_num(jw *w, const char *key, double v, int decimals)
{
	if (tm_round_as_written(v, decimals) == v || !isfinite(v))
		jw_num(w, key, v, decimals);
	else
		jw_real(w, key, v);
}

static void put_marks(jw *w, const char *key, char *const how[TM_PF_N])
{
	bool any = false;
	for (int f = 0; f < NFIELDS; f++) {
		if (!how[f])
			continue;
		if (!any)
			jw_obj(w, key, false);
		any = true;
		jw_str(w, fields[f].name, how[f]);
	}
	if (any)
		jw_end_obj(w);
}

/* "coupling": how it was fitted, its sources and the steady states it
 * stands on (docs/formats.md). */
static void put_coupling(jw *w, const tm_coupling *c)
{
	int np = 2 + c->nfrom;
	jw_obj(w, "coupling", false);
	jw_str(w, "how", c->how);
	jw_arr(w, "from", false);
	for (int k = 0; k < c->nfrom; k++) {
		const tm_coupling_src *s = &c->from[k];
		jw_obj(w, NULL, true);
		if (s->index >= 0)
			jw_int(w, "index", s->index);
		else
			jw_null(w, "index");
		jw_str(w, "uuid", s->uuid);
		put_num(w, "c_per_w", s->c_per_w, 5);
		put_num(w, "sd_c_per_w", s->sd_c_per_w, 5);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_arr(w, "points", false);
	for (int i = 0; i < c->npoints; i++) {
		const double *p = &c->points[(size_t)i * (size_t)np];
		jw_obj(w, NULL, true);
		put_num(w, "temp_c", p[0], 2);
		jw_arr(w, "power_w", true);
		for (int k = 1; k < np; k++)
			put_num(w, NULL, p[k], 2);
		jw_end_arr(w);
		if (c->point_source && c->point_source[i])
			jw_str(w, "source", c->point_source[i]);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_end_obj(w);
}

static void put_entry(jw *w, const tm_gpu_profile *g)
{
	jw_obj(w, NULL, false);
	jw_str(w, "host", g->host);
	jw_str(w, "uuid", g->uuid);
	jw_str(w, "pci_bus_id", g->pci_bus_id);
	if (g->index >= 0)
		jw_int(w, "index", g->index);
	else
		jw_null(w, "index");
	for (int f = 0; f < NFIELDS; f++) {
		double v = field_get(g, f);
		if ((f == TM_PF_POWER_WAIT_W || f == TM_PF_POWER_WAIT_SD_W ||
		     f == TM_PF_BACKGROUND_W || f == TM_PF_BACKGROUND_SD_W) &&
		    isnan(v))
			continue;   /* calibrate's: absent until it fits them */
		put_num(w, fields[f].name, v, fields[f].decimals);
		if (f == TM_PF_DERATE_SD) {
			if (g->derate_basis == TM_BASIS_UNSET)
				jw_null(w, "derate_basis");
			else
				jw_str(w, "derate_basis",
				       tm_derate_basis_name(g->derate_basis));
		}
	}
	if (g->coupling)
		put_coupling(w, g->coupling);
	put_marks(w, "estimated", g->estimated_how);
	if (g->nfrom_baseline) {
		jw_arr(w, "from_baseline", false);
		for (int i = 0; i < g->nfrom_baseline; i++)
			jw_str(w, NULL, g->from_baseline[i]);
		jw_end_arr(w);
	}
	put_marks(w, "calibrated", g->calibrated_how);
	jw_end_obj(w);
}

char *tm_profile_text(const tm_profile *p)
{
	strbuf b;
	jw w;
	sb_init(&b);
	jw_init(&w, &b);
	jw_obj(&w, NULL, false);
	jw_str(&w, "format", "thermap.profile/1");
	jw_arr(&w, "gpus", false);
	for (int i = 0; i < p->ngpus; i++)
		put_entry(&w, &p->gpus[i]);
	jw_end_arr(&w);
	jw_end_obj(&w);
	sb_add(&b, "\n");   /* profiles have always ended with a blank line */
	return b.s;
}

static const char *const basis_names[] = {
	[TM_BASIS_NONE] = "none", [TM_BASIS_CLOCK] = "clock",
	[TM_BASIS_THERMAL] = "thermal", [TM_BASIS_POWER_CAP] = "power-cap",
	[TM_BASIS_JOB] = "job",
};

const char *tm_derate_basis_name(int basis)
{
	return basis >= 0 && basis < TM_NBASIS ? basis_names[basis] : "?";
}

/* The order in which the loader checks the number fields, so that of
 * several bad ones the same is named first as before the writer's order
 * became enum tm_profile_field's. */
static const int load_order[NFIELDS] = {
	TM_PF_SAMPLES, TM_PF_LOAD_SAMPLES, TM_PF_SPAN_S, TM_PF_TEMP_IDLE_C,
	TM_PF_TEMP_LOAD_C, TM_PF_TEMP_P95_C, TM_PF_TEMP_MAX_C,
	TM_PF_HEADROOM_C, TM_PF_POWER_IDLE_W, TM_PF_POWER_LOAD_W,
	TM_PF_POWER_LIMIT_W, TM_PF_AMBIENT_C, TM_PF_R_C_PER_W,
	TM_PF_SM_CLOCK_LOAD_MHZ, TM_PF_SM_CLOCK_MAX_MHZ,
	TM_PF_THERMAL_SLOWDOWN_FRAC, TM_PF_POWER_CAP_FRAC, TM_PF_DERATE,
	TM_PF_DERATE_SD, TM_PF_TEMP_FIT_SD_C, TM_PF_POWER_WAIT_W,
	TM_PF_POWER_WAIT_SD_W, TM_PF_BACKGROUND_W, TM_PF_BACKGROUND_SD_W,
};

/* The number field of a JSON name, -1 when it is not one. */
static int field_index(const char *name)
{
	for (int i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].name, name))
			return i;
	return -1;
}

/* "estimated" and "calibrated": an object naming number fields of the
 * entry, each with a line saying how the value was obtained. */
static int load_marks(const jin *J, json_t *o, const char *path,
                      const char *key, unsigned long long *mask,
                      char *how[TM_PF_N])
{
	json_t *m, *v;
	const char *name;
	int rc;

	*mask = 0;
	if ((rc = jin_obj(J, o, path, key, JF_NULL, &m)) || !m)
		return rc;
	json_object_foreach(m, name, v) {
		int i = field_index(name);
		if (i < 0)
			return jin_fail(J, path, key, "\"%.60s\" is not a number "
			                "field of a profile entry", name);
		if (!json_is_string(v) || !json_string_length(v))
			return jin_fail(J, path, key, "\"%.60s\": expected a "
			                "non-empty string saying how the value was "
			                "obtained", name);
		*mask |= 1ull << i;
		free(how[i]);
		how[i] = xstrdup(json_string_value(v));
	}
	return 0;
}

static int load_coupling(const jin *J, json_t *o, const char *path,
                         bool quiet, tm_gpu_profile *g)
{
	static const char *const known[] = { "how", "from", "points", NULL };
	static const char *const kfrom[] = { "index", "uuid", "c_per_w",
	                                     "sd_c_per_w", NULL };
	static const char *const kpoint[] = { "temp_c", "power_w", "source",
	                                      NULL };
	json_t *c, *from, *pts, *v;
	char p2[96], p3[128];
	tm_coupling *cp;
	size_t i;
	int rc, np;

	if ((rc = jin_obj(J, o, path, "coupling", JF_NULL, &c)) || !c)
		return rc;
	snprintf(p2, sizeof p2, "%s.coupling", path);
	if (!quiet)
		jin_unknown(J, c, p2, known);
	cp = g->coupling = xcalloc(1, sizeof *cp);
	if ((rc = jin_str(J, c, p2, "how", JF_REQ, &cp->how)))
		return rc;
	if (!*cp->how)
		return jin_fail(J, p2, "how", "expected a non-empty string saying "
		                "how the coupling was obtained");
	if ((rc = jin_arr(J, c, p2, "from", JF_REQ, &from)))
		return rc;
	if (json_array_size(from) < 1 ||
	    json_array_size(from) > TM_COUPLING_MAX_FROM)
		return jin_fail(J, p2, "from", "expected 1 to %d sources",
		                TM_COUPLING_MAX_FROM);
	cp->nfrom = (int)json_array_size(from);
	cp->from = xcalloc((size_t)cp->nfrom, sizeof *cp->from);
	json_array_foreach(from, i, v) {
		tm_coupling_src *s = &cp->from[i];
		snprintf(p3, sizeof p3, "%s.from[%zu]", p2, i);
		s->index = -1;
		s->c_per_w = s->sd_c_per_w = NAN;
		if (!json_is_object(v))
			return jin_fail(J, p3, NULL, "expected an object naming a GPU "
			                "of the same host and its c_per_w");
		if (!quiet)
			jin_unknown(J, v, p3, kfrom);
		if ((rc = jin_int(J, v, p3, "index", JF_NULL, 0, 65535,
		                  &s->index)) ||
		    (rc = jin_str(J, v, p3, "uuid", JF_NULL, &s->uuid)) ||
		    (rc = jin_num(J, v, p3, "c_per_w", JF_REQ, 0, 1,
		                  &s->c_per_w)) ||
		    (rc = jin_num(J, v, p3, "sd_c_per_w", JF_NULL, 0, 1,
		                  &s->sd_c_per_w)))
			return rc;
		if (s->uuid && !tm_valid_uuid(s->uuid))
			return jin_fail(J, p3, "uuid", "\"%.100s\" is not a GPU UUID",
			                s->uuid);
		if (!s->uuid && s->index < 0)
			return jin_fail(J, p3, NULL, "names no GPU; expected a uuid "
			                "or an index");
		if ((s->uuid && g->uuid && !strcmp(s->uuid, g->uuid)) ||
		    (!s->uuid && s->index >= 0 && s->index == g->index))
			return jin_fail(J, p3, NULL, "is the entry's own GPU; expected "
			                "another GPU of its host");
	}
	if ((rc = jin_arr(J, c, p2, "points", JF_REQ, &pts)))
		return rc;
	if (json_array_size(pts) > TM_COUPLING_MAX_POINTS)
		return jin_fail(J, p2, "points", "expected at most %d points",
		                TM_COUPLING_MAX_POINTS);
	np = 2 + cp->nfrom;
	cp->npoints = (int)json_array_size(pts);
	cp->points = xcalloc((size_t)np * (size_t)(cp->npoints ? cp->npoints : 1),
	                     sizeof(double));
	cp->point_source = xcalloc((size_t)(cp->npoints ? cp->npoints : 1),
	                           sizeof(char *));
	json_array_foreach(pts, i, v) {
		double *q = &cp->points[i * (size_t)np];
		json_t *pw, *x;
		size_t k;
		snprintf(p3, sizeof p3, "%s.points[%zu]", p2, i);
		if (!json_is_object(v))
			return jin_fail(J, p3, NULL, "expected an object with temp_c "
			                "and power_w");
		if (!quiet)
			jin_unknown(J, v, p3, kpoint);
		if ((rc = jin_num(J, v, p3, "temp_c", JF_REQ, -50, 200, &q[0])) ||
		    (rc = jin_arr(J, v, p3, "power_w", JF_REQ, &pw)) ||
		    (rc = jin_str(J, v, p3, "source", JF_NULL,
		                  &cp->point_source[i])))
			return rc;
		if (json_array_size(pw) != (size_t)(np - 1))
			return jin_fail(J, p3, "power_w", "has %zu powers; expected "
			                "%d: this GPU's, then one per source", 
			                json_array_size(pw), np - 1);
		json_array_foreach(pw, k, x) {
			double d = json_is_number(x) ? json_number_value(x) : NAN;
			if (!(d >= 0 && d <= 1e5))
				return jin_fail(J, p3, "power_w", "[%zu]: expected a "
				                "power from 0 to 100000 W", k);
			q[1 + k] = d;
		}
	}
	return 0;
}

/* "from_baseline": the names of the fields a window took from an earlier
 * profile. Provenance for people, so it is not checked: its strings are
 * kept (in order), anything else in it is not. */
static void load_taken(json_t *o, tm_gpu_profile *g)
{
	json_t *a = json_object_get(o, "from_baseline"), *v;
	size_t i;
	if (!json_is_array(a))
		return;
	json_array_foreach(a, i, v)
		if (json_is_string(v))
			tm_gpu_profile_took(g, json_string_value(v));
}

static int load_entry(const jin *J, json_t *o, const char *path,
                      bool quiet, tm_gpu_profile *g)
{
	static const char *const known[] = {
		"from_baseline",  /* provenance, see tm_profile_fill */
		"derate_basis", "estimated", "calibrated", "host", "uuid",
		"pci_bus_id", "index",
		/* the number fields, in load_order */
		"samples", "load_samples", "span_s", "temp_idle_c", "temp_load_c",
		"temp_p95_c", "temp_max_c", "headroom_c", "power_idle_w",
		"power_load_w", "power_limit_w", "ambient_c", "r_c_per_w",
		"sm_clock_load_mhz", "sm_clock_max_mhz", "thermal_slowdown_frac",
		"power_cap_frac", "derate", "derate_sd", "temp_fit_sd_c",
		"power_wait_w", "power_wait_sd_w", "background_power_w",
		"background_power_sd_w", "coupling", NULL
	};
	char *pci = NULL, *basis = NULL;
	int rc;

	tm_gpu_profile_init(g);
	if (!json_is_object(o))
		return jin_fail(J, path, NULL, "expected a GPU profile object");
	if (!quiet)
		jin_unknown(J, o, path, known);
	if ((rc = jin_str(J, o, path, "host", JF_NULL, &g->host)) ||
	    (rc = jin_str(J, o, path, "uuid", JF_NULL, &g->uuid)) ||
	    (rc = jin_str(J, o, path, "pci_bus_id", JF_NULL, &pci)) ||
	    (rc = jin_int(J, o, path, "index", JF_NULL, 0, 65535, &g->index)))
		goto fail;
	if (g->host && !tm_valid_host(g->host)) {
		rc = jin_fail(J, path, "host", "\"%.100s\" is not a usable host name",
		              g->host);
		goto fail;
	}
	if (g->uuid && !tm_valid_uuid(g->uuid)) {
		rc = jin_fail(J, path, "uuid", "\"%.100s\" is not a GPU UUID",
		              g->uuid);
		goto fail;
	}
	if (pci && !(g->pci_bus_id = tm_normalise_pci(pci))) {
		rc = jin_fail(J, path, "pci_bus_id", "\"%.100s\" is not a PCI bus "
		              "id; expected like \"00000000:00:06.0\"", pci);
		goto fail;
	}
	if (!g->uuid && !g->pci_bus_id && g->index < 0) {
		rc = jin_fail(J, path, NULL, "names no GPU; expected a uuid, a "
		              "pci_bus_id or an index");
		goto fail;
	}
	for (int i = 0; i < NFIELDS; i++) {
		const struct field *f = &fields[load_order[i]];
		if ((rc = jin_num(J, o, path, f->name, JF_NULL, f->lo, f->hi,
		                  field_of(g, load_order[i]))))
			goto fail;
	}
	if ((rc = jin_str(J, o, path, "derate_basis", JF_NULL, &basis)))
		goto fail;
	if (basis) {
		for (int b = 0; b < TM_NBASIS; b++)
			if (!strcmp(basis, basis_names[b]))
				g->derate_basis = b;
		if (g->derate_basis == TM_BASIS_UNSET) {
			rc = jin_fail(J, path, "derate_basis", "\"%.60s\": expected "
			              "\"clock\", \"thermal\", \"power-cap\", "
			              "\"job\" or \"none\"", basis);
			goto fail;
		}
	}
	if ((rc = load_marks(J, o, path, "estimated", &g->estimated,
	                     g->estimated_how)) ||
	    (rc = load_marks(J, o, path, "calibrated", &g->calibrated,
	                     g->calibrated_how)))
		goto fail;
	load_taken(o, g);
	if ((rc = load_coupling(J, o, path, quiet, g)))
		goto fail;
	if (isfinite(g->power_wait_w) && isfinite(g->power_load_w) &&
	    g->power_wait_w > g->power_load_w + 1e-9) {
		rc = jin_fail(J, path, "power_wait_w", "%.2f W is above "
		              "power_load_w %.2f W; a rank that waits draws no "
		              "more than one that computes", g->power_wait_w,
		              g->power_load_w);
		goto fail;
	}
	if (!quiet && isfinite(g->temp_idle_c) && isfinite(g->temp_load_c) &&
	    g->temp_load_c < g->temp_idle_c - 5)
		tm_warn("%s: %s: temp_load_c %.1f is below temp_idle_c %.1f",
		        J->file, path, g->temp_load_c, g->temp_idle_c);
	free(pci);
	free(basis);
	return 0;
fail:
	free(pci);
	free(basis);
	return rc;
}

/* From a file, or (text != NULL) from len bytes named file in messages;
 * quiet: without the warnings (for text already read once, or that
 * thermap wrote). */
static int profile_load(const char *file, const char *text, size_t len,
                        bool quiet, tm_profile **out, tm_error *err)
{
	static const char *const known[] = { "format", "gpus", NULL };
	tm_profile *p = xcalloc(1, sizeof *p);
	json_t *root = NULL, *gpus;
	jin J = { file, err };
	char path[64];
	int rc;

	p->file = xstrdup(file);
	if (text) {
		char hex[65];
		tm_sha256_hex(text, len, hex);
		snprintf(p->sha256, sizeof p->sha256, "sha256:%s", hex);
		rc = jin_loadb(file, text, len, "thermap.profile", &root, err);
	} else {
		rc = jin_load(file, "thermap.profile", &root, p->sha256, err);
	}
	if (rc)
		goto fail;
	if (!quiet)
		jin_unknown(&J, root, "", known);
	if ((rc = jin_arr(&J, root, "", "gpus", JF_REQ, &gpus)))
		goto fail;
	if (json_array_size(gpus) == 0 ||
	    json_array_size(gpus) > (size_t)TM_MAX_RANKS) {
		rc = jin_fail(&J, "", "gpus", "expected 1 to %d GPU entries",
		              TM_MAX_RANKS);
		goto fail;
	}
	p->ngpus = (int)json_array_size(gpus);
	p->gpus = xcalloc((size_t)p->ngpus, sizeof *p->gpus);
	for (int i = 0; i < p->ngpus; i++) {
		snprintf(path, sizeof path, "gpus[%d]", i);
		if ((rc = load_entry(&J, json_array_get(gpus, (size_t)i), path,
		                     quiet, &p->gpus[i])))
			goto fail;
	}
	json_decref(root);
	*out = p;
	return 0;
fail:
	json_decref(root);
	tm_profile_free(p);
	*out = NULL;
	return rc;
}

int tm_profile_load(const char *file, tm_profile **out, tm_error *err)
{
	return profile_load(file, NULL, 0, false, out, err);
}

int tm_profile_loadb(const char *name, const char *text, size_t len,
                     tm_profile **out, tm_error *err)
{
	return profile_load(name, text, len, false, out, err);
}

/* ---- filling a window from an earlier profile --------------------------- */

static bool same_str(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* Whether two profile entries are one GPU: same host, then the UUID when
 * both know it, else the PCI bus id (normalised by the loader: 0000:00:06.0
 * and 00000000:00:06.0 are one bus id), else the index. */
static bool same_gpu(const tm_gpu_profile *a, const tm_gpu_profile *b)
{
	if (!(a->host == b->host || same_str(a->host, b->host)))
		return false;
	if (a->uuid && b->uuid)
		return !strcmp(a->uuid, b->uuid);
	if (a->pci_bus_id && b->pci_bus_id)
		return !strcmp(a->pci_bus_id, b->pci_bus_id);
	return a->index >= 0 && a->index == b->index;
}

static bool marked(const tm_gpu_profile *g, int f)
{
	return g->estimated_how[f] != NULL;
}

/* Whether the window's field f should give way to the baseline's: the
 * window has no value, or only an estimate where the baseline measured. */
static bool wants(const tm_gpu_profile *g, const tm_gpu_profile *b, int f)
{
	if (isnan(field_get(b, f)))
		return false;
	return isnan(field_get(g, f)) || (marked(g, f) && !marked(b, f));
}

/* The fields one entry takes, in the order taken. */
typedef struct took {
	const char *name[TM_PF_N + 2];
	int n;
} took;

/* Field f of b into g: its value (null when b has none), and b's
 * estimated mark of it in place of g's; listed in t when a value. */
static void take(tm_gpu_profile *g, const tm_gpu_profile *b, int f, took *t)
{
	*field_of(g, f) = field_get(b, f);
	tm_gpu_profile_mark(g, false, f, b->estimated_how[f]);
	if (!isnan(field_get(b, f)))
		t->name[t->n++] = fields[f].name;
}

/* Base entries by host (no host first), stable: each host's entries in
 * file order. */
static int cmp_entry_host(const void *x, const void *y, void *ctx)
{
	const tm_profile *p = ctx;
	const char *a = p->gpus[*(const int *)x].host;
	const char *b = p->gpus[*(const int *)y].host;
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* The first of o[0..n) (base entries sorted by cmp_entry_host) whose
 * host is h: n when none. */
static int first_of_host(const tm_profile *base, const int *o, int n,
                         const char *h)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		const char *m = base->gpus[o[mid]].host;
		int r = !m ? (h ? -1 : 0) : !h ? 1 : strcmp(m, h);
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int tm_profile_fill_from(tm_profile *p, const tm_profile *base, bool idle_only)
{
	static const int idle[] = { TM_PF_TEMP_IDLE_C, TM_PF_POWER_IDLE_W,
		TM_PF_POWER_LIMIT_W, TM_PF_SM_CLOCK_MAX_MHZ };
	static const int load[] = { TM_PF_TEMP_LOAD_C, TM_PF_POWER_LOAD_W,
		TM_PF_HEADROOM_C, TM_PF_SM_CLOCK_LOAD_MHZ };
	int nfilled = 0, *o = xmalloc(sizeof(int) * (size_t)(base->ngpus + 1));

	/* the baseline's entries of each host found by binary search, then
	 * tried in file order: the first that is the same GPU, as a scan of
	 * every entry would find it, in time linear in the GPUs per host */
	for (int k = 0; k < base->ngpus; k++)
		o[k] = k;
	tm_sort(o, (size_t)base->ngpus, sizeof(int), cmp_entry_host,
	        (void *)base);
	for (int i = 0; i < p->ngpus; i++)
		for (int j = first_of_host(base, o, base->ngpus, p->gpus[i].host);
		     j < base->ngpus; j++) {
			tm_gpu_profile *g = &p->gpus[i];
			const tm_gpu_profile *b = &base->gpus[o[j]];
			/* the load level only for a GPU that never reached full
			 * load here: its own load level beats an older one, and
			 * the older fit must not override it */
			bool no_load = !idle_only && isnan(g->temp_load_c);
			took t = { { NULL }, 0 };
			if (!(g->host == b->host || same_str(g->host, b->host)))
				break;   /* past the host's entries */
			if (!same_gpu(g, b))
				continue;
			for (int q = 0; q < 4; q++)
				if (wants(g, b, idle[q]))
					take(g, b, idle[q], &t);
			for (int q = 0; no_load && q < 4; q++)
				if (wants(g, b, load[q]))
					take(g, b, load[q], &t);
			/* a derate and the fit go with what qualifies them */
			if (no_load && wants(g, b, TM_PF_DERATE)) {
				take(g, b, TM_PF_DERATE, &t);
				take(g, b, TM_PF_DERATE_SD, &t);
				g->derate_basis = b->derate_basis;
				if (b->derate_basis != TM_BASIS_UNSET)
					t.name[t.n++] = "derate_basis";
			}
			/* the fit goes with the load level it came with, unless
			 * the window fitted this GPU itself */
			if (no_load && !isnan(b->ambient_c) && !isnan(b->r_c_per_w) &&
			    (isnan(g->ambient_c) || isnan(g->r_c_per_w) ||
			     marked(g, TM_PF_AMBIENT_C) ||
			     marked(g, TM_PF_R_C_PER_W))) {
				take(g, b, TM_PF_AMBIENT_C, &t);
				take(g, b, TM_PF_R_C_PER_W, &t);
				take(g, b, TM_PF_TEMP_FIT_SD_C, &t);
				/* a coupling is part of the fit it was fitted with:
				 * the earlier one's, or none */
				tm_coupling_free(g->coupling);
				g->coupling = tm_coupling_dup(b->coupling);
				if (g->coupling)
					t.name[t.n++] = "coupling";
			}
			nfilled += t.n;
			if (t.n && !idle_only) {
				for (int q = 0; q < g->nfrom_baseline; q++)
					free(g->from_baseline[q]);
				g->nfrom_baseline = 0;
				for (int q = 0; q < t.n; q++)
					tm_gpu_profile_took(g, t.name[q]);
			}
			break;
		}
	free(o);
	return nfilled;
}

char *tm_profile_fill(const char *text, const char *base_text, bool idle_only,
                      int *nfilled)
{
	tm_profile *p = NULL, *base = NULL;
	tm_error e = { 0, "" };
	char *out;

	*nfilled = 0;
	if (profile_load("profile", text, strlen(text), true, &p, &e) ||
	    profile_load("baseline", base_text, strlen(base_text), true, &base,
	                 &e)) {
		tm_profile_free(p);
		tm_profile_free(base);
		return xstrdup(text);
	}
	*nfilled = tm_profile_fill_from(p, base, idle_only);
	out = tm_profile_text(p);
	tm_profile_free(p);
	tm_profile_free(base);
	return out;
}
