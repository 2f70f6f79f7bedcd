/*
 * fs.c — safe writes (docs/formats.md, "Writing and replacing"): a single
 * file written through a locked temporary beside its target and renamed
 * into place (tm_out, tm_write_file_atomic), the pieces the plan
 * directory's writer shares (opening a target's directory, making a
 * locked temporary, removing the stale temporaries of killed writers,
 * syncing a directory), and the checks of what may be replaced.
 * Does not: write plan directories (ops/plan.c) or decide what a command
 * writes.
 */
#define _GNU_SOURCE  /* flock, renameat2, getrandom */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

/* Every output is written under a temporary name beside its target, in the
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
	int removed = 0, cap = 0;
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
			if (n == cap)
				names = xrealloc(names, sizeof(char *) *
				                 (size_t)(cap = cap ? 2 * cap : 8));
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

