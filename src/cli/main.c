/*
 * main.c — the thermap program: the table of commands and the dispatch to
 * them, `thermap --help`, `--version`, and what every run shares (the
 * standard streams, the exit code). Each command is its cmd_<name>.c;
 * reading options, --help and messages are opt.c's. Nothing here decides
 * a placement.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* The commands, in the order `thermap --help` lists them. A new command is
 * its cmd_<name>.c, its entry's name below and its line in the table. */
extern const cli_cmd cli_topo, cli_profile, cli_plan, cli_replan,
       cli_compare, cli_check, cli_calibrate, cli_diff;

static const cli_cmd *const commands[] = {
	&cli_topo,
	&cli_profile,
	&cli_plan,
	&cli_replan,
	&cli_compare,
	&cli_check,
	&cli_calibrate,
	&cli_diff,
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const char help_head[] =
"usage: thermap COMMAND [OPTIONS]\n"
"\n"
"Place pipeline stages of a training job on the GPUs with the most thermal\n"
"headroom, and write the torchrun environment that realises the placement.\n"
"\n"
"commands:\n";

static const char help_tail[] =
"\n"
"Run 'thermap COMMAND --help' for a command's options: --name VALUE or\n"
"--name=VALUE, each at most once unless it applies to the files after it;\n"
"'--' ends the options.\n"
"exit codes: 0 ok, 1 internal error, 2 usage, 3 no change worth making,\n"
"4 invalid input, 5 infeasible, 6 solver limit without a placement.\n";

static void help(void)
{
	fputs(help_head, stdout);
	for (size_t i = 0; i < NCOMMANDS; i++)
		printf("  %-7s  %s\n", commands[i]->name, commands[i]->summary);
	fputs(help_tail, stdout);
}

/* A closed standard stream would hand its number to the first file
 * opened, and output meant for it would land there: each closed one is
 * opened on /dev/null the wrong way round, so that using it fails. */
static void guard_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", fd ? O_RDONLY : O_WRONLY);
			if (n >= 0 && n != fd)
				close(n);
		}
}

/* Output to stdout is buffered: a full disk, /dev/full or a closed pipe
 * shows only when it is flushed. A command that succeeded but whose
 * output was lost fails with one line. */
static int finish(int rc)
{
	int e = 0;
	if (fflush(stdout) != 0)
		e = errno ? errno : EIO;
	else if (ferror(stdout))
		e = EIO;
	if (fclose(stdout) != 0 && !e)
		e = errno ? errno : EIO;
	if (e && (rc == 0 || rc == TM_ENOCHANGE)) {
		fprintf(stderr, "thermap: error: standard output: cannot write: "
		        "%s\n", strerror(e));
		return TM_EINTERNAL;
	}
	return rc;
}

static int run(int argc, char **argv)
{
	const cli_cmd *c = NULL;
	if (argc < 2)
		return cli_usage(NULL, "%s", "no command given");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		help();
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i]->name))
			c = commands[i];
	if (!strcmp(argv[1], "--version") || cli_version_asked(c, argc, argv)) {
		printf("thermap %s\n", TM_VERSION);
		return 0;
	}
	if (!c)
		return cli_usage(NULL, "unknown command '%s'", argv[1]);
	return c->run(argc, argv);
}

int main(int argc, char **argv)
{
	guard_std_fds();
	/* a file over the size limit (ulimit -f) is a write error to report,
	 * not a signal that kills the program */
	signal(SIGXFSZ, SIG_IGN);
	tm_set_warn(cli_on_warn, NULL);
	return finish(run(argc, argv));
}
