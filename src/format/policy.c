/*
 * policy.c — loads and validates a thermap.policy/1 document: the method, the
 * lexicographic objective and the constraints. Also carries the built-in
 * default policy, the text of policies/thermal.json (a test keeps the two
 * byte-identical).
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format/format.h"

const char tm_default_policy_text[] =
"{\n"
"  \"format\": \"thermap.policy/1\",\n"
"  \"name\": \"thermal\",\n"
"  \"method\": \"ilp\",\n"
"  \"objective\": {\"order\": [\"time\", \"peak_temp\", \"wear\"], \"tolerance\": 0.001, \"move_cost_ms\": 0},\n"
"  \"constraints\": {\"tp_nvlink\": true, \"pp_nvlink\": false, \"max_temp_c\": null,\n"
"                  \"rebalance_layers\": false, \"min_layers\": 1, \"max_moves\": null},\n"
"  \"decision\": {\"evidence\": true, \"min_gain\": \"0\", \"exchange_c_per_pct\": 1.0},\n"
"  \"solver\": {\"time_limit_s\": 10, \"mip_gap\": 0.0}\n"
"}\n";

static const struct { const char *name; int method; } methods[] = {
	{ "identity", TM_METHOD_IDENTITY }, { "greedy", TM_METHOD_GREEDY },
	{ "ilp", TM_METHOD_ILP }, { "brute", TM_METHOD_BRUTE },
	{ "greedy-coolest", TM_METHOD_GREEDY_COOLEST },
	{ "alternating", TM_METHOD_ALTERNATING },
};

const char *tm_method_name(int method)
{
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (methods[i].method == method)
			return methods[i].name;
	return "?";
}

static const char *const crit_names[TM_MAX_CRIT] = { "time", "peak_temp",
	"moves", "wear" };

const char *tm_crit_name(int crit)
{
	return crit >= 0 && crit < TM_MAX_CRIT ? crit_names[crit] : "?";
}

void tm_policy_free(tm_policy *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->file);
	free(p);
}

static int load_objective(const jin *J, json_t *o, tm_policy *p)
{
	static const char *const known[] = { "order", "tolerance",
		"move_cost_ms", NULL };
	json_t *order;
	int rc;

	jin_unknown(J, o, "objective", known);
	if ((rc = jin_arr(J, o, "objective", "order", 0, &order)))
		return rc;
	if (order) {
		size_t n = json_array_size(order);
		if (n == 0 || n > TM_MAX_CRIT)
			return jin_fail(J, "objective", "order", "expected 1 to %d "
			                "criteria from \"time\", \"peak_temp\", "
			                "\"wear\", \"moves\"", TM_MAX_CRIT);
		p->ncrit = 0;
		for (size_t i = 0; i < n; i++) {
			const char *s = json_string_value(json_array_get(order, i));
			int c = -1;
			for (int k = 0; s && k < TM_MAX_CRIT; k++)
				if (!strcmp(s, crit_names[k]))
					c = k;
			if (c < 0)
				return jin_fail(J, "objective", "order", "entry %zu: expected "
				                "\"time\", \"peak_temp\", \"wear\" or "
				                "\"moves\"", i);
			for (int k = 0; k < p->ncrit; k++)
				if (p->crit[k] == c)
					return jin_fail(J, "objective", "order", "names \"%s\" "
					                "twice", s);
			p->crit[p->ncrit++] = c;
		}
	}
	if ((rc = jin_num(J, o, "objective", "tolerance", 0, 0, 1,
	                  &p->tolerance)) ||
	    (rc = jin_num(J, o, "objective", "move_cost_ms", 0, 0, 1e9,
	                  &p->move_cost_ms)))
		return rc;
	return 0;
}

/* "decision": the evidence rule of docs/model.md, section 16. */
static int load_decision(const jin *J, json_t *o, tm_policy *p)
{
	static const char *const known[] = { "evidence", "min_gain",
		"exchange_c_per_pct", NULL };
	const char *P = "decision";
	char *mg = NULL;
	int rc;

	jin_unknown(J, o, P, known);
	if ((rc = jin_bool(J, o, P, "evidence", 0, &p->evidence)) ||
	    (rc = jin_num(J, o, P, "exchange_c_per_pct", JF_NULL, 0, 1000,
	                  &p->exchange_c_per_pct)) ||
	    (rc = jin_str(J, o, P, "min_gain", 0, &mg)))
		return rc;
	if (mg && tm_min_gain_parse(mg, &p->min_gain) != 0)
		rc = jin_fail(J, P, "min_gain", "\"%.40s\": expected a least gain "
		              "like \"1%%\", \"2C\", \"1%%,2C\" or \"0\"", mg);
	free(mg);
	return rc;
}

static int load_constraints(const jin *J, json_t *o, tm_policy *p)
{
	static const char *const known[] = { "tp_nvlink", "pp_nvlink",
		"max_temp_c", "rebalance_layers", "min_layers", "max_moves",
		"max_slowdown_pct", NULL };
	const char *P = "constraints";
	json_t *mm;
	int rc;

	jin_unknown(J, o, P, known);
	if ((rc = jin_bool(J, o, P, "tp_nvlink", 0, &p->tp_nvlink)) ||
	    (rc = jin_bool(J, o, P, "pp_nvlink", 0, &p->pp_nvlink)) ||
	    (rc = jin_num(J, o, P, "max_temp_c", JF_NULL, -50, 200,
	                  &p->max_temp_c)) ||
	    (rc = jin_bool(J, o, P, "rebalance_layers", 0, &p->rebalance)) ||
	    (rc = jin_int(J, o, P, "min_layers", 0, 0, 100000, &p->min_layers)) ||
	    (rc = jin_num(J, o, P, "max_slowdown_pct", JF_NULL, 0, 1000,
	                  &p->max_slowdown_pct)))
		return rc;
	mm = json_object_get(o, "max_moves");
	if (mm && !json_is_null(mm) &&
	    (rc = jin_int(J, o, P, "max_moves", 0, 0, TM_MAX_RANKS,
	                  &p->max_moves)))
		return rc;
	return 0;
}

static int load_policy(const char *file, json_t *root, tm_policy *p,
                       tm_error *err)
{
	static const char *const known[] = { "format", "name", "description",
		"method", "objective", "constraints", "decision", "solver", NULL };
	static const char *const known_solver[] = { "time_limit_s", "mip_gap",
		NULL };
	jin J = { file, err };
	json_t *o;
	char *method = NULL;
	int rc;

	jin_unknown(&J, root, "", known);
	if ((rc = jin_str(&J, root, "", "name", JF_REQ, &p->name)) ||
	    (rc = jin_str(&J, root, "", "method", JF_REQ, &method)))
		goto out;
	p->method = -1;
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (!strcmp(method, methods[i].name))
			p->method = methods[i].method;
	if (p->method < 0) {
		rc = jin_fail(&J, "", "method", "\"%.40s\" is not a method; expected "
		              "\"ilp\", \"greedy\", \"greedy-coolest\", \"identity\", "
		              "\"alternating\" or \"brute\"", method);
		goto out;
	}
	if ((rc = jin_obj(&J, root, "", "objective", 0, &o)) ||
	    (o && (rc = load_objective(&J, o, p))) ||
	    (rc = jin_obj(&J, root, "", "constraints", 0, &o)) ||
	    (o && (rc = load_constraints(&J, o, p))) ||
	    (rc = jin_obj(&J, root, "", "decision", 0, &o)) ||
	    (o && (rc = load_decision(&J, o, p))) ||
	    (rc = jin_obj(&J, root, "", "solver", 0, &o)))
		goto out;
	if (o) {
		jin_unknown(&J, o, "solver", known_solver);
		if ((rc = jin_num(&J, o, "solver", "time_limit_s", 0, 0.001, 1e6,
		                  &p->time_limit_s)) ||
		    (rc = jin_num(&J, o, "solver", "mip_gap", 0, 0, 1, &p->mip_gap)))
			goto out;
	}
	/* alternating sets the layers itself, by its published rule */
	if (p->method == TM_METHOD_ALTERNATING && p->rebalance)
		rc = jin_fail(&J, "constraints", "rebalance_layers", "true with "
		              "method \"alternating\", which sets the layers by its "
		              "own rule; expected false");
out:
	free(method);
	return rc;
}

static tm_policy *policy_new(const char *file)
{
	tm_policy *p = xcalloc(1, sizeof *p);
	p->file = xstrdup(file);
	p->ncrit = 2;
	p->crit[0] = TM_CRIT_TIME;
	p->crit[1] = TM_CRIT_PEAK;
	p->tolerance = 0.01;
	p->tp_nvlink = true;
	p->max_temp_c = NAN;
	p->min_layers = 1;
	p->max_moves = -1;
	p->max_slowdown_pct = NAN;
	p->time_limit_s = 10;
	p->evidence = true;
	p->min_gain.time_pct = p->min_gain.peak_c = 0;
	/* a policy that says nothing trades as the default policy does */
	p->exchange_c_per_pct = 1.0;
	return p;
}

int tm_policy_load(const char *file, tm_policy **out, tm_error *err)
{
	tm_policy *p = policy_new(file);
	json_t *root = NULL;
	int rc;

	if ((rc = jin_load(file, "thermap.policy", &root, p->sha256, err)) ||
	    (rc = load_policy(file, root, p, err))) {
		json_decref(root);
		tm_policy_free(p);
		*out = NULL;
		return rc;
	}
	json_decref(root);
	*out = p;
	return 0;
}

int tm_policy_loadb(const char *name, const char *text, size_t len,
                    tm_policy **out, tm_error *err)
{
	tm_policy *p = policy_new(name);
	json_t *root = NULL;
	char hex[65];
	int rc;

	tm_sha256_hex(text, len, hex);
	snprintf(p->sha256, sizeof p->sha256, "sha256:%s", hex);
	if ((rc = jin_loadb(name, text, len, "thermap.policy", &root, err)) ||
	    (rc = load_policy(name, root, p, err))) {
		json_decref(root);
		tm_policy_free(p);
		*out = NULL;
		return rc;
	}
	json_decref(root);
	*out = p;
	return 0;
}

int tm_policy_default(tm_policy **out, tm_error *err)
{
	return tm_policy_loadb("(built-in thermal policy)",
	                       tm_default_policy_text,
	                       sizeof tm_default_policy_text - 1, out, err);
}
