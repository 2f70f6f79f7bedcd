/*
 * main.c — the thermap program: command-line parsing, messages and exit
 * codes around libthermap. Nothing here decides a placement.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/ops.h"
#include "topo/topo.h"


static const char usage_main[] =
"usage: thermap COMMAND [OPTIONS]\n"
"\n"
"Place pipeline stages of a training job on the GPUs with the most thermal\n"
"headroom, and write the torchrun environment that realises the placement.\n"
"\n"
"commands:\n"
"  topo     topology reports (topo -m, GPU list, hwloc, NCCL) -> cluster\n"
"  profile  telemetry logs -> per-GPU thermal profile\n"
"  plan     cluster + profile + job (+ policy) -> plan directory\n"
"  replan   previous plan + fresh profile -> a new plan only if worth it\n"
"  compare  several policies on one job, simulated, as a table\n"
"  check    confirm that a plan directory does what plan.json says\n"
"  calibrate  a plan that ran + its telemetry -> the profile fitted to it\n"
"  diff     the ranks that move between two plans, and why\n"
"\n"
"Run 'thermap COMMAND --help' for a command's options: --name VALUE or\n"
"--name=VALUE, each at most once unless it applies to the files after it;\n"
"'--' ends the options.\n"
"exit codes: 0 ok, 1 internal error, 2 usage, 3 no change worth making,\n"
"4 invalid input, 5 infeasible, 6 solver limit without a placement.\n";

static const char usage_plan[] =
"usage: thermap plan --cluster FILE --profile FILE --job FILE [--policy FILE]\n"
"                    -o DIR [--allow-unprofiled] [--write-lp FILE] [--quiet]\n"
"\n"
"  --cluster FILE       thermap.cluster/1: hosts, GPUs, links\n"
"  --profile FILE       thermap.profile/1: per-GPU thermal profile\n"
"  --job FILE           thermap.job/1: parallel sizes, schedule, stage costs\n"
"  --policy FILE        thermap.policy/1 (default: the built-in thermal\n"
"                       policy, policies/thermal.json)\n"
"  -o, --out DIR        plan directory to write (replaced atomically)\n"
"  --allow-unprofiled   treat GPUs without a profile entry as the worst\n"
"                       profiled GPU instead of failing\n"
"  --write-lp FILE      also write the integer program of phase 0 (the\n"
"                       best iteration time) in CPLEX LP format, whatever\n"
"                       the method, before solving (docs/model.md, 10)\n"
"  --quiet              print nothing on stdout (errors and warnings\n"
"                       still go to stderr)\n"
"  --help               this text\n";

static const char usage_replan[] =
"usage: thermap replan --previous DIR --cluster FILE --profile FILE --job FILE\n"
"                      [--policy FILE] [--min-gain X] -o DIR\n"
"                      [--allow-unprofiled] [--quiet]\n"
"\n"
"At a checkpoint: weighs the plan that runs now against the policy's best\n"
"placement under a fresh profile (docs/replan.md). Writes a new plan only\n"
"when it gains more than --min-gain over keeping the previous one, or when\n"
"the previous one cannot stay (a GPU or host gone): then the fewest moves.\n"
"Prints the decision as one JSON line on stdout; exit 0 when a plan was\n"
"written, 3 when the previous plan stays.\n"
"\n"
"  --previous DIR       the plan directory that runs now\n"
"  --cluster FILE       thermap.cluster/1 as it is now\n"
"  --profile FILE       thermap.profile/1 of recent telemetry (the last\n"
"                       window; see thermap profile --baseline)\n"
"  --job FILE           thermap.job/1, the same parallel layout\n"
"  --policy FILE        thermap.policy/1 (default: the built-in thermal\n"
"                       policy); objective.move_cost_ms prices a moved\n"
"                       rank, constraints.max_moves caps them\n"
"  --min-gain X         what a move must gain, more than: N% iteration time\n"
"                       (net of move costs), NC peak temperature, or both\n"
"                       as N%,NC (default 1%,2C; 0: any gain)\n"
"  -o, --out DIR        where a new plan goes (replaced atomically; may be\n"
"                       the --previous directory)\n"
"  --allow-unprofiled   treat GPUs without a profile entry as the worst\n"
"                       profiled GPU instead of failing\n"
"  --quiet              no explanation on stderr (the JSON line stays)\n"
"  --help               this text\n";

static const char usage_diff[] =
"usage: thermap diff OLD_DIR NEW_DIR [--format text|json]\n"
"\n"
"Lists the ranks that run on another GPU in NEW_DIR than in OLD_DIR, from\n"
"where to where, and why (the reasons replan recorded, when NEW_DIR replans\n"
"OLD_DIR; else the two plans' predicted temperatures).\n"
"\n"
"  --format text|json   output format (default text)\n"
"  --help               this text\n";

static const char usage_compare[] =
"usage: thermap compare --cluster FILE --profile FILE --job FILE POLICY_FILE...\n"
"                       [--format text|markdown|csv|json] [--svg FILE]\n"
"                       [--svg-scale LO:HI|auto] [--allow-unprofiled]\n"
"       thermap compare --cluster FILE --job FILE --replay LOG [--replay LOG]...\n"
"                       [--window SECONDS] [--host NAME] POLICY_FILE...\n"
"                       [--format text|markdown|csv|json]\n"
"\n"
"Plans the job with each policy, plays every placement in the event-level\n"
"simulator with thermal feedback, and prints one row per policy: iteration\n"
"time and gain over torchrun's placement, tokens/s (with\n"
"tokens_per_iteration in the job), peak temperature, throttled time, energy\n"
"per iteration, solver status, ranks moved, layers (docs/compare.md).\n"
"\n"
"  POLICY_FILE...       thermap.policy/1 files, one row each, in order\n"
"  --format F           text (default), markdown, csv or json\n"
"  --svg FILE           also draw each policy's GPUs coloured by simulated\n"
"                       temperature, with stage labels (SVG, atomically)\n"
"  --svg-scale LO:HI    the picture's colour scale in degrees C (default\n"
"                       30:90, the same for every picture); auto: from the\n"
"                       coolest to the hottest GPU pictured\n"
"  --replay LOG         a telemetry recording instead of --profile: plan on\n"
"                       each window, score on the next\n"
"  --window SECONDS     replay window length (default 600)\n"
"  --host NAME          host of the GPUs in the --replay logs (default: as\n"
"                       in thermap profile)\n"
"  --allow-unprofiled   GPUs without a profile entry count as the worst one\n"
"  --help               this text\n"
"exit: 0 with the table (a policy that cannot place says why in its row),\n"
"2 usage, 4 invalid input, 1 internal error.\n";

static const char usage_profile[] =
"usage: thermap profile [--host NAME] [--fields LIST] FILE... [-o FILE]\n"
"                       [--from T] [--to T] [--baseline PROFILE]\n"
"                       [--json-summary] [--quiet]\n"
"\n"
"Reads telemetry and writes a thermap.profile/1 document: nvidia-smi\n"
"--query-gpu CSV logs, nvidia-smi dmon logs, dcgm-exporter Prometheus\n"
"scrapes and Prometheus query_range JSON (found from each file's content).\n"
"\n"
"  FILE...              telemetry files; '-' reads stdin\n"
"  --host NAME          host of the GPUs in the files that follow (else the\n"
"                       Hostname label, else the file name: HOST.csv)\n"
"  --fields LIST        columns of the CSV files that follow when they have\n"
"                       no header: the --query-gpu list\n"
"  -o, --out FILE       write the profile here (atomically); default stdout\n"
"  --from T, --to T     only samples in this window: a time as in the logs\n"
"                       (2026/11/21 12:15:28, ISO 8601, seconds since\n"
"                       1970) or +SECONDS after each file's first sample\n"
"  --baseline PROFILE   take what the window cannot measure from an earlier\n"
"                       profile of the same GPUs: the idle level, and for\n"
"                       a GPU never at full load in the window its load\n"
"                       level, headroom, clocks, derate and fit; listed per\n"
"                       GPU in \"from_baseline\" (docs/profile.md)\n"
"  --json-summary       print what was read (rows, skipped rows and why,\n"
"                       GPUs, time span) as JSON on stdout; needs -o\n"
"  --quiet              print nothing on stdout\n"
"  --help               this text\n";

static const char usage_calibrate[] =
"usage: thermap calibrate --cluster FILE --profile FILE --job FILE --plan DIR\n"
"                         [--host NAME] [--fields LIST] TELEMETRY... -o FILE\n"
"                         [--from T] [--to T] [--quiet]\n"
"\n"
"Fits the model to a plan that ran (docs/calibrate.md): from the telemetry\n"
"recorded while it ran, each of its GPUs' power while its rank waits, its\n"
"derate at the job's operating point and the spread of its thermal fit.\n"
"Writes the profile with those fields replaced, each listed in\n"
"\"calibrated\" with where it came from, and prints, per GPU, measured\n"
"temperature, power and clock against the model before and after.\n"
"\n"
"  --cluster FILE       the cluster the plan ran on\n"
"  --profile FILE       the profile to calibrate (the one the plan used)\n"
"  --job FILE           the job; its \"measured\" section (to_job.py) gives\n"
"                       per-rank times, else the in-job clocks are used\n"
"  --plan DIR           the plan directory that was launched\n"
"  TELEMETRY...         logs recorded while it ran, in any format thermap\n"
"                       profile reads; '-' reads stdin\n"
"  --host NAME          host of the GPUs in the files that follow (else the\n"
"                       Hostname label, else the file name: HOST.csv)\n"
"  --fields LIST        columns of the CSV files that follow when they have\n"
"                       no header: the --query-gpu list\n"
"  --from T, --to T     only samples in this window: a time as in the logs\n"
"                       or +SECONDS after each file's first sample\n"
"  -o, --out FILE       write the calibrated profile here (atomically; may\n"
"                       be the --profile file)\n"
"  --quiet              print nothing on stdout\n"
"  --help               this text\n"
"exit: 0 written, 2 usage, 4 invalid input (one line naming the file),\n"
"1 the output could not be written.\n";

static const char usage_topo[] =
"usage: thermap topo [--host NAME] [--smi-topo FILE] [--gpus FILE]\n"
"                    [--hwloc FILE] [--nccl FILE] [--local] ...\n"
"                    [--prefer SOURCE] [-o FILE]\n"
"\n"
"Writes a thermap.cluster/1 document from what machines report, one set of\n"
"sources per host; each --host starts the next host's set.\n"
"\n"
"  --host NAME          the host of the sources that follow (without it:\n"
"                       the name hwloc reports, or this machine's for --local)\n"
"  --smi-topo FILE      'nvidia-smi topo -m' output: the link matrix\n"
"  --gpus FILE          a GPU list: 'nvidia-smi -L', 'nvidia-smi -q', or\n"
"                       --query-gpu=index,uuid,pci.bus_id,name,memory.total\n"
"                       --format=csv (UUIDs, bus ids, models, memory)\n"
"  --hwloc FILE         hwloc XML (lstopo-no-graphics -of xml): GPUs, PCI,\n"
"                       NUMA, NVLink when hwloc saw it\n"
"  --nccl FILE          an NCCL topology file (NCCL_TOPO_FILE)\n"
"  --local              this machine: hwloc, and nvidia-smi when it runs\n"
"  --prefer SOURCE      when sources disagree, keep this one's word\n"
"                       (smi-topo, gpus, hwloc, nccl, local) instead of\n"
"                       failing\n"
"  -o, --out FILE       write the cluster here (atomically); default stdout\n"
"  --help               this text\n";

static const char usage_check[] =
"usage: thermap check --cluster FILE --job FILE --plan DIR [--profile FILE]\n"
"                     [--previous DIR] [--format text|json]\n"
"\n"
"  --cluster FILE       the cluster the plan was made for\n"
"  --job FILE           the job the plan was made for\n"
"  --plan DIR           the plan directory to check\n"
"  --profile FILE       also re-predict iteration time and temperatures\n"
"  --previous DIR       for a plan written by replan: also confirm that it\n"
"                       replaces this plan and that its moves are from it\n"
"  --format text|json   text (default): one line when the plan is valid;\n"
"                       json: one object with every verification and its\n"
"                       result, and the first failure (docs/formats.md)\n"
"  --help               this text\n";

/* Every line below goes to people: what it quotes from the command line
 * or from an input is shown as tm_text shows it (one line, no control
 * characters, valid UTF-8). */
static void say(FILE *f, const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(FILE *f, const char *prefix, const char *fmt, ...)
{
	va_list ap;
	strbuf b;
	char *raw;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	raw = xmalloc(n > 0 ? (size_t)n + 1 : 1);
	raw[0] = '\0';
	if (n > 0) {
		va_start(ap, fmt);
		vsnprintf(raw, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	sb_init(&b);
	sb_add_text(&b, raw);
	fprintf(f, "%s%s\n", prefix, b.s);
	sb_free(&b);
	free(raw);
}

/* Text of several lines from the library (summaries, tables): each line
 * shown as tm_text shows it. The library shows what it quotes, so this
 * changes nothing unless something was missed there. */
static void put_lines(FILE *f, const char *text)
{
	char *t = xstrdup(text), *line = t, *nl;
	strbuf b;
	sb_init(&b);
	for (; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		sb_add_text(&b, line);
		if (!nl)
			break;
		sb_add(&b, "\n");
	}
	fputs(b.s, f);
	sb_free(&b);
	free(t);
}

/* Prints a warning once: commands that build many problems from one
 * input (compare, replan) would repeat the same line. */
static void on_warn(void *ud, const char *msg)
{
	static uint64_t seen[256];
	static int nseen;
	uint64_t h = 1469598103934665603ull;
	(void)ud;
	for (const char *c = msg; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	for (int i = 0; i < nseen; i++)
		if (seen[i] == h)
			return;
	if (nseen < 256)
		seen[nseen++] = h;
	say(stderr, "thermap: warning: ", "%s", msg);
}

/* fmt is the program's; arg is often the user's (an option, a value) */
static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	say(stderr, "thermap: ", fmt, arg);
	fprintf(stderr, "Try 'thermap %s--help'.\n", cmd);
	return TM_EUSAGE;
}

static int report(const tm_error *err)
{
	say(stderr, "thermap: error: ", "%s", err->msg);
	return err->code ? err->code : TM_EINTERNAL;
}

/* One grammar for every command (docs/thermap.1, "Options"): --name VALUE
 * and --name=VALUE alike, -o VALUE; an option of one value given twice is
 * a usage error; flags take no value; '--' ends the options, and every
 * argument after it is an operand even if it starts with '-'; '-' alone is
 * an operand (standard input where a command reads files). */
enum opt_kind {
	OPT_FLAG,       /* no value; *set becomes true */
	OPT_ONE,        /* one value, at most once, into *value */
	OPT_EACH,       /* a value each time, handed to the command in order */
	OPT_EACH_FLAG,  /* no value, handed to the command each time */
};

typedef struct opt {
	const char *name;   /* "--cluster" */
	const char *alias;  /* "-o" or NULL */
	int kind;           /* enum opt_kind */
	const char **value; /* OPT_ONE: where the value goes */
	bool *set;          /* OPT_FLAG: where the flag goes */
	int given;          /* times given, counted by parse */
} opt;

/* Handed each OPT_EACH and OPT_EACH_FLAG option (v NULL for a flag) and
 * each operand (o NULL) in command-line order; 0 or an exit code, the
 * message printed. NULL: the command takes no operands. */
typedef int (*opt_each)(void *ud, const opt *o, const char *v);

/* 0 or TM_EUSAGE (printed). *help: --help or -h was given. */
static int parse(int argc, char **argv, opt *opts, const char *cmd,
                 opt_each each, void *ud, bool *help)
{
	char cmdsp[32];
	bool operands = false;
	int rc;
	snprintf(cmdsp, sizeof cmdsp, "%s ", cmd);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *eq = NULL, *v = NULL;
		char name[64];
		size_t n;
		opt *o = NULL;
		if (operands || a[0] != '-' || a[1] == '\0') {
			if (!each)
				return usage_error(cmdsp, "unexpected argument '%s'", a);
			if ((rc = each(ud, NULL, a)))
				return rc;
			continue;
		}
		if (!strcmp(a, "--")) {
			operands = true;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			*help = true;
			return 0;
		}
		if (a[1] == '-')
			eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a) : strlen(a);
		for (opt *p = opts; p->name; p++)
			if ((strlen(p->name) == n && !strncmp(p->name, a, n)) ||
			    (p->alias && !eq && !strcmp(p->alias, a)))
				o = p;
		if (!o)
			return usage_error(cmdsp, "unknown option '%s'", a);
		snprintf(name, sizeof name, "%.*s", (int)(n < 60 ? n : 60), a);
		if (o->kind == OPT_FLAG || o->kind == OPT_EACH_FLAG) {
			if (eq)
				return usage_error(cmdsp, "option '%s' takes no value", a);
			if (o->kind == OPT_FLAG)
				*o->set = true;
			else if ((rc = each(ud, o, NULL)))
				return rc;
			continue;
		}
		if (eq)
			v = eq + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return usage_error(cmdsp, "option '%s' needs a value", a);
		if (o->kind == OPT_ONE) {
			if (o->given++)
				return usage_error(cmdsp, "option '%s' is given more than "
				                   "once; it takes one value", name);
			*o->value = v;
		} else if ((rc = each(ud, o, v))) {
			return rc;
		}
	}
	return 0;
}

#define OPT_END { NULL, NULL, OPT_FLAG, NULL, NULL, 0 }

/* The phase-0 program of the job as given, before any solving. */
static int write_lp(const tm_cluster *c, const tm_profile *p, const tm_job *j,
                    const tm_policy *pol, bool unprof, const char *file,
                    tm_error *err)
{
	tm_problem *pb = NULL;
	int rc = tm_problem_new(c, p, j, pol, unprof, &pb, err);
	if (!rc)
		rc = tm_write_lp(pb, file, err);
	tm_problem_free(pb);
	return rc;
}

/* compare's operands are policy files; each --replay adds a log */
typedef struct compare_args {
	const char **polf, **logs;
	int npol, nlog;
} compare_args;

static int compare_arg(void *ud, const opt *o, const char *v)
{
	compare_args *A = ud;
	if (!o)
		A->polf[A->npol++] = v;
	else
		A->logs[A->nlog++] = v;
	return 0;
}

/* --svg-scale: "LO:HI" in °C, or "auto" (NANs: the pictured range). */
static int parse_svg_scale(const char *v, double sc[2])
{
	char *end;
	if (!strcmp(v, "auto")) {
		sc[0] = sc[1] = NAN;
		return 0;
	}
	sc[0] = strtod(v, &end);
	if (end == v || *end != ':')
		return -1;
	v = end + 1;
	sc[1] = strtod(v, &end);
	if (end == v || *end)
		return -1;
	return sc[0] >= -50 && sc[1] <= 200 && sc[0] < sc[1] ? 0 : -1;
}

static int cmd_compare(int argc, char **argv)
{
	const char *cf = NULL, *pf = NULL, *jf = NULL, *fmt = "text",
	           *svg = NULL, *win = NULL, *host = NULL, *scale = NULL,
	           **polf, **logs;
	double svg_scale[2] = { 0, 0 };
	bool unprof = false, help = false;
	int npol = 0, nlog = 0, f, rc = 0;
	opt opts[] = {
		{ "--cluster", NULL, OPT_ONE, &cf, NULL, 0 },
		{ "--profile", NULL, OPT_ONE, &pf, NULL, 0 },
		{ "--job", NULL, OPT_ONE, &jf, NULL, 0 },
		{ "--format", NULL, OPT_ONE, &fmt, NULL, 0 },
		{ "--svg", NULL, OPT_ONE, &svg, NULL, 0 },
		{ "--svg-scale", NULL, OPT_ONE, &scale, NULL, 0 },
		{ "--window", NULL, OPT_ONE, &win, NULL, 0 },
		{ "--host", NULL, OPT_ONE, &host, NULL, 0 },
		{ "--replay", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--allow-unprofiled", NULL, OPT_FLAG, NULL, &unprof, 0 },
		OPT_END,
	};
	compare_args A;
	tm_cluster *c = NULL;
	tm_profile *p = NULL;
	tm_job *j = NULL;
	tm_policy **pols;
	tm_tele_input *in;
	tm_error err = { 0, "" };
	double window = 600;
	char *out = NULL;

	polf = xcalloc((size_t)argc, sizeof *polf);
	logs = xcalloc((size_t)argc, sizeof *logs);
	pols = xcalloc((size_t)argc, sizeof *pols);
	in = xcalloc((size_t)argc, sizeof *in);
	A = (compare_args){ polf, logs, 0, 0 };
	rc = parse(argc, argv, opts, "compare", compare_arg, &A, &help);
	npol = A.npol;
	nlog = A.nlog;
	if (rc)
		goto out;
	if (help) {
		fputs(usage_compare, stdout);
		goto out;
	}
	if (host && !tm_valid_host(host)) {
		rc = usage_error("compare ", "--host '%s': expected a host name",
		                 host);
		goto out;
	}
	if ((f = tm_compare_format(fmt)) < 0) {
		rc = usage_error("compare ", "--format '%s': expected text, "
		                 "markdown, csv or json", fmt);
		goto out;
	}
	if (win) {
		char *end;
		window = strtod(win, &end);
		if (*end || !(window >= 1 && window <= 1e7)) {
			rc = usage_error("compare ", "--window '%s': expected seconds "
			                 "from 1 to 10000000", win);
			goto out;
		}
	}
	if (!cf || !jf || (!pf && !nlog) || !npol) {
		rc = usage_error("compare ", "compare needs %s", !cf ? "--cluster" :
		                 !jf ? "--job" : !npol ? "at least one POLICY_FILE" :
		                 "--profile (or --replay LOG)");
		goto out;
	}
	if (pf && nlog) {
		rc = usage_error("compare ", "%s", "--profile and --replay: give "
		                 "one; replay makes a profile per window");
		goto out;
	}
	if (nlog && svg) {
		rc = usage_error("compare ", "%s", "--svg draws one profile's "
		                 "placements; it does not go with --replay");
		goto out;
	}
	if (scale && !svg) {
		rc = usage_error("compare ", "%s", "--svg-scale sets the colours "
		                 "of --svg FILE; give both");
		goto out;
	}
	if (scale && parse_svg_scale(scale, svg_scale)) {
		rc = usage_error("compare ", "--svg-scale '%s': expected LO:HI in "
		                 "degrees C, LO below HI, both from -50 to 200, or "
		                 "auto", scale);
		goto out;
	}
	if ((svg && (rc = tm_check_file_target(svg, &err))) ||
	    (rc = tm_cluster_load(cf, &c, &err)) ||
	    (pf && (rc = tm_profile_load(pf, &p, &err))) ||
	    (rc = tm_job_load(jf, &j, &err)))
		goto fail;
	for (int i = 0; i < npol; i++)
		if ((rc = tm_policy_load(polf[i], &pols[i], &err)))
			goto fail;
	for (int i = 0; i < nlog; i++)
		in[i] = (tm_tele_input){ logs[i], host, NULL };
	rc = nlog ? tm_compare_replay(c, in, nlog, window, j, pols, npol,
	                              unprof, f, &out, &err)
	          : tm_compare(c, p, j, pols, npol, unprof, f, svg,
	                       scale ? svg_scale : NULL, &out,
	                       &err);
	if (rc)
		goto fail;
	if (f == 3)  /* json */
		fputs(out, stdout);
	else
		put_lines(stdout, out);
	if (svg && f == 0)
		say(stdout, "", "wrote %s", svg);
	goto out;
fail:
	rc = report(&err);
out:
	for (int i = 0; i < npol; i++)
		tm_policy_free(pols[i]);
	free(pols);
	free(polf);
	free(logs);
	free(in);
	free(out);
	tm_job_free(j);
	tm_profile_free(p);
	tm_cluster_free(c);
	return rc;
}

/* The four inputs of plan and replan; the policy defaults to the built-in
 * thermal one. */
typedef struct inputs {
	tm_cluster *c;
	tm_profile *p;
	tm_job *j;
	tm_policy *pol;
} inputs;

static int load_inputs(const char *cf, const char *pf, const char *jf,
                       const char *polf, inputs *in, tm_error *err)
{
	int rc;
	memset(in, 0, sizeof *in);
	if ((rc = tm_cluster_load(cf, &in->c, err)) ||
	    (rc = tm_profile_load(pf, &in->p, err)) ||
	    (rc = tm_job_load(jf, &in->j, err)))
		return rc;
	return polf ? tm_policy_load(polf, &in->pol, err)
	            : tm_policy_default(&in->pol, err);
}

static void free_inputs(inputs *in)
{
	tm_policy_free(in->pol);
	tm_job_free(in->j);
	tm_profile_free(in->p);
	tm_cluster_free(in->c);
}

static int cmd_plan(int argc, char **argv)
{
	const char *cf = NULL, *pf = NULL, *jf = NULL, *polf = NULL, *out = NULL,
	           *lpf = NULL;
	bool unprof = false, quiet = false, help = false;
	opt opts[] = {
		{ "--cluster", NULL, OPT_ONE, &cf, NULL, 0 },
		{ "--profile", NULL, OPT_ONE, &pf, NULL, 0 },
		{ "--job", NULL, OPT_ONE, &jf, NULL, 0 },
		{ "--policy", NULL, OPT_ONE, &polf, NULL, 0 },
		{ "--out", "-o", OPT_ONE, &out, NULL, 0 },
		{ "--allow-unprofiled", NULL, OPT_FLAG, NULL, &unprof, 0 },
		{ "--write-lp", NULL, OPT_ONE, &lpf, NULL, 0 },
		{ "--quiet", NULL, OPT_FLAG, NULL, &quiet, 0 },
		OPT_END,
	};
	inputs in;
	tm_run run;
	tm_error err = { 0, "" };
	int rc;

	memset(&run, 0, sizeof run);
	memset(&in, 0, sizeof in);
	if ((rc = parse(argc, argv, opts, "plan", NULL, NULL, &help)))
		return rc;
	if (help) {
		fputs(usage_plan, stdout);
		return 0;
	}
	if (!cf || !pf || !jf || !out)
		return usage_error("plan ", "plan needs %s", !cf ? "--cluster" :
		                   !pf ? "--profile" : !jf ? "--job" : "-o DIR");
	/* what is in the way of the outputs is said before any work */
	if ((rc = tm_plan_check_target(out, &err)) ||
	    (lpf && (rc = tm_check_file_target(lpf, &err))) ||
	    (rc = load_inputs(cf, pf, jf, polf, &in, &err)) ||
	    (lpf && (rc = write_lp(in.c, in.p, in.j, in.pol, unprof, lpf,
	                           &err))) ||
	    (rc = tm_run_policy(in.c, in.p, in.j, in.pol, unprof, &run,
	                        &err)) ||
	    (rc = tm_plan_write(run.pb, &run.sol, out, &err))) {
		rc = report(&err);
		goto out;
	}
	if (!quiet) {
		char *s = tm_plan_summary(run.pb, &run.sol);
		put_lines(stdout, s);
		say(stdout, "", "wrote %s (plan.json, env/, launch.txt)", out);
		if (lpf)
			say(stdout, "", "wrote %s (phase 0 integer program, CPLEX "
			    "LP)", lpf);
		free(s);
	}
out:
	tm_run_free(&run);
	free_inputs(&in);
	return rc;
}

static int cmd_replan(int argc, char **argv)
{
	const char *cf = NULL, *pf = NULL, *jf = NULL, *polf = NULL, *out = NULL,
	           *prevd = NULL, *mgs = TM_MIN_GAIN_DEFAULT;
	bool unprof = false, quiet = false, help = false;
	opt opts[] = {
		{ "--previous", NULL, OPT_ONE, &prevd, NULL, 0 },
		{ "--cluster", NULL, OPT_ONE, &cf, NULL, 0 },
		{ "--profile", NULL, OPT_ONE, &pf, NULL, 0 },
		{ "--job", NULL, OPT_ONE, &jf, NULL, 0 },
		{ "--policy", NULL, OPT_ONE, &polf, NULL, 0 },
		{ "--min-gain", NULL, OPT_ONE, &mgs, NULL, 0 },
		{ "--out", "-o", OPT_ONE, &out, NULL, 0 },
		{ "--allow-unprofiled", NULL, OPT_FLAG, NULL, &unprof, 0 },
		{ "--quiet", NULL, OPT_FLAG, NULL, &quiet, 0 },
		OPT_END,
	};
	inputs in;
	tm_min_gain mg;
	tm_replan_result res;
	tm_error err = { 0, "" };
	int rc;

	memset(&res, 0, sizeof res);
	memset(&in, 0, sizeof in);
	if ((rc = parse(argc, argv, opts, "replan", NULL, NULL, &help)))
		return rc;
	if (help) {
		fputs(usage_replan, stdout);
		return 0;
	}
	if (!prevd || !cf || !pf || !jf || !out)
		return usage_error("replan ", "replan needs %s", !prevd ?
		                   "--previous DIR" : !cf ? "--cluster" : !pf ?
		                   "--profile" : !jf ? "--job" : "-o DIR");
	if (tm_min_gain_parse(mgs, &mg))
		return usage_error("replan ", "--min-gain '%s': expected N%%, NC "
		                   "or N%%,NC (e.g. 1%%,2C)", mgs);
	if ((rc = tm_plan_check_target(out, &err))) {
		rc = report(&err);
		goto out;
	}
	if ((rc = load_inputs(cf, pf, jf, polf, &in, &err)))
		goto fail;
	rc = tm_replan(in.c, in.p, in.j, in.pol, prevd, unprof, &mg, out, &res,
	               &err);
	if (rc && rc != TM_ENOCHANGE)
		goto fail;
	printf("%s\n", res.json);
	if (!quiet)
		put_lines(stderr, res.text);
	if (!quiet && rc == 0)
		say(stderr, "", "wrote %s (plan.json, env/, launch.txt)", out);
	goto out;
fail:
	if (rc == TM_EUSAGE)
		rc = usage_error("replan ", "%s", err.msg);
	else
		rc = report(&err);
out:
	tm_replan_result_free(&res);
	free_inputs(&in);
	return rc;
}

typedef struct diff_args {
	const char *dirs[2];
	int nd;
} diff_args;

static int diff_arg(void *ud, const opt *o, const char *v)
{
	diff_args *A = ud;
	(void)o;
	if (A->nd == 2)
		return usage_error("diff ", "unexpected argument '%s'", v);
	A->dirs[A->nd++] = v;
	return 0;
}

static int cmd_diff(int argc, char **argv)
{
	const char *fmt = "text", **dirs;
	bool help = false;
	opt opts[] = {
		{ "--format", NULL, OPT_ONE, &fmt, NULL, 0 },
		OPT_END,
	};
	diff_args A = { { NULL, NULL }, 0 };
	char *out = NULL;
	tm_error err = { 0, "" };
	int nd, f, rc;

	if ((rc = parse(argc, argv, opts, "diff", diff_arg, &A, &help)))
		return rc;
	if (help) {
		fputs(usage_diff, stdout);
		return 0;
	}
	dirs = A.dirs;
	nd = A.nd;
	if (nd < 2)
		return usage_error("diff ", "%s", "diff needs OLD_DIR and NEW_DIR");
	if (strcmp(fmt, "text") && strcmp(fmt, "json"))
		return usage_error("diff ", "--format '%s': expected text or json",
		                   fmt);
	f = !strcmp(fmt, "json");
	if ((rc = tm_plan_diff(dirs[0], dirs[1], f, &out, &err)))
		return report(&err);
	if (f)  /* json */
		fputs(out, stdout);
	else
		put_lines(stdout, out);
	free(out);
	return 0;
}

static int parse_when(const char *cmd, const char *name, const char *v,
                      double *t, bool *rel)
{
	char *end;
	*rel = v[0] == '+';
	if (*rel) {
		*t = strtod(v + 1, &end);
		if (end != v + 1 && !*end && *t >= 0 && isfinite(*t))
			return 0;
	} else if (tl_parse_time(v, strlen(v), t)) {
		return 0;
	}
	say(stderr, "thermap: ", "%s '%s': expected a time (2026/11/21 "
	    "12:15:28, 2026-11-21T12:15:28Z, seconds since 1970) or "
	    "+SECONDS", name, v);
	fprintf(stderr, "Try 'thermap %s --help'.\n", cmd);
	return TM_EUSAGE;
}

/* The telemetry files of profile and calibrate, each with the --host and
 * --fields given before it. */
typedef struct tele_args {
	const char *cmd;     /* "profile " */
	tm_tele_input *in;
	int n;
	const char *host, *fields;
} tele_args;

static int tele_arg(void *ud, const opt *o, const char *v)
{
	tele_args *A = ud;
	if (!o) {
		A->in[A->n++] = (tm_tele_input){ v, A->host, A->fields };
	} else if (!strcmp(o->name, "--host")) {
		if (!tm_valid_host(v))
			return usage_error(A->cmd, "--host '%s': expected a host name",
			                   v);
		A->host = v;
	} else {
		A->fields = v;
	}
	return 0;
}

static int cmd_profile(int argc, char **argv)
{
	const char *out = NULL, *basef = NULL, *from = NULL, *to = NULL;
	bool want_summary = false, quiet = false, help = false;
	opt opts[] = {
		{ "--host", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--fields", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--out", "-o", OPT_ONE, &out, NULL, 0 },
		{ "--from", NULL, OPT_ONE, &from, NULL, 0 },
		{ "--to", NULL, OPT_ONE, &to, NULL, 0 },
		{ "--baseline", NULL, OPT_ONE, &basef, NULL, 0 },
		{ "--json-summary", NULL, OPT_FLAG, NULL, &want_summary, 0 },
		{ "--quiet", NULL, OPT_FLAG, NULL, &quiet, 0 },
		OPT_END,
	};
	char *base = NULL;
	int nfilled = 0;
	tm_tele_input *in = xcalloc((size_t)argc, sizeof *in);
	tele_args A = { "profile ", in, 0, NULL, NULL };
	tm_tele_opts o = { NAN, NAN, false, false };
	tm_error err = { 0, "" };
	char *prof = NULL, *summ = NULL;
	int n, rc;

	rc = parse(argc, argv, opts, "profile", tele_arg, &A, &help);
	n = A.n;
	if (!rc && help) {
		fputs(usage_profile, stdout);
		free(in);
		return 0;
	}
	if (!rc && from)
		rc = parse_when("profile", "--from", from, &o.from, &o.from_rel);
	if (!rc && to)
		rc = parse_when("profile", "--to", to, &o.to, &o.to_rel);
	if (!rc && n == 0)
		rc = usage_error("profile ", "%s", "profile needs at least one "
		                 "telemetry FILE");
	if (!rc && want_summary && !out)
		rc = usage_error("profile ", "%s", "--json-summary prints on "
		                 "stdout, so the profile needs -o FILE");
	if (!rc && !isnan(o.from) && !isnan(o.to) && o.from_rel == o.to_rel &&
	    o.to < o.from)
		rc = usage_error("profile ", "%s", "--to is before --from");
	if (rc) {
		free(in);
		return rc;
	}
	if (out && (rc = tm_check_file_target(out, &err))) {
		free(in);
		return report(&err);
	}
	if (basef) {
		/* the baseline must be a valid profile before it lends fields */
		tm_profile *bp = NULL;
		size_t blen;
		rc = tm_profile_load(basef, &bp, &err);
		tm_profile_free(bp);
		if (!rc)
			rc = tm_read_file(basef, 64 << 20, &base, &blen, &err);
	}
	if (!rc)
		rc = tm_profile_from_telemetry(in, n, &o, &prof, &summ, &err);
	if (!rc && base) {
		char *filled = tm_profile_fill(prof, base, false, &nfilled);
		free(prof);
		prof = filled;
	}
	if (!rc && out)
		rc = tm_write_file_atomic(out, prof, strlen(prof), &err);
	if (rc) {
		rc = report(&err);
	} else if (!out) {
		fputs(prof, stdout);
	} else if (want_summary) {
		fputs(summ, stdout);
	} else if (!quiet && basef) {
		say(stdout, "", "wrote %s (%d field(s) from %s)", out, nfilled,
		    basef);
	} else if (!quiet) {
		say(stdout, "", "wrote %s", out);
	}
	free(base);
	free(prof);
	free(summ);
	free(in);
	return rc;
}

static int cmd_calibrate(int argc, char **argv)
{
	const char *out = NULL, *from = NULL, *to = NULL;
	tm_tele_input *in = xcalloc((size_t)argc, sizeof *in);
	tm_cal_opts o;
	tm_cal_result res;
	tm_error err = { 0, "" };
	bool quiet = false, help = false;
	tele_args A = { "calibrate ", in, 0, NULL, NULL };
	int rc = 0;

	memset(&o, 0, sizeof o);
	memset(&res, 0, sizeof res);
	o.window = (tm_tele_opts){ NAN, NAN, false, false };
	o.tele = in;
	{
		opt opts[] = {
			{ "--cluster", NULL, OPT_ONE, &o.cluster, NULL, 0 },
			{ "--profile", NULL, OPT_ONE, &o.profile, NULL, 0 },
			{ "--job", NULL, OPT_ONE, &o.job, NULL, 0 },
			{ "--plan", NULL, OPT_ONE, &o.plan, NULL, 0 },
			{ "--host", NULL, OPT_EACH, NULL, NULL, 0 },
			{ "--fields", NULL, OPT_EACH, NULL, NULL, 0 },
			{ "--out", "-o", OPT_ONE, &out, NULL, 0 },
			{ "--from", NULL, OPT_ONE, &from, NULL, 0 },
			{ "--to", NULL, OPT_ONE, &to, NULL, 0 },
			{ "--quiet", NULL, OPT_FLAG, NULL, &quiet, 0 },
			OPT_END,
		};
		rc = parse(argc, argv, opts, "calibrate", tele_arg, &A, &help);
	}
	o.ntele = A.n;
	if (!rc && help) {
		fputs(usage_calibrate, stdout);
		free(in);
		return 0;
	}
	if (!rc && from)
		rc = parse_when("calibrate", "--from", from, &o.window.from,
		                &o.window.from_rel);
	if (!rc && to)
		rc = parse_when("calibrate", "--to", to, &o.window.to,
		                &o.window.to_rel);
	if (!rc && (!o.cluster || !o.profile || !o.job || !o.plan || !out ||
	            !o.ntele))
		rc = usage_error("calibrate ", "calibrate needs %s", !o.cluster ?
		                 "--cluster" : !o.profile ? "--profile" : !o.job ?
		                 "--job" : !o.plan ? "--plan DIR" : !o.ntele ?
		                 "at least one TELEMETRY file" : "-o FILE");
	if (!rc && !isnan(o.window.from) && !isnan(o.window.to) &&
	    o.window.from_rel == o.window.to_rel && o.window.to < o.window.from)
		rc = usage_error("calibrate ", "%s", "--to is before --from");
	if (rc) {
		free(in);
		return rc;
	}
	if ((rc = tm_check_file_target(out, &err)) ||
	    (rc = tm_calibrate(&o, &res, &err)) ||
	    (rc = tm_write_file_atomic(out, res.profile, strlen(res.profile),
	                               &err))) {
		rc = report(&err);
	} else if (!quiet) {
		put_lines(stdout, res.table);
		say(stdout, "", "wrote %s (%d field(s) calibrated on %d GPU(s))",
		    out, res.ncalibrated, res.ngpu);
	}
	tm_cal_result_free(&res);
	free(in);
	return rc;
}

/* topo's sources, each with the --host given before it */
typedef struct topo_args {
	tm_topo_input *in;
	int n;
	const char *host;
} topo_args;

static int topo_arg(void *ud, const opt *o, const char *v)
{
	static const char *const kinds[] = { "smi-topo", "gpus", "hwloc",
	                                     "nccl" };
	topo_args *A = ud;
	if (!o)
		return usage_error("topo ", "unexpected argument '%s'", v);
	if (!strcmp(o->name, "--host")) {
		if (!tm_valid_host(v))
			return usage_error("topo ", "--host '%s': expected a host "
			                   "name", v);
		A->host = v;
		return 0;
	}
	A->in[A->n].host = A->host;
	A->in[A->n].kind = "local";
	for (size_t j = 0; j < 4; j++)
		if (!strcmp(o->name + 2, kinds[j]))
			A->in[A->n].kind = kinds[j];
	A->in[A->n++].file = v;
	return 0;
}

static int cmd_topo(int argc, char **argv)
{
	static const char *const kinds[] = { "smi-topo", "gpus", "hwloc",
	                                     "nccl", "local" };
	tm_topo_input *in = xcalloc((size_t)argc, sizeof *in);
	const char *prefer = NULL, *out = NULL;
	bool help = false;
	opt opts[] = {
		{ "--host", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--smi-topo", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--gpus", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--hwloc", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--nccl", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--local", NULL, OPT_EACH_FLAG, NULL, NULL, 0 },
		{ "--prefer", NULL, OPT_ONE, &prefer, NULL, 0 },
		{ "--out", "-o", OPT_ONE, &out, NULL, 0 },
		OPT_END,
	};
	topo_args A = { in, 0, NULL };
	char *cl = NULL;
	tm_error err = { 0, "" };
	int n, rc;

	rc = parse(argc, argv, opts, "topo", topo_arg, &A, &help);
	n = A.n;
	if (!rc && help) {
		fputs(usage_topo, stdout);
		free(in);
		return 0;
	}
	if (!rc && prefer) {
		bool ok = false;
		for (size_t j = 0; j < 5; j++)
			ok |= !strcmp(prefer, kinds[j]);
		if (!ok)
			rc = usage_error("topo ", "--prefer '%s': expected smi-topo, "
			                 "gpus, hwloc, nccl or local", prefer);
	}
	if (!rc && n == 0)
		rc = usage_error("topo ", "%s", "topo needs a source: --smi-topo, "
		                 "--gpus, --hwloc, --nccl or --local");
	if (rc) {
		free(in);
		return rc;
	}
	if (out && (rc = tm_check_file_target(out, &err))) {
		free(in);
		return report(&err);
	}
	rc = tm_topo_build(in, n, prefer, &cl, &err);
	if (rc)
		rc = err.code == TM_EUSAGE ? (fprintf(stderr, "thermap: %s\n"
		     "Try 'thermap topo --help'.\n", err.msg), TM_EUSAGE)
		                          : report(&err);
	else if (out && (rc = tm_write_file_atomic(out, cl, strlen(cl), &err)))
		rc = report(&err);
	else if (!out)
		fputs(cl, stdout);
	free(cl);
	free(in);
	return rc;
}

static int cmd_check(int argc, char **argv)
{
	const char *cf = NULL, *jf = NULL, *dir = NULL, *pf = NULL,
	           *prevd = NULL, *fmt = "text";
	bool help = false;
	opt opts[] = {
		{ "--cluster", NULL, OPT_ONE, &cf, NULL, 0 },
		{ "--job", NULL, OPT_ONE, &jf, NULL, 0 },
		{ "--plan", NULL, OPT_ONE, &dir, NULL, 0 },
		{ "--previous", NULL, OPT_ONE, &prevd, NULL, 0 },
		{ "--profile", NULL, OPT_ONE, &pf, NULL, 0 },
		{ "--format", NULL, OPT_ONE, &fmt, NULL, 0 },
		OPT_END,
	};
	tm_cluster *c = NULL;
	tm_job *j = NULL;
	tm_profile *p = NULL;
	tm_error err = { 0, "" };
	tm_check_report R;
	char summary[1024];
	bool json;
	int rc;

	if ((rc = parse(argc, argv, opts, "check", NULL, NULL, &help)))
		return rc;
	if (help) {
		fputs(usage_check, stdout);
		return 0;
	}
	if (!cf || !jf || !dir)
		return usage_error("check ", "check needs %s", !cf ? "--cluster" :
		                   !jf ? "--job" : "--plan");
	if (strcmp(fmt, "text") && strcmp(fmt, "json"))
		return usage_error("check ", "--format '%s': expected text or json",
		                   fmt);
	json = !strcmp(fmt, "json");
	tm_check_report_init(&R);
	if ((rc = tm_cluster_load(cf, &c, &err)) ||
	    (rc = tm_job_load(jf, &j, &err)) ||
	    (pf && (rc = tm_profile_load(pf, &p, &err))))
		tm_check_report_fail(&R, TM_CK_INPUT_FILES, rc);
	else
		rc = tm_plan_check_ex(c, j, p, dir, prevd, summary, sizeof summary,
		                      &R, &err);
	if (json) {
		char *s = tm_check_json(&R, dir, rc ? (err.code ? err.code :
		                        TM_EINTERNAL) : 0, rc ? err.msg : NULL);
		fputs(s, stdout);
		free(s);
	}
	if (rc)
		rc = report(&err);
	else if (!json)
		say(stdout, "", "%s", summary);
	tm_profile_free(p);
	tm_job_free(j);
	tm_cluster_free(c);
	return rc;
}

/* A closed standard stream would hand its number to the first file
 * opened, and output meant for it would land there: each closed one is
 * opened on /dev/null the wrong way round, so that using it fails. */
static void guard_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", fd ? O_RDONLY : O_WRONLY);
			if (n >= 0 && n != fd)
				close(n);
		}
}

/* Output to stdout is buffered: a full disk, /dev/full or a closed pipe
 * shows only when it is flushed. A command that succeeded but whose
 * output was lost fails with one line. */
static int finish(int rc)
{
	int e = 0;
	if (fflush(stdout) != 0)
		e = errno ? errno : EIO;
	else if (ferror(stdout))
		e = EIO;
	if (fclose(stdout) != 0 && !e)
		e = errno ? errno : EIO;
	if (e && (rc == 0 || rc == TM_ENOCHANGE)) {
		fprintf(stderr, "thermap: error: standard output: cannot write: "
		        "%s\n", strerror(e));
		return TM_EINTERNAL;
	}
	return rc;
}

static int run(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("", "%s", "no command given");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("thermap %s\n", TM_VERSION);
		return 0;
	}
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--version")) {
			printf("thermap %s\n", TM_VERSION);
			return 0;
		}
	if (!strcmp(argv[1], "topo"))
		return cmd_topo(argc, argv);
	if (!strcmp(argv[1], "profile"))
		return cmd_profile(argc, argv);
	if (!strcmp(argv[1], "plan"))
		return cmd_plan(argc, argv);
	if (!strcmp(argv[1], "check"))
		return cmd_check(argc, argv);
	if (!strcmp(argv[1], "compare"))
		return cmd_compare(argc, argv);
	if (!strcmp(argv[1], "replan"))
		return cmd_replan(argc, argv);
	if (!strcmp(argv[1], "diff"))
		return cmd_diff(argc, argv);
	if (!strcmp(argv[1], "calibrate"))
		return cmd_calibrate(argc, argv);
	return usage_error("", "unknown command '%s'", argv[1]);
}

int main(int argc, char **argv)
{
	guard_std_fds();
	/* a file over the size limit (ulimit -f) is a write error to report,
	 * not a signal that kills the program */
	signal(SIGXFSZ, SIG_IGN);
	tm_set_warn(on_warn, NULL);
	return finish(run(argc, argv));
}
