/*
 * runstat — runs a command and prints "WALL_S MAXRSS_KIB" on stderr, for
 * `make bench` (GNU time is not on every machine).
 *
 * usage: runstat [-o FILE] COMMAND [ARGS...]   (-o: the command's stdout)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b;
	struct rusage ru;
	const char *out = NULL;
	int status, i = 1;
	pid_t pid;

	if (argc > 2 && strcmp(argv[1], "-o") == 0) {
		out = argv[2];
		i = 3;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: runstat [-o FILE] COMMAND [ARGS...]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		if (out) {
			int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || dup2(fd, 1) < 0)
				_exit(127);
		}
		execvp(argv[i], argv + i);
		perror(argv[i]);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("wait4");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(stderr, "%.3f %ld\n", (double)(b.tv_sec - a.tv_sec) +
	        (double)(b.tv_nsec - a.tv_nsec) / 1e9, ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
