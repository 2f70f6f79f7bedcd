/*
 * cmd_replan.c — `thermap replan`: at a checkpoint, the plan that runs now
 * against the policy's best placement under a fresh profile; a new plan
 * only if worth it. Its rows, its --help, and the calls into the library;
 * the decision is the library's (tm_replan, docs/replan.md).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct replan_args {
	const char *previous, *cluster, *profile, *job, *policy, *min_gain,
	           *out;
	bool unprof, quiet;
} replan_args;

#define AT(field) offsetof(replan_args, field)

static const cli_opt rows[] = {
	{ "--previous", NULL, "DIR", CLI_REQUIRED, AT(previous),
	  "the plan directory that runs now", "--previous DIR" },
	{ "--cluster", NULL, "FILE", CLI_REQUIRED, AT(cluster),
	  "thermap.cluster/1 as it is now", NULL },
	{ "--profile", NULL, "FILE", CLI_REQUIRED, AT(profile),
	  "thermap.profile/1 of recent telemetry (the last\n"
	  "window; see thermap profile --baseline)", NULL },
	{ "--job", NULL, "FILE", CLI_REQUIRED, AT(job),
	  "thermap.job/1, the same parallel layout", NULL },
	{ "--policy", NULL, "FILE", 0, AT(policy),
	  "thermap.policy/1 (default: the built-in thermal\n"
	  "policy); objective.move_cost_ms prices a moved\n"
	  "rank, constraints.max_moves caps them", NULL },
	{ "--min-gain", NULL, "X", 0, AT(min_gain),
	  "what a move must gain, more than: N% iteration time\n"
	  "(net of move costs), NC peak temperature, or both\n"
	  "as N%,NC (default 1%,2C; 0: any gain)", NULL },
	{ "--out", "-o", "DIR", CLI_REQUIRED, AT(out),
	  "where a new plan goes (replaced atomically; may be\n"
	  "the --previous directory)", "-o DIR" },
	{ "--allow-unprofiled", NULL, NULL, 0, AT(unprof),
	  "treat GPUs without a profile entry as the worst\n"
	  "profiled GPU instead of failing", NULL },
	{ "--quiet", NULL, NULL, 0, AT(quiet),
	  "no explanation on stderr (the JSON line stays)", NULL },
	CLI_END
};

static int run(int argc, char **argv);

const cli_cmd cli_replan = {
	"replan", "previous plan + fresh profile -> a new plan only if worth it",
	"thermap replan --previous DIR --cluster FILE --profile FILE --job FILE\n"
	"[--policy FILE] [--min-gain X] -o DIR\n"
	"[--allow-unprofiled] [--quiet]",
	"At a checkpoint: weighs the plan that runs now against the policy's best\n"
	"placement under a fresh profile (docs/replan.md). Writes a new plan only\n"
	"when it gains more than --min-gain over keeping the previous one, or when\n"
	"the previous one cannot stay (a GPU or host gone): then the fewest moves.\n"
	"Prints the decision as one JSON line on stdout; exit 0 when a plan was\n"
	"written, 3 when the previous plan stays.\n",
	rows, NULL, run,
};

static int run(int argc, char **argv)
{
	replan_args a = { 0 };
	cli_inputs in = { 0 };
	tm_min_gain mg;
	tm_replan_result res;
	tm_error err = { 0, "" };
	int rc;

	memset(&res, 0, sizeof res);
	if (!cli_parse(&cli_replan, argc, argv, &a, NULL, &rc))
		return rc;
	if (!a.min_gain)
		a.min_gain = TM_MIN_GAIN_DEFAULT;
	if (tm_min_gain_parse(a.min_gain, &mg))
		return cli_usage(&cli_replan, "--min-gain '%s': expected N%%, NC "
		                 "or N%%,NC (e.g. 1%%,2C)", a.min_gain);
	if ((rc = tm_plan_check_target(a.out, &err))) {
		rc = cli_report(&err);
		goto out;
	}
	if ((rc = cli_inputs_load(&in, a.cluster, a.profile, a.job, &err)) ||
	    (rc = cli_policy_load(&in, a.policy, &err)))
		goto fail;
	rc = tm_replan(in.c, in.p, in.j, in.pol, a.previous, a.unprof, &mg,
	               a.out, &res, &err);
	if (rc && rc != TM_ENOCHANGE)
		goto fail;
	printf("%s\n", res.json);
	if (!a.quiet)
		cli_put_lines(stderr, res.text);
	if (!a.quiet && rc == 0)
		cli_say(stderr, "", "wrote %s (plan.json, env/, entry.sh, "
		        "launch.txt, slurm.hostfile, mpi.rankfile, "
		        "deepspeed.hostfile, megatron.args)", a.out);
	goto out;
fail:
	if (rc == TM_EUSAGE)
		rc = cli_usage(&cli_replan, "%s", err.msg);
	else
		rc = cli_report(&err);
out:
	tm_replan_result_clear(&res);
	cli_inputs_clear(&in);
	return rc;
}
