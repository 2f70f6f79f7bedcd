/*
 * cmd_calibrate.c — `thermap calibrate`: a plan that ran and the telemetry
 * recorded while it ran to the profile fitted to it. Its rows, its --help,
 * and the call into the library (tm_calibrate, docs/calibrate.md), which
 * does the fitting.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct calibrate_args {
	const char *cluster, *profile, *job, *plan, *out, *from, *to;
	bool quiet;
	cli_tele tele;  /* the files, each with its --host and --fields */
	const char **procs;  /* --processes, in order */
	int nprocs;
} calibrate_args;

#define AT(field) offsetof(calibrate_args, field)

static const cli_opt rows[] = {
	{ "--cluster", NULL, "FILE", CLI_REQUIRED, AT(cluster),
	  "the cluster the plan ran on", NULL },
	{ "--profile", NULL, "FILE", CLI_REQUIRED, AT(profile),
	  "the profile to calibrate (the one the plan used)", NULL },
	{ "--job", NULL, "FILE", CLI_REQUIRED, AT(job),
	  "the job; its \"measured\" section (to_job.py) gives\n"
	  "per-rank times, else the in-job clocks are used", NULL },
	{ "--plan", NULL, "DIR", CLI_REQUIRED, AT(plan),
	  "the plan directory that was launched", "--plan DIR" },
	{ NULL, NULL, "TELEMETRY...", CLI_REQUIRED, 0,
	  "logs recorded while it ran, in any format thermap\n"
	  "profile reads; '-' reads stdin", "at least one TELEMETRY file" },
	{ "--host", NULL, "NAME", CLI_EACH, 0,
	  "host of the GPUs in the files that follow (else the\n"
	  "Hostname label, else the file name: HOST.csv)", NULL },
	{ "--fields", NULL, "LIST", CLI_EACH, 0,
	  "columns of the CSV files that follow when they have\n"
	  "no header: the --query-gpu list", NULL },
	{ "--from", NULL, "T", 0, AT(from),
	  "only samples in this window: a time as in the logs\n"
	  "or +SECONDS after each file's first sample", NULL },
	{ "--to", NULL, "T", 0, AT(to), NULL, NULL },
	{ "--processes", NULL, "FILE", CLI_EACH, 0,
	  "nvidia-smi --query-compute-apps=gpu_uuid,pid,\n"
	  "process_name,used_gpu_memory --format=csv taken\n"
	  "while the job ran (repeatable): other processes\n"
	  "on its GPUs, and the power they draw", NULL },
	{ "--out", "-o", "FILE", CLI_REQUIRED, AT(out),
	  "write the calibrated profile here (atomically; may\n"
	  "be the --profile file)", "-o FILE" },
	{ "--quiet", NULL, NULL, 0, AT(quiet),
	  "print nothing on stdout", NULL },
	CLI_END
};

static int run(int argc, char **argv);

const cli_cmd cli_calibrate = {
	"calibrate", "a plan that ran + its telemetry -> the profile fitted to it",
	"thermap calibrate --cluster FILE --profile FILE --job FILE --plan DIR\n"
	"[--host NAME] [--fields LIST] TELEMETRY... -o FILE\n"
	"[--from T] [--to T] [--processes FILE]... [--quiet]",
	"Fits the model to a plan that ran (docs/calibrate.md): from the telemetry\n"
	"recorded while it ran, each of its GPUs' power while its rank waits, its\n"
	"derate at the job's operating point, the spread of its thermal fit and\n"
	"the power of work on it that is not the job's.\n"
	"Writes the profile with those fields replaced, each listed in\n"
	"\"calibrated\" with where it came from, and prints, per GPU, measured\n"
	"temperature, power and clock against the model before and after.\n",
	rows,
	"exit: 0 written, 2 usage, 4 invalid input (one line naming the file),\n"
	"1 the output could not be written.\n",
	run,
};

static int tele_arg(void *args, const cli_opt *o, const char *v)
{
	calibrate_args *a = args;
	if (o && !strcmp(o->name, "--processes")) {
		a->procs[a->nprocs++] = v;
		return 0;
	}
	return cli_tele_add(&cli_calibrate, &a->tele, o, v);
}

static int run(int argc, char **argv)
{
	calibrate_args a = { 0 };
	tm_cal_opts o;
	tm_cal_result res;
	tm_error err = { 0, "" };
	int rc;

	memset(&o, 0, sizeof o);
	memset(&res, 0, sizeof res);
	a.tele.in = xcalloc((size_t)argc, sizeof *a.tele.in);
	a.procs = xcalloc((size_t)argc, sizeof *a.procs);
	if (!cli_parse(&cli_calibrate, argc, argv, &a, tele_arg, &rc) ||
	    (rc = cli_window(&cli_calibrate, a.from, a.to, &o.window)))
		goto out;
	o.cluster = a.cluster;
	o.profile = a.profile;
	o.job = a.job;
	o.plan = a.plan;
	o.tele = a.tele.in;
	o.ntele = a.tele.n;
	o.procs = a.procs;
	o.nprocs = a.nprocs;
	if ((rc = tm_check_file_target(a.out, &err)) ||
	    (rc = tm_calibrate(&o, &res, &err)) ||
	    (rc = tm_write_file_atomic(a.out, res.profile, strlen(res.profile),
	                               &err))) {
		rc = cli_report(&err);
	} else if (!a.quiet) {
		cli_put_lines(stdout, res.table);
		cli_say(stdout, "", "wrote %s (%d field(s) calibrated on %d GPU(s))",
		        a.out, res.ncalibrated, res.nentries);
	}
out:
	tm_cal_result_clear(&res);
	free(a.tele.in);
	free(a.procs);
	return rc;
}
