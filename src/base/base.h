/*
 * base.h — what every layer of libthermap uses: memory that never fails,
 * the error and warning sinks, text for people, reading files within a
 * bound, safe writes, growable strings, the small validators of host
 * names, UUIDs and PCI bus ids, a deterministic JSON writer, SHA-256,
 * small least-squares fits, and NVIDIA's NVML loaded at run time.
 *
 * Layer: the lowest. Includes nothing of thermap's but the public header;
 * no jansson, no GLPK (tests/layers.sh holds every folder to its layer).
 */
#ifndef THERMAP_BASE_H
#define THERMAP_BASE_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "thermap/thermap.h"

#define TM_MAX_INPUT_BYTES (256u << 20) /* largest JSON input we read */
#define TM_MAX_GPUS_PER_NODE 1024       /* a sanity bound on hostile input */
#define TM_MAX_NODES 65536
#define TM_MAX_RANKS (1 << 20)

/* util.c */
/* "thermap: error: out of memory" and abort: what x*alloc do when
 * memory runs out, and what a library's own allocation failure is
 * answered with. */
void tm_oom(void) __attribute__((noreturn));
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
int tm_fail(tm_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int tm_vfail_at(tm_error *err, int code, const char *file, long line,
                const char *fmt, va_list ap);
void tm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Text for people (messages, summaries, tables): valid UTF-8 passes, a
 * control character becomes an escape (\n, \e, \x7f, \u009b) and a byte
 * of no well-formed UTF-8 sequence \xNN. tm_fail and tm_warn show their
 * messages so; tm_text into a buffer (cut between characters), sb_add_text
 * appended. tm_utf8_len: bytes of the well-formed sequence at s, else 0. */
int tm_utf8_len(const char *s);
void tm_text(char *out, size_t size, const char *s);
int tm_read_file(const char *file, size_t cap, char **buf, size_t *len,
                 tm_error *err);
/* fs.c: writes data to path through a temporary beside it (tm_out). */
int tm_write_file_atomic(const char *path, const char *data, size_t len,
                         tm_error *err);
char *tm_normalise_pci(const char *s);
bool tm_valid_host(const char *s);
bool tm_valid_uuid(const char *s);
int tm_levenshtein(const char *a, const char *b);
/* qsort comparator of doubles, ascending */
int tm_cmp_dbl(const void *a, const void *b);
/* A stable merge sort whose comparator gets a context, so that what a
 * comparison needs is passed, not kept in globals (the library is
 * reentrant). Equal elements keep their order, as glibc's qsort leaves
 * them, so a sort moved from qsort gives the same order. */
typedef int (*tm_cmp_fn)(const void *a, const void *b, void *ctx);
void tm_sort(void *base, size_t n, size_t size, tm_cmp_fn cmp, void *ctx);
/* The environment variables that tune or test the library, read here
 * and nowhere else (docs/thermap.1, ENVIRONMENT):
 * THERMAP_THREADS, the CSV reader's threads; THERMAP_DIRECT_ONLY and
 * THERMAP_DIRECT_MAX, to measure the direct integer program (make bench,
 * tests/scale); THERMAP_TEST_STOP_AT, a test stopping the plan writer at a
 * step (tests/replan, tests/cli/writes.sh); THERMAP_NO_NVML, NVML left
 * unloaded (topo --local then asks nvidia-smi, as where there is no
 * NVML); THERMAP_PROM_POINTS, the points one query of profile
 * --prometheus is sized for (tests cut the window into many chunks and
 * batches with it). tm_knob: the value, or NULL when unset or empty. */
enum tm_knob {
	TM_KNOB_THREADS, TM_KNOB_DIRECT_ONLY, TM_KNOB_DIRECT_MAX,
	TM_KNOB_TEST_STOP_AT, TM_KNOB_NO_NVML, TM_KNOB_PROM_POINTS, TM_NKNOBS
};
const char *tm_knob(enum tm_knob k);
/* Milliseconds on the monotonic clock, for time limits and the solver
 * times a plan reports. */
double tm_now_ms(void);

typedef struct strbuf {
	char *s;     /* NUL-terminated contents */
	size_t len;  /* bytes used, without the NUL */
	size_t cap;  /* bytes allocated */
} strbuf;
void sb_init(strbuf *b);
void sb_free(strbuf *b);
void sb_add(strbuf *b, const char *s);
void sb_addn(strbuf *b, const char *s, size_t n);   /* n bytes of s, no NUL among them */
void sb_addf(strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sb_add_text(strbuf *b, const char *s);
/* Safe writes (fs.c; docs/formats.md, "Writing and replacing").
 * tm_out: a single file written under PATH.tmp.XXXXXX beside PATH, locked,
 * then renamed over PATH, which may only be absent or a regular file
 * (else TM_EUSAGE); every write, the sync and the close are checked
 * (TM_EINTERNAL, "PATH: cannot write: ..."), and the directory is synced
 * after the rename. tm_out_open checks the target, removes temporaries of
 * PATH that no live writer holds, and makes the temporary; tm_out_commit
 * publishes it and frees o, tm_out_abort removes it. tm_out_name gives a
 * name of the temporary another library can open: /proc/self/fd/N where
 * that is the same file, else its path. */
typedef struct tm_out {
	int dfd;          /* the target's directory */
	int fd;           /* the temporary, open for reading and writing */
	int lock;         /* a second descriptor holding its lock */
	char *path;       /* the target as given, for messages */
	char *base;       /* the target's name in dfd */
	char *dir;        /* dfd's path */
	char tmp[256];    /* the temporary's name in dfd, "" once published */
} tm_out;
int tm_out_open(tm_out *o, const char *path, tm_error *err);
int tm_out_write(tm_out *o, const void *data, size_t len, tm_error *err);
int tm_out_name(const tm_out *o, char *buf, size_t cap);
int tm_out_commit(tm_out *o, tm_error *err);
void tm_out_abort(tm_out *o);
/* Whether path may be written by tm_out (0), checked early by commands
 * before their work; tm_out_open checks again. */
int tm_check_file_target(const char *path, tm_error *err);
/* The pieces the plan directory's writer shares: "a FIFO", "a symbolic
 * link", ... for messages; the directory holding path opened (links in it
 * followed, as in any path) and the last component (trailing slashes
 * dropped when dir), which must be a name (TM_EUSAGE), or TM_EINTERNAL
 * with "PATH: WHAT: reason" when the directory cannot be opened; a locked
 * temporary BASE.tmp-XXXXXX (dir) or BASE.tmp.XXXXXX (file) made
 * exclusively in dfd (0 or an errno); the stale temporaries of base
 * removed (those whose lock can be taken; rm removes a directory, files
 * are unlinked), returning how many; an fsync of a directory that
 * tolerates file systems which cannot (0 or an errno). */
const char *tm_file_kind(unsigned int mode);
int tm_open_parent(const char *path, bool dir, const char *what, int *dfd,
                   char **base, char **parent, tm_error *err);
int tm_temp_at(int dfd, const char *base, bool dir, char *name, size_t cap,
               int *fd);
int tm_clean_stale(int dfd, const char *base, bool dir,
                   bool (*rm)(int dfd, const char *name, int fd));
int tm_sync_dir(int dfd);


/* jsonout.c: a small deterministic JSON writer */
typedef struct jw {
	strbuf *b;      /* output */
	int depth;      /* nesting depth */
	bool first[64]; /* no member written yet at this depth */
	bool inline_[64]; /* this container is written on one line */
} jw;
void jw_init(jw *w, strbuf *b);
void jw_obj(jw *w, const char *key, bool inline_);
void jw_arr(jw *w, const char *key, bool inline_);
void jw_end_obj(jw *w);
void jw_end_arr(jw *w);
void jw_str(jw *w, const char *key, const char *v);
void jw_num(jw *w, const char *key, double v, int decimals);
/* v with the fewest significant digits (at most 17) that read back as v
 * exactly: for numbers a person wrote, which no fixed rounding fits. */
void jw_real(jw *w, const char *key, double v);
void jw_int(jw *w, const char *key, long v);
void jw_bool(jw *w, const char *key, bool v);
void jw_null(jw *w, const char *key);
void jw_escape(strbuf *b, const char *s);


/* sha256.c: SHA-256 (FIPS 180-4) for input fingerprints and plan ids:
 * streaming and one-shot hex hashing of byte strings, no global state.
 * Not HMAC, not bit-granular, not constant-time: not for secret keys. */
typedef struct tm_sha256 {
    uint32_t h[8];          /* current hash state H0..H7 */
    uint64_t len;           /* total message length so far, in bytes */
    unsigned char buf[64];  /* pending partial block */
    size_t used;            /* number of bytes held in buf (0..63) */
} tm_sha256;
void tm_sha256_init(tm_sha256 *c);
void tm_sha256_update(tm_sha256 *c, const void *data, size_t n);
void tm_sha256_final(tm_sha256 *c, unsigned char out[32]);
/* one-shot: writes 64 lowercase hex digits and a NUL into hex[65] */
void tm_sha256_hex(const void *data, size_t n, char hex[65]);


/* lsq.c: linear least squares for small dense fits (the joint thermal
 * fit of a host's GPUs, format/coupling.c). tm_lsq_normal forms XᵀX
 * (p×p) and Xᵀy (p) of n rows of X (n×p) and y, all row-major.
 * tm_lsq_solve solves XᵀX b = Xᵀy over the columns use marks (NULL:
 * all), b 0 for the others, and, when inv is not NULL, writes the
 * inverse of XᵀX over those columns into inv (p×p, 0 elsewhere). It
 * scales each column to unit length and refuses a design whose Cholesky
 * pivot falls to TM_LSQ_PIVOT or below (a column the ones before it
 * explain to 1 part in 10¹⁰ of its squared length). Returns 0; -1 when
 * singular so, with *bad the column whose pivot failed (bad may be
 * NULL); -2 for a non-finite input or p outside 1 to TM_LSQ_MAX. b is
 * NAN throughout on failure. */
#define TM_LSQ_MAX 1025
#define TM_LSQ_PIVOT 1e-10
void tm_lsq_normal(const double *X, const double *y, int n, int p,
                   double *xtx, double *xty);
int tm_lsq_solve(const double *xtx, const double *xty, int p,
                 const bool *use, double *b, double *inv, int *bad);


/* nvml.c: NVML (libnvidia-ml.so.1) loaded at run time, for profile --live
 * and topo --local. tm_nvml_open loads it and looks up the functions
 * every user needs (TM_EINPUT with "WHO cannot load NVML ...: dlerror"
 * or "WHO NVML (libnvidia-ml.so.1) has no FUNCTION"; nothing is left
 * open then); tm_nvml_sym looks up any other by name (or by its older
 * name), NULL when absent; tm_nvml_missing closes N and fails naming
 * one that a user cannot do without; tm_nvml_start calls nvmlInit
 * (TM_EINPUT "WHO NVML does not start: REASON", N closed);
 * tm_nvml_close shuts NVML down when started and unloads it (a closed
 * or zeroed N: nothing). NVML calls return 0 on success, else an
 * nvmlReturn_t that tm_nvml_strerror names. Types and constants are
 * those of NVIDIA's public nvml.h (nvml.c says which). */
typedef void *tm_nvml_dev;    /* nvmlDevice_t */
/* nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v2/_v3 and
 * nvmlDeviceGetNvLinkRemotePciInfo_v2 fill it */
typedef struct tm_nvml_pci {
	char bus_legacy[16];      /* busIdLegacy: "DDDD:BB:DD.F" */
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];          /* busId: "DDDDDDDD:BB:DD.F" */
} tm_nvml_pci;
#define TM_NVML_NVLINK_MAX_LINKS 18   /* NVML_NVLINK_MAX_LINKS */
typedef struct tm_nvml {
	void *lib;                          /* dlopen handle, NULL: closed */
	bool started;                       /* nvmlInit succeeded */
	int (*init)(void);                  /* nvmlInit_v2 */
	int (*shutdown)(void);              /* nvmlShutdown */
	const char *(*error_string)(int);   /* nvmlErrorString, or NULL */
	int (*count)(unsigned int *);       /* nvmlDeviceGetCount_v2 */
	int (*handle)(unsigned int, tm_nvml_dev *); /* ...GetHandleByIndex_v2 */
} tm_nvml;
int tm_nvml_open(tm_nvml *N, const char *who, tm_error *err);
void *tm_nvml_sym(const tm_nvml *N, const char *name, const char *older);
int tm_nvml_missing(tm_nvml *N, const char *who, const char *what,
                    tm_error *err);
int tm_nvml_start(tm_nvml *N, const char *who, tm_error *err);
const char *tm_nvml_strerror(const tm_nvml *N, int rc);
void tm_nvml_close(tm_nvml *N);

#endif
