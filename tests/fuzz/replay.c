/*
 * replay.c — runs files through one harness without libFuzzer, so that the
 * regression inputs and the seed corpora are checked by every `make check`
 * (under ASan/UBSan) with any C compiler. Arguments are files, or
 * directories whose files are run in name order; a file that breaks a rule
 * aborts, as under libFuzzer.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int nrun;

static void run_file(const char *path)
{
	char *buf;
	size_t len;
	tm_error err = { 0, "" };
	/* the limit of the largest input a harness meets (hwloc XML) */
	if (tm_read_file(path, 64u << 20, &buf, &len, &err)) {
		fprintf(stderr, "replay: %s\n", err.msg);
		exit(1);
	}
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	free(buf);
	nrun++;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	int n = 0;
	if (!d) {
		perror(dir);
		exit(1);
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		names = xrealloc(names, (size_t)(n + 1) * sizeof *names);
		names[n] = xmalloc(strlen(dir) + strlen(e->d_name) + 2);
		sprintf(names[n++], "%s/%s", dir, e->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp_name);
	for (int i = 0; i < n; i++) {
		run_file(names[i]);
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode))
			run_dir(argv[i]);
		else
			run_file(argv[i]);
	}
	printf("%d input(s)\n", nrun);
	return 0;
}
