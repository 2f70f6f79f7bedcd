/*
 * cmd_diff.c — `thermap diff`: the ranks that move between two plans, and why.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage_diff[] =
"usage: thermap diff OLD_DIR NEW_DIR [--format text|json]\n"
"\n"
"Lists the ranks that run on another GPU in NEW_DIR than in OLD_DIR, from\n"
"where to where, and why (the reasons replan recorded, when NEW_DIR replans\n"
"OLD_DIR; else the two plans' predicted temperatures).\n"
"\n"
"  --format text|json   output format (default text)\n"
"  --help               this text\n";


typedef struct diff_args {
	const char *dirs[2];
	int nd;
} diff_args;

static int diff_arg(void *ud, const opt *o, const char *v)
{
	diff_args *A = ud;
	(void)o;
	if (A->nd == 2)
		return usage_error("diff ", "unexpected argument '%s'", v);
	A->dirs[A->nd++] = v;
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	const char *fmt = "text", **dirs;
	bool help = false;
	opt opts[] = {
		{ "--format", NULL, OPT_ONE, &fmt, NULL, 0 },
		OPT_END,
	};
	diff_args A = { { NULL, NULL }, 0 };
	char *out = NULL;
	tm_error err = { 0, "" };
	int nd, f, rc;

	if ((rc = parse(argc, argv, opts, "diff", diff_arg, &A, &help)))
		return rc;
	if (help) {
		fputs(usage_diff, stdout);
		return 0;
	}
	dirs = A.dirs;
	nd = A.nd;
	if (nd < 2)
		return usage_error("diff ", "%s", "diff needs OLD_DIR and NEW_DIR");
	if (strcmp(fmt, "text") && strcmp(fmt, "json"))
		return usage_error("diff ", "--format '%s': expected text or json",
		                   fmt);
	f = !strcmp(fmt, "json");
	if ((rc = tm_plan_diff(dirs[0], dirs[1], f, &out, &err)))
		return report(&err);
	if (f)  /* json */
		fputs(out, stdout);
	else
		put_lines(stdout, out);
	free(out);
	return 0;
}

