/*
 * cmd_profile.c — `thermap profile`: telemetry logs to a per-GPU thermal profile.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

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


int cmd_profile(int argc, char **argv)
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

