/*
 * cmd_calibrate.c — `thermap calibrate`: a plan that ran and its telemetry to the profile
 * fitted to it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

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


int cmd_calibrate(int argc, char **argv)
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

