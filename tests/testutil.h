/*
 * testutil.h — what the unit tests share, under the tt_ prefix so that a
 * test helper is never mistaken for the library's:
 *
 *   tt_rng, tt_next, tt_below, tt_real   a seeded xorshift64 generator,
 *                                        the same sequence on every libc
 *   tt_tmpdir, tt_rm_tree                a fresh directory under $TMPDIR
 *                                        (or /tmp), and its removal
 *   tt_slurp, tt_write_tmp               whole files read and written
 *   tt_expect_msg                        an error message compared with
 *                                        FILE standing for a file name
 *   tt_quiet                             a warning callback that drops
 *
 * Every function fails the running test (cmocka) when the file system
 * does not cooperate, so a test reads as what it checks. Include after
 * <cmocka.h>.
 */
#ifndef THERMAP_TESTUTIL_H
#define THERMAP_TESTUTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- random numbers ------------------------------------------------------ */

typedef struct tt_rng {
	uint64_t s;               /* the state; any value but 0 */
} tt_rng;

static inline uint64_t tt_next(tt_rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

/* 0 .. n-1 (n > 0) */
static inline int tt_below(tt_rng *r, int n)
{
	return (int)(tt_next(r) % (uint64_t)n);
}

/* uniform in [lo, hi), from the top 53 bits */
static inline double tt_real(tt_rng *r, double lo, double hi)
{
	return lo + (hi - lo) * (double)(tt_next(r) >> 11) / 9007199254740992.0;
}

/* ---- files --------------------------------------------------------------- */

/* Makes a fresh directory $TMPDIR/NAME.XXXXXX (/tmp without TMPDIR) and
 * puts its path in dir. 0, or -1 when it cannot (setup functions return
 * that to cmocka). */
static inline int tt_tmpdir(char *dir, size_t cap, const char *name)
{
	const char *t = getenv("TMPDIR");
	int n;
	if (!t || !*t)
		t = "/tmp";
	n = snprintf(dir, cap, "%s/%s.XXXXXX", t, name);
	if (n < 0 || (size_t)n >= cap)
		return -1;
	return mkdtemp(dir) ? 0 : -1;
}

/* Removes a directory tree a test made (or a file). */
static inline void tt_rm_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	if (!d) {
		unlink(path);
		return;
	}
	while ((e = readdir(d))) {
		struct stat st;
		char *sub;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		sub = malloc(strlen(path) + strlen(e->d_name) + 2);
		assert_non_null(sub);
		sprintf(sub, "%s/%s", path, e->d_name);
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			tt_rm_tree(sub);
		else
			unlink(sub);
		free(sub);
	}
	closedir(d);
	rmdir(path);
}

/* The whole file, NUL-terminated, in new memory; its length in *len
 * when len is not NULL. */
static inline char *tt_slurp(const char *file, size_t *len)
{
	FILE *f = fopen(file, "rb");
	char *b;
	long n;
	if (!f)
		fail_msg("%s: cannot open", file);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	assert_int_equal(fclose(f), 0);
	b[n] = '\0';
	if (len)
		*len = (size_t)n;
	return b;
}

/* A new file from the mkstemp template tmpl (its name in file, cap bytes)
 * holding len bytes of text. */
static inline void tt_write_tmp(char *file, size_t cap, const char *tmpl,
                                const char *text, size_t len)
{
	int fd;
	snprintf(file, cap, "%s", tmpl);
	fd = mkstemp(file);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

/* ---- messages ------------------------------------------------------------ */

/* msg must be want with every FILE replaced by file. */
static inline void tt_expect_msg(const char *msg, const char *file,
                                 const char *want)
{
	char buf[2048];
	size_t o = 0, fl = strlen(file);
	for (const char *p = want; *p; ) {
		if (!strncmp(p, "FILE", 4)) {
			assert_true(o + fl < sizeof buf);
			memcpy(buf + o, file, fl);
			o += fl;
			p += 4;
		} else {
			assert_true(o + 1 < sizeof buf);
			buf[o++] = *p++;
		}
	}
	buf[o] = '\0';
	assert_string_equal(msg, buf);
}

/* For tm_set_warn: the warnings a test provokes on purpose, dropped. */
static inline void tt_quiet(void *ud, const char *msg)
{
	(void)ud;
	(void)msg;
}

#endif
