/*
 * cmd_plan.c — `thermap plan`: cluster, profile, job and policy to a plan directory.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

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


int cmd_plan(int argc, char **argv)
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

