/*
 * cmd_compare.c — `thermap compare`: several policies on one job, simulated, as a table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

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

int cmd_compare(int argc, char **argv)
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

