/*
 * cmd_replan.c — `thermap replan`: at a checkpoint, a new plan only if worth it.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

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


int cmd_replan(int argc, char **argv)
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

