/*
 * util.c — allocation that never returns NULL, text for people, the error
 * and warning sinks, bounded file reading, growable strings, the small
 * validators every input module shares (host names, UUIDs, PCI bus ids),
 * a sort with a context and the environment knobs. Writing files is
 * fs.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"

void tm_oom(void)
{
	fputs("thermap: error: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		tm_oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		tm_oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		tm_oom();
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

/* ---- text for people ------------------------------------------------------ */

/* The bytes of the well-formed UTF-8 sequence that starts at s (1 to 4),
 * or 0 when none does: a stray continuation byte, an overlong form, a
 * surrogate (U+D800 to U+DFFF), a code point above U+10FFFF or a sequence
 * cut short (by the string's end too). s points at a byte before its NUL. */
int tm_utf8_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf;
	int n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] < 0xc2)
		return 0;
	if (p[0] < 0xe0) {
		n = 2;
	} else if (p[0] < 0xf0) {
		n = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;   /* else overlong */
		else if (p[0] == 0xed)
			hi = 0x9f;   /* else a surrogate */
	} else if (p[0] < 0xf5) {
		n = 4;
		if (p[0] == 0xf0)
			lo = 0x90;   /* else overlong */
		else if (p[0] == 0xf4)
			hi = 0x8f;   /* else above U+10FFFF */
	} else {
		return 0;
	}
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/* The form in which the character at s is shown (out, NUL-terminated);
 * returns the bytes of s it stands for. Valid UTF-8 that is no control
 * character is itself; a C0 control or DEL is \a \b \t \n \v \f \r \e or
 * \xNN, a C1 control (U+0080 to U+009F) \u00NN, and a byte that starts no
 * well-formed sequence \xNN (NN >= 80). Escapes are printable ASCII and a
 * backslash stays itself, so showing shown text again changes nothing. */
static size_t text_unit(const char *s, char out[8])
{
	static const char ctl[] = "\a\b\t\n\v\f\r\033", name[] = "abtnvfre";
	unsigned char c = (unsigned char)*s;
	int n = tm_utf8_len(s);

	if (n == 0 || c < 0x20 || c == 0x7f) {
		const char *k = strchr(ctl, c);
		if (n && k)
			snprintf(out, 8, "\\%c", name[k - ctl]);
		else
			snprintf(out, 8, "\\x%02x", c);
		return 1;
	}
	if (n == 2 && c == 0xc2 && (unsigned char)s[1] < 0xa0) {
		snprintf(out, 8, "\\u%04x", (unsigned char)s[1]);
		return 2;
	}
	memcpy(out, s, (size_t)n);
	out[n] = '\0';
	return (size_t)n;
}

void sb_add_text(strbuf *b, const char *s)
{
	char u[8];
	while (s && *s) {
		s += text_unit(s, u);
		sb_add(b, u);
	}
}

/* s shown into out (size bytes, at least 1), cut before the first
 * character or escape that does not fit whole. */
void tm_text(char *out, size_t size, const char *s)
{
	size_t len = 0;
	char u[8];
	while (*s) {
		size_t k = text_unit(s, u), n = strlen(u);
		if (len + n >= size)
			break;
		memcpy(out + len, u, n);
		len += n;
		s += k;
	}
	out[len] = '\0';
}

/* Messages quote file names, JSON keys, host names and file contents:
 * each is shown as tm_text shows it, so that a message is one line and
 * no input byte reaches a terminal or a log as a control character. */
int tm_fail(tm_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	if (err && !err->code) {
		char raw[2 * sizeof err->msg];
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(raw, sizeof raw, fmt, ap);
		va_end(ap);
		tm_text(err->msg, sizeof err->msg, raw);
	}
	return code;
}

/* tm_fail for readers that know the line: "FILE:LINE: message". */
int tm_vfail_at(tm_error *err, int code, const char *file, long line,
                const char *fmt, va_list ap)
{
	if (err && !err->code) {
		char raw[2 * sizeof err->msg];
		int n = snprintf(raw, sizeof raw, "%s:%ld: ", file, line);
		err->code = code;
		if (n >= 0 && (size_t)n < sizeof raw)
			vsnprintf(raw + n, sizeof raw - (size_t)n, fmt, ap);
		tm_text(err->msg, sizeof err->msg, raw);
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
	char raw[2048], msg[1024];
	va_list ap;
	if (!warn_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	tm_text(msg, sizeof msg, raw);
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
	sb_addn(b, s, strlen(s));
}

void sb_addn(strbuf *b, const char *s, size_t n)
{
	sb_grow(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

/* Formatted into the room there is; formatted again, after growing, only
 * when it did not fit (most appends are short). */
void sb_addf(strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n <= 0) {
		b->s[b->len] = '\0';
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		sb_grow(b, (size_t)n);
		va_start(ap, fmt);
		vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

int tm_cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ---- sorting with a context ------------------------------------------------ */

/* Merges the sorted runs a[0..na) and b[0..nb) into out, taking from a on
 * ties, so equal elements keep their order. */
static void merge(const char *a, size_t na, const char *b, size_t nb,
                  char *out, size_t size, tm_cmp_fn cmp, void *ctx)
{
	while (na && nb) {
		if (cmp(b, a, ctx) < 0) {
			memcpy(out, b, size);
			b += size;
			nb--;
		} else {
			memcpy(out, a, size);
			a += size;
			na--;
		}
		out += size;
	}
	memcpy(out, na ? a : b, (na ? na : nb) * size);
}

/* Sorts n elements at p into place with tmp as scratch (the same size). */
static void msort(char *p, char *tmp, size_t n, size_t size, tm_cmp_fn cmp,
                  void *ctx)
{
	size_t h = n / 2;
	if (n < 2)
		return;
	msort(p, tmp, h, size, cmp, ctx);
	msort(p + h * size, tmp, n - h, size, cmp, ctx);
	if (cmp(p + h * size, p + (h - 1) * size, ctx) >= 0)
		return;  /* already in order */
	memcpy(tmp, p, n * size);
	merge(tmp, h, tmp + h * size, n - h, p, size, cmp, ctx);
}

void tm_sort(void *base, size_t n, size_t size, tm_cmp_fn cmp, void *ctx)
{
	char *tmp;
	if (n < 2 || size == 0)
		return;
	tmp = xmalloc(n * size);
	msort(base, tmp, n, size, cmp, ctx);
	free(tmp);
}

/* ---- knobs ---------------------------------------------------------------- */

static const char *const knob_names[TM_NKNOBS] = {
	[TM_KNOB_THREADS] = "THERMAP_THREADS",
	[TM_KNOB_DIRECT_ONLY] = "THERMAP_DIRECT_ONLY",
	[TM_KNOB_DIRECT_MAX] = "THERMAP_DIRECT_MAX",
	[TM_KNOB_TEST_STOP_AT] = "THERMAP_TEST_STOP_AT",
	[TM_KNOB_NO_NVML] = "THERMAP_NO_NVML",
	[TM_KNOB_PROM_POINTS] = "THERMAP_PROM_POINTS",
};

double tm_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

const char *tm_knob(enum tm_knob k)
{
	const char *v = k >= 0 && k < TM_NKNOBS ? getenv(knob_names[k]) : NULL;
	return v && *v ? v : NULL;
}
