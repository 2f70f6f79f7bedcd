/*
 * profile.c — loads and validates a thermap.profile/1 document: one thermal
 * and clock summary per physical GPU. It does not read telemetry (the
 * profile command does) and does not join entries to a cluster (problem.c).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format/format.h"

void tm_profile_free(tm_profile *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->ngpus; i++) {
		free(p->gpus[i].host);
		free(p->gpus[i].uuid);
		free(p->gpus[i].pci_bus_id);
	}
	free(p->gpus);
	free(p->file);
	free(p);
}

static const struct field {
	const char *name;  /* JSON field */
	size_t off;        /* offset in tm_gpu_profile */
	double lo, hi;     /* accepted range */
} fields[] = {
#define F(n, lo, hi) { #n, offsetof(tm_gpu_profile, n), lo, hi }
	F(samples, 0, 1e15), F(load_samples, 0, 1e15), F(span_s, 0, 1e12),
	F(temp_idle_c, -50, 200), F(temp_load_c, -50, 200),
	F(temp_p95_c, -50, 200), F(temp_max_c, -50, 200),
	F(headroom_c, -200, 200),
	F(power_idle_w, 0, 1e5), F(power_load_w, 0, 1e5),
	F(power_limit_w, 0, 1e5),
	F(ambient_c, -50, 200), F(r_c_per_w, 0, 10),
	F(sm_clock_load_mhz, 0, 1e5), F(sm_clock_max_mhz, 0, 1e5),
	F(thermal_slowdown_frac, 0, 1), F(power_cap_frac, 0, 1),
	F(derate, 1, 100), F(derate_sd, 0, 100),
	F(temp_fit_sd_c, 0, 100),
	F(power_wait_w, 0, 1e5), F(power_wait_sd_w, 0, 1e5),
#undef F
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static const char *const basis_names[] = {
	[TM_BASIS_NONE] = "none", [TM_BASIS_CLOCK] = "clock",
	[TM_BASIS_THERMAL] = "thermal", [TM_BASIS_POWER_CAP] = "power-cap",
	[TM_BASIS_JOB] = "job",
};

const char *tm_derate_basis_name(int basis)
{
	return basis >= 0 && basis < TM_NBASIS ? basis_names[basis] : "?";
}

/* Index in fields[] of a field name, -1 when it is not a number field. */
static int field_index(const char *name)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].name, name))
			return (int)i;
	return -1;
}

/* "estimated" and "calibrated": an object naming number fields of the
 * entry, each with a line saying how the value was obtained. */
static int load_marks(const jin *J, json_t *o, const char *path,
                      const char *key, unsigned long long *mask)
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
	}
	return 0;
}

static int load_entry(const jin *J, json_t *o, const char *path,
                      tm_gpu_profile *g)
{
	static const char *known[NFIELDS + 10];
	char *pci = NULL, *basis = NULL;
	int rc;

	if (!known[0]) {
		size_t k = 0;
		known[k++] = "from_baseline";  /* provenance, see tm_profile_fill */
		known[k++] = "derate_basis";
		known[k++] = "estimated";
		known[k++] = "calibrated";
		known[k++] = "host";
		known[k++] = "uuid";
		known[k++] = "pci_bus_id";
		known[k++] = "index";
		for (size_t i = 0; i < NFIELDS; i++)
			known[k++] = fields[i].name;
		known[k] = NULL;
	}
	g->index = -1;
	for (size_t i = 0; i < NFIELDS; i++)
		*(double *)((char *)g + fields[i].off) = NAN;
	if (!json_is_object(o))
		return jin_fail(J, path, NULL, "expected a GPU profile object");
	jin_unknown(J, o, path, known);
	g->derate_basis = TM_BASIS_UNSET;
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
	for (size_t i = 0; i < NFIELDS; i++)
		if ((rc = jin_num(J, o, path, fields[i].name, JF_NULL, fields[i].lo,
		                  fields[i].hi,
		                  (double *)((char *)g + fields[i].off))))
			goto fail;
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
	if ((rc = load_marks(J, o, path, "estimated", &g->estimated)) ||
	    (rc = load_marks(J, o, path, "calibrated", &g->calibrated)))
		goto fail;
	if (isfinite(g->power_wait_w) && isfinite(g->power_load_w) &&
	    g->power_wait_w > g->power_load_w + 1e-9) {
		rc = jin_fail(J, path, "power_wait_w", "%.2f W is above "
		              "power_load_w %.2f W; a rank that waits draws no "
		              "more than one that computes", g->power_wait_w,
		              g->power_load_w);
		goto fail;
	}
	if (isfinite(g->temp_idle_c) && isfinite(g->temp_load_c) &&
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

/* From a file, or (text != NULL) from len bytes named file in messages. */
static int profile_load(const char *file, const char *text, size_t len,
                        tm_profile **out, tm_error *err)
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
		                     &p->gpus[i])))
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
	return profile_load(file, NULL, 0, out, err);
}

int tm_profile_loadb(const char *name, const char *text, size_t len,
                     tm_profile **out, tm_error *err)
{
	return profile_load(name, text, len, out, err);
}

/* ---- filling a window from an earlier profile --------------------------- */

static bool same_str(json_t *a, json_t *b)
{
	return json_is_string(a) && json_is_string(b) &&
	       !strcmp(json_string_value(a), json_string_value(b));
}

/* Whether two profile entries are one GPU: same host, then the UUID when
 * both know it, else the PCI bus id, else the index. */
static bool same_gpu(json_t *a, json_t *b)
{
	json_t *ha = json_object_get(a, "host"), *hb = json_object_get(b, "host");
	if (!json_equal(ha ? ha : json_null(), hb ? hb : json_null()))
		return false;
	if (json_is_string(json_object_get(a, "uuid")) &&
	    json_is_string(json_object_get(b, "uuid")))
		return same_str(json_object_get(a, "uuid"),
		                json_object_get(b, "uuid"));
	if (json_is_string(json_object_get(a, "pci_bus_id")) &&
	    json_is_string(json_object_get(b, "pci_bus_id"))) {
		/* 0000:00:06.0 and 00000000:00:06.0 are one bus id */
		char *x = tm_normalise_pci(json_string_value(
		                           json_object_get(a, "pci_bus_id")));
		char *y = tm_normalise_pci(json_string_value(
		                           json_object_get(b, "pci_bus_id")));
		bool same = x && y && !strcmp(x, y);
		free(x);
		free(y);
		return same;
	}
	return json_is_integer(json_object_get(a, "index")) &&
	       json_equal(json_object_get(a, "index"), json_object_get(b, "index"));
}

/* Whether entry g marks field k as estimated. */
static bool marked(json_t *g, const char *k)
{
	json_t *e = json_object_get(g, "estimated");
	return json_is_object(e) && json_object_get(e, k) != NULL;
}

/* Whether the window's field k should give way to the baseline's: the
 * window has no value, or only an estimate where the baseline measured. */
static bool wants(json_t *g, json_t *f, const char *k)
{
	json_t *v = json_object_get(g, k);
	if (!json_is_number(json_object_get(f, k)))
		return false;
	return !v || json_is_null(v) || (marked(g, k) && !marked(f, k));
}

/* Field k of f into g: its value (null when f lacks it), and f's
 * estimated mark of it in place of g's; listed in took when a value. */
static void take(json_t *g, json_t *f, const char *k, json_t *took)
{
	json_t *v = json_object_get(f, k), *ge = json_object_get(g, "estimated");
	json_t *fe = json_object_get(f, "estimated");
	json_object_set(g, k, v ? v : json_null());
	if (json_is_object(ge))
		json_object_del(ge, k);
	if (json_is_object(fe) && json_object_get(fe, k)) {
		if (!json_is_object(ge)) {
			ge = json_object();
			json_object_set_new(g, "estimated", ge);
		}
		json_object_set(ge, k, json_object_get(fe, k));
	}
	if (v && !json_is_null(v))
		json_array_append_new(took, json_string(k));
}

char *tm_profile_fill(const char *text, const char *base_text, bool idle_only,
                      int *nfilled)
{
	static const char *const idle[] = { "temp_idle_c", "power_idle_w",
		"power_limit_w", "sm_clock_max_mhz", NULL };
	static const char *const load[] = { "temp_load_c", "power_load_w",
		"headroom_c", "sm_clock_load_mhz", NULL };
	json_t *root = json_loads(text, 0, NULL), *base, *g, *f;
	size_t i, k;
	char *out;

	*nfilled = 0;
	base = json_loads(base_text, 0, NULL);
	if (!root || !base) {
		json_decref(root);
		json_decref(base);
		return xstrdup(text);
	}
	json_array_foreach(json_object_get(root, "gpus"), i, g)
		json_array_foreach(json_object_get(base, "gpus"), k, f) {
			json_t *took, *est;
			/* the load level only for a GPU that never reached full
			 * load here: its own load level beats an older one, and
			 * the older fit must not override it */
			bool no_load = json_is_null(json_object_get(g,
			                                            "temp_load_c"));
			if (!json_is_object(g) || !json_is_object(f) ||
			    !same_gpu(g, f))
				continue;
			took = json_array();
			for (int q = 0; idle[q]; q++)
				if (wants(g, f, idle[q]))
					take(g, f, idle[q], took);
			for (int q = 0; !idle_only && no_load && load[q]; q++)
				if (wants(g, f, load[q]))
					take(g, f, load[q], took);
			/* a derate and the fit go with what qualifies them */
			if (!idle_only && no_load && wants(g, f, "derate")) {
				take(g, f, "derate", took);
				take(g, f, "derate_sd", took);
				take(g, f, "derate_basis", took);
			}
			/* the fit goes with the load level it came with, unless
			 * the window fitted this GPU itself */
			if (!idle_only && no_load &&
			    json_is_number(json_object_get(f, "ambient_c")) &&
			    json_is_number(json_object_get(f, "r_c_per_w")) &&
			    (!json_is_number(json_object_get(g, "ambient_c")) ||
			     !json_is_number(json_object_get(g, "r_c_per_w")) ||
			     marked(g, "ambient_c") || marked(g, "r_c_per_w"))) {
				take(g, f, "ambient_c", took);
				take(g, f, "r_c_per_w", took);
				take(g, f, "temp_fit_sd_c", took);
			}
			est = json_object_get(g, "estimated");
			if (json_is_object(est) && json_object_size(est) == 0)
				json_object_del(g, "estimated");
			*nfilled += (int)json_array_size(took);
			if (json_array_size(took) && !idle_only)
				json_object_set(g, "from_baseline", took);
			json_decref(took);
			break;
		}
	out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	json_decref(base);
	if (!out)
		return xstrdup(text);
	{
		/* the profile writer ends its files with a newline */
		char *nl = xmalloc(strlen(out) + 2);
		sprintf(nl, "%s\n", out);
		free(out);
		out = nl;
	}
	return out;
}
