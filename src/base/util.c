/*
 * util.c — allocation that never returns NULL, the error and warning sinks,
 * bounded file reading, safe file writing, growable strings and the small
 * validators every input module shares (host names, UUIDs, PCI bus ids).
 */
#define _GNU_SOURCE  /* flock, renameat2, getrandom */
#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

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

/* ---- writing files ---------------------------------------------------------
 *
 * Every output is written under a temporary name beside its target, in the
 * same directory, and renamed into place, so that a reader sees the old
 * file or the whole new one. The target's directory is opened once and
 * everything after that is relative to that descriptor, never through a
 * link: what was checked cannot be swapped for something else underneath.
 * A temporary is locked (flock) by its writer for as long as it lives; one
 * whose lock can be taken belongs to a writer that died, and the next
 * writer of the same target removes it (docs/formats.md, "Writing and
 * replacing"). */

const char *tm_file_kind(unsigned int m)
{
	return S_ISDIR(m) ? "a directory" : S_ISLNK(m) ? "a symbolic link" :
	       S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" :
	       S_ISREG(m) ? "a regular file" : "a special file";
}

int tm_open_parent(const char *path, bool dir, const char *what, int *dfd,
                   char **base, char **parent, tm_error *err)
{
	size_t n = strlen(path), cut;
	const char *b;
	char *dpath;
	int fd;

	*dfd = -1;
	*base = *parent = NULL;
	if (dir)
		while (n > 1 && path[n - 1] == '/')
			n--;
	if (n == 0)
		return tm_fail(err, TM_EUSAGE, "the %s name is empty",
		               dir ? "directory" : "file");
	if (path[n - 1] == '/')
		return tm_fail(err, TM_EUSAGE, "%s: not a %s name", path,
		               dir ? "directory" : "file");
	for (cut = n; cut > 0 && path[cut - 1] != '/'; cut--)
		;
	b = path + cut;
	if ((n - cut == 1 && b[0] == '.') ||
	    (n - cut == 2 && b[0] == '.' && b[1] == '.'))
		return tm_fail(err, TM_EUSAGE, "%s: names no %s of its own", path,
		               dir ? "directory" : "file");
	if (n - cut > 200)
		return tm_fail(err, TM_EUSAGE, "%s: the name is longer than 200 "
		               "bytes", path);
	if (cut == 0) {
		dpath = xstrdup(".");
	} else {
		size_t k = cut;
		while (k > 1 && path[k - 1] == '/')
			k--;
		dpath = xmalloc(k + 1);
		memcpy(dpath, path, k);
		dpath[k] = '\0';
	}
	fd = open(dpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(dpath);
		return tm_fail(err, TM_EINTERNAL, "%s: %s: %s", path, what,
		               strerror(e));
	}
	*dfd = fd;
	*parent = dpath;
	*base = xmalloc(n - cut + 1);
	memcpy(*base, b, n - cut);
	(*base)[n - cut] = '\0';
	return 0;
}

/* Six characters from [A-Za-z0-9] for a temporary's name. */
static void temp_suffix(char s[7])
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrs"
	                          "tuvwxyz0123456789";
	static unsigned long long ctr;
	unsigned char r[6];
	struct timespec ts;
	unsigned long long x;

	if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
		clock_gettime(CLOCK_REALTIME, &ts);
		x = ((unsigned long long)ts.tv_nsec << 20) ^
		    (unsigned long long)ts.tv_sec ^
		    ((unsigned long long)getpid() << 40) ^
		    ++ctr * 0x9e3779b97f4a7c15ull;
		for (int i = 0; i < 6; i++, x >>= 8)
			r[i] = (unsigned char)(x ^ (x >> 29));
	}
	for (int i = 0; i < 6; i++)
		s[i] = set[r[i] % (sizeof set - 1)];
	s[6] = '\0';
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether name in dfd is still the file open as fd. */
static bool still_at(int dfd, const char *name, int fd)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 &&
	       fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       same_file(&a, &b);
}

int tm_temp_at(int dfd, const char *base, bool dir, char *name, size_t cap,
               int *fd)
{
	for (int tries = 0; tries < 100; tries++) {
		char sfx[7];
		int f;
		temp_suffix(sfx);
		if ((size_t)snprintf(name, cap, "%s.tmp%c%s", base, dir ? '-' : '.',
		                     sfx) >= cap)
			return ENAMETOOLONG;
		if (dir) {
			if (mkdirat(dfd, name, 0700) != 0) {
				if (errno == EEXIST)
					continue;
				return errno;
			}
			f = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			           O_CLOEXEC);
			if (f < 0 && (errno == ENOENT || errno == ENOTDIR ||
			              errno == ELOOP))
				continue;  /* a cleaner took it away: another name */
		} else {
			f = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
			           O_CLOEXEC, 0600);
			if (f < 0 && errno == EEXIST)
				continue;
		}
		if (f < 0)
			return errno;
		/* a cleaner that locked it first removes it: take another name;
		 * where the file system has no flock, go on unlocked */
		if ((flock(f, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) ||
		    !still_at(dfd, name, f)) {
			close(f);
			continue;
		}
		*fd = f;
		return 0;
	}
	return EEXIST;
}

/* name is BASE.tmp-XXXXXX (dir) or BASE.tmp.XXXXXX (file). */
static bool is_temp_of(const char *name, const char *base, bool dir)
{
	size_t bl = strlen(base);
	if (strncmp(name, base, bl) || strncmp(name + bl, dir ? ".tmp-" :
	                                       ".tmp.", 5))
		return false;
	name += bl + 5;
	for (int i = 0; i < 6; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9')))
			return false;
	return name[6] == '\0';
}

int tm_clean_stale(int dfd, const char *base, bool dir,
                   bool (*rm)(int dfd, const char *name, int fd))
{
	int d2 = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	int removed = 0;
	char **names = NULL;
	DIR *d;
	struct dirent *e;

	if (d2 < 0)
		return 0;
	if (!(d = fdopendir(d2))) {
		close(d2);
		return 0;
	}
	while ((e = readdir(d)))
		if (is_temp_of(e->d_name, base, dir)) {
			names = xrealloc(names, sizeof(char *) * (size_t)(n + 1));
			names[n++] = xstrdup(e->d_name);
		}
	closedir(d);
	for (int i = 0; i < n; i++) {
		struct stat st;
		int fd = openat(dfd, names[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
		                (dir ? O_DIRECTORY : O_NONBLOCK));
		if (fd >= 0 && fstat(fd, &st) == 0 &&
		    (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		    still_at(dfd, names[i], fd)) {
			if (dir ? rm(dfd, names[i], fd)
			        : unlinkat(dfd, names[i], 0) == 0)
				removed++;
		}
		if (fd >= 0)
			close(fd);
		free(names[i]);
	}
	free(names);
	return removed;
}

int tm_sync_dir(int dfd)
{
	/* a file system that cannot sync a directory says EINVAL */
	if (fsync(dfd) != 0 && errno != EINVAL && errno != ENOTSUP &&
	    errno != EROFS)
		return errno;
	return 0;
}

/* What may be replaced by a file: nothing, or a regular file. */
static int file_target_ok(int dfd, const char *base, const char *path,
                          tm_error *err)
{
	struct stat st;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : tm_fail(err, TM_EUSAGE, "%s: cannot "
		                                     "inspect: %s", path,
		                                     strerror(errno));
	if (!S_ISREG(st.st_mode))
		return tm_fail(err, TM_EUSAGE, "%s: exists and is %s, not a "
		               "regular file; refusing to replace it", path,
		               tm_file_kind(st.st_mode));
	return 0;
}

int tm_check_file_target(const char *path, tm_error *err)
{
	int dfd, rc;
	char *base, *parent;
	if ((rc = tm_open_parent(path, false, "cannot create", &dfd, &base,
	                         &parent, err)))
		return rc;
	rc = file_target_ok(dfd, base, path, err);
	close(dfd);
	free(base);
	free(parent);
	return rc;
}

static void out_close(tm_out *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->lock >= 0)
		close(o->lock);
	if (o->dfd >= 0)
		close(o->dfd);
	free(o->base);
	free(o->dir);
	free(o->path);
	o->fd = o->lock = o->dfd = -1;
	o->base = o->dir = o->path = NULL;
}

int tm_out_open(tm_out *o, const char *path, tm_error *err)
{
	int rc, e;
	memset(o, 0, sizeof *o);
	o->fd = o->lock = -1;
	if ((rc = tm_open_parent(path, false, "cannot create", &o->dfd, &o->base,
	                         &o->dir, err)))
		return rc;
	o->path = xstrdup(path);
	if ((rc = file_target_ok(o->dfd, o->base, path, err))) {
		out_close(o);
		return rc;
	}
	tm_clean_stale(o->dfd, o->base, false, NULL);
	if ((e = tm_temp_at(o->dfd, o->base, false, o->tmp, sizeof o->tmp,
	                    &o->fd))) {
		rc = tm_fail(err, TM_EINTERNAL, "%s: cannot create: %s", path,
		             strerror(e));
		out_close(o);
		return rc;
	}
	/* the lock lives in a second descriptor, so that closing the first
	 * (and seeing its error) does not let a cleaner in before the rename */
	o->lock = fcntl(o->fd, F_DUPFD_CLOEXEC, 3);
	return 0;
}

void tm_out_abort(tm_out *o)
{
	if (o->dfd >= 0 && o->tmp[0])
		unlinkat(o->dfd, o->tmp, 0);
	out_close(o);
}

int tm_out_write(tm_out *o, const void *data, size_t len, tm_error *err)
{
	const char *p = data;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(o->fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return tm_fail(err, TM_EINTERNAL, "%s: cannot write: %s",
			               o->path, w < 0 ? strerror(errno) :
			               "no progress");
		off += (size_t)w;
	}
	return 0;
}

int tm_out_name(const tm_out *o, char *buf, size_t cap)
{
	struct stat a, b;
	/* the open file itself, where /proc shows it: no name to swap */
	snprintf(buf, cap, "/proc/self/fd/%d", o->fd);
	if (fstat(o->fd, &a) == 0 && stat(buf, &b) == 0 && same_file(&a, &b))
		return 0;
	return (size_t)snprintf(buf, cap, "%s/%s", o->dir, o->tmp) >= cap ?
	       ENAMETOOLONG : 0;
}

/* Puts the finished temporary in place of the target. Where renameat2 is
 * there, the target is replaced only if it is still a regular file: an
 * exchange, then a look at what came out, put back if it is not one. */
static int publish_file(tm_out *o, tm_error *err)
{
#if defined(RENAME_NOREPLACE) && defined(RENAME_EXCHANGE)
	struct stat st;
	if (renameat2(o->dfd, o->tmp, o->dfd, o->base, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EEXIST) {
		if (renameat2(o->dfd, o->tmp, o->dfd, o->base, RENAME_EXCHANGE)
		    == 0) {
			if (fstatat(o->dfd, o->tmp, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
			    S_ISREG(st.st_mode)) {
				unlinkat(o->dfd, o->tmp, 0);  /* the old file */
				return 0;
			}
			/* it changed since it was checked: put it back */
			if (renameat2(o->dfd, o->tmp, o->dfd, o->base,
			              RENAME_EXCHANGE) != 0)
			{
				int rc = tm_fail(err, TM_EINTERNAL, "%s: became %s "
				                 "while it was written, and cannot be put "
				                 "back (it is now %s/%s): %s", o->path,
				                 tm_file_kind(st.st_mode), o->dir, o->tmp,
				                 strerror(errno));
				o->tmp[0] = '\0';  /* not ours to remove */
				return rc;
			}
			return tm_fail(err, TM_EUSAGE, "%s: exists and is %s, not a "
			               "regular file; refusing to replace it",
			               o->path, tm_file_kind(st.st_mode));
		}
		if (errno != EINVAL && errno != ENOSYS)
			return tm_fail(err, TM_EINTERNAL, "%s: cannot write: %s",
			               o->path, strerror(errno));
	} else if (errno != EINVAL && errno != ENOSYS) {
		return tm_fail(err, TM_EINTERNAL, "%s: cannot write: %s", o->path,
		               strerror(errno));
	}
#endif
	/* no renameat2 here: the last check and the rename are apart */
	{
		int rc = file_target_ok(o->dfd, o->base, o->path, err);
		if (rc)
			return rc;
	}
	if (renameat(o->dfd, o->tmp, o->dfd, o->base) != 0)
		return tm_fail(err, TM_EINTERNAL, "%s: cannot write: %s", o->path,
		               strerror(errno));
	return 0;
}

int tm_out_commit(tm_out *o, tm_error *err)
{
	int rc, e;
	/* mode 0644 as for any other output: the temporary was made 0600 */
	if (fchmod(o->fd, 0644) != 0 || fsync(o->fd) != 0 || close(o->fd) != 0) {
		rc = tm_fail(err, TM_EINTERNAL, "%s: cannot write: %s", o->path,
		             strerror(errno));
		o->fd = -1;
		tm_out_abort(o);
		return rc;
	}
	o->fd = -1;
	if ((rc = publish_file(o, err))) {
		tm_out_abort(o);
		return rc;
	}
	o->tmp[0] = '\0';
	if ((e = tm_sync_dir(o->dfd)))
		rc = tm_fail(err, TM_EINTERNAL, "%s: written, but its directory "
		             "cannot be synced: %s", o->path, strerror(e));
	out_close(o);
	return rc;
}

/* Writes data to path through a temporary file in the same directory and
 * a rename, so that readers see the old file or the whole new one. */
int tm_write_file_atomic(const char *path, const char *data, size_t len,
                         tm_error *err)
{
	tm_out o;
	int rc = tm_out_open(&o, path, err);
	if (rc)
		return rc;
	if ((rc = tm_out_write(&o, data, len, err))) {
		tm_out_abort(&o);
		return rc;
	}
	return tm_out_commit(&o, err);
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
};

const char *tm_knob(enum tm_knob k)
{
	const char *v = k >= 0 && k < TM_NKNOBS ? getenv(knob_names[k]) : NULL;
	return v && *v ? v : NULL;
}
