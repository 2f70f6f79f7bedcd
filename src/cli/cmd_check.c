/*
 * cmd_check.c — `thermap check`: confirm that a plan directory does what plan.json says.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage_check[] =
"usage: thermap check --cluster FILE --job FILE --plan DIR [--profile FILE]\n"
"                     [--previous DIR] [--format text|json]\n"
"\n"
"  --cluster FILE       the cluster the plan was made for\n"
"  --job FILE           the job the plan was made for\n"
"  --plan DIR           the plan directory to check\n"
"  --profile FILE       also re-predict iteration time and temperatures\n"
"  --previous DIR       for a plan written by replan: also confirm that it\n"
"                       replaces this plan and that its moves are from it\n"
"  --format text|json   text (default): one line when the plan is valid;\n"
"                       json: one object with every verification and its\n"
"                       result, and the first failure (docs/formats.md)\n"
"  --help               this text\n";


int cmd_check(int argc, char **argv)
{
	const char *cf = NULL, *jf = NULL, *dir = NULL, *pf = NULL,
	           *prevd = NULL, *fmt = "text";
	bool help = false;
	opt opts[] = {
		{ "--cluster", NULL, OPT_ONE, &cf, NULL, 0 },
		{ "--job", NULL, OPT_ONE, &jf, NULL, 0 },
		{ "--plan", NULL, OPT_ONE, &dir, NULL, 0 },
		{ "--previous", NULL, OPT_ONE, &prevd, NULL, 0 },
		{ "--profile", NULL, OPT_ONE, &pf, NULL, 0 },
		{ "--format", NULL, OPT_ONE, &fmt, NULL, 0 },
		OPT_END,
	};
	tm_cluster *c = NULL;
	tm_job *j = NULL;
	tm_profile *p = NULL;
	tm_error err = { 0, "" };
	tm_check_report R;
	char summary[1024];
	bool json;
	int rc;

	if ((rc = parse(argc, argv, opts, "check", NULL, NULL, &help)))
		return rc;
	if (help) {
		fputs(usage_check, stdout);
		return 0;
	}
	if (!cf || !jf || !dir)
		return usage_error("check ", "check needs %s", !cf ? "--cluster" :
		                   !jf ? "--job" : "--plan");
	if (strcmp(fmt, "text") && strcmp(fmt, "json"))
		return usage_error("check ", "--format '%s': expected text or json",
		                   fmt);
	json = !strcmp(fmt, "json");
	tm_check_report_init(&R);
	if ((rc = tm_cluster_load(cf, &c, &err)) ||
	    (rc = tm_job_load(jf, &j, &err)) ||
	    (pf && (rc = tm_profile_load(pf, &p, &err))))
		tm_check_report_fail(&R, TM_CK_INPUT_FILES, rc);
	else
		rc = tm_plan_check_ex(c, j, p, dir, prevd, summary, sizeof summary,
		                      &R, &err);
	if (json) {
		char *s = tm_check_json(&R, dir, rc ? (err.code ? err.code :
		                        TM_EINTERNAL) : 0, rc ? err.msg : NULL);
		fputs(s, stdout);
		free(s);
	}
	if (rc)
		rc = report(&err);
	else if (!json)
		say(stdout, "", "%s", summary);
	tm_profile_free(p);
	tm_job_free(j);
	tm_cluster_free(c);
	return rc;
}

