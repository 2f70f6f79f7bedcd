/*
 * cmd_diff.c — `thermap diff OLD_DIR NEW_DIR`: the ranks that move between
 * two plans, from where to where, and why. Its rows, its --help, and the
 * call into the library (tm_plan_diff), which reads the plans and writes
 * the report.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct diff_args {
	const char *format;
	const char *dirs[2];  /* the operands */
	int nd;
} diff_args;

static const cli_opt rows[] = {
	{ "--format", NULL, "text|json", 0, offsetof(diff_args, format),
	  "output format (default text)", NULL },
	CLI_END
};

static int run(int argc, char **argv);

const cli_cmd cli_diff = {
	"diff", "the ranks that move between two plans, and why",
	"thermap diff OLD_DIR NEW_DIR [--format text|json]",
	"Lists the ranks that run on another GPU in NEW_DIR than in OLD_DIR, from\n"
	"where to where, and why (the reasons replan recorded, when NEW_DIR replans\n"
	"OLD_DIR; else the two plans' predicted temperatures).\n",
	rows, NULL, run,
};

/* the two plan directories */
static int dir_arg(void *args, const cli_opt *o, const char *v)
{
	diff_args *a = args;
	(void)o;
	if (a->nd == 2)
		return cli_usage(&cli_diff, "unexpected argument '%s'", v);
	a->dirs[a->nd++] = v;
	return 0;
}

static int run(int argc, char **argv)
{
	diff_args a = { 0 };
	char *out = NULL;
	tm_error err = { 0, "" };
	int f, rc;

	if (!cli_parse(&cli_diff, argc, argv, &a, dir_arg, &rc))
		return rc;
	if (a.nd < 2)
		return cli_usage(&cli_diff, "%s", "diff needs OLD_DIR and NEW_DIR");
	if (!a.format || !strcmp(a.format, "text"))
		f = CLI_DIFF_TEXT;
	else if (!strcmp(a.format, "json"))
		f = CLI_DIFF_JSON;
	else
		return cli_usage(&cli_diff, "--format '%s': expected text or json",
		                 a.format);
	if ((rc = tm_plan_diff(a.dirs[0], a.dirs[1], f, &out, &err)))
		return cli_report(&err);
	if (f == CLI_DIFF_JSON)
		fputs(out, stdout);
	else
		cli_put_lines(stdout, out);
	free(out);
	return 0;
}
