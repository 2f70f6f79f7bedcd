/*
 * util.c — allocation that never returns NULL, the error and warning sinks,
 * bounded file reading, growable strings and the small validators every
 * input module shares (host names, UUIDs, PCI bus ids).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "internal.h"

static void oom(void)
{
	fputs("thermap: error: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

int tm_fail(tm_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	if (err && !err->code) {
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* tm_fail for readers that know the line: "FILE:LINE: message". */
int tm_vfail_at(tm_error *err, int code, const char *file, long line,
                const char *fmt, va_list ap)
{
	if (err && !err->code) {
		int n = snprintf(err->msg, sizeof err->msg, "%s:%ld: ", file, line);
		err->code = code;
		if (n >= 0 && (size_t)n < sizeof err->msg)
			vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
	}
	return code;
}

static tm_warn_fn warn_fn;
static void *warn_ud;

void tm_set_warn(tm_warn_fn fn, void *ud)
{
	warn_fn = fn;
	warn_ud = ud;
}

void tm_warn(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	if (!warn_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	warn_fn(warn_ud, msg);
}

/* Reads a whole regular file of at most cap bytes into a NUL-terminated
 * buffer. A FIFO or device could block or never end, so only regular files
 * are read. */
int tm_read_file(const char *file, size_t cap, char **buf, size_t *len,
                 tm_error *err)
{
	struct stat st;
	char *b = NULL;
	size_t n = 0, size;
	int fd = open(file, O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		return tm_fail(err, TM_EINPUT, "%s: cannot open: %s", file,
		               strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return tm_fail(err, TM_EINPUT, "%s: not a regular file", file);
	}
	if ((unsigned long long)st.st_size > cap) {
		close(fd);
		return tm_fail(err, TM_EINPUT,
		               "%s: file is %lld bytes; the limit is %zu",
		               file, (long long)st.st_size, cap);
	}
	size = (size_t)st.st_size;
	b = xmalloc(size + 1);
	while (n < size) {
		ssize_t r = read(fd, b + n, size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			free(b);
			return tm_fail(err, TM_EINPUT, "%s: read error: %s", file,
			               strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/* "00000000:00:06.0", "0000:00:06.0" and "00:06.0" all become
 * "0000:00:06.0"; NULL when s is not a PCI bus id. */
char *tm_normalise_pci(const char *s)
{
	unsigned long dom = 0, bus, dev, fn;
	char out[40];
	const char *p = s;
	int colons = 0;
	char *end;

	for (const char *q = s; *q; q++) {
		/* strtoul alone would take signs and blanks: "0000:-1:00.0"
		 * became a bus of 16 hex digits that no reader takes back */
		if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
			return NULL;
		colons += *q == ':';
	}
	if (colons < 1 || colons > 2 || strlen(s) > 32)
		return NULL;
	if (colons == 2) {
		dom = strtoul(p, &end, 16);
		if (end == p || *end != ':' || end - p > 8)
			return NULL;
		p = end + 1;
	}
	bus = strtoul(p, &end, 16);
	if (end == p || *end != ':' || end - p > 2)
		return NULL;
	p = end + 1;
	dev = strtoul(p, &end, 16);
	if (end == p || *end != '.' || end - p > 2 || dev > 0x1f)
		return NULL;
	p = end + 1;
	fn = strtoul(p, &end, 16);
	if (end == p || *end != '\0' || end - p > 1 || fn > 7)
		return NULL;
	if (s[0] == '-' || s[0] == '+' || s[0] == ' ')
		return NULL;
	snprintf(out, sizeof out, "%04lx:%02lx:%02lx.%lx", dom, bus, dev, fn);
	return xstrdup(out);
}

/* Host names land in file names and in a file sourced by a shell. */
bool tm_valid_host(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
		      ch == '_'))
			return false;
	}
	return strstr(s, "..") == NULL;
}

/* GPU-… and MIG-… identifiers go into CUDA_VISIBLE_DEVICES unquoted. */
bool tm_valid_uuid(const char *s)
{
	size_t n = strlen(s);
	if (n < 5 || n > 96)
		return false;
	if (strncmp(s, "GPU-", 4) != 0 && strncmp(s, "MIG-", 4) != 0)
		return false;
	for (size_t i = 4; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '/'))
			return false;
	}
	return true;
}

int tm_levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[64], prev, tmp;
	if (la > 63 || lb > 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1];
			int best = prev + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

void sb_init(strbuf *b)
{
	b->cap = 256;
	b->len = 0;
	b->s = xmalloc(b->cap);
	b->s[0] = '\0';
}

void sb_free(strbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

static void sb_grow(strbuf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return;
	while (b->len + extra + 1 > b->cap)
		b->cap *= 2;
	b->s = xrealloc(b->s, b->cap);
}

void sb_add(strbuf *b, const char *s)
{
	size_t n = strlen(s);
	sb_grow(b, n);
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

void sb_addf(strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	sb_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Creates an empty temporary file beside path (same directory, so that a
 * rename is atomic) and returns its descriptor; its name goes to tmp. */
int tm_temp_beside(const char *path, strbuf *tmp, tm_error *err)
{
	int fd;
	sb_init(tmp);
	sb_addf(tmp, "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp->s);
	if (fd < 0) {
		tm_fail(err, TM_EINTERNAL, "%s: cannot create: %s", path,
		        strerror(errno));
		sb_free(tmp);
	}
	return fd;
}

/* Puts a finished temporary file in place of path, or removes it. Mode
 * 0644 as for any other output: mkstemp made it 0600. */
int tm_publish_file(const char *tmp, const char *path, tm_error *err)
{
	if (chmod(tmp, 0644) != 0 || rename(tmp, path) != 0) {
		int rc = tm_fail(err, TM_EINTERNAL, "%s: cannot write: %s",
		                 path, strerror(errno));
		unlink(tmp);
		return rc;
	}
	return 0;
}

/* Writes data to path through a temporary file in the same directory and
 * rename(2), so that readers see the old file or the whole new one. */
int tm_write_file_atomic(const char *path, const char *data, size_t len,
                         tm_error *err)
{
	strbuf tmp;
	int fd = tm_temp_beside(path, &tmp, err), rc;
	size_t off = 0;
	if (fd < 0)
		return TM_EINTERNAL;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (off < len || close(fd) != 0) {
		rc = tm_fail(err, TM_EINTERNAL, "%s: cannot write: %s", path,
		             strerror(errno));
		if (off < len)
			close(fd);
		unlink(tmp.s);
	} else {
		rc = tm_publish_file(tmp.s, path, err);
	}
	sb_free(&tmp);
	return rc;
}

int tm_cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
