/*
 * test_replan.c — tm_replan (src/ops/replan.c): keep the previous plan, write
 * its least change, or move to the policy's best, on plans written to a
 * temporary directory.
 *
 *  - noise never moves a rank: the h200x4-a fixture and random small
 *    clusters, every temperature field of the profile perturbed by up to
 *    ±0.5 °C, keep the previous placement (exit 3, nothing moved);
 *  - a GPU gone moves exactly the ranks that must move: the least change
 *    (decision repair, with a minimum gain that never justifies moving) is
 *    held to a brute-force enumeration of every placement torchrun can
 *    run on the new cluster, written here and independent of the library;
 *    with the default minimum gain, anything beyond it is a move; a host
 *    gone moves its node whole to a free host;
 *  - written plans carry a replan section naming the previous plan and
 *    exactly the moved ranks, and pass tm_plan_check against it; a kept
 *    plan writes nothing;
 *  - move_cost_ms and max_moves: a slowed GPU is worth leaving for free,
 *    not at 10^6 ms a move; at most max_moves ranks move;
 *  - refusals: layer-changing policies, another world size or layout, a
 *    missing, truncated, garbled or self-contradicting previous plan
 *    (never a crash);
 *  - the decision line is one JSON object that says what res says, and
 *    its decision follows the minimum-gain rule on its own numbers.
 *  - a solver stopped by its time limit still answers with the placement
 *    it has (the repair, or the previous one).
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

#include "testlib.h"
#include "testplan.h"

#define FIX "fixtures/h200x4-a/"

static char tmp[64];   /* the temporary directory of this run */
static int nwarn;      /* warnings the library gave (dropped) */

static void count_warn(void *ud, const char *msg)
{
	(void)ud;
	(void)msg;
	nwarn++;
}

/* ---- files ------------------------------------------------------------- */


/* tmp/name: one buffer per name, kept for the whole run */
static const char *sub(const char *name)
{
	static char buf[512][160];
	static int n;
	char want[160];
	snprintf(want, sizeof want, "%s/%s", tmp, name);
	for (int k = 0; k < n; k++)
		if (!strcmp(buf[k], want))
			return buf[k];
	assert_true(n < 512);
	memcpy(buf[n], want, sizeof want);
	return buf[n++];
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}




static char *read_text(const char *dir, size_t *len)
{
	char path[256];
	char *b;
	snprintf(path, sizeof path, "%s/plan.json", dir);
	b = tt_slurp(path, len);
	assert_true(*len > 0);
	return b;
}

/* ---- clusters and profiles ------------------------------------------- */

/* A deep copy of c without some GPUs: drop[h] is -1 (keep host h whole),
 * -2 (drop the host) or the position in gpus[] of the one GPU to drop.
 * Host names and the indices of the remaining GPUs stay; every per-pair
 * array (link, nv, bw) loses that GPU's row and column. */
static tm_cluster *cluster_without(const tm_cluster *c, const int *drop)
{
	tm_cluster *o = xcalloc(1, sizeof *o);
	int k = 0;
	*o = *c;
	o->file = xstrdup(c->file ? c->file : "cluster.json");
	o->nnodes = 0;
	for (int h = 0; h < c->nnodes; h++)
		o->nnodes += !drop || drop[h] != -2;
	o->nodes = xcalloc((size_t)o->nnodes, sizeof *o->nodes);
	for (int h = 0; h < c->nnodes; h++) {
		const tm_node *a = &c->nodes[h];
		tm_node *b;
		int skip = drop ? drop[h] : -1, ng, *keep, m = 0;
		if (skip == -2)
			continue;
		b = &o->nodes[k++];
		*b = *a;
		ng = a->ngpus - (skip >= 0);
		keep = xmalloc(sizeof(int) * (size_t)a->ngpus);
		for (int g = 0; g < a->ngpus; g++)
			if (g != skip)
				keep[m++] = g;
		b->host = xstrdup(a->host);
		b->net_group = a->net_group ? xstrdup(a->net_group) : NULL;
		b->ngpus = ng;
		b->gpus = xcalloc((size_t)ng, sizeof *b->gpus);
		b->link = xcalloc((size_t)ng * ng, 1);
		b->nv = xcalloc((size_t)ng * ng, 1);
		b->bw = xcalloc((size_t)ng * ng, sizeof(double));
		for (int i = 0; i < ng; i++) {
			const tm_gpu *x = &a->gpus[keep[i]];
			b->gpus[i] = *x;
			b->gpus[i].uuid = x->uuid ? xstrdup(x->uuid) : NULL;
			b->gpus[i].pci_bus_id = x->pci_bus_id ?
			                        xstrdup(x->pci_bus_id) : NULL;
			b->gpus[i].model = x->model ? xstrdup(x->model) : NULL;
			for (int q = 0; q < ng; q++) {
				size_t from = (size_t)keep[i] * a->ngpus + keep[q];
				b->link[i * ng + q] = a->link[from];
				b->nv[i * ng + q] = a->nv[from];
				b->bw[i * ng + q] = a->bw[from];
			}
		}
		free(keep);
	}
	return o;
}

static tm_profile *profile_copy(const tm_profile *p)
{
	tm_profile *o = xcalloc(1, sizeof *o);
	*o = *p;
	o->file = xstrdup(p->file);
	o->gpus = xcalloc((size_t)p->ngpus, sizeof *o->gpus);
	for (int i = 0; i < p->ngpus; i++) {
		const tm_gpu_profile *e = &p->gpus[i];
		o->gpus[i] = *e;
		o->gpus[i].host = e->host ? xstrdup(e->host) : NULL;
		o->gpus[i].uuid = e->uuid ? xstrdup(e->uuid) : NULL;
		o->gpus[i].pci_bus_id = e->pci_bus_id ? xstrdup(e->pci_bus_id)
		                                      : NULL;
	}
	return o;
}

/* The profile entry of host h's GPU at position g (host and index, or
 * UUID when both sides have one). */
static tm_gpu_profile *entry_of(tm_profile *p, const tm_cluster *c, int h,
                                int g)
{
	const tm_gpu *x = &c->nodes[h].gpus[g];
	for (int i = 0; i < p->ngpus; i++) {
		tm_gpu_profile *e = &p->gpus[i];
		if (x->uuid && e->uuid ? !strcmp(x->uuid, e->uuid) :
		    e->host && !strcmp(e->host, c->nodes[h].host) &&
		    e->index == x->index)
			return e;
	}
	fail_msg("no profile entry for %s:%d", c->nodes[h].host, x->index);
	return NULL;
}

/* A GPU that loses clock to heat: a derate the planner takes as a speed
 * (the fixture's GPUs ran at the power cap, whose clocks it does not). */
static void slow_gpu(tm_gpu_profile *e, double derate)
{
	e->derate = derate;
	e->derate_sd = 0.005;
	e->derate_basis = TM_BASIS_THERMAL;
	e->thermal_slowdown_frac = 1;
}

/* Every finite temperature field of every entry moved by U(-0.5, 0.5). */
static void perturb(tm_profile *p)
{
	for (int i = 0; i < p->ngpus; i++) {
		tm_gpu_profile *e = &p->gpus[i];
		double *f[] = { &e->temp_idle_c, &e->temp_load_c, &e->temp_p95_c,
		                &e->temp_max_c, &e->headroom_c, &e->ambient_c };
		for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
			if (isfinite(*f[k]))
				*f[k] += tt_unif(-0.5, 0.5);
	}
}

/* ---- placements, independent of the library ---------------------------- */

/* Each rank's GPU as (host name, nvidia-smi index). */
typedef struct where {
	int n;
	char host[64][32];
	int index[64];
} where;

static void where_of(const tm_cluster *c, const tm_placement *pl, where *w)
{
	assert_true(pl->nranks <= 64);
	w->n = pl->nranks;
	for (int r = 0; r < pl->nranks; r++) {
		assert_true(pl->host[r] >= 0 && pl->host[r] < c->nnodes);
		assert_true(pl->gpu[r] >= 0 &&
		            pl->gpu[r] < c->nodes[pl->host[r]].ngpus);
		snprintf(w->host[r], sizeof w->host[r], "%s",
		         c->nodes[pl->host[r]].host);
		w->index[r] = c->nodes[pl->host[r]].gpus[pl->gpu[r]].index;
	}
}

static int moves_between(const where *a, const where *b)
{
	int m = 0;
	assert_int_equal(a->n, b->n);
	for (int r = 0; r < a->n; r++)
		m += strcmp(a->host[r], b->host[r]) ||
		     a->index[r] != b->index[r];
	return m;
}

/* pl is a placement torchrun can run on c: each node rank's ranks on one
 * host with at least nproc GPUs, no host twice, no GPU twice. */
static void assert_torchrun_valid(const tm_cluster *c, int nproc,
                                  const tm_placement *pl)
{
	int nodes = pl->nranks / nproc;
	for (int n = 0; n < nodes; n++) {
		int h = pl->host[n * nproc];
		assert_true(h >= 0 && h < c->nnodes);
		assert_true(c->nodes[h].ngpus >= nproc);
		for (int m = 0; m < n; m++)
			assert_int_not_equal(pl->host[m * nproc], h);
		for (int i = 0; i < nproc; i++) {
			int r = n * nproc + i;
			assert_int_equal(pl->host[r], h);
			assert_true(pl->gpu[r] >= 0 &&
			            pl->gpu[r] < c->nodes[h].ngpus);
			for (int q = n * nproc; q < r; q++)
				assert_int_not_equal(pl->gpu[q], pl->gpu[r]);
		}
	}
}

/* The fewest ranks of node n off their previous GPU over every ordered
 * choice of nproc distinct GPUs of host h (all of them enumerated). */
static void node_on_host(const tm_node *h, const where *prev, int r0,
                         int nproc, int i, unsigned used, int off, int *best)
{
	if (off >= *best)
		return;
	if (i == nproc) {
		*best = off;
		return;
	}
	for (int g = 0; g < h->ngpus; g++) {
		if (used & (1u << g))
			continue;
		node_on_host(h, prev, r0, nproc, i + 1, used | (1u << g),
		             off + (strcmp(h->host, prev->host[r0 + i]) ||
		                    h->gpus[g].index != prev->index[r0 + i]),
		             best);
	}
}

/* The fewest moved ranks of any placement torchrun can run on c, -1 when
 * there is none. Node ranks on distinct hosts never share a GPU, so the
 * enumeration of every placement factors exactly into: every injective
 * map of node ranks to hosts with ≥ nproc GPUs × every ordered choice of
 * GPUs on each of those hosts, the latter enumerated per (node, host). */
static int brute_fewest(const tm_cluster *c, int nproc, const where *prev)
{
	int nodes = prev->n / nproc, H = c->nnodes, best = -1;
	int cost[16][8], hostof[16], used[8] = { 0 };
	assert_true(nodes <= 16 && H <= 8);
	for (int n = 0; n < nodes; n++)
		for (int h = 0; h < H; h++) {
			cost[n][h] = INT32_MAX;
			if (c->nodes[h].ngpus >= nproc) {
				assert_true(c->nodes[h].ngpus <= 31);
				node_on_host(&c->nodes[h], prev, n * nproc, nproc, 0,
				             0, 0, &cost[n][h]);
			}
		}
	/* node ranks to hosts: an odometer over all maps, injective ones kept */
	for (int n = 0; n < nodes; n++)
		hostof[n] = 0;
	for (;;) {
		int sum = 0, ok = 1, k;
		memset(used, 0, sizeof used);
		for (int n = 0; n < nodes && ok; n++) {
			if (used[hostof[n]]++ || cost[n][hostof[n]] == INT32_MAX)
				ok = 0;
			else
				sum += cost[n][hostof[n]];
		}
		if (ok && (best < 0 || sum < best))
			best = sum;
		for (k = 0; k < nodes && ++hostof[k] == H; k++)
			hostof[k] = 0;
		if (k == nodes)
			break;
	}
	return best;
}

/* ---- planning and replanning ------------------------------------------ */

static void plan_to(const tm_cluster *c, const tm_profile *p,
                    const tm_job *j, const tm_policy *pol, const char *dir,
                    tm_run *run)
{
	tm_error err = { 0, "" };
	if (tm_run_policy(c, p, j, pol, false, run, &err))
		fail_msg("plan: %s", err.msg);
	if (tm_plan_write(run->pb, &run->sol, dir, &err))
		fail_msg("plan write %s: %s", dir, err.msg);
}

static const char *const dnames[] = { "keep", "move", "repair" };

static double num_or(const json_t *x, double dflt)
{
	return json_is_number(x) ? json_number_value(x) : dflt;
}

/* The thresholds of tm_replan's worth rule, moved by margin: a gain past
 * either; INFINITY disables a kind. (The rule also asks that the policy
 * not rank the best placement below the reference.) */
static bool worth_by(double net, double dp, double mt, double mp,
                     double margin)
{
	return net > mt + margin || dp > mp + margin;
}

/* The decision line is one JSON object that says what res says. */
static void check_line(const tm_replan_result *res, int rc)
{
	json_error_t je;
	json_t *o, *x;
	assert_non_null(res->json);
	assert_null(strchr(res->json, '\n'));
	o = json_loads(res->json, 0, &je);
	if (!o)
		fail_msg("decision line does not parse: %s: %s", je.text,
		         res->json);
	assert_true(json_is_object(o));
	assert_true(res->decision >= TM_KEEP && res->decision <= TM_REPAIR);
	x = json_object_get(o, "decision");
	assert_true(json_is_string(x));
	assert_string_equal(json_string_value(x), dnames[res->decision]);
	x = json_object_get(o, "exit");
	assert_true(json_is_integer(x));
	assert_int_equal(json_integer_value(x), rc);
	assert_int_equal(rc, res->decision == TM_KEEP ? TM_ENOCHANGE : 0);
	x = json_object_get(o, "previous");
	assert_true(json_is_string(x));
	assert_string_equal(json_string_value(x), res->prev_id);
	assert_true(json_is_object(json_object_get(o, "gain")));
	assert_true(json_is_object(json_object_get(o, "min_gain")));
	x = json_object_get(o, "plan");
	if (res->decision == TM_KEEP) {
		assert_true(json_is_null(x));
		assert_string_equal(res->plan_id, "");
		assert_true(json_is_object(json_object_get(o, "short_by")));
	} else {
		assert_true(json_is_string(x));
		assert_int_equal(strlen(res->plan_id), 16);
		assert_string_equal(json_string_value(x), res->plan_id);
		/* short_by: for keep and repair only (docs/replan.md) */
		assert_int_equal(json_is_object(json_object_get(o, "short_by")),
		                 res->decision == TM_REPAIR);
	}
	x = json_object_get(o, "fewest_moves");
	assert_true(json_is_integer(x));
	assert_int_equal(json_integer_value(x), res->fewest_moves);
	/* the ranks the written (or kept) placement moves */
	x = json_object_get(o, "moved_ranks");
	assert_true(json_is_integer(x));
	if (json_integer_value(x) != res->moved)
		fail_msg("decision %s: moved_ranks %lld in the decision line, "
		         "res.moved %d: %s", dnames[res->decision],
		         (long long)json_integer_value(x), res->moved, res->json);
	/* the worth rule, on the printed gains (rounded: a margin of 0.01) */
	{
		json_t *g = json_object_get(o, "gain");
		json_t *m = json_object_get(o, "min_gain");
		json_t *b = json_object_get(json_object_get(o, "best"),
		                            "moved_ranks");
		bool valid = json_is_true(json_object_get(o, "previous_valid"));
		json_t *k = json_object_get(json_object_get(o, valid ? "kept" :
		                            "least_change"), "moved_ranks");
		double net = num_or(json_object_get(g, "net_time_pct"), NAN);
		double dp = num_or(json_object_get(g, "peak_c"), NAN);
		/* a gain must also beat its uncertainty: the larger of the
		 * two is the threshold */
		double mt = fmax(num_or(json_object_get(m, "time_pct"), INFINITY),
		                 num_or(json_object_get(g, "time_sd_pct"), NAN));
		double mp = fmax(num_or(json_object_get(m, "peak_c"), INFINITY),
		                 num_or(json_object_get(g, "peak_sd_c"), NAN));
		assert_true(isfinite(net) && isfinite(dp));
		assert_true(json_is_integer(b) && json_is_integer(k));
		assert_true(json_is_boolean(json_object_get(o, "previous_valid")));
		assert_int_equal(valid, res->decision != TM_REPAIR &&
		                 res->fewest_moves == 0);
		if (res->decision == TM_REPAIR)
			assert_int_equal(json_integer_value(k), res->moved);
		if (res->decision == TM_MOVE && !worth_by(net, dp, mt, mp, -0.01))
			fail_msg("moved although the gain falls short: %s", res->json);
		/* enough gain of one kind, and still not moved: only because
		 * the best placement loses on the other (the policy ranks the
		 * reference above it) */
		/* (or, further down the sorted temperatures, some GPU is
		 * hotter beyond its uncertainty: a trade) */
		if (res->decision != TM_MOVE &&
		    json_integer_value(b) != json_integer_value(k) &&
		    worth_by(net, dp, mt, mp, 0.01) && net > 0.01 && dp > 0.01 &&
		    !(num_or(json_object_get(g, "hot_c"), 0) < 0))
			fail_msg("%s although the gain is enough: %s",
			         dnames[res->decision], res->json);
	}
	assert_non_null(res->text);
	assert_non_null(strstr(res->text, dnames[res->decision]));
	json_decref(o);
}

static int replan(const tm_cluster *c, const tm_profile *p, const tm_job *j,
                  const tm_policy *pol, const char *prev,
                  const tm_min_gain *mg, const char *out,
                  tm_replan_result *res, tm_error *err)
{
	int rc;
	memset(err, 0, sizeof *err);
	rc = tm_replan(c, p, j, pol, prev, false, mg, out, res, err);
	if (rc == 0 || rc == TM_ENOCHANGE)
		check_line(res, rc);
	else
		assert_true(err->msg[0] != '\0');
	return rc;
}

/* Ranks the policy's best placement moves, from the decision line. */
static int best_moves(const tm_replan_result *res)
{
	json_t *o = json_loads(res->json, 0, NULL);
	int m;
	assert_non_null(o);
	m = (int)json_integer_value(json_object_get(json_object_get(o, "best"),
	                                            "moved_ranks"));
	json_decref(o);
	return m;
}

static void assert_same_placement(const tm_placement *a,
                                  const tm_placement *b)
{
	assert_int_equal(a->nranks, b->nranks);
	for (int r = 0; r < a->nranks; r++) {
		assert_int_equal(a->host[r], b->host[r]);
		assert_int_equal(a->gpu[r], b->gpu[r]);
	}
}

static void load_fixture(tm_cluster **c, tm_profile **p, tm_job **j,
                         tm_policy **pol)
{
	tm_error err = { 0, "" };
	if (tm_cluster_load(FIX "cluster.json", c, &err) ||
	    tm_profile_load(FIX "profile.json", p, &err) ||
	    tm_job_load(FIX "job-pp2-dp2.json", j, &err) ||
	    tm_policy_default(pol, &err))
		fail_msg("fixture: %s", err.msg);
}

/* A written replan: plan.json names the previous plan and exactly the
 * ranks it moves, its ranks are res.pl, and tm_plan_check holds it to the
 * new cluster, the profile and the previous plan. */
static void check_written(const tm_cluster *c, const tm_job *j,
                          const tm_profile *p, const char *out,
                          const char *prev, const where *was,
                          const tm_replan_result *res)
{
	json_t *root = tt_plan_load(out), *rp, *mv, *ranks, *e;
	char summary[2048], buf[96];
	tm_error err = { 0, "" };
	where now;
	bool *listed = xcalloc((size_t)was->n, sizeof(bool));
	int nmoved = 0;
	size_t i;

	assert_string_equal(json_string_value(json_object_get(root, "id")),
	                    res->plan_id);
	rp = json_object_get(root, "replan");
	assert_true(json_is_object(rp));
	assert_string_equal(json_string_value(json_object_get(rp, "previous")),
	                    res->prev_id);
	assert_string_equal(json_string_value(json_object_get(rp, "decision")),
	                    dnames[res->decision]);
	ranks = json_object_get(root, "ranks");
	assert_int_equal(json_array_size(ranks), (size_t)was->n);
	where_of(c, res->pl, &now);
	for (int r = 0; r < was->n; r++) {
		e = json_array_get(ranks, (size_t)r);
		assert_string_equal(json_string_value(json_object_get(e, "host")),
		                    now.host[r]);
		assert_int_equal(json_integer_value(json_object_get(e,
		                 "gpu_index")), now.index[r]);
	}
	mv = json_object_get(rp, "moves");
	assert_true(json_is_array(mv));
	json_array_foreach(mv, i, e) {
		json_t *rk = json_object_get(e, "rank");
		int r = (int)json_integer_value(rk);
		assert_true(json_is_integer(rk) && r >= 0 && r < was->n);
		assert_false(listed[r]);
		listed[r] = true;
		snprintf(buf, sizeof buf, "%s:%d", was->host[r], was->index[r]);
		assert_string_equal(json_string_value(json_object_get(e, "from")),
		                    buf);
		snprintf(buf, sizeof buf, "%s:%d", now.host[r], now.index[r]);
		assert_string_equal(json_string_value(json_object_get(e, "to")),
		                    buf);
		assert_true(json_is_string(json_object_get(e, "why")));
	}
	for (int r = 0; r < was->n; r++) {
		bool moved = strcmp(was->host[r], now.host[r]) ||
		             was->index[r] != now.index[r];
		if (moved != listed[r])
			fail_msg("%s: rank %d %s but replan.moves %s it", out, r,
			         moved ? "moves" : "stays", listed[r] ? "lists" :
			         "does not list");
		nmoved += moved;
	}
	assert_int_equal(nmoved, res->moved);
	assert_int_equal(json_integer_value(json_object_get(rp, "fewest_moves")),
	                 res->fewest_moves);
	/* what replan.written says is the placement written */
	e = json_object_get(rp, "written");
	if (json_integer_value(json_object_get(e, "moved_ranks")) != nmoved ||
	    fabs(json_number_value(json_object_get(e, "iteration_ms")) -
	         json_number_value(json_object_get(json_object_get(root,
	         "predicted"), "iteration_ms"))) > 1e-3) {
		fail_msg("%s (%s): replan.written says %lld moved ranks, "
		         "%.4f ms; the plan moves %d, predicted %.4f ms", out,
		         dnames[res->decision],
		         (long long)json_integer_value(json_object_get(e,
		         "moved_ranks")), json_number_value(json_object_get(e,
		         "iteration_ms")), nmoved, json_number_value(
		         json_object_get(json_object_get(root, "predicted"),
		         "iteration_ms")));
	}
	if (tm_plan_check(c, j, p, out, prev, summary, sizeof summary, &err))
		fail_msg("tm_plan_check %s: %s", out, err.msg);
	assert_non_null(strstr(summary, "replan moves match"));
	free(listed);
	json_decref(root);
}

/* ---- 1. noise never moves a rank --------------------------------------- */

#define NOISE_FIXTURE_SEEDS 40
#define NOISE_RANDOM_CASES 24

static void test_noise_fixture(void **state)
{
	tm_cluster *c;
	tm_profile *p, *q;
	tm_job *j;
	tm_policy *pol;
	tm_run run;
	tm_min_gain mg;
	const char *prev = sub("noise-h200");
	int differ = 0;
	(void)state;

	load_fixture(&c, &p, &j, &pol);
	plan_to(c, p, j, pol, prev, &run);
	assert_int_equal(tm_min_gain_parse(TM_MIN_GAIN_DEFAULT, &mg), 0);
	for (int seed = 0; seed < NOISE_FIXTURE_SEEDS; seed++) {
		tm_replan_result res;
		tm_error err;
		int rc;
		const char *out = sub("noise-h200-out");
		tt_seq.s = 0x51ed270b27d3c3a5ull + (uint64_t)seed * 7919;
		q = profile_copy(p);
		perturb(q);
		/* with out_dir: a kept plan writes nothing */
		rc = replan(c, q, j, pol, prev, &mg, seed % 4 ? NULL : out, &res,
		            &err);
		if (rc != TM_ENOCHANGE)
			fail_msg("seed %d: rc %d (%s): %s", seed, rc, err.msg,
			         rc == 0 ? res.json : "");
		assert_int_equal(res.decision, TM_KEEP);
		assert_int_equal(res.moved, 0);
		assert_int_equal(res.fewest_moves, 0);
		assert_same_placement(res.pl, run.sol.pl);
		assert_false(exists(out));
		differ += best_moves(&res) > 0;
		tm_replan_result_clear(&res);
		tm_profile_free(q);
	}
	print_message("replan, noise on h200x4-a: %d of %d seeds with another "
	              "best placement, all kept\n", differ, NOISE_FIXTURE_SEEDS);
	tm_run_clear(&run);
	tt_free(NULL, pol, j, p, c);
}

static void test_noise_random(void **state)
{
	tm_min_gain mg;
	int differ = 0, total = 0;
	(void)state;
	assert_int_equal(tm_min_gain_parse(TM_MIN_GAIN_DEFAULT, &mg), 0);
	tt_seq.s = 20260704;
	for (int id = 0; id < NOISE_RANDOM_CASES; id++) {
		int nhost = tt_int(1, 2), ngpu = tt_int(4, 8), pp = tt_int(2, 4);
		int world, nodes, nproc, dp;
		tm_cluster *c;
		tm_profile *p;
		tm_job *j;
		tm_policy *pol = NULL;
		tm_error err = { 0, "" };
		tm_run run;
		char name[32];

		do
			dp = tt_int(1, 4);
		while (pp * dp < 4 || pp * dp > 8);
		world = pp * dp;
		if (id % 2)
			nhost = 1;
		nodes = nhost == 2 && world % 2 == 0 && tt_int(0, 1) ? 2 : 1;
		nproc = world / nodes;
		/* the replan's integer program (no host decomposition) takes
		 * seconds past ~100 ranks × GPUs */
		while (ngpu > nproc && world * nhost * ngpu > 96)
			ngpu--;
		if (nproc > ngpu)
			ngpu = nproc;
		if (id % 2) {
			/* near ties: equal GPUs and links, ambient within ±0.3 °C,
			 * so the noise reorders placements by peak and the
			 * policy's best is often another placement (one host:
			 * GLPK needs the whole time limit for ties over two) */
			c = tt_cluster(1, ngpu, 3);
			p = tt_profile(c, true);
			for (int e = 0; e < p->ngpus; e++) {
				p->gpus[e].ambient_c = 30 + tt_unif(-0.3, 0.3);
				p->gpus[e].r_c_per_w = 0.04;
				p->gpus[e].power_idle_w = 80;
				p->gpus[e].power_load_w = 500;
			}
		} else {
			c = tt_cluster(nhost, ngpu, tt_int(0, 3));
			p = tt_profile(c, false);
		}
		j = tt_job(world, nproc, 1, pp, 1, tt_int(0, 1), false);
		assert_int_equal(tm_policy_default(&pol, &err), 0);
		snprintf(name, sizeof name, "noise-%d", id);
		plan_to(c, p, j, pol, sub(name), &run);
		for (int k = 0; k < 3; k++) {
			tm_profile *q = profile_copy(p);
			tm_replan_result res;
			int rc;
			perturb(q);
			rc = replan(c, q, j, pol, sub(name), &mg, NULL, &res, &err);
			if (rc != TM_ENOCHANGE)
				fail_msg("case %d.%d (%d hosts × %d GPUs, world %d, nproc "
				         "%d, pp %d): rc %d (%s): %s", id, k, nhost, ngpu,
				         world, nproc, pp, rc, err.msg,
				         rc == 0 ? res.json : "");
			assert_int_equal(res.decision, TM_KEEP);
			assert_int_equal(res.moved, 0);
			assert_same_placement(res.pl, run.sol.pl);
			differ += best_moves(&res) > 0;
			total++;
			tm_replan_result_clear(&res);
			tm_profile_free(q);
		}
		tm_run_clear(&run);
		tt_free(NULL, pol, j, p, c);
	}
	print_message("replan, noise on random clusters: %d of %d replans with "
	              "another best placement, all kept\n", differ, total);
	/* the minimum gain, not the solver, must be what keeps */
	assert_true(differ >= 10);
}

/* ---- 2. a GPU or host gone --------------------------------------------- */

#define REMOVE_CASES 80

static void test_remove_gpu(void **state)
{
	int feasible = 0, infeasible = 0, unusable = 0, multi = 0, moved = 0;
	int beyond = 0;
	tm_min_gain never = { INFINITY, INFINITY }, mg;
	(void)state;
	assert_int_equal(tm_min_gain_parse(TM_MIN_GAIN_DEFAULT, &mg), 0);
	tt_seq.s = 0xc0ffee1234567ull;
	for (int id = 0; id < REMOVE_CASES; id++) {
		int nhost = tt_int(1, 3), nproc = tt_int(2, 4), ngpu, nodes, world;
		int pp, dv[16], nd = 0, r0, hx, drop[3] = { -1, -1, -1 }, m, rc;
		tm_cluster *c, *c2;
		tm_profile *p;
		tm_job *j;
		tm_policy *pol = NULL;
		tm_error err = { 0, "" };
		tm_replan_result res;
		tm_run run;
		where was, now;
		char name[32], name2[32];

		ngpu = tt_int(0, 2) == 0 ? (nproc < 3 ? 3 : nproc) :
		       tt_int(nproc < 3 ? 3 : nproc, 6);
		nodes = tt_int(1, nhost);
		/* GLPK needs seconds to minutes on the largest (12 ranks × 18
		 * GPUs, or pipelines of 8): ranks × GPUs ≤ 100, pp ≤ 4 */
		while (nodes > 1 && nproc * nodes * nhost * ngpu > 100)
			nodes--;
		world = nproc * nodes;
		for (int d = 1; d <= world && d <= 4; d++)
			if (world % d == 0)
				dv[nd++] = d;
		pp = dv[tt_int(nd > 1 ? 1 : 0, nd - 1)];
		c = tt_cluster(nhost, ngpu, tt_int(0, 3));
		p = tt_profile(c, false);
		j = tt_job(world, nproc, 1, pp, 1, tt_int(0, 1), false);
		assert_int_equal(tm_policy_default(&pol, &err), 0);
		pol->method = TM_METHOD_ILP;
		pol->tp_nvlink = false;
		snprintf(name, sizeof name, "rm-%d", id);
		plan_to(c, p, j, pol, sub(name), &run);
		where_of(c, run.sol.pl, &was);

		/* one GPU the plan uses; a host left with fewer than nproc GPUs
		 * is not used (its node moves whole), and hosts may now differ
		 * in GPU count even for a multi-node job */
		r0 = tt_int(0, world - 1);
		hx = run.sol.pl->host[r0];
		drop[hx] = run.sol.pl->gpu[r0];
		multi += nodes > 1;
		c2 = cluster_without(c, drop);
		m = brute_fewest(c2, nproc, &was);
		unusable += ngpu - 1 < nproc;
		snprintf(name2, sizeof name2, "rm-%d-out", id);

		/* never worth moving: the least change, exactly */
		rc = replan(c2, p, j, pol, sub(name), &never, sub(name2), &res,
		            &err);
		if (m < 0) {
			if (rc != TM_EINFEASIBLE)
				fail_msg("case %d: no placement exists, rc %d (%s)", id, rc,
				         err.msg);
			infeasible++;
		} else {
			if (rc != 0)
				fail_msg("case %d: rc %d: %s", id, rc, err.msg);
			feasible++;
			assert_int_equal(res.decision, TM_REPAIR);
			assert_torchrun_valid(c2, nproc, res.pl);
			where_of(c2, res.pl, &now);
			assert_int_equal(moves_between(&was, &now), res.moved);
			if (res.moved != m || res.fewest_moves != m)
				fail_msg("case %d (%d hosts × %d GPUs, %d node(s) of %d, "
				         "pp %d, rank %d's GPU gone): moved %d, fewest_moves "
				         "%d, brute force %d", id, nhost, ngpu, nodes, nproc,
				         pp, r0, res.moved, res.fewest_moves, m);
			assert_true(m >= 1);
			check_written(c2, j, p, sub(name2), sub(name), &was, &res);
			tt_rm_tree(sub(name2));
		}
		tm_replan_result_clear(&res);

		/* the default minimum gain: only a move goes beyond the least */
		rc = replan(c2, p, j, pol, sub(name), &mg, NULL, &res, &err);
		if (m < 0) {
			assert_int_equal(rc, TM_EINFEASIBLE);
		} else {
			assert_int_equal(rc, 0);
			assert_torchrun_valid(c2, nproc, res.pl);
			where_of(c2, res.pl, &now);
			assert_int_equal(moves_between(&was, &now), res.moved);
			assert_int_equal(res.fewest_moves, m);
			assert_true(res.moved >= m);
			assert_int_not_equal(res.decision, TM_KEEP);
			if (res.moved > m)
				assert_int_equal(res.decision, TM_MOVE);
			if (res.decision == TM_REPAIR)
				assert_int_equal(res.moved, m);
			moved += res.decision == TM_MOVE;
			beyond += res.moved > m;
		}
		tm_replan_result_clear(&res);
		tm_cluster_free(c2);
		tm_run_clear(&run);
		tt_free(NULL, pol, j, p, c);
	}
	print_message("replan, GPU gone: %d cases with a placement, %d without, "
	              "%d with a host left too small, %d multi-node; default "
	              "minimum gain: %d moves (%d beyond the least change)\n",
	              feasible, infeasible, unusable, multi, moved, beyond);
	/* the generator must reach every kind of case */
	assert_true(feasible >= 40);
	assert_true(infeasible >= 1);
	assert_true(unusable >= 5);
	assert_true(multi >= 20);
}

/* A host gone: its node moves whole to the free host; the other stays. */
static void test_remove_host(void **state)
{
	tm_cluster *c, *c2;
	tm_profile *p;
	tm_job *j;
	tm_policy *pol = NULL;
	tm_error err = { 0, "" };
	tm_replan_result res;
	tm_min_gain never = { INFINITY, INFINITY };
	tm_run run;
	where was, now;
	int drop[3] = { -1, -1, -1 }, gone, free_host = -1, rc;
	const char *prev = sub("host"), *out = sub("host-out");
	json_t *root;
	size_t i;
	json_t *e;
	(void)state;

	tt_seq.s = 77;
	c = tt_cluster(3, 4, 0);
	p = tt_profile(c, false);
	j = tt_job(8, 4, 1, 4, 1, false, false);
	assert_int_equal(tm_policy_default(&pol, &err), 0);
	pol->method = TM_METHOD_ILP;
	pol->tp_nvlink = false;
	plan_to(c, p, j, pol, prev, &run);
	where_of(c, run.sol.pl, &was);
	gone = run.sol.pl->host[4];  /* node rank 1's host */
	for (int h = 0; h < 3; h++)
		if (h != gone && h != run.sol.pl->host[0])
			free_host = h;
	assert_true(free_host >= 0);
	drop[gone] = -2;
	c2 = cluster_without(c, drop);
	assert_int_equal(brute_fewest(c2, 4, &was), 4);
	rc = replan(c2, p, j, pol, prev, &never, out, &res, &err);
	if (rc)
		fail_msg("rc %d: %s", rc, err.msg);
	assert_int_equal(res.decision, TM_REPAIR);
	assert_int_equal(res.moved, 4);
	assert_int_equal(res.fewest_moves, 4);
	where_of(c2, res.pl, &now);
	for (int r = 0; r < 8; r++) {
		if (r < 4) {
			assert_string_equal(now.host[r], was.host[r]);
			assert_int_equal(now.index[r], was.index[r]);
		} else {
			assert_string_equal(now.host[r], c->nodes[free_host].host);
		}
	}
	assert_torchrun_valid(c2, 4, res.pl);
	check_written(c2, j, p, out, prev, &was, &res);
	/* every move says it was forced by the host that is gone */
	root = tt_plan_load(out);
	json_array_foreach(json_object_get(json_object_get(root, "replan"),
	                                   "moves"), i, e) {
		const char *why = json_string_value(json_object_get(e, "why"));
		assert_non_null(why);
		assert_non_null(strstr(why, "forced"));
		assert_non_null(strstr(why, c->nodes[gone].host));
	}
	assert_false(json_is_true(json_object_get(json_object_get(root,
	             "replan"), "previous_valid")));
	json_decref(root);
	tm_replan_result_clear(&res);
	tm_cluster_free(c2);
	tm_run_clear(&run);
	tt_free(NULL, pol, j, p, c);
}

/* ---- 3, 4. written plans, move cost, max_moves ------------------------- */

/* Previous plan on the fixture; the new profile slows the GPU of its
 * heaviest stage (stage 1, rank 2) by a derate of 1.2. */
static void test_move_cost(void **state)
{
	tm_cluster *c;
	tm_profile *p, *q;
	tm_job *j;
	tm_policy *pol;
	tm_run run;
	tm_min_gain mg;
	tm_error err;
	tm_replan_result res, res2;
	where was;
	const char *prev = sub("cost"), *out = sub("cost-out");
	int rc, heavy = -1;
	(void)state;

	load_fixture(&c, &p, &j, &pol);
	plan_to(c, p, j, pol, prev, &run);
	where_of(c, run.sol.pl, &was);
	for (int r = 0; r < j->world && heavy < 0; r++) {
		int co[TM_NDIM];
		tm_job_coords(j, r, co);
		if (co[TM_PP] == 1)
			heavy = r;
	}
	assert_true(heavy >= 0);
	q = profile_copy(p);
	slow_gpu(entry_of(q, c, run.sol.pl->host[heavy],
	                  run.sol.pl->gpu[heavy]), 1.2);

	/* the default minimum gain: the best placement is ~14 % faster; its
	 * faster iteration keeps every GPU busier and its peak rises by more
	 * than 2 °C, a trade the time-first policy makes, so it moves */
	assert_int_equal(tm_min_gain_parse(TM_MIN_GAIN_DEFAULT, &mg), 0);
	rc = replan(c, q, j, pol, prev, &mg, out, &res, &err);
	assert_int_equal(rc, 0);
	assert_int_equal(res.decision, TM_MOVE);
	{
		json_t *o = json_loads(res.json, 0, NULL), *g;
		assert_non_null(o);
		g = json_object_get(o, "gain");
		assert_true(json_number_value(json_object_get(g, "net_time_pct")) >
		            10);
		assert_true(json_number_value(json_object_get(g, "peak_c")) < -2);
		assert_int_equal(json_integer_value(json_object_get(
		                 json_object_get(o, "best"), "moved_ranks")), 2);
		json_decref(o);
	}
	check_written(c, j, q, out, prev, &was, &res);
	tt_rm_tree(out);
	tm_replan_result_clear(&res);

	/* time alone ("1%"): moves are free, worth it, written, and the
	 * decision alone (out_dir NULL) names the same plan */
	assert_int_equal(tm_min_gain_parse("1%", &mg), 0);
	pol->move_cost_ms = 0;
	rc = replan(c, q, j, pol, prev, &mg, out, &res, &err);
	if (rc)
		fail_msg("rc %d: %s", rc, err.msg);
	assert_int_equal(res.decision, TM_MOVE);
	assert_true(res.moved >= 1);
	assert_int_equal(res.fewest_moves, 0);
	/* the slowed GPU no longer runs the heaviest stage */
	for (int r = 0; r < j->world; r++) {
		int co[TM_NDIM];
		tm_job_coords(j, r, co);
		if (co[TM_PP] == 1)
			assert_false(res.pl->host[r] == run.sol.pl->host[heavy] &&
			             res.pl->gpu[r] == run.sol.pl->gpu[heavy]);
	}
	check_written(c, j, q, out, prev, &was, &res);
	assert_int_equal(replan(c, q, j, pol, prev, &mg, NULL, &res2, &err), 0);
	assert_int_equal(res2.decision, TM_MOVE);
	assert_string_equal(res2.plan_id, res.plan_id);
	assert_same_placement(res2.pl, res.pl);
	tm_replan_result_clear(&res2);

	/* a price per move: net gain = gain − 100·price·moved / kept time */
	pol->move_cost_ms = 1;
	assert_int_equal(replan(c, q, j, pol, prev, &mg, NULL, &res2, &err), 0);
	assert_int_equal(res2.decision, TM_MOVE);
	{
		json_t *o = json_loads(res2.json, 0, NULL), *g, *k;
		double t, net, it;
		assert_non_null(o);
		g = json_object_get(o, "gain");
		k = json_object_get(o, "kept");
		assert_true(json_is_object(k));
		t = json_number_value(json_object_get(g, "time_pct"));
		net = json_number_value(json_object_get(g, "net_time_pct"));
		it = json_number_value(json_object_get(k, "iteration_ms"));
		assert_true(t > 1);
		assert_true(fabs(net - (t - 100.0 * res2.moved / it)) < 2e-3);
		assert_true(fabs(json_number_value(json_object_get(o,
		            "move_cost_ms")) - 1) < 1e-9);
		json_decref(o);
	}
	tm_replan_result_clear(&res2);
	tt_rm_tree(out);

	/* a prohibitive price: keep, write nothing */
	pol->move_cost_ms = 1e6;
	rc = replan(c, q, j, pol, prev, &mg, out, &res2, &err);
	assert_int_equal(rc, TM_ENOCHANGE);
	assert_int_equal(res2.decision, TM_KEEP);
	assert_int_equal(res2.moved, 0);
	assert_same_placement(res2.pl, run.sol.pl);
	assert_false(exists(out));
	tm_replan_result_clear(&res2);

	/* max_moves 1: the four ranks fill the host's four GPUs, so any other
	 * placement is a permutation moving at least two ranks; the only
	 * placement within one move is the previous one, which stays */
	pol->move_cost_ms = 0;
	pol->max_moves = 1;
	rc = replan(c, q, j, pol, prev, &mg, NULL, &res2, &err);
	if (rc != TM_ENOCHANGE)
		fail_msg("max_moves 1: rc %d (%s)", rc, err.msg);
	assert_int_equal(res2.decision, TM_KEEP);
	assert_int_equal(res2.moved, 0);
	tm_replan_result_clear(&res2);
	pol->max_moves = 2;
	assert_int_equal(replan(c, q, j, pol, prev, &mg, NULL, &res2, &err), 0);
	assert_int_equal(res2.decision, TM_MOVE);
	assert_true(res2.moved <= 2);
	tm_replan_result_clear(&res2);

	tm_replan_result_clear(&res);
	tm_profile_free(q);
	tm_run_clear(&run);
	tt_free(NULL, pol, j, p, c);
}

/* Spare GPUs: one host of 8, a pipeline of 4. The new profile slows the
 * heaviest stage's GPU; one move to a spare GPU is enough to gain. */
static void test_max_moves(void **state)
{
	tm_cluster *c, *c2;
	tm_profile *p, *q;
	tm_job *j;
	tm_policy *pol = NULL;
	tm_error err = { 0, "" };
	tm_replan_result res;
	tm_min_gain mg;
	tm_run run;
	where was, now;
	const char *prev = sub("mm"), *out = sub("mm-out");
	int rc, drop[1];
	(void)state;

	tt_seq.s = 4242;
	c = tt_cluster(1, 8, 3);
	p = tt_profile(c, true);
	j = tt_job(4, 4, 1, 4, 1, false, true);  /* stage 3 is the heaviest */
	assert_int_equal(tm_policy_default(&pol, &err), 0);
	pol->tp_nvlink = false;
	plan_to(c, p, j, pol, prev, &run);
	where_of(c, run.sol.pl, &was);
	q = profile_copy(p);
	slow_gpu(entry_of(q, c, run.sol.pl->host[3], run.sol.pl->gpu[3]), 1.3);
	assert_int_equal(tm_min_gain_parse("1%", &mg), 0);  /* time alone */

	for (int most = -1; most <= 2; most++) {
		pol->max_moves = most;
		rc = replan(c, q, j, pol, prev, &mg, most == 1 ? out : NULL, &res,
		            &err);
		if (most == 0) {
			assert_int_equal(rc, TM_ENOCHANGE);
			assert_int_equal(res.decision, TM_KEEP);
			assert_same_placement(res.pl, run.sol.pl);
		} else {
			if (rc)
				fail_msg("max_moves %d: rc %d (%s)", most, rc, err.msg);
			assert_int_equal(res.decision, TM_MOVE);
			assert_true(res.moved >= 1);
			if (most > 0)
				assert_true(res.moved <= most);
			where_of(c, res.pl, &now);
			assert_int_equal(moves_between(&was, &now), res.moved);
			/* the heaviest stage leaves the slowed GPU */
			assert_false(res.pl->gpu[3] == run.sol.pl->gpu[3]);
			if (most == 1)
				check_written(c, j, q, out, prev, &was, &res);
		}
		tm_replan_result_clear(&res);
	}

	/* a GPU gone: its rank must move (one move, to a spare GPU);
	 * max_moves 0 leaves no valid placement */
	drop[0] = run.sol.pl->gpu[1];
	c2 = cluster_without(c, drop);
	assert_int_equal(brute_fewest(c2, 4, &was), 1);
	pol->max_moves = 0;
	rc = replan(c2, p, j, pol, prev, &mg, NULL, &res, &err);
	if (rc != TM_EINFEASIBLE)
		fail_msg("max_moves 0, a GPU gone: rc %d (%s)", rc,
		         rc == 0 || rc == 3 ? res.json : err.msg);
	tm_replan_result_clear(&res);
	pol->max_moves = 1;
	rc = replan(c2, p, j, pol, prev, &mg, NULL, &res, &err);
	if (rc)
		fail_msg("max_moves 1, a GPU gone: rc %d (%s)", rc, err.msg);
	assert_int_equal(res.moved, 1);
	assert_int_equal(res.fewest_moves, 1);
	where_of(c2, res.pl, &now);
	for (int r = 0; r < 4; r++)
		if (r != 1) {
			assert_string_equal(now.host[r], was.host[r]);
			assert_int_equal(now.index[r], was.index[r]);
		}
	tm_replan_result_clear(&res);

	tm_cluster_free(c2);
	tm_profile_free(q);
	tm_run_clear(&run);
	tt_free(NULL, pol, j, p, c);
}

/* On 3 hosts of 6 GPUs with 12 ranks, GLPK spends the whole time_limit_s
 * in the integer program's first phase (the bare best time), and the
 * phase of the first criterion gets no time. The placement in hand (the
 * repair, or the previous placement) must still be the answer: (a) a GPU
 * gone: a repair; (b) nothing changed but move_cost_ms > 0: keep.
 * time_limit_s is 1 here to keep it short. */
static void test_time_limit(void **state)
{
	tm_cluster *c, *c2;
	tm_profile *p;
	tm_job *j;
	tm_policy *pol = NULL;
	tm_error err = { 0, "" };
	tm_replan_result res;
	tm_min_gain never = { INFINITY, INFINITY }, mg;
	tm_run run;
	where was, now;
	int drop[3] = { -1, -1, -1 }, m, rc;
	const char *prev = sub("limit");
	(void)state;

	tt_seq.s = 1000003;
	c = tt_cluster(3, 6, 3);
	p = tt_profile(c, false);
	j = tt_job(12, 4, 1, 4, 1, false, false);
	assert_int_equal(tm_policy_default(&pol, &err), 0);
	pol->method = TM_METHOD_ILP;
	pol->tp_nvlink = false;
	pol->time_limit_s = 1;
	plan_to(c, p, j, pol, prev, &run);
	where_of(c, run.sol.pl, &was);
	drop[run.sol.pl->host[1]] = run.sol.pl->gpu[1];
	c2 = cluster_without(c, drop);
	m = brute_fewest(c2, 4, &was);
	assert_int_equal(m, 1);
	/* (a) */
	rc = replan(c2, p, j, pol, prev, &never, NULL, &res, &err);
	if (rc)
		fail_msg("a GPU gone, time limit: rc %d (%s); brute force moves "
		         "%d rank(s)", rc, err.msg, m);
	assert_int_equal(res.decision, TM_REPAIR);
	assert_torchrun_valid(c2, 4, res.pl);
	where_of(c2, res.pl, &now);
	assert_int_equal(moves_between(&was, &now), res.moved);
	assert_true(res.moved >= m);
	tm_replan_result_clear(&res);
	/* (b) */
	assert_int_equal(tm_min_gain_parse(TM_MIN_GAIN_DEFAULT, &mg), 0);
	pol->move_cost_ms = 1;
	rc = replan(c, p, j, pol, prev, &mg, NULL, &res, &err);
	if (rc != TM_ENOCHANGE)
		fail_msg("nothing changed, move_cost_ms 1, time limit: rc %d (%s)",
		         rc, rc ? err.msg : res.json);
	tm_replan_result_clear(&res);
	tm_cluster_free(c2);
	tm_run_clear(&run);
	tt_free(NULL, pol, j, p, c);
}

/* ---- 5. refusals ------------------------------------------------------- */

static int replan_fails(const tm_cluster *c, const tm_profile *p,
                        const tm_job *j, const tm_policy *pol,
                        const char *prev, tm_error *err)
{
	tm_replan_result res;
	tm_min_gain mg;
	int rc;
	assert_int_equal(tm_min_gain_parse(TM_MIN_GAIN_DEFAULT, &mg), 0);
	memset(err, 0, sizeof *err);
	rc = tm_replan(c, p, j, pol, prev, false, &mg, NULL, &res, err);
	if (rc == 0 || rc == TM_ENOCHANGE) {
		check_line(&res, rc);
		tm_replan_result_clear(&res);
	} else {
		assert_true(err->msg[0] != '\0');
		assert_int_equal(err->code, rc);
		assert_null(res.json);
		assert_null(res.pl);
	}
	return rc;
}

/* prev with one edit by f, saved as tmp/name; the replan must be
 * TM_EINPUT with a message naming the file and containing want. */
static void edited_fails(const tm_cluster *c, const tm_profile *p,
                         const tm_job *j, const tm_policy *pol,
                         const char *prev, const char *name,
                         void (*f)(json_t *), const char *want)
{
	json_t *root = tt_plan_load(prev);
	tm_error err;
	int rc;
	f(root);
	tt_plan_save_json(sub(name), root);
	json_decref(root);
	rc = replan_fails(c, p, j, pol, sub(name), &err);
	if (rc != TM_EINPUT || !strstr(err.msg, name) ||
	    (want && !strstr(err.msg, want)))
		fail_msg("%s: rc %d, message \"%s\" (want exit 4 and \"%s\")", name,
		         rc, err.msg, want ? want : "");
	tt_rm_tree(sub(name));
}

static json_t *rank_of(json_t *root, int r)
{
	return json_array_get(json_object_get(root, "ranks"), (size_t)r);
}

static void ed_same_gpu(json_t *root)
{
	json_t *a = rank_of(root, 0), *b = rank_of(root, 1);
	json_object_set(b, "gpu_index", json_object_get(a, "gpu_index"));
	json_object_set(b, "uuid", json_object_get(a, "uuid"));
}

static void ed_bad_id(json_t *root)
{
	json_object_set_new(root, "id", json_string("not-a-plan-id!!!"));
}

static void ed_ranks_string(json_t *root)
{
	json_object_set_new(root, "ranks", json_string("0-3"));
}

static void ed_ranks_empty(json_t *root)
{
	json_object_set_new(root, "ranks", json_array());
}

static void ed_rank_number(json_t *root)
{
	json_object_set_new(rank_of(root, 2), "rank", json_integer(7));
}

static void ed_index_negative(json_t *root)
{
	json_object_set_new(rank_of(root, 1), "gpu_index", json_integer(-1));
}

static void ed_index_string(json_t *root)
{
	json_object_set_new(rank_of(root, 1), "gpu_index", json_string("1"));
}

static void ed_uuid_number(json_t *root)
{
	json_object_set_new(rank_of(root, 3), "uuid", json_integer(3));
}

static void ed_host_empty(json_t *root)
{
	json_object_set_new(rank_of(root, 0), "host", json_string(""));
}

static void ed_no_pp(json_t *root)
{
	json_object_del(rank_of(root, 2), "pp");
}

static void ed_wrong_pp(json_t *root)
{
	json_t *a = rank_of(root, 0);
	json_object_set_new(a, "pp", json_integer(1 - json_integer_value(
	                    json_object_get(a, "pp"))));
}

static void ed_split_node(json_t *root)
{
	json_object_set_new(rank_of(root, 3), "host", json_string("elsewhere"));
}

static void ed_format(json_t *root)
{
	json_object_set_new(root, "format", json_string("thermap.job/1"));
}

static void ed_layers(json_t *root)
{
	json_object_set_new(root, "layers", json_pack("{s:[i,i,i]}", "chunks",
	                                               10, 10, 12));
}

static void test_refusals(void **state)
{
	tm_cluster *c;
	tm_profile *p;
	tm_job *j, *j2;
	tm_policy *pol;
	tm_run run;
	tm_error err;
	const char *prev = sub("ref");
	char *text;
	size_t len;
	int rc, cuts = 0, fuzz_ok = 0, fuzz_err = 0;
	(void)state;

	load_fixture(&c, &p, &j, &pol);
	plan_to(c, p, j, pol, prev, &run);

	/* policies that change layers per stage */
	pol->rebalance = true;
	assert_int_equal(replan_fails(c, p, j, pol, prev, &err), TM_EUSAGE);
	assert_non_null(strstr(err.msg, "layers"));
	pol->rebalance = false;
	pol->method = TM_METHOD_ALTERNATING;
	assert_int_equal(replan_fails(c, p, j, pol, prev, &err), TM_EUSAGE);
	pol->method = TM_METHOD_ILP;
	assert_int_equal(replan_fails(c, p, j, pol, prev, &err), TM_ENOCHANGE);

	/* another world size; the same size in another layout */
	j2 = tt_job(2, 2, 1, 2, 1, false, false);
	assert_int_equal(replan_fails(c, p, j2, pol, prev, &err), TM_EINPUT);
	assert_non_null(strstr(err.msg, "world size"));
	tm_job_free(j2);
	j2 = tt_job(4, 4, 1, 2, 1, false, false);  /* pp fastest-varying */
	assert_int_equal(replan_fails(c, p, j2, pol, prev, &err), TM_EINPUT);
	assert_non_null(strstr(err.msg, "layout changed"));
	tm_job_free(j2);

	/* no previous plan */
	assert_int_equal(replan_fails(c, p, j, pol, sub("no-such-plan"), &err),
	                 TM_EINPUT);
	assert_non_null(strstr(err.msg, sub("no-such-plan")));

	/* truncated anywhere */
	text = read_text(prev, &len);
	for (size_t cut = 0; cut + 3 < len; cut += 1 + len / 97, cuts++) {
		tt_plan_save_text(sub("cut"), text, cut);
		rc = replan_fails(c, p, j, pol, sub("cut"), &err);
		if (rc != TM_EINPUT || !strstr(err.msg, "cut/plan.json"))
			fail_msg("cut at %zu of %zu: rc %d (%s)", cut, len, rc,
			         err.msg);
	}
	tt_rm_tree(sub("cut"));

	/* edited into plans thermap never wrote */
	edited_fails(c, p, j, pol, prev, "same-gpu", ed_same_gpu, "ranks[1]");
	edited_fails(c, p, j, pol, prev, "bad-id", ed_bad_id, "id");
	edited_fails(c, p, j, pol, prev, "ranks-string", ed_ranks_string,
	             "ranks");
	edited_fails(c, p, j, pol, prev, "ranks-empty", ed_ranks_empty,
	             "ranks");
	edited_fails(c, p, j, pol, prev, "rank-number", ed_rank_number,
	             "ranks[2].rank");
	edited_fails(c, p, j, pol, prev, "index-negative", ed_index_negative,
	             "ranks[1].gpu_index");
	edited_fails(c, p, j, pol, prev, "index-string", ed_index_string,
	             "ranks[1].gpu_index");
	edited_fails(c, p, j, pol, prev, "uuid-number", ed_uuid_number,
	             "ranks[3].uuid");
	edited_fails(c, p, j, pol, prev, "host-empty", ed_host_empty,
	             "ranks[0].host");
	edited_fails(c, p, j, pol, prev, "no-pp", ed_no_pp, "ranks[2].pp");
	edited_fails(c, p, j, pol, prev, "wrong-pp", ed_wrong_pp,
	             "ranks[0].pp");
	edited_fails(c, p, j, pol, prev, "split-node", ed_split_node,
	             "ranks[3].host");
	edited_fails(c, p, j, pol, prev, "format", ed_format, "format");
	edited_fails(c, p, j, pol, prev, "layers", ed_layers, "layers");

	/* random bytes overwritten: an answer or an error, never a crash */
	tt_seq.s = 99991;
	for (int k = 0; k < 150; k++) {
		char *t = xmalloc(len);
		int flips = tt_int(1, 3);
		memcpy(t, text, len);
		for (int f = 0; f < flips; f++)
			t[tt_int(0, (int)len - 1)] = (char)tt_int(0, 255);
		tt_plan_save_text(sub("fuzz"), t, len);
		rc = replan_fails(c, p, j, pol, sub("fuzz"), &err);
		if (rc != 0 && rc != TM_ENOCHANGE && rc != TM_EINPUT &&
		    rc != TM_EINFEASIBLE)
			fail_msg("fuzz %d: rc %d (%s)", k, rc, err.msg);
		fuzz_ok += rc == 0 || rc == TM_ENOCHANGE;
		fuzz_err += rc == TM_EINPUT;
		free(t);
	}
	tt_rm_tree(sub("fuzz"));
	print_message("replan refusals: %d truncations; fuzz: %d answered, %d "
	              "refused\n", cuts, fuzz_ok, fuzz_err);
	assert_true(fuzz_err > 50);
	free(text);
	tm_run_clear(&run);
	tt_free(NULL, pol, j, p, c);
}

/* ---- 6. the decision line ---------------------------------------------- */

static void test_decision_line(void **state)
{
	tm_cluster *c;
	tm_profile *p, *q;
	tm_job *j;
	tm_policy *pol;
	tm_run run;
	tm_min_gain mg, zero;
	tm_error err;
	tm_replan_result res;
	json_t *o, *g, *pj;
	const char *prev = sub("line");
	(void)state;

	load_fixture(&c, &p, &j, &pol);
	plan_to(c, p, j, pol, prev, &run);
	assert_int_equal(tm_min_gain_parse(TM_MIN_GAIN_DEFAULT, &mg), 0);
	assert_true(mg.time_pct == 1 && mg.peak_c == 2);
	assert_int_equal(tm_min_gain_parse("0", &zero), 0);
	assert_true(zero.time_pct == 0 && zero.peak_c == 0);
	assert_int_equal(tm_min_gain_parse("2C", &zero), 0);
	assert_true(isinf(zero.time_pct) && zero.peak_c == 2);
	assert_int_equal(tm_min_gain_parse("3 %", &zero), -1);
	assert_int_equal(tm_min_gain_parse("", &zero), -1);

	/* keep: exit 3, the gains it fell short by */
	assert_int_equal(replan(c, p, j, pol, prev, &mg, NULL, &res, &err),
	                 TM_ENOCHANGE);
	o = json_loads(res.json, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "decision")),
	                    "keep");
	assert_int_equal(json_integer_value(json_object_get(o, "exit")), 3);
	pj = tt_plan_load(prev);
	assert_string_equal(json_string_value(json_object_get(o, "previous")),
	                    json_string_value(json_object_get(pj, "id")));
	assert_string_equal(res.prev_id, json_string_value(json_object_get(pj,
	                    "id")));
	json_decref(pj);
	g = json_object_get(o, "gain");
	assert_true(json_is_number(json_object_get(g, "time_pct")));
	assert_true(json_is_number(json_object_get(g, "peak_c")));
	assert_true(fabs(json_number_value(json_object_get(json_object_get(o,
	            "min_gain"), "time_pct")) - 1) < 1e-9);
	assert_true(json_is_object(json_object_get(o, "short_by")));
	assert_true(json_is_true(json_object_get(o, "previous_valid")));
	json_decref(o);
	tm_replan_result_clear(&res);

	/* move: exit 0, the plan it names (time alone is enough) */
	q = profile_copy(p);
	slow_gpu(entry_of(q, c, run.sol.pl->host[2], run.sol.pl->gpu[2]), 1.2);
	assert_int_equal(tm_min_gain_parse("1%", &mg), 0);
	assert_int_equal(replan(c, q, j, pol, prev, &mg, NULL, &res, &err), 0);
	o = json_loads(res.json, 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "decision")),
	                    "move");
	assert_int_equal(json_integer_value(json_object_get(o, "exit")), 0);
	assert_true(json_number_value(json_object_get(json_object_get(o,
	            "gain"), "net_time_pct")) > 1);
	json_decref(o);
	tm_replan_result_clear(&res);
	tm_profile_free(q);
	tm_run_clear(&run);
	tt_free(NULL, pol, j, p, c);
}

/* ---- the run ----------------------------------------------------------- */

static int setup(void **state)
{
	(void)state;
	if (tt_tmpdir(tmp, sizeof tmp, "test_replan"))
		return -1;
	tm_set_warn(count_warn, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tt_rm_tree(tmp);
	tm_set_warn(NULL, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_noise_fixture),
		cmocka_unit_test(test_noise_random),
		cmocka_unit_test(test_remove_gpu),
		cmocka_unit_test(test_remove_host),
		cmocka_unit_test(test_move_cost),
		cmocka_unit_test(test_max_moves),
		cmocka_unit_test(test_time_limit),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_decision_line),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
