/*
 * cmd_check.c — `thermap check`: confirm that a plan directory does what
 * its plan.json says. Its rows, its --help, and the calls into the library
 * (tm_plan_check_ex, tm_check_json), which do every verification.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct check_args {
	const char *cluster, *job, *plan, *profile, *previous, *format;
} check_args;

#define AT(field) offsetof(check_args, field)

static const cli_opt rows[] = {
	{ "--cluster", NULL, "FILE", CLI_REQUIRED, AT(cluster),
	  "the cluster the plan was made for", NULL },
	{ "--job", NULL, "FILE", CLI_REQUIRED, AT(job),
	  "the job the plan was made for", NULL },
	{ "--plan", NULL, "DIR", CLI_REQUIRED, AT(plan),
	  "the plan directory to check", NULL },
	{ "--profile", NULL, "FILE", 0, AT(profile),
	  "also re-predict iteration time and temperatures", NULL },
	{ "--previous", NULL, "DIR", 0, AT(previous),
	  "for a plan written by replan: also confirm that it\n"
	  "replaces this plan and that its moves are from it", NULL },
	{ "--format", NULL, "text|json", 0, AT(format),
	  "text (default): one line when the plan is valid;\n"
	  "json: one object with every verification and its\n"
	  "result, and the first failure (docs/formats.md)", NULL },
	CLI_END
};

static int run(int argc, char **argv);

const cli_cmd cli_check = {
	"check", "confirm that a plan directory does what plan.json says",
	"thermap check --cluster FILE --job FILE --plan DIR [--profile FILE]\n"
	"[--previous DIR] [--format text|json]",
	NULL, rows, NULL, run,
};

static int run(int argc, char **argv)
{
	check_args a = { 0 };
	cli_inputs in = { 0 };
	tm_error err = { 0, "" };
	tm_check_report R;
	char summary[1024];
	bool json;
	int rc;

	if (!cli_parse(&cli_check, argc, argv, &a, NULL, &rc))
		return rc;
	if (a.format && strcmp(a.format, "text") && strcmp(a.format, "json"))
		return cli_usage(&cli_check, "--format '%s': expected text or json",
		                 a.format);
	json = a.format && !strcmp(a.format, "json");
	tm_check_report_init(&R);
	/* the profile, which is optional, after the cluster and the job */
	if ((rc = cli_inputs_load(&in, a.cluster, NULL, a.job, &err)) ||
	    (rc = cli_inputs_load(&in, NULL, a.profile, NULL, &err)))
		tm_check_report_fail(&R, TM_CK_INPUT_FILES, rc);
	else
		rc = tm_plan_check_ex(in.c, in.j, in.p, a.plan, a.previous, summary,
		                      sizeof summary, &R, &err);
	if (json) {
		char *s = tm_check_json(&R, a.plan, rc ? (err.code ? err.code :
		                        TM_EINTERNAL) : 0, rc ? err.msg : NULL);
		fputs(s, stdout);
		free(s);
	}
	if (rc)
		rc = cli_report(&err);
	else if (!json)
		cli_say(stdout, "", "%s", summary);
	cli_inputs_clear(&in);
	return rc;
}
