/*
 * lines.c — the bottom of the telemetry readers: a file (or bytes held in
 * memory) read line by line in large chunks, so that a multi-gigabyte log
 * costs one pass and a fixed buffer, and every line is followed by a stop
 * byte and TL_SLACK readable bytes (telemetry.h). Also tl_contains, the
 * byte search the format sniffing and the readers share.
 *
 * It knows nothing of formats, GPUs or samples; it calls nothing above it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "telemetry/telemetry.h"

#define READ_CHUNK (1u << 20)

int tl_lines_open(tl_lines *L, const char *file, tm_error *err)
{
	memset(L, 0, sizeof *L);
	L->file = file;
	L->err = err;
	if (strcmp(file, "-") == 0) {
		L->fd = 0;
	} else {
		struct stat st;
		int fl;
		/* as tm_read_file: opening a FIFO without O_NONBLOCK waits for
		 * a writer, and reading one, or a device, may never end */
		L->fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (L->fd < 0)
			return tm_fail(err, TM_EINPUT, "%s: cannot open: %s", file,
			               strerror(errno));
		if (fstat(L->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			close(L->fd);
			L->fd = -1;
			return tm_fail(err, TM_EINPUT, "%s: not a regular file "
			               "(a FIFO or device could block or never end; "
			               "give it as - on standard input)", file);
		}
		if ((fl = fcntl(L->fd, F_GETFL)) >= 0)
			fcntl(L->fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	L->cap = READ_CHUNK + TL_MAX_LINE;
	L->buf = xcalloc(L->cap + 1 + TL_SLACK, 1);
	return 0;
}

int tl_lines_openb(tl_lines *L, const char *file, const char *text,
                   size_t len, tm_error *err)
{
	memset(L, 0, sizeof *L);
	L->file = file;
	L->err = err;
	L->fd = -1;   /* nothing to read: the whole input is in buf */
	L->cap = len;
	L->buf = xcalloc(len + 1 + TL_SLACK, 1);
	memcpy(L->buf, text, len);
	L->end = len;
	L->eof = true;
	return 0;
}

void tl_lines_close(tl_lines *L)
{
	if (L->fd > 0)
		close(L->fd);
	free(L->buf);
	L->buf = NULL;
	L->fd = -1;
}

/* Reads more input after compacting; returns bytes read, 0 at the end, -1
 * on error. */
static long fill(tl_lines *L)
{
	ssize_t n;
	if (L->start > 0) {
		memmove(L->buf, L->buf + L->start, L->end - L->start);
		L->end -= L->start;
		L->base += (long long)L->start;
		L->start = 0;
	}
	if (L->end >= L->cap)
		return 0;
	do
		n = read(L->fd, L->buf + L->end, L->cap - L->end);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		tm_fail(L->err, TM_EINPUT, "%s: read error: %s", L->file,
		        strerror(errno));
		return -1;
	}
	if (n == 0)
		L->eof = true;
	L->end += (size_t)n;
	L->buf[L->end] = '\0';   /* a stop byte after the last line */
	return n;
}

long long tl_lines_tell(const tl_lines *L)
{
	return L->base + (long long)L->start;
}

int tl_lines_seek(tl_lines *L, long long off, long lineno)
{
	if (L->fd < 0 || lseek(L->fd, (off_t)off, SEEK_SET) < 0)
		return tm_fail(L->err, TM_EINPUT, "%s: cannot seek: %s", L->file,
		               strerror(errno));
	L->base = off;
	L->start = L->end = 0;
	L->eof = false;
	L->lineno = lineno;
	return 0;
}

size_t tl_lines_peek(tl_lines *L, const char **p)
{
	while (!L->eof && L->end < 4096)
		if (fill(L) <= 0)
			break;
	*p = L->buf + L->start;
	return L->end - L->start;
}

int tl_lines_next(tl_lines *L, const char **line, size_t *len)
{
	char *nl;
	size_t scanned = 0;
	for (;;) {
		char *p = L->buf + L->start + scanned;
		nl = memchr(p, '\n', L->end - L->start - scanned);
		if (nl)
			break;
		scanned = L->end - L->start;
		if (scanned > TL_MAX_LINE)
			return tm_fail(L->err, TM_EINPUT,
			               "%s:%ld: line longer than %u bytes; not a "
			               "telemetry log", L->file, L->lineno + 1,
			               TL_MAX_LINE);
		if (L->eof) {
			if (scanned == 0)
				return 0;
			nl = L->buf + L->end;  /* a last line without '\n' */
			break;
		}
		if (fill(L) < 0)
			return TM_EINPUT;
	}
	L->lineno++;
	L->unterminated = nl == L->buf + L->end;
	*line = L->buf + L->start;
	*len = (size_t)(nl - *line);
	L->start = (size_t)(nl - L->buf) + !L->unterminated;
	if (*len > TL_MAX_LINE)
		return tm_fail(L->err, TM_EINPUT,
		               "%s:%ld: line longer than %u bytes; not a "
		               "telemetry log", L->file, L->lineno, TL_MAX_LINE);
	if (*len && (*line)[*len - 1] == '\r')
		(*len)--;
	if (memchr(*line, '\0', *len))
		return tm_fail(L->err, TM_EINPUT,
		               "%s:%ld: NUL byte: binary data, not a text "
		               "telemetry log", L->file, L->lineno);
	return 1;
}

bool tl_contains(const char *p, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; i + k <= n; i++)
		if (p[i] == needle[0] && memcmp(p + i, needle, k) == 0)
			return true;
	return false;
}

