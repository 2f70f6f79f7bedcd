/*
 * test_inputs.c — every rejection path of the four input loaders, of the
 * profile join and of hosts whose GPU counts differ under a multi-node job,
 * each with its exact one-line message and exit code, plus the
 * unknown-field warning. Cases are data: a document, the loader, and
 * the message with FILE standing for the file name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/ops.h"
#include "testutil.h"

enum { CLUSTER, PROFILE, JOB, POLICY };

typedef struct tcase {
	int kind;
	const char *doc;
	const char *msg;   /* FILE is replaced by the file name */
} tcase;

#define C1 "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0},{\"index\":1}],\"links\":[[\"X\",\"NV2\"],[\"NV2\",\"X\"]]"
#define J1 "{\"format\":\"thermap.job/1\",\"nproc_per_node\":2,\"schedule\":{\"kind\":\"1f1b\",\"microbatches\":4},"
#define P1 "{\"format\":\"thermap.profile/1\",\"gpus\":["
#define Q1 "{\"format\":\"thermap.policy/1\",\"name\":\"x\","

static const tcase cases[] = {
	/* documents in general */
	{ CLUSTER, "{\"format\":", "FILE:1:10: unexpected token near end of file" },
	{ CLUSTER, "[1,2]", "FILE: (top level): expected a JSON object" },
	{ CLUSTER, "{}", "FILE: format: missing; expected \"thermap.cluster/1\"" },
	{ CLUSTER, "{\"format\":3}", "FILE: format: expected the string \"thermap.cluster/1\"" },
	{ CLUSTER, "{\"format\":\"thermap.job/1\"}", "FILE: format: \"thermap.job/1\" is not a thermap.cluster document (expected \"thermap.cluster/1\")" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/2\"}", "FILE: format: version \"2\" is not supported (expected \"thermap.cluster/1\")" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[],\"nodes\":[]}", "FILE:1:48: duplicate object key near '\"nodes\"'" },
	{ CLUSTER, "\x01\x02garbage", "FILE:1:1: '[' or '{' expected near '?'" },
	/* cluster */
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\"}", "FILE: nodes: missing; expected an array" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[]}", "FILE: nodes: expected 1 to 65536 nodes" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[3]}", "FILE: nodes[0]: expected a node object" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{}]}", "FILE: nodes[0].host: missing; expected a string" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a;rm -rf\"}]}", "FILE: nodes[0].host: \"a;rm -rf\" is not a usable host name; expected letters, digits, '.', '-' and '_'" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[]}]}", "FILE: nodes[0].gpus: expected 1 to 1024 GPUs" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":-1}]}]}", "FILE: nodes[0].gpus[0].index: -1 is out of range; expected an integer from 0 to 65535" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0.5}]}]}", "FILE: nodes[0].gpus[0].index: 0.5 is not an integer; expected an integer from 0 to 65535" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0,\"uuid\":\"x\"}]}]}", "FILE: nodes[0].gpus[0].uuid: \"x\" is not a GPU UUID; expected \"GPU-\" or \"MIG-\" and hex digits" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0,\"pci_bus_id\":\"06.0\"}]}]}", "FILE: nodes[0].gpus[0].pci_bus_id: \"06.0\" is not a PCI bus id; expected like \"00000000:00:06.0\"" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0},{\"index\":0}]}]}", "FILE: nodes[0].gpus[1].index: 0 repeats gpus[0]" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0},{\"index\":1}]}]}", "FILE: nodes[0].links: missing; expected an array" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0},{\"index\":1}],\"links\":[[\"X\",\"NV2\"]]}]}", "FILE: nodes[0].links: has 1 rows; expected 2 (one per GPU)" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0},{\"index\":1}],\"links\":[[\"X\",\"NV2\"],[\"NV2\"]]}]}", "FILE: nodes[0].links[1]: expected an array of 2 link codes" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0},{\"index\":1}],\"links\":[[\"X\",\"FOO\"],[\"NV2\",\"X\"]]}]}", "FILE: nodes[0].links[0][1]: \"FOO\" is not a link code; expected X, NV#, PIX, PXB, PHB, NODE or SYS" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0},{\"index\":1}],\"links\":[[\"NV2\",\"NV2\"],[\"NV2\",\"X\"]]}]}", "FILE: nodes[0].links[0][0]: expected \"X\" on the diagonal" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0},{\"index\":1}],\"links\":[[\"X\",\"NV2\"],[\"SYS\",\"X\"]]}]}", "FILE: nodes[0].links[1][0]: is SYS but links[0][1] is NV2; expected a symmetric matrix" },
	{ CLUSTER, C1 ",\"link_gb_per_s\":-3}]}", "FILE: nodes[0].link_gb_per_s: expected a bandwidth above 0 and at most 100000 GB/s" },
	{ CLUSTER, C1 ",\"net_gb_per_s\":\"fast\"}]}", "FILE: nodes[0].net_gb_per_s: expected a number from 0.001 to 100000" },
	{ CLUSTER, C1 "},{\"host\":\"a\",\"gpus\":[{\"index\":0}],\"links\":[[\"X\"]]}]}", "FILE: nodes[1].host: \"a\" repeats nodes[0]" },
	/* repeated hosts: the first node that repeats one, naming the first
	 * node of that name; a node that fails its own checks first is
	 * reported as such */
#define N1(h) "{\"host\":\"" h "\",\"gpus\":[{\"index\":0}],\"links\":[[\"X\"]]}"
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[" N1("b") "," N1("a") "," N1("c") "," N1("a") "," N1("b") "]}", "FILE: nodes[3].host: \"a\" repeats nodes[1]" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[" N1("a") "," N1("b") "," N1("b") "," N1("a") "]}", "FILE: nodes[2].host: \"b\" repeats nodes[1]" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[" N1("a") "," N1("a;b") "," N1("a") "]}", "FILE: nodes[1].host: \"a;b\" is not a usable host name; expected letters, digits, '.', '-' and '_'" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[" N1("a") ",{\"host\":7}," N1("a") "]}", "FILE: nodes[1].host: expected a string" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[" N1("a") "," N1("b") ",{\"host\":\"a\",\"gpus\":[{\"index\":0}],\"links\":[[\"X\"]],\"net_gb_per_s\":0}]}", "FILE: nodes[2].net_gb_per_s: 0 is out of range; expected a number from 0.001 to 100000" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[" N1("a") "," N1("b") ",{\"host\":\"a\",\"gpus\":[{\"index\":0},{\"index\":1}],\"links\":[[\"X\",7],[\"SYS\",\"X\"]]}]}", "FILE: nodes[2].links[0][1]: expected a link code string (X, NV#, PIX, PXB, PHB, NODE, SYS)" },
#undef N1
	/* profile */
	{ PROFILE, "{\"format\":\"thermap.profile/1\"}", "FILE: gpus: missing; expected an array" },
	{ PROFILE, P1 "{\"host\":\"a\"}]}", "FILE: gpus[0]: names no GPU; expected a uuid, a pci_bus_id or an index" },
	{ PROFILE, P1 "{\"index\":0,\"derate\":0.9}]}", "FILE: gpus[0].derate: 0.9 is out of range; expected a number from 1 to 100" },
	{ PROFILE, P1 "{\"index\":0,\"r_c_per_w\":-0.1}]}", "FILE: gpus[0].r_c_per_w: -0.1 is out of range; expected a number from 0 to 10" },
	{ PROFILE, P1 "{\"index\":0,\"derate_basis\":\"fast\"}]}", "FILE: gpus[0].derate_basis: \"fast\": expected \"clock\", \"thermal\", \"power-cap\", \"job\" or \"none\"" },
	{ PROFILE, P1 "{\"index\":0,\"derate_sd\":-1}]}", "FILE: gpus[0].derate_sd: -1 is out of range; expected a number from 0 to 100" },
	{ PROFILE, P1 "{\"index\":0,\"estimated\":{\"host\":\"x\"}}]}", "FILE: gpus[0].estimated: \"host\" is not a number field of a profile entry" },
	{ PROFILE, P1 "{\"index\":0,\"calibrated\":{\"power_wait_w\":3}}]}", "FILE: gpus[0].calibrated: \"power_wait_w\": expected a non-empty string saying how the value was obtained" },
	{ PROFILE, P1 "{\"index\":0,\"estimated\":[]}]}", "FILE: gpus[0].estimated: expected an object" },
	{ PROFILE, P1 "{\"index\":0,\"power_load_w\":500,\"power_wait_w\":600}]}", "FILE: gpus[0].power_wait_w: 600.00 W is above power_load_w 500.00 W; a rank that waits draws no more than one that computes" },
	{ PROFILE, P1 "{\"index\":0,\"temp_load_c\":\"hot\"}]}", "FILE: gpus[0].temp_load_c: expected a number from -50 to 200" },
	{ PROFILE, P1 "{\"index\":0,\"pci_bus_id\":\"nope\"}]}", "FILE: gpus[0].pci_bus_id: \"nope\" is not a PCI bus id; expected like \"00000000:00:06.0\"" },
	/* job */
	{ JOB, "{\"format\":\"thermap.job/1\"}", "FILE: parallel: missing; expected an object" },
	{ JOB, J1 "\"parallel\":{\"tp\":0}}", "FILE: parallel.tp: 0 is out of range; expected an integer from 1 to 65536" },
	{ JOB, J1 "\"parallel\":{\"pp\":2,\"order\":\"tp-xx-pp\"}}", "FILE: parallel.order: \"xx\" is not a dimension; expected tp, cp, ep, dp or pp" },
	{ JOB, J1 "\"parallel\":{\"pp\":2,\"dp\":2,\"order\":\"tp-pp\"}}", "FILE: parallel.order: \"tp-pp\" leaves out dp, whose size is 2" },
	{ JOB, J1 "\"parallel\":{\"pp\":2,\"order\":\"pp-pp\"}}", "FILE: parallel.order: names pp twice" },
	{ JOB, J1 "\"parallel\":{\"dp\":3,\"ep\":2}}", "FILE: parallel.ep: 2 does not divide dp 3 (Megatron-Core folds expert parallelism into data parallelism)" },
	{ JOB, J1 "\"parallel\":{\"dp\":4,\"ep\":2,\"order\":\"tp-ep-cp-dp-pp\"}}", "FILE: parallel.order: \"tp-ep-cp-dp-pp\": ep must sit next to dp (Megatron-Core splits dp into ep groups)" },
	{ JOB, "{\"format\":\"thermap.job/1\",\"nproc_per_node\":4,\"parallel\":{\"pp\":2}}", "FILE: nproc_per_node: 4 does not divide the world size 2 (tp·cp·dp·pp)" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"schedule\":{\"kind\":\"zb\",\"microbatches\":4}}", "FILE:1:119: duplicate object key near '\"schedule\"'" },
	{ JOB, "{\"format\":\"thermap.job/1\",\"nproc_per_node\":2,\"parallel\":{\"pp\":2},\"schedule\":{\"kind\":\"zb\",\"microbatches\":4}}", "FILE: schedule.kind: \"zb\" is not a schedule; expected \"1f1b\", \"interleaved\" or \"gpipe\"" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":1,\"bwd_ms\":2}]}", "FILE: stages: has 1 entries; expected pp·vpp = 2" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":1,\"bwd_ms\":2},{\"fwd_ms\":1}]}", "FILE: stages[1].bwd_ms: missing; a measured stage gives both fwd_ms and bwd_ms" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":1,\"bwd_ms\":2},{}]}", "FILE: stages[1]: expected either fwd_ms and bwd_ms, or layers" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":1,\"bwd_ms\":2,\"extra_fwd_ms\":1},{\"layers\":2}]}", "FILE: stages[0]: gives fwd_ms/bwd_ms and extra_*_ms; extras apply only to layers × layer_*_ms" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"layers\":2},{\"layers\":2}]}", "FILE: layer_fwd_ms: missing; stages given by layers need layer_fwd_ms and layer_bwd_ms" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":0,\"bwd_ms\":0},{\"layers\":2}],\"layer_fwd_ms\":1,\"layer_bwd_ms\":2}", "FILE: stages[0]: does no work (forward + backward is 0 ms); expected a positive time" },
	/* every message of a number or an integer field: missing, null,
	 * another type, out of range, not an integer (the range text is
	 * made only for these) */
	{ JOB, "{\"format\":\"thermap.job/1\",\"parallel\":{\"pp\":2}}", "FILE: nproc_per_node: missing; expected an integer from 1 to 4096" },
	{ JOB, "{\"format\":\"thermap.job/1\",\"nproc_per_node\":null,\"parallel\":{\"pp\":2}}", "FILE: nproc_per_node: is null; expected an integer from 1 to 4096" },
	{ JOB, "{\"format\":\"thermap.job/1\",\"nproc_per_node\":\"2\",\"parallel\":{\"pp\":2}}", "FILE: nproc_per_node: expected an integer from 1 to 4096" },
	{ JOB, J1 "\"parallel\":{\"tp\":null}}", "FILE: parallel.tp: is null; expected an integer from 1 to 65536" },
	{ JOB, J1 "\"parallel\":{\"tp\":1e300}}", "FILE: parallel.tp: 1e+300 is out of range; expected an integer from 1 to 65536" },
	{ JOB, J1 "\"parallel\":{\"tp\":-2.5}}", "FILE: parallel.tp: -2.5 is not an integer; expected an integer from 1 to 65536" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":null,\"bwd_ms\":2},{\"layers\":2}]}", "FILE: stages[0].fwd_ms: is null; expected a number from 0 to 1e+07" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":1,\"bwd_ms\":[2]},{\"layers\":2}]}", "FILE: stages[0].bwd_ms: expected a number from 0 to 1e+07" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":1,\"bwd_ms\":1e7,\"mem_gib\":1000000.5},{\"layers\":2}]}", "FILE: stages[0].mem_gib: 1e+06 is out of range; expected a number from 0 to 1e+06" },
	{ JOB, J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":1,\"bwd_ms\":2},{\"fwd_ms\":1,\"bwd_ms\":2}],\"measured\":{\"ranks\":[{\"rank\":0,\"bwd_ms\":1},{\"rank\":1,\"fwd_ms\":1,\"bwd_ms\":1}]}}", "FILE: measured.ranks[0].fwd_ms: missing; expected a number from 0 to 1e+07" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"index\":0,\"memory_gib\":-0.001}]}]}", "FILE: nodes[0].gpus[0].memory_gib: -0.001 is out of range; expected a number from 0 to 1e+06" },
	{ CLUSTER, "{\"format\":\"thermap.cluster/1\",\"nodes\":[{\"host\":\"a\",\"gpus\":[{\"uuid\":null}]}]}", "FILE: nodes[0].gpus[0].index: missing; expected an integer from 0 to 65535" },
	{ CLUSTER, C1 "}],\"network\":{\"same_group_gb_per_s\":0}}", "FILE: network.same_group_gb_per_s: 0 is out of range; expected a number from 0.001 to 100000" },
	{ PROFILE, P1 "{\"index\":null,\"uuid\":null}]}", "FILE: gpus[0]: names no GPU; expected a uuid, a pci_bus_id or an index" },
	{ PROFILE, P1 "{\"index\":0,\"samples\":true}]}", "FILE: gpus[0].samples: expected a number from 0 to 1e+15" },
	{ PROFILE, P1 "{\"index\":65536}]}", "FILE: gpus[0].index: 65536 is out of range; expected an integer from 0 to 65535" },
	{ PROFILE, P1 "{\"index\":0,\"power_wait_sd_w\":100000.01}]}", "FILE: gpus[0].power_wait_sd_w: 100000 is out of range; expected a number from 0 to 100000" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"solver\":{\"time_limit_s\":\"10\"}}", "FILE: solver.time_limit_s: expected a number from 0.001 to 1e+06" },
	/* policy */
	{ POLICY, "{\"format\":\"thermap.policy/1\",\"name\":\"x\"}", "FILE: method: missing; expected a string" },
	{ POLICY, Q1 "\"method\":\"simplex\"}", "FILE: method: \"simplex\" is not a method; expected \"ilp\", \"greedy\", \"greedy-coolest\", \"identity\", \"alternating\" or \"brute\"" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"objective\":{\"order\":[\"speed\"]}}", "FILE: objective.order: entry 0: expected \"time\", \"peak_temp\", \"wear\" or \"moves\"" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"objective\":{\"order\":[\"time\",\"time\"]}}", "FILE: objective.order: names \"time\" twice" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"objective\":{\"tolerance\":2}}", "FILE: objective.tolerance: 2 is out of range; expected a number from 0 to 1" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"constraints\":{\"tp_nvlink\":1}}", "FILE: constraints.tp_nvlink: expected true or false" },
	{ POLICY, Q1 "\"method\":\"alternating\",\"constraints\":{\"rebalance_layers\":true}}", "FILE: constraints.rebalance_layers: true with method \"alternating\", which sets the layers by its own rule; expected false" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"solver\":{\"time_limit_s\":0}}", "FILE: solver.time_limit_s: 0 is out of range; expected a number from 0.001 to 1e+06" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"objective\":{\"order\":[\"time\",\"peak_temp\",\"wear\",\"moves\",\"time\"]}}", "FILE: objective.order: expected 1 to 4 criteria from \"time\", \"peak_temp\", \"wear\", \"moves\"" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"decision\":{\"min_gain\":\"1x\"}}", "FILE: decision.min_gain: \"1x\": expected a least gain like \"1%\", \"2C\", \"1%,2C\" or \"0\"" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"decision\":{\"exchange_c_per_pct\":-1}}", "FILE: decision.exchange_c_per_pct: -1 is out of range; expected a number from 0 to 1000" },
	{ POLICY, Q1 "\"method\":\"ilp\",\"decision\":{\"evidence\":\"yes\"}}", "FILE: decision.evidence: expected true or false" },
};

static char tmpdir[64];

static char *write_doc(const char *doc)
{
	char *path = xmalloc(256);
	FILE *f;
	snprintf(path, 256, "%s/in.json", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(doc, f);
	fclose(f);
	return path;
}

static int load(int kind, const char *path, tm_error *e)
{
	tm_cluster *c = NULL;
	tm_profile *p = NULL;
	tm_job *j = NULL;
	tm_policy *pol = NULL;
	int rc;
	switch (kind) {
	case CLUSTER: rc = tm_cluster_load(path, &c, e); break;
	case PROFILE: rc = tm_profile_load(path, &p, e); break;
	case JOB: rc = tm_job_load(path, &j, e); break;
	default: rc = tm_policy_load(path, &pol, e); break;
	}
	tm_cluster_free(c);
	tm_profile_free(p);
	tm_job_free(j);
	tm_policy_free(pol);
	return rc;
}

static void expect(const char *msg, const char *path, const char *got)
{
	char want[2048];
	const char *f = strstr(msg, "FILE");
	snprintf(want, sizeof want, "%.*s%s%s", (int)(f - msg), msg, path, f + 4);
	assert_string_equal(got, want);
}

static void test_rejections(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *path = write_doc(cases[i].doc);
		tm_error e = { 0, "" };
		int rc = load(cases[i].kind, path, &e);
		if (rc != TM_EINPUT)
			print_error("case %zu: rc %d: %s\n", i, rc, e.msg);
		assert_int_equal(rc, TM_EINPUT);
		expect(cases[i].msg, path, e.msg);
		free(path);
	}
}

static void test_files(void **state)
{
	tm_error e = { 0, "" };
	tm_cluster *c = NULL;
	char msg[256];
	(void)state;
	assert_int_equal(tm_cluster_load("/nonexistent/c.json", &c, &e),
	                 TM_EINPUT);
	assert_string_equal(e.msg, "/nonexistent/c.json: cannot open: No such "
	                    "file or directory");
	e.code = 0;
	assert_int_equal(tm_cluster_load(tmpdir, &c, &e), TM_EINPUT);
	snprintf(msg, sizeof msg, "%s: not a regular file", tmpdir);
	assert_string_equal(e.msg, msg);
	e.code = 0;
	assert_int_equal(tm_cluster_load("/dev/zero", &c, &e), TM_EINPUT);
	assert_string_equal(e.msg, "/dev/zero: not a regular file");
}

static char warned[4][512];
static int nwarned;

static void on_warn(void *ud, const char *msg)
{
	(void)ud;
	if (nwarned < 4)
		snprintf(warned[nwarned++], sizeof warned[0], "%s", msg);
}

static void test_unknown_field_warning(void **state)
{
	char *path = write_doc("{\"format\":\"thermap.cluster/1\",\"nodes\":[{"
	                       "\"host\":\"a\",\"gpu\":1,\"gpus\":[{\"index\":0,"
	                       "\"colour\":1}],\"links\":[[\"X\"]]}]}");
	tm_cluster *c = NULL;
	tm_error e = { 0, "" };
	char want[512];
	(void)state;
	tm_set_warn(on_warn, NULL);
	assert_int_equal(tm_cluster_load(path, &c, &e), 0);
	tm_set_warn(NULL, NULL);
	assert_int_equal(nwarned, 2);
	snprintf(want, sizeof want, "%s: nodes[0].gpu: unknown field; did you "
	         "mean \"gpus\"?", path);
	assert_string_equal(warned[0], want);
	snprintf(want, sizeof want, "%s: nodes[0].gpus[0].colour: unknown field, "
	         "ignored", path);
	assert_string_equal(warned[1], want);
	tm_cluster_free(c);
	free(path);
}

/* The profile join: ambiguity, a missing GPU, no thermal model. */
static void test_join(void **state)
{
	static const char *const profiles[][2] = {
		{ P1 "{\"host\":\"a\",\"index\":0,\"temp_idle_c\":30,\"temp_load_c\":60},"
		  "{\"host\":\"a\",\"index\":0,\"temp_idle_c\":30,\"temp_load_c\":60}]}",
		  "FILE: gpus[0] and gpus[1] both describe host a GPU 0" },
		{ P1 "{\"host\":\"a\",\"index\":0,\"temp_idle_c\":30,\"temp_load_c\":60}]}",
		  "FILE: no entry for host a GPU 1 (known by index only); profile "
		  "every GPU or pass --allow-unprofiled" },
		{ P1 "{\"host\":\"a\",\"index\":0,\"temp_idle_c\":30},"
		  "{\"host\":\"a\",\"index\":1,\"temp_idle_c\":30,\"temp_load_c\":60}]}",
		  "FILE: gpus[0]: no thermal model; expected ambient_c, r_c_per_w, "
		  "power_idle_w and power_load_w, or temp_idle_c and temp_load_c" },
	};
	char cpath[256];
	FILE *f;
	tm_cluster *c = NULL;
	tm_job *j = NULL;
	tm_policy *pol = NULL;
	tm_error e = { 0, "" };
	(void)state;

	snprintf(cpath, sizeof cpath, "%s/c.json", tmpdir);
	f = fopen(cpath, "w");
	fputs(C1 "}]}", f);
	fclose(f);
	assert_int_equal(tm_cluster_load(cpath, &c, &e), 0);
	{
		char *jp = write_doc(J1 "\"parallel\":{\"pp\":2},\"stages\":[{\"fwd_ms\":1,"
		                     "\"bwd_ms\":2},{\"fwd_ms\":1,\"bwd_ms\":2}]}");
		assert_int_equal(tm_job_load(jp, &j, &e), 0);
		free(jp);
	}
	assert_int_equal(tm_policy_default(&pol, &e), 0);
	for (size_t i = 0; i < 3; i++) {
		char *path = write_doc(profiles[i][0]);
		tm_profile *p = NULL;
		tm_problem *pb = NULL;
		e.code = 0;
		assert_int_equal(tm_profile_load(path, &p, &e), 0);
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e),
		                 TM_EINPUT);
		expect(profiles[i][1], path, e.msg);
		tm_profile_free(p);
		free(path);
	}
	tm_policy_free(pol);
	tm_job_free(j);
	tm_cluster_free(c);
}

/* Hostile size: 20,000 hosts whose names share a 200-byte prefix, the
 * last a repeat of the first. Comparing each host with every earlier one
 * took 2·10⁸ comparisons of 200 bytes; a sort takes n log n. */
static void test_many_hosts(void **state)
{
	enum { N = 20000, PREFIX = 200 };
	size_t cap = (size_t)N * (PREFIX + 80) + 64, len = 0;
	char *doc = xmalloc(cap), pre[PREFIX + 1];
	tm_cluster *c = NULL;
	tm_error e = { 0, "" };
	(void)state;
	memset(pre, 'h', PREFIX);
	pre[PREFIX] = '\0';
	len += (size_t)snprintf(doc + len, cap - len, "{\"format\":"
	                        "\"thermap.cluster/1\",\"nodes\":[");
	for (int i = 0; i < N; i++)
		len += (size_t)snprintf(doc + len, cap - len, "%s{\"host\":\"%s%d\","
		                        "\"gpus\":[{\"index\":0}],\"links\":"
		                        "[[\"X\"]]}", i ? "," : "", pre,
		                        i == N - 1 ? 0 : i);
	len += (size_t)snprintf(doc + len, cap - len, "]}");
	assert_true(len < cap);
	assert_int_equal(tm_cluster_loadb("many", doc, len, &c, &e), TM_EINPUT);
	assert_non_null(strstr(e.msg, "many: nodes[19999].host: \"hhhh"));
	assert_non_null(strstr(e.msg, "0\" repeats nodes[0]"));
	/* and without the repeat, all of them load */
	{
		/* the last host, ...h0, renamed ...hx: the name of no other */
		char *last = doc, *q;
		while ((q = strstr(last + 1, "{\"host\"")))
			last = q;
		q = strstr(last, "\",");
		assert_int_equal(q[-1], '0');
		q[-1] = 'x';
	}
	e.code = 0;
	assert_int_equal(tm_cluster_loadb("many", doc, len, &c, &e), 0);
	assert_int_equal(c->nnodes, N);
	tm_cluster_free(c);
	free(doc);
}

/* A cluster document with one host per entry of counts, every GPU pair
 * NV4, and a profile entry for every GPU. */
static void mixed_docs(const char *cpath, const char *const *hosts,
                       const int *counts, int nhosts, char **profile)
{
	char *pdoc = xmalloc(65536);
	size_t pn = 0;
	FILE *f = fopen(cpath, "w");
	assert_non_null(f);
	fputs("{\"format\":\"thermap.cluster/1\",\"nodes\":[", f);
	pn += (size_t)snprintf(pdoc + pn, 65536 - pn, "%s", P1);
	for (int h = 0; h < nhosts; h++) {
		fprintf(f, "%s{\"host\":\"%s\",\"gpus\":[", h ? "," : "",
		        hosts[h]);
		for (int g = 0; g < counts[h]; g++) {
			fprintf(f, "%s{\"index\":%d}", g ? "," : "", g);
			pn += (size_t)snprintf(pdoc + pn, 65536 - pn, "%s{\"host\":"
			                       "\"%s\",\"index\":%d,\"temp_idle_c\":"
			                       "%d,\"temp_load_c\":%d}", h || g ?
			                       "," : "", hosts[h], g, 30 + g, 60 + 2 * g);
		}
		fputs("],\"links\":[", f);
		for (int a = 0; a < counts[h]; a++) {
			fputs(a ? ",[" : "[", f);
			for (int b = 0; b < counts[h]; b++)
				fprintf(f, "%s\"%s\"", b ? "," : "", a == b ? "X" : "NV4");
			fputs("]", f);
		}
		fputs("],\"net_gb_per_s\":50}", f);
	}
	fputs("]}", f);
	fclose(f);
	snprintf(pdoc + pn, 65536 - pn, "]}");
	*profile = pdoc;
}

/* A job of world ranks, nproc_per_node of them per node rank: pp 2, the
 * rest data parallel. */
static tm_job *mixed_job(int world, int nproc)
{
	char doc[512], *path;
	tm_job *j = NULL;
	tm_error e = { 0, "" };
	snprintf(doc, sizeof doc, "{\"format\":\"thermap.job/1\","
	         "\"nproc_per_node\":%d,\"schedule\":{\"kind\":\"1f1b\","
	         "\"microbatches\":4},\"parallel\":{\"pp\":2,\"dp\":%d},"
	         "\"stages\":[{\"fwd_ms\":1,\"bwd_ms\":2,\"act_mib\":8},"
	         "{\"fwd_ms\":3,\"bwd_ms\":6}]}", nproc, world / 2);
	path = write_doc(doc);
	assert_int_equal(tm_job_load(path, &j, &e), 0);
	free(path);
	return j;
}

/* Hosts of different GPU counts: an input error for a job of several node
 * ranks, naming the file, both hosts and their counts; a job of one node
 * rank still plans on such a cluster, and equal hosts with more GPUs than
 * nproc_per_node are fine. */
static void test_mixed_gpu_counts(void **state)
{
	static const char *const hosts[] = { "gpu-a01", "gpu-b02", "gpu-c03" };
	static const struct {
		int nhosts, counts[3], world, nproc, rc;
		const char *msg;
	} mixed[] = {
		{ 2, { 8, 4 }, 8, 4, TM_EINPUT,
		  "FILE: nodes[1] (host \"gpu-b02\") has 4 GPUs but nodes[0] (host "
		  "\"gpu-a01\") has 8: a multi-node job needs the same GPU count on "
		  "every host (torchrun starts nproc_per_node processes on each)" },
		{ 2, { 4, 8 }, 16, 8, TM_EINPUT,
		  "FILE: nodes[1] (host \"gpu-b02\") has 8 GPUs but nodes[0] (host "
		  "\"gpu-a01\") has 4: a multi-node job needs the same GPU count on "
		  "every host (torchrun starts nproc_per_node processes on each)" },
		{ 3, { 8, 8, 1 }, 4, 2, TM_EINPUT,
		  "FILE: nodes[2] (host \"gpu-c03\") has 1 GPU but nodes[0] (host "
		  "\"gpu-a01\") has 8: a multi-node job needs the same GPU count on "
		  "every host (torchrun starts nproc_per_node processes on each)" },
		/* one node rank: the host of 8, or either host */
		{ 2, { 8, 4 }, 8, 8, 0, NULL },
		{ 2, { 8, 4 }, 4, 4, 0, NULL },
		{ 3, { 8, 8, 1 }, 2, 2, 0, NULL },
		/* the same count everywhere, above nproc_per_node */
		{ 2, { 8, 8 }, 8, 4, 0, NULL },
	};
	char cpath[256];
	(void)state;
	snprintf(cpath, sizeof cpath, "%s/c.json", tmpdir);
	for (size_t i = 0; i < sizeof mixed / sizeof mixed[0]; i++) {
		tm_cluster *c = NULL;
		tm_profile *p = NULL;
		tm_job *j = NULL;
		tm_policy *pol = NULL;
		tm_problem *pb = NULL;
		tm_solution sol;
		tm_error e = { 0, "" };
		char *pdoc, *ppath;
		int rc;

		mixed_docs(cpath, hosts, mixed[i].counts, mixed[i].nhosts, &pdoc);
		assert_int_equal(tm_cluster_load(cpath, &c, &e), 0);
		ppath = write_doc(pdoc);
		assert_int_equal(tm_profile_load(ppath, &p, &e), 0);
		free(ppath);
		free(pdoc);
		j = mixed_job(mixed[i].world, mixed[i].nproc);
		assert_int_equal(tm_policy_default(&pol, &e), 0);
		rc = tm_problem_new(c, p, j, pol, false, &pb, &e);
		if (rc != mixed[i].rc)
			print_error("case %zu: rc %d: %s\n", i, rc, e.msg);
		assert_int_equal(rc, mixed[i].rc);
		if (rc) {
			assert_null(pb);
			expect(mixed[i].msg, cpath, e.msg);
		} else {
			/* it plans: every rank on a GPU of one host with enough */
			memset(&sol, 0, sizeof sol);
			assert_int_equal(tm_solve(pb, &sol, &e), 0);
			assert_int_equal(pb->nnodes, mixed[i].world / mixed[i].nproc);
			for (int r = 0; r < mixed[i].world; r++) {
				int h = sol.pl->host[r];
				assert_int_equal(h, sol.pl->host[r - r % mixed[i].nproc]);
				assert_true(c->nodes[h].ngpus >= mixed[i].nproc);
			}
			tm_solution_clear(&sol);
		}
		tm_problem_free(pb);
		tm_policy_free(pol);
		tm_job_free(j);
		tm_profile_free(p);
		tm_cluster_free(c);
	}
}

static int setup(void **state)
{
	(void)state;
	return tt_tmpdir(tmpdir, sizeof tmpdir, "thermap-test");
}

static int teardown(void **state)
{
	(void)state;
	tt_rm_tree(tmpdir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_unknown_field_warning),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_mixed_gpu_counts),
		cmocka_unit_test(test_many_hosts),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
