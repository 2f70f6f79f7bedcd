/*
 * main.c — the thermap program: command-line parsing, messages and exit
 * codes around libthermap. Nothing here decides a placement.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char usage_main[] =
"usage: thermap COMMAND [OPTIONS]\n"
"\n"
"Place pipeline stages of a training job on the GPUs with the most thermal\n"
"headroom, and write the torchrun environment that realises the placement.\n"
"\n"
"commands:\n"
"  topo     topology reports (topo -m, GPU list, hwloc, NCCL) -> cluster\n"
"  profile  telemetry logs -> per-GPU thermal profile\n"
"  plan     cluster + profile + job (+ policy) -> plan directory\n"
"  replan   previous plan + fresh profile -> a new plan only if worth it\n"
"  compare  several policies on one job, simulated, as a table\n"
"  check    confirm that a plan directory does what plan.json says\n"
"  calibrate  a plan that ran + its telemetry -> the profile fitted to it\n"
"  diff     the ranks that move between two plans, and why\n"
"\n"
"Run 'thermap COMMAND --help' for a command's options: --name VALUE or\n"
"--name=VALUE, each at most once unless it applies to the files after it;\n"
"'--' ends the options.\n"
"exit codes: 0 ok, 1 internal error, 2 usage, 3 no change worth making,\n"
"4 invalid input, 5 infeasible, 6 solver limit without a placement.\n";

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
	if (argc < 2)
		return usage_error("", "%s", "no command given");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("thermap %s\n", TM_VERSION);
		return 0;
	}
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--version")) {
			printf("thermap %s\n", TM_VERSION);
			return 0;
		}
	if (!strcmp(argv[1], "topo"))
		return cmd_topo(argc, argv);
	if (!strcmp(argv[1], "profile"))
		return cmd_profile(argc, argv);
	if (!strcmp(argv[1], "plan"))
		return cmd_plan(argc, argv);
	if (!strcmp(argv[1], "check"))
		return cmd_check(argc, argv);
	if (!strcmp(argv[1], "compare"))
		return cmd_compare(argc, argv);
	if (!strcmp(argv[1], "replan"))
		return cmd_replan(argc, argv);
	if (!strcmp(argv[1], "diff"))
		return cmd_diff(argc, argv);
	if (!strcmp(argv[1], "calibrate"))
		return cmd_calibrate(argc, argv);
	return usage_error("", "unknown command '%s'", argv[1]);
}

int main(int argc, char **argv)
{
	guard_std_fds();
	/* a file over the size limit (ulimit -f) is a write error to report,
	 * not a signal that kills the program */
	signal(SIGXFSZ, SIG_IGN);
	tm_set_warn(on_warn, NULL);
	return finish(run(argc, argv));
}
