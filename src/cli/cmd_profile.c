/*
 * cmd_profile.c — `thermap profile`: telemetry logs to a per-GPU thermal
 * profile (thermap.profile/1). Its rows, its --help, and the calls into
 * the library (tm_profile_from_telemetry, tm_profile_fill), which reads
 * the logs and fits the profile.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct profile_args {
	const char *out, *from, *to, *baseline;
	bool summary, quiet;
	cli_tele tele;  /* the files, each with its --host and --fields */
} profile_args;

#define AT(field) offsetof(profile_args, field)

static const cli_opt rows[] = {
	{ NULL, NULL, "FILE...", CLI_REQUIRED, 0,
	  "telemetry files; '-' reads stdin", "at least one telemetry FILE" },
	{ "--host", NULL, "NAME", CLI_EACH, 0,
	  "host of the GPUs in the files that follow (else the\n"
	  "Hostname label, else the file name: HOST.csv)", NULL },
	{ "--fields", NULL, "LIST", CLI_EACH, 0,
	  "columns of the CSV files that follow when they have\n"
	  "no header: the --query-gpu list", NULL },
	{ "--out", "-o", "FILE", 0, AT(out),
	  "write the profile here (atomically); default stdout", NULL },
	{ "--from", NULL, "T", 0, AT(from),
	  "only samples in this window: a time as in the logs\n"
	  "(2026/11/21 12:15:28, ISO 8601, seconds since\n"
	  "1970) or +SECONDS after each file's first sample", NULL },
	{ "--to", NULL, "T", 0, AT(to), NULL, NULL },
	{ "--baseline", NULL, "PROFILE", 0, AT(baseline),
	  "take what the window cannot measure from an earlier\n"
	  "profile of the same GPUs: the idle level, and for\n"
	  "a GPU never at full load in the window its load\n"
	  "level, headroom, clocks, derate and fit; listed per\n"
	  "GPU in \"from_baseline\" (docs/profile.md)", NULL },
	{ "--json-summary", NULL, NULL, 0, AT(summary),
	  "print what was read (rows, skipped rows and why,\n"
	  "GPUs, time span) as JSON on stdout; needs -o", NULL },
	{ "--quiet", NULL, NULL, 0, AT(quiet),
	  "print nothing on stdout", NULL },
	CLI_END
};

static int run(int argc, char **argv);

const cli_cmd cli_profile = {
	"profile", "telemetry logs -> per-GPU thermal profile",
	"thermap profile [--host NAME] [--fields LIST] FILE... [-o FILE]\n"
	"[--from T] [--to T] [--baseline PROFILE]\n"
	"[--json-summary] [--quiet]",
	"Reads telemetry and writes a thermap.profile/1 document: nvidia-smi\n"
	"--query-gpu CSV logs, nvidia-smi dmon logs, dcgm-exporter Prometheus\n"
	"scrapes and Prometheus query_range JSON (found from each file's content).\n",
	rows, NULL, run,
};

static int tele_arg(void *args, const cli_opt *o, const char *v)
{
	return cli_tele_add(&cli_profile, &((profile_args *)args)->tele, o, v);
}

/* The profile a.baseline names, as text, once it has loaded as a valid
 * profile: it lends fields only then. */
static int read_baseline(const char *file, char **text, tm_error *err)
{
	tm_profile *bp = NULL;
	size_t len;
	int rc = tm_profile_load(file, &bp, err);
	tm_profile_free(bp);
	return rc ? rc : tm_read_file(file, 64 << 20, text, &len, err);
}

static int run(int argc, char **argv)
{
	profile_args a = { 0 };
	tm_tele_opts w;
	tm_error err = { 0, "" };
	char *base = NULL, *prof = NULL, *summ = NULL;
	int nfilled = 0, rc;

	a.tele.in = xcalloc((size_t)argc, sizeof *a.tele.in);
	if (!cli_parse(&cli_profile, argc, argv, &a, tele_arg, &rc))
		goto out;
	if ((rc = cli_window(&cli_profile, a.from, a.to, &w)))
		goto out;
	if (a.summary && !a.out) {
		rc = cli_usage(&cli_profile, "%s", "--json-summary prints on "
		               "stdout, so the profile needs -o FILE");
		goto out;
	}
	if ((a.out && (rc = tm_check_file_target(a.out, &err))) ||
	    (a.baseline && (rc = read_baseline(a.baseline, &base, &err))) ||
	    (rc = tm_profile_from_telemetry(a.tele.in, a.tele.n, &w, &prof,
	                                    &summ, &err)))
		goto fail;
	if (base) {
		char *filled = tm_profile_fill(prof, base, false, &nfilled);
		free(prof);
		prof = filled;
	}
	if (a.out && (rc = tm_write_file_atomic(a.out, prof, strlen(prof),
	                                        &err)))
		goto fail;
	if (!a.out)
		fputs(prof, stdout);
	else if (a.summary)
		fputs(summ, stdout);
	else if (!a.quiet && a.baseline)
		cli_say(stdout, "", "wrote %s (%d field(s) from %s)", a.out,
		        nfilled, a.baseline);
	else if (!a.quiet)
		cli_say(stdout, "", "wrote %s", a.out);
	goto out;
fail:
	rc = cli_report(&err);
out:
	free(base);
	free(prof);
	free(summ);
	free(a.tele.in);
	return rc;
}
