/*
 * profile.c — loads and validates a thermap.profile/1 document: one thermal
 * and clock summary per physical GPU. It does not read telemetry (the
 * profile command does) and does not join entries to a cluster (problem.c).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
	F(derate, 1, 100),
#undef F
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static int load_entry(const jin *J, json_t *o, const char *path,
                      tm_gpu_profile *g)
{
	static const char *known[NFIELDS + 5];
	char *pci = NULL;
	int rc;

	if (!known[0]) {
		size_t k = 0;
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
	if (isfinite(g->temp_idle_c) && isfinite(g->temp_load_c) &&
	    g->temp_load_c < g->temp_idle_c - 5)
		tm_warn("%s: %s: temp_load_c %.1f is below temp_idle_c %.1f",
		        J->file, path, g->temp_load_c, g->temp_idle_c);
	free(pci);
	return 0;
fail:
	free(pci);
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
