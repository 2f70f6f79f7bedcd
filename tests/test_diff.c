/*
 * test_diff.c — cmocka tests for diff.c on real plan directories: the
 * h200x4-a fixture (pp 2, dp 2 on one 4×H200 host) planned by the identity
 * and thermal policies into a temporary directory, and copies of those
 * plans edited with jansson.
 *
 *  - identity against itself moves nothing; identity against thermal lists
 *    exactly the ranks whose (host, gpu_index) the test finds different by
 *    reading both plan.json files itself, with a derived "stage" reason;
 *  - a NEW plan whose replan section replaces OLD gives its reason
 *    verbatim, one that replaces another plan does not;
 *  - the JSON report parses and says what the text says, line for line;
 *  - UUIDs decide when both plans have them, indices otherwise; a freed
 *    GPU is said so; tp/cp/ep show only when the layout has them; another
 *    job file gives a note;
 *  - every broken input (missing directory or file, truncated JSON, wrong
 *    types, other world size or layout, hostile values anywhere in a rank
 *    or the replan section) is TM_EINPUT with one line naming the file,
 *    never a crash; two calls give the same bytes;
 *  - tm_diff_plans takes the registry's formats (enum tm_format) and
 *    refuses those diff does not offer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ops/ops.h"
#include "testplan.h"

#define FIX "fixtures/h200x4-a/"
#define WHY "gain: DISTINCT why \"7\""  /* a replan's reason, quotes and all */

static char tmp[64];          /* the temporary directory */
static char ID[96], ID2[96];  /* identity, planned twice */
static char TH[96];           /* thermal */

/* ---- helpers ------------------------------------------------------------ */

static int make_plan(const char *policy, const char *dir)
{
	tm_cluster *c = NULL;
	tm_profile *p = NULL;
	tm_job *j = NULL;
	tm_policy *pol = NULL;
	tm_run run;
	tm_error err = { 0, "" };
	int rc = tm_cluster_load(FIX "cluster.json", &c, &err);
	if (!rc)
		rc = tm_profile_load(FIX "profile.json", &p, &err);
	if (!rc)
		rc = tm_job_load(FIX "job-pp2-dp2.json", &j, &err);
	if (!rc)
		rc = tm_policy_load(policy, &pol, &err);
	if (!rc)
		rc = tm_run_policy(c, p, j, pol, false, &run, &err);
	if (!rc) {
		rc = tm_plan_write(run.pb, &run.sol, dir, &err);
		tm_run_clear(&run);
	}
	if (rc)
		fprintf(stderr, "make_plan %s: %s\n", policy, err.msg);
	tm_policy_free(pol);
	tm_job_free(j);
	tm_profile_free(p);
	tm_cluster_free(c);
	return rc;
}

/* tmp/name, in one of a few rotating buffers */
static const char *sub(const char *name)
{
	static char buf[8][128];
	static int k;
	char *b = buf[k++ % 8];
	snprintf(b, sizeof buf[0], "%s/%s", tmp, name);
	return b;
}

/* Writes root as dir/plan.json and drops the reference. */
static void save(const char *dir, json_t *root)
{
	tt_plan_save_json(dir, root);
	json_decref(root);
}

static json_t *rank_of(json_t *root, int r)
{
	json_t *o = json_array_get(json_object_get(root, "ranks"), (size_t)r);
	assert_non_null(o);
	return o;
}

static const char *id_of(const char *dir)
{
	static char ids[4][20];
	static int k;
	json_t *r = tt_plan_load(dir);
	char *b = ids[k++ % 4];
	snprintf(b, sizeof ids[0], "%s",
	         json_string_value(json_object_get(r, "id")));
	json_decref(r);
	assert_int_equal(strlen(b), 16);
	return b;
}

static char *diff_ok(const char *a, const char *b, int fmt)
{
	tm_error err = { 0, "" };
	char *out = NULL;
	int rc = tm_plan_diff(a, b, fmt, &out, &err);
	if (rc)
		fail_msg("diff %s %s: %d: %s", a, b, rc, err.msg);
	assert_int_equal(err.code, 0);
	assert_non_null(out);
	return out;
}

/* TM_EINPUT with one line that holds want and want2 (either may be NULL) */
static void diff_fails(const char *a, const char *b, const char *want,
                       const char *want2)
{
	tm_error err = { 0, "" };
	char *out = (char *)1;
	int rc = tm_plan_diff(a, b, 0, &out, &err);
	assert_int_equal(rc, TM_EINPUT);
	assert_int_equal(err.code, TM_EINPUT);
	assert_null(out);
	assert_null(strchr(err.msg, '\n'));
	if (want && !strstr(err.msg, want))
		fail_msg("\"%s\" not in \"%s\"", want, err.msg);
	if (want2 && !strstr(err.msg, want2))
		fail_msg("\"%s\" not in \"%s\"", want2, err.msg);
}

static int count(const char *s, const char *w)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, w)) != NULL; p++)
		n++;
	return n;
}

/* Which ranks the two plans put on another (host, gpu_index), read
 * independently of diff.c; returns how many. */
static int expected_moves(const char *a, const char *b, bool moved[64])
{
	json_t *x = tt_plan_load(a), *y = tt_plan_load(b);
	size_t n = json_array_size(json_object_get(x, "ranks"));
	int k = 0;
	assert_int_equal(n, json_array_size(json_object_get(y, "ranks")));
	assert_true(n > 0 && n <= 64);
	for (int r = 0; r < (int)n; r++) {
		json_t *p = rank_of(x, r), *q = rank_of(y, r);
		moved[r] = strcmp(json_string_value(json_object_get(p, "host")),
		                  json_string_value(json_object_get(q, "host"))) ||
		           json_integer_value(json_object_get(p, "gpu_index")) !=
		           json_integer_value(json_object_get(q, "gpu_index"));
		k += moved[r];
	}
	json_decref(x);
	json_decref(y);
	return k;
}

/* the line of rank r in a text report, or NULL */
static const char *line_of(const char *text, int r)
{
	char want[32];
	const char *p;
	snprintf(want, sizeof want, "\nrank %d (", r);
	p = strstr(text, want);
	return p ? p + 1 : NULL;
}

/* ---- cases -------------------------------------------------------------- */

static void test_identity_vs_identity(void **state)
{
	char want[96], *out;
	(void)state;
	out = diff_ok(ID, ID2, 0);
	snprintf(want, sizeof want, "plan %s -> plan %s: no rank moves\n",
	         id_of(ID), id_of(ID2));
	assert_string_equal(out, want);
	free(out);
	/* one directory against itself, and thermal against itself */
	out = diff_ok(TH, TH, 0);
	assert_non_null(strstr(out, ": no rank moves\n"));
	assert_null(strstr(out, "\nrank "));
	free(out);
}

static void test_identity_vs_thermal(void **state)
{
	bool moved[64];
	int k = expected_moves(ID, TH, moved), lines = 0;
	json_t *a = tt_plan_load(ID), *b = tt_plan_load(TH);
	char want[160], *out = diff_ok(ID, TH, 0);
	(void)state;

	assert_true(k > 0);  /* the fixture's thermal plan does move ranks */
	snprintf(want, sizeof want, "plan %s -> plan %s: %d of 4 ranks move\n",
	         id_of(ID), id_of(TH), k);
	assert_true(strncmp(out, want, strlen(want)) == 0);
	for (int r = 0; r < 4; r++) {
		const char *l = line_of(out, r);
		json_t *p = rank_of(a, r), *q = rank_of(b, r);
		if (!moved[r]) {
			assert_null(l);
			continue;
		}
		assert_non_null(l);
		lines++;
		snprintf(want, sizeof want, "rank %d (node 0, local %d; pp %d dp "
		         "%d): h200x4-a GPU %d -> h200x4-a GPU %d: stage %d: "
		         "predicted ", r, r,
		         (int)json_integer_value(json_object_get(p, "pp")),
		         (int)json_integer_value(json_object_get(p, "dp")),
		         (int)json_integer_value(json_object_get(p, "gpu_index")),
		         (int)json_integer_value(json_object_get(q, "gpu_index")),
		         (int)json_integer_value(json_object_get(p, "pp")));
		if (strncmp(l, want, strlen(want)) != 0)
			fail_msg("expected \"%s…\" in:\n%s", want, out);
		/* the two predicted temperatures, one decimal each, and which
		 * way the rank went */
		{
			double t0 = json_number_value(json_object_get(p,
			                              "predicted_temp_c"));
			double t1 = json_number_value(json_object_get(q,
			                              "predicted_temp_c"));
			snprintf(want, sizeof want, "predicted %.1f °C on the old "
			         "GPU, %.1f °C on the new (%.1f °C %s)\n", t0, t1,
			         fabs(t1 - t0), t1 <= t0 ? "cooler" : "hotter");
			assert_non_null(strstr(l, want));
		}
	}
	assert_int_equal(count(out, "\nrank "), lines);
	assert_int_equal(count(out, "\n"), 1 + lines);
	/* a swap: every old GPU is still in use, and the job is the same */
	assert_null(strstr(out, "not used"));
	assert_null(strstr(out, "note:"));
	assert_null(strstr(out, " tp "));
	json_decref(a);
	json_decref(b);
	free(out);
}

/* NEW = thermal with a replan section naming previous */
static const char *with_replan(const char *name, const char *previous,
                               int rank, int still)
{
	json_t *root = tt_plan_load(TH), *rp, *moves;
	const char *dir = sub(name);
	rp = json_pack("{s:s, s:s, s:[{s:i, s:s, s:s, s:s}, {s:i, s:s}, "
	               "{s:i, s:s}]}", "previous", previous, "decision", "move",
	               "moves", "rank", rank, "from", "h200x4-a:0", "to",
	               "h200x4-a:2", "why", WHY, "rank", still, "why",
	               "UNUSED why", "rank", rank, "why", "UNUSED second why");
	assert_non_null(rp);
	moves = json_object_get(rp, "moves");
	assert_non_null(moves);
	json_object_set_new(root, "replan", rp);
	save(dir, root);
	return dir;
}

static void test_replan_why(void **state)
{
	bool moved[64];
	int k = expected_moves(ID, TH, moved), m = -1, still = -1;
	const char *dir, *l;
	char *out;
	json_t *j;
	(void)state;

	for (int r = 0; r < 4; r++) {
		if (moved[r] && m < 0)
			m = r;
		if (!moved[r] && still < 0)
			still = r;
	}
	assert_true(k > 0 && m >= 0 && still >= 0);
	dir = with_replan("replan-ok", id_of(ID), m, still);
	out = diff_ok(ID, dir, 0);
	l = line_of(out, m);
	assert_non_null(l);
	assert_true(strlen(l) > strlen(WHY) + 2);
	assert_memory_equal(strchr(l, '\n') - strlen(WHY) - 2, ": " WHY "\n",
	                    strlen(WHY) + 3);
	assert_int_equal(count(out, "DISTINCT"), 1);
	/* a rank that does not move, and a second entry of the same rank */
	assert_null(strstr(out, "UNUSED"));
	assert_int_equal(count(out, ": stage "), k - 1);  /* the others */
	free(out);
	/* the JSON report carries it verbatim, quotes escaped */
	out = diff_ok(ID, dir, 1);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	for (size_t i = 0; i < json_array_size(json_object_get(j, "moves")); i++) {
		json_t *mv = json_array_get(json_object_get(j, "moves"), i);
		if (json_integer_value(json_object_get(mv, "rank")) == m)
			assert_string_equal(json_string_value(json_object_get(mv,
			                    "why")), WHY);
	}
	json_decref(j);
	free(out);

	/* a replan of some other plan: its reasons are not about OLD */
	dir = with_replan("replan-other", "0123456789abcdef", m, still);
	out = diff_ok(ID, dir, 0);
	assert_null(strstr(out, "DISTINCT"));
	assert_int_equal(count(out, ": stage "), k);
	free(out);
}

static void test_json_agrees(void **state)
{
	char *text = diff_ok(ID, TH, 0), *js = diff_ok(ID, TH, 1);
	json_error_t je;
	json_t *j = json_loads(js, 0, &je), *moves;
	int k = 0, last = -1;
	(void)state;

	if (!j)
		fail_msg("%s: %s", je.text, js);
	assert_true(js[strlen(js) - 1] == '\n');
	assert_string_equal(json_string_value(json_object_get(j, "old")),
	                    id_of(ID));
	assert_string_equal(json_string_value(json_object_get(j, "new")),
	                    id_of(TH));
	assert_int_equal(json_integer_value(json_object_get(j, "world")), 4);
	assert_true(json_is_true(json_object_get(j, "same_job")));
	moves = json_object_get(j, "moves");
	assert_true(json_is_array(moves));
	assert_int_equal(json_integer_value(json_object_get(j, "moved")),
	                 json_array_size(moves));
	for (size_t i = 0; i < json_array_size(moves); i++) {
		json_t *m = json_array_get(moves, i);
		json_t *f = json_object_get(m, "from"), *t = json_object_get(m, "to");
		int r = (int)json_integer_value(json_object_get(m, "rank"));
		char want[512];
		assert_true(r > last);  /* in rank order */
		last = r;
		assert_true(json_is_string(json_object_get(f, "uuid")));
		snprintf(want, sizeof want, "\nrank %d (node %d, local %d; pp %d "
		         "dp %d): %s GPU %d -> %s GPU %d: %s\n", r,
		         (int)json_integer_value(json_object_get(m, "node_rank")),
		         (int)json_integer_value(json_object_get(m, "local_rank")),
		         (int)json_integer_value(json_object_get(m, "pp")),
		         (int)json_integer_value(json_object_get(m, "dp")),
		         json_string_value(json_object_get(f, "host")),
		         (int)json_integer_value(json_object_get(f, "gpu_index")),
		         json_string_value(json_object_get(t, "host")),
		         (int)json_integer_value(json_object_get(t, "gpu_index")),
		         json_string_value(json_object_get(m, "why")));
		if (!strstr(text, want))
			fail_msg("JSON move \"%s\" not in the text:\n%s", want + 1, text);
		k++;
	}
	assert_true(k > 0);
	assert_int_equal(count(text, "\nrank "), k);
	json_decref(j);
	free(js);
	free(text);

	/* nothing moves: an empty list */
	js = diff_ok(ID, ID2, 1);
	j = json_loads(js, 0, NULL);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "moved")), 0);
	assert_int_equal(json_array_size(json_object_get(j, "moves")), 0);
	json_decref(j);
	free(js);
}

/* UUIDs decide when both plans have them; a freed GPU is named. */
static void test_uuid_rule(void **state)
{
	json_t *root = tt_plan_load(ID);
	const char *dir = sub("uuids");
	char *out;
	const char *l;
	(void)state;

	/* rank 0: same index, no UUID in NEW: compared by index, stays */
	json_object_set_new(rank_of(root, 0), "uuid", json_null());
	/* rank 1: to GPU 9, which no rank of NEW had */
	json_object_set_new(rank_of(root, 1), "gpu_index", json_integer(9));
	json_object_set_new(rank_of(root, 1), "uuid", json_null());
	/* rank 2: same index, another UUID: a move */
	json_object_set_new(rank_of(root, 2), "uuid", json_string(
	                    "GPU-ffffffff-0000-4000-8000-000000000002"));
	save(dir, root);
	out = diff_ok(ID, dir, 0);
	assert_non_null(strstr(out, ": 2 of 4 ranks move\n"));
	assert_null(line_of(out, 0));
	assert_null(line_of(out, 3));
	l = line_of(out, 1);
	assert_non_null(l);
	assert_true(strncmp(l, "rank 1 (node 0, local 1; pp 0 dp 1): h200x4-a "
	                    "GPU 1 -> h200x4-a GPU 9: stage 0: predicted ",
	                    strlen("rank 1 (node 0, local 1; pp 0 dp 1): h200x4-a "
	                           "GPU 1 -> h200x4-a GPU 9: stage 0: predicted "))
	            == 0);
	assert_non_null(strstr(l, " °C "));
	assert_non_null(strstr(l, "); the old GPU is not used by the "
	                        "new plan\n"));
	l = line_of(out, 2);
	assert_non_null(l);
	assert_non_null(strstr(l, "h200x4-a GPU 2 (GPU-a0000002-0000-4000-8000-"
	                        "000000000002) -> h200x4-a GPU 2 (GPU-ffffffff-"
	                        "0000-4000-8000-000000000002): stage 1"));
	free(out);

	/* no temperatures: the reason is the stage alone */
	root = tt_plan_load(dir);
	json_object_set_new(rank_of(root, 1), "predicted_temp_c", json_null());
	save(dir, root);
	out = diff_ok(ID, dir, 0);
	assert_non_null(strstr(out, "h200x4-a GPU 9: stage 0; the old GPU is "
	                       "not used by the new plan\n"));
	free(out);
}

/* tp/cp/ep appear once the layout uses them; another job file is noted */
static void test_coords_and_job(void **state)
{
	const char *a = sub("tp-old"), *b = sub("tp-new");
	json_t *x = tt_plan_load(ID), *y = tt_plan_load(TH), *j;
	char *out;
	(void)state;

	json_object_set_new(rank_of(x, 3), "tp", json_integer(1));
	json_object_set_new(rank_of(y, 3), "tp", json_integer(1));
	json_object_set_new(json_object_get(y, "inputs"), "job",
	                    json_string("sha256:another"));
	save(a, x);
	save(b, y);
	out = diff_ok(a, b, 0);
	assert_non_null(strstr(out, "ranks move\nnote: the plans were made for "
	                       "different job files\nrank "));
	assert_non_null(strstr(out, "; pp 0 dp 0 tp 0 cp 0 ep 0): "));
	free(out);
	out = diff_ok(a, b, 1);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_true(json_is_false(json_object_get(j, "same_job")));
	assert_true(json_is_integer(json_object_get(json_array_get(
	            json_object_get(j, "moves"), 0), "tp")));
	json_decref(j);
	free(out);
}

/* ---- broken inputs ------------------------------------------------------ */

/* a copy of TH with one rank field replaced */
static const char *bad_field(const char *name, int r, const char *key,
                             json_t *v)
{
	json_t *root = tt_plan_load(TH);
	const char *dir = sub(name);
	if (v)
		json_object_set_new(rank_of(root, r), key, v);
	else
		json_object_del(rank_of(root, r), key);
	save(dir, root);
	return dir;
}

static void test_errors(void **state)
{
	char *text;
	json_t *root;
	const char *d;
	size_t len;
	tm_error err = { 0, "" };
	(void)state;

	/* no directory, no plan.json, a file for a directory */
	diff_fails(sub("nope"), TH, sub("nope"), NULL);
	diff_fails(ID, sub("nope"), sub("nope"), NULL);
	mkdir(sub("empty"), 0755);
	diff_fails(ID, sub("empty"), "empty/plan.json", NULL);
	diff_fails(ID, FIX "cluster.json", FIX "cluster.json", "not a directory");

	/* truncated */
	{
		char p[160];
		snprintf(p, sizeof p, "%s/plan.json", TH);
		assert_int_equal(tm_read_file(p, 1 << 20, &text, &len, &err), 0);
	}
	d = sub("half");
	tt_plan_save_text(d, text, len / 2);
	diff_fails(ID, d, "half/plan.json", NULL);
	diff_fails(d, ID, "half/plan.json", NULL);
	free(text);

	/* ranks not an array, empty, an entry not an object */
	root = tt_plan_load(TH);
	json_object_set_new(root, "ranks", json_integer(5));
	save(sub("ranks-int"), root);
	diff_fails(ID, sub("ranks-int"), "ranks-int/plan.json: ranks: expected "
	           "an array", NULL);
	root = tt_plan_load(TH);
	json_object_set_new(root, "ranks", json_array());
	save(sub("ranks-empty"), root);
	diff_fails(ID, sub("ranks-empty"), "ranks-empty/plan.json: ranks: empty",
	           NULL);
	root = tt_plan_load(TH);
	json_array_set_new(json_object_get(root, "ranks"), 1, json_string("x"));
	save(sub("rank-str"), root);
	diff_fails(ID, sub("rank-str"), "rank-str/plan.json: ranks[1]: expected "
	           "an object", NULL);

	/* wrong types and values in a rank */
	d = bad_field("gpu-str", 2, "gpu_index", json_string("3"));
	diff_fails(ID, d, "gpu-str/plan.json: ranks[2].gpu_index: expected an "
	           "integer", NULL);
	d = bad_field("gpu-neg", 2, "gpu_index", json_integer(-1));
	diff_fails(ID, d, "gpu-neg/plan.json: ranks[2].gpu_index", NULL);
	d = bad_field("host-bad", 0, "host", json_string("a\nb"));
	diff_fails(d, ID, "host-bad/plan.json: ranks[0].host", NULL);
	d = bad_field("uuid-bad", 0, "uuid", json_string("not a uuid"));
	diff_fails(ID, d, "uuid-bad/plan.json: ranks[0].uuid", NULL);
	d = bad_field("rank-num", 3, "rank", json_integer(2));
	diff_fails(ID, d, "rank-num/plan.json: ranks[3].rank", NULL);
	d = bad_field("pp-missing", 3, "pp", NULL);
	diff_fails(ID, d, "pp-missing/plan.json: ranks[3].pp: missing", NULL);

	/* the id, the format, inputs */
	root = tt_plan_load(TH);
	json_object_set_new(root, "id", json_string("xyz"));
	save(sub("id-bad"), root);
	diff_fails(ID, sub("id-bad"), "id-bad/plan.json: id", NULL);
	root = tt_plan_load(TH);
	json_object_set_new(root, "format", json_string("thermap.job/1"));
	save(sub("format-bad"), root);
	diff_fails(ID, sub("format-bad"), "format-bad/plan.json: format", NULL);
	root = tt_plan_load(TH);
	json_object_del(root, "inputs");
	save(sub("inputs-missing"), root);
	diff_fails(ID, sub("inputs-missing"), "inputs-missing/plan.json: inputs",
	           NULL);

	/* the replan section */
	root = tt_plan_load(TH);
	json_object_set_new(root, "replan", json_string("yes"));
	save(sub("replan-str"), root);
	diff_fails(ID, sub("replan-str"), "replan-str/plan.json: replan: "
	           "expected an object", NULL);
	root = tt_plan_load(TH);
	json_object_set_new(root, "replan", json_pack("{s:s, s:[{s:i, s:s}]}",
	                    "previous", id_of(ID), "moves", "rank", 99, "why",
	                    "x"));
	save(sub("replan-rank"), root);
	diff_fails(ID, sub("replan-rank"), "replan-rank/plan.json: "
	           "replan.moves[0].rank", NULL);

	/* other world size: one rank fewer */
	root = tt_plan_load(TH);
	json_array_remove(json_object_get(root, "ranks"), 3);
	save(sub("world3"), root);
	diff_fails(ID, sub("world3"), "4 and 3 ranks; diff compares plans of "
	           "one job", "world3/plan.json");
	diff_fails(ID, sub("world3"), ID, NULL);

	/* other layout: rank 3 in another pipeline stage */
	d = bad_field("layout", 3, "pp", json_integer(0));
	diff_fails(ID, d, "ranks[3]: pp 1 in ", ", 0 in ");
	diff_fails(ID, d, "layout/plan.json; the plans are of different parallel "
	           "layouts", NULL);
}

/* Hostile values in every field of a rank and of the replan section, and
 * JSON cut at many lengths: an error or a report, never a crash. */
static void test_hostile(void **state)
{
	static const char *const keys[] = {
		"rank", "host", "node_rank", "local_rank", "gpu_index", "uuid", "tp",
		"cp", "ep", "dp", "pp", "predicted_temp_c", NULL
	};
	json_t *vals[] = {
		json_string(""), json_string("GPU-"), json_null(), json_true(),
		json_integer(-1), json_integer(1 << 30), json_real(1.5),
		json_real(1e300), json_array(), json_object(), json_integer(0),
		json_stringn("a\0b", 3)
	};
	const int nv = (int)(sizeof vals / sizeof vals[0]);
	const char *d = sub("hostile");
	char p[160], *text;
	size_t len;
	tm_error err = { 0, "" };
	(void)state;

	for (int k = 0; keys[k]; k++)
		for (int v = 0; v <= nv; v++) {
			json_t *root = tt_plan_load(TH);
			char *out = NULL;
			int rc;
			if (v == nv)
				json_object_del(rank_of(root, 1), keys[k]);
			else
				json_object_set(rank_of(root, 1), keys[k], vals[v]);
			save(d, root);
			memset(&err, 0, sizeof err);
			rc = tm_plan_diff(ID, d, k % 2, &out, &err);
			assert_true(rc == 0 || rc == TM_EINPUT);
			assert_true(rc ? !out && strstr(err.msg, "hostile/plan.json") :
			            out != NULL);
			free(out);
		}
	for (int v = 0; v < nv; v++) {
		static const char *const rk[] = { "previous", "moves", NULL };
		for (int k = 0; rk[k]; k++) {
			json_t *root = tt_plan_load(TH);
			json_t *rp = json_pack("{s:s, s:[{s:i, s:s}]}", "previous",
			                       id_of(ID), "moves", "rank", 0, "why",
			                       "w");
			json_t *m = json_array_get(json_object_get(rp, "moves"), 0);
			char *out = NULL;
			int rc;
			/* the entry first: replacing "moves" frees it */
			json_object_set(m, k ? "why" : "rank", vals[v]);
			json_object_set(rp, rk[k], vals[v]);
			json_object_set_new(root, "replan", rp);
			save(d, root);
			memset(&err, 0, sizeof err);
			rc = tm_plan_diff(ID, d, 0, &out, &err);
			assert_true(rc == 0 || rc == TM_EINPUT);
			free(out);
		}
	}
	for (int v = 0; v < nv; v++)
		json_decref(vals[v]);

	/* truncated at many lengths */
	snprintf(p, sizeof p, "%s/plan.json", TH);
	assert_int_equal(tm_read_file(p, 1 << 20, &text, &len, &err), 0);
	/* up to the closing brace; with it, the JSON is whole again */
	for (size_t n = 0; n + 1 < len; n += 1 + n / 16) {
		char *out = NULL;
		tt_plan_save_text(d, text, n);
		memset(&err, 0, sizeof err);
		assert_int_equal(tm_plan_diff(d, ID, 1, &out, &err), TM_EINPUT);
		assert_null(out);
		assert_non_null(strstr(err.msg, "hostile/plan.json"));
	}
	free(text);
}

static void test_deterministic(void **state)
{
	(void)state;
	for (int fmt = 0; fmt < 2; fmt++) {
		char *a = diff_ok(ID, TH, fmt), *b = diff_ok(ID, TH, fmt);
		assert_string_equal(a, b);
		free(b);
		/* trailing slashes name the same plans */
		b = diff_ok(sub("identity/"), sub("thermal//"), fmt);
		assert_string_equal(a, b);
		free(b);
		free(a);
	}
}

/* The registry's numbers give the same reports as the former 0 and 1;
 * a format diff does not offer is a usage error, with nothing read. */
static void test_formats(void **state)
{
	static const int fmts[] = { TM_FORMAT_TEXT, TM_FORMAT_JSON };
	(void)state;
	for (int k = 0; k < 2; k++) {
		tm_error err = { 0, "" };
		char *a = diff_ok(ID, TH, k), *b = NULL;
		assert_int_equal(tm_diff_plans(ID, TH, fmts[k], &b, &err), 0);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	for (int f = -1; f <= TM_NFORMATS; f++) {
		tm_error err = { 0, "" };
		char *out = (char *)1;
		if (tm_format_lookup(tm_format_name(f) ? tm_format_name(f) : "",
		                     TM_FORMATS_DIFF) == f)
			continue;
		assert_int_equal(tm_diff_plans(ID, "/nonexistent", f, &out, &err),
		                 TM_EUSAGE);
		assert_null(out);
		assert_non_null(strstr(err.msg, "unknown output format"));
	}
}

/* ---- setup -------------------------------------------------------------- */

static int setup(void **state)
{
	(void)state;
	if (tt_tmpdir(tmp, sizeof tmp, "test_diff"))
		return -1;
	snprintf(ID, sizeof ID, "%s/identity", tmp);
	snprintf(ID2, sizeof ID2, "%s/identity2", tmp);
	snprintf(TH, sizeof TH, "%s/thermal", tmp);
	if (make_plan("policies/identity.json", ID) ||
	    make_plan("policies/identity.json", ID2) ||
	    make_plan("policies/thermal.json", TH))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tt_rm_tree(tmp);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity_vs_identity),
		cmocka_unit_test(test_identity_vs_thermal),
		cmocka_unit_test(test_replan_why),
		cmocka_unit_test(test_json_agrees),
		cmocka_unit_test(test_uuid_rule),
		cmocka_unit_test(test_coords_and_job),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_formats),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
