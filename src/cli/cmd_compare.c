/*
 * cmd_compare.c — `thermap compare`: several policies on one job, each
 * placement simulated with thermal feedback, as one table; or a recording
 * replayed window by window (--replay). Its rows, its --help, and the
 * calls into the library (tm_compare, tm_compare_replay), which plan,
 * simulate and write the table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct compare_args {
	const char *cluster, *profile, *job, *format, *svg, *svg_scale,
	           *window, *host;
	bool unprof;
	const char **polf, **logs;  /* the operands; each --replay (argc) */
	int npol, nlog;
} compare_args;

#define AT(field) offsetof(compare_args, field)

static const cli_opt rows[] = {
	{ "--cluster", NULL, "FILE", CLI_REQUIRED, AT(cluster),
	  "thermap.cluster/1: hosts, GPUs, links", NULL },
	{ "--profile", NULL, "FILE", 0, AT(profile),
	  "thermap.profile/1: per-GPU thermal profile", NULL },
	{ "--job", NULL, "FILE", CLI_REQUIRED, AT(job),
	  "thermap.job/1: parallel sizes, schedule, stage costs", NULL },
	{ NULL, NULL, "POLICY_FILE...", CLI_REQUIRED, 0,
	  "thermap.policy/1 files, one row each, in order",
	  "at least one POLICY_FILE" },
	{ "--format", NULL, "F", 0, AT(format),
	  "text (default), markdown, csv or json", NULL },
	{ "--svg", NULL, "FILE", 0, AT(svg),
	  "also draw each policy's GPUs coloured by simulated\n"
	  "temperature, with stage labels (SVG, atomically)", NULL },
	{ "--svg-scale", NULL, "LO:HI", 0, AT(svg_scale),
	  "the picture's colour scale in degrees C (default\n"
	  "30:90, the same for every picture); auto: from the\n"
	  "coolest to the hottest GPU pictured", NULL },
	{ "--replay", NULL, "LOG", CLI_EACH, 0,
	  "a telemetry recording instead of --profile: plan on\n"
	  "each window, score on the next", NULL },
	{ "--window", NULL, "SECONDS", 0, AT(window),
	  "replay window length (default 600)", NULL },
	{ "--host", NULL, "NAME", 0, AT(host),
	  "host of the GPUs in the --replay logs (default: as\n"
	  "in thermap profile)", NULL },
	{ "--allow-unprofiled", NULL, NULL, 0, AT(unprof),
	  "GPUs without a profile entry count as the worst one", NULL },
	CLI_END
};

static int run(int argc, char **argv);

const cli_cmd cli_compare = {
	"compare", "several policies on one job, simulated, as a table",
	"thermap compare --cluster FILE --profile FILE --job FILE POLICY_FILE...\n"
	"[--format text|markdown|csv|json] [--svg FILE]\n"
	"[--svg-scale LO:HI|auto] [--allow-unprofiled]\n"
	"thermap compare --cluster FILE --job FILE --replay LOG [--replay LOG]...\n"
	"[--window SECONDS] [--host NAME] POLICY_FILE...\n"
	"[--format text|markdown|csv|json]",
	"Plans the job with each policy, plays every placement in the event-level\n"
	"simulator with thermal feedback, and prints one row per policy: iteration\n"
	"time and gain over torchrun's placement, tokens/s (with\n"
	"tokens_per_iteration in the job), peak temperature, throttled time, energy\n"
	"per iteration, solver status, ranks moved, layers (docs/compare.md).\n",
	rows,
	"exit: 0 with the table (a policy that cannot place says why in its row),\n"
	"2 usage, 4 invalid input, 1 internal error.\n",
	run,
};

/* the policy files, and each --replay log */
static int file_arg(void *args, const cli_opt *o, const char *v)
{
	compare_args *a = args;
	if (!o)
		a->polf[a->npol++] = v;
	else
		a->logs[a->nlog++] = v;
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

/* 0, or TM_EUSAGE once it has said what does not go together */
static int validate(const compare_args *a, int *f, double *window,
                    double svg_scale[2])
{
	if (a->host && !tm_valid_host(a->host))
		return cli_usage(&cli_compare, "--host '%s': expected a host name",
		                 a->host);
	if ((*f = tm_compare_format(a->format ? a->format : "text")) < 0)
		return cli_usage(&cli_compare, "--format '%s': expected text, "
		                 "markdown, csv or json", a->format);
	if (a->window) {
		char *end;
		*window = strtod(a->window, &end);
		if (*end || !(*window >= 1 && *window <= 1e7))
			return cli_usage(&cli_compare, "--window '%s': expected "
			                 "seconds from 1 to 10000000", a->window);
	}
	if (!a->profile && !a->nlog)
		return cli_usage(&cli_compare, "%s", "compare needs --profile (or "
		                 "--replay LOG)");
	if (a->profile && a->nlog)
		return cli_usage(&cli_compare, "%s", "--profile and --replay: give "
		                 "one; replay makes a profile per window");
	if (a->nlog && a->svg)
		return cli_usage(&cli_compare, "%s", "--svg draws one profile's "
		                 "placements; it does not go with --replay");
	if (a->svg_scale && !a->svg)
		return cli_usage(&cli_compare, "%s", "--svg-scale sets the colours "
		                 "of --svg FILE; give both");
	if (a->svg_scale && parse_svg_scale(a->svg_scale, svg_scale))
		return cli_usage(&cli_compare, "--svg-scale '%s': expected LO:HI "
		                 "in degrees C, LO below HI, both from -50 to 200, "
		                 "or auto", a->svg_scale);
	return 0;
}

static int run(int argc, char **argv)
{
	compare_args a = { 0 };
	cli_inputs in = { 0 };
	double svg_scale[2] = { 0, 0 }, window = 600;
	tm_policy **pols;
	tm_tele_input *logs;
	tm_error err = { 0, "" };
	char *out = NULL;
	int f = CLI_COMPARE_TEXT, rc;

	a.polf = xcalloc((size_t)argc, sizeof *a.polf);
	a.logs = xcalloc((size_t)argc, sizeof *a.logs);
	pols = xcalloc((size_t)argc, sizeof *pols);
	logs = xcalloc((size_t)argc, sizeof *logs);
	if (!cli_parse(&cli_compare, argc, argv, &a, file_arg, &rc) ||
	    (rc = validate(&a, &f, &window, svg_scale)))
		goto out;
	if ((a.svg && (rc = tm_check_file_target(a.svg, &err))) ||
	    (rc = cli_inputs_load(&in, a.cluster, a.profile, a.job, &err)))
		goto fail;
	for (int i = 0; i < a.npol; i++)
		if ((rc = tm_policy_load(a.polf[i], &pols[i], &err)))
			goto fail;
	for (int i = 0; i < a.nlog; i++)
		logs[i] = (tm_tele_input){ a.logs[i], a.host, NULL };
	rc = a.nlog ? tm_compare_replay(in.c, logs, a.nlog, window, in.j, pols,
	                                a.npol, a.unprof, f, &out, &err)
	            : tm_compare(in.c, in.p, in.j, pols, a.npol, a.unprof, f,
	                         a.svg, a.svg_scale ? svg_scale : NULL, &out,
	                         &err);
	if (rc)
		goto fail;
	if (f == CLI_COMPARE_JSON)
		fputs(out, stdout);
	else
		cli_put_lines(stdout, out);
	if (a.svg && f == CLI_COMPARE_TEXT)
		cli_say(stdout, "", "wrote %s", a.svg);
	goto out;
fail:
	rc = cli_report(&err);
out:
	for (int i = 0; i < a.npol; i++)
		tm_policy_free(pols[i]);
	free(pols);
	free(a.polf);
	free(a.logs);
	free(logs);
	free(out);
	cli_inputs_clear(&in);
	return rc;
}
