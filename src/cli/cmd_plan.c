/*
 * cmd_plan.c — `thermap plan`: cluster, profile, job and policy to a plan
 * directory. Its rows, its --help, and the calls into the library; the
 * placement itself is the library's (tm_run_policy, tm_plan_write).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct plan_args {
	const char *cluster, *profile, *job, *policy, *out, *lp;
	bool unprof, quiet;
} plan_args;

#define AT(field) offsetof(plan_args, field)

static const cli_opt rows[] = {
	{ "--cluster", NULL, "FILE", CLI_REQUIRED, AT(cluster),
	  "thermap.cluster/1: hosts, GPUs, links", NULL },
	{ "--profile", NULL, "FILE", CLI_REQUIRED, AT(profile),
	  "thermap.profile/1: per-GPU thermal profile", NULL },
	{ "--job", NULL, "FILE", CLI_REQUIRED, AT(job),
	  "thermap.job/1: parallel sizes, schedule, stage costs", NULL },
	{ "--policy", NULL, "FILE", 0, AT(policy),
	  "thermap.policy/1 (default: the built-in thermal\n"
	  "policy, policies/thermal.json)", NULL },
	{ "--out", "-o", "DIR", CLI_REQUIRED, AT(out),
	  "plan directory to write (replaced atomically)", "-o DIR" },
	{ "--allow-unprofiled", NULL, NULL, 0, AT(unprof),
	  "treat GPUs without a profile entry as the worst\n"
	  "profiled GPU instead of failing", NULL },
	{ "--write-lp", NULL, "FILE", 0, AT(lp),
	  "also write the integer program of phase 0 (the\n"
	  "best iteration time) in CPLEX LP format, whatever\n"
	  "the method, before solving (docs/model.md, 10)", NULL },
	{ "--quiet", NULL, NULL, 0, AT(quiet),
	  "print nothing on stdout (errors and warnings\n"
	  "still go to stderr)", NULL },
	CLI_END
};

static int run(int argc, char **argv);

const cli_cmd cli_plan = {
	"plan", "cluster + profile + job (+ policy) -> plan directory",
	"thermap plan --cluster FILE --profile FILE --job FILE [--policy FILE]\n"
	"-o DIR [--allow-unprofiled] [--write-lp FILE] [--quiet]",
	NULL, rows, NULL, run,
};

/* The phase-0 program of the job as given, before any solving. */
static int write_lp(const cli_inputs *in, bool unprof, const char *file,
                    tm_error *err)
{
	tm_problem *pb = NULL;
	int rc = tm_problem_new(in->c, in->p, in->j, in->pol, unprof, &pb, err);
	if (!rc)
		rc = tm_write_lp(pb, file, err);
	tm_problem_free(pb);
	return rc;
}

static int run(int argc, char **argv)
{
	plan_args a = { 0 };
	cli_inputs in = { 0 };
	tm_run res;
	tm_error err = { 0, "" };
	int rc;

	memset(&res, 0, sizeof res);
	if (!cli_parse(&cli_plan, argc, argv, &a, NULL, &rc))
		return rc;
	/* what is in the way of the outputs is said before any work */
	if ((rc = tm_plan_check_target(a.out, &err)) ||
	    (a.lp && (rc = tm_check_file_target(a.lp, &err))) ||
	    (rc = cli_inputs_load(&in, a.cluster, a.profile, a.job, &err)) ||
	    (rc = cli_policy_load(&in, a.policy, &err)) ||
	    (a.lp && (rc = write_lp(&in, a.unprof, a.lp, &err))) ||
	    (rc = tm_run_policy(in.c, in.p, in.j, in.pol, a.unprof, &res,
	                        &err)) ||
	    (rc = tm_plan_write(res.pb, &res.sol, a.out, &err))) {
		rc = cli_report(&err);
		goto out;
	}
	if (!a.quiet) {
		char *s = tm_plan_summary(res.pb, &res.sol);
		cli_put_lines(stdout, s);
		cli_say(stdout, "", "wrote %s (plan.json, env/, entry.sh, "
		        "launch.txt, slurm.hostfile, mpi.rankfile, "
		        "deepspeed.hostfile, megatron.args)", a.out);
		if (a.lp)
			cli_say(stdout, "", "wrote %s (phase 0 integer program, CPLEX "
			        "LP)", a.lp);
		free(s);
	}
out:
	tm_run_clear(&res);
	cli_inputs_clear(&in);
	return rc;
}
