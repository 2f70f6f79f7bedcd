/*
 * telemetry.h — telemetry logs to profiles (`thermap profile`, and what
 * calibrate and compare --replay read). The files, each calling only the
 * ones below it:
 *
 *   read.c    the entry points: tm_profile_from_telemetry, the summary,
 *             a recording read once and profiled window by window; and
 *             the dispatcher, tl_read_file, which finds a file's format
 *             from its first bytes and hands it to its reader
 *   csv.c dmon.c prom.c
 *             the readers, one per family of formats: nvidia-smi
 *             --query-gpu CSV (and nvidia_gpu_exporter captures), dmon,
 *             Prometheus text and query_range JSON. A reader turns one
 *             file into samples (one GPU, one moment, the values it read,
 *             NAN for each value the input does not have): it names the
 *             GPU with tl_gpu() and hands each sample to tl_push(), in the
 *             order the file has them
 *   phases.c  the load phases of `profile --phases`: the phases file
 *             read as untrusted input, and, at the end, each host's
 *             phase means turned into the joint fit of its GPUs
 *             (format/coupling.c) and the profile entries' couplings
 *   sink.c    the sink: the GPUs named so far, the samples' checks
 *             (value ranges, time order, --from/--to), warnings about
 *             files, and the end, which orders the GPUs for the profile
 *   stats.c   the profile statistics: the settling rule, idle and load
 *             levels, the thermal fit, derates, what was estimated
 *             (docs/profile.md), with a fixed amount of state per GPU (and
 *             per phase, with --phases), so memory grows with the number
 *             of GPUs (and phases), never with the input
 *   promapi.c the same series as query_range files, from a Prometheus
 *             server's HTTP API (libcurl): it plans and sends the
 *             queries and hands every answer to prom.c's query_range
 *             reader, so files and the API share one parser
 *   lines.c parse.c
 *             lines of a file; numbers and times in text
 *   nvml.c    beside them: the GPUs of this machine sampled through NVML
 *             (loaded at run time) into nvidia-smi CSV, for
 *             `profile --live`; it calls none of the others
 *
 * The profile document is written by format/profile.c (tm_profile_text).
 * Nothing here keeps state outside the structs it is given (but csv.c's
 * table of hex digits, filled once under pthread_once): several readings
 * may run at once, one per thread.
 */
#ifndef THERMAP_TELEMETRY_H
#define THERMAP_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>

#include "format/format.h"

enum tl_field {
	TL_TEMP,         /* GPU temperature, °C */
	TL_POWER,        /* power draw, W */
	TL_POWER_LIMIT,  /* enforced power limit, W */
	TL_SM_CLOCK,     /* current SM clock, MHz */
	TL_SM_CLOCK_MAX, /* maximum SM clock, MHz */
	TL_UTIL,         /* GPU utilisation, % */
	TL_TLIMIT,       /* margin to the slowdown point, °C, as reported */
	TL_SLOWDOWN_C,   /* slowdown threshold, °C */
	TL_THERMAL,      /* 1: a thermal clock event reason is active, 0: none */
	TL_PCAP,         /* 1: the software power cap is active, 0: not */
	TL_THERMAL_US,   /* counter: µs spent in thermal slowdown so far */
	TL_PCAP_US,      /* counter: µs spent power capped so far */
	TL_NFIELDS
};

typedef struct tl_sample {
	double t;              /* seconds since 1970 (naive times read as
	                          UTC); NAN when the input has no time */
	double v[TL_NFIELDS];  /* NAN = not in the input / missing */
} tl_sample;

/* Clock event reason bits (nvidia-smi clocks_event_reasons.active, DCGM
 * DCGM_FI_DEV_CLOCKS_EVENT_REASONS; the same bits under the older
 * "throttle reasons" names). */
#define TL_REASON_IDLE          0x001ull
#define TL_REASON_APP_CLOCKS    0x002ull
#define TL_REASON_SW_POWER_CAP  0x004ull
#define TL_REASON_HW_SLOWDOWN   0x008ull
#define TL_REASON_SYNC_BOOST    0x010ull
#define TL_REASON_SW_THERMAL    0x020ull
#define TL_REASON_HW_THERMAL    0x040ull
#define TL_REASON_HW_POWER_BRAKE 0x080ull
#define TL_REASON_DISPLAY_CLOCK 0x100ull

_Static_assert(TL_NFIELDS == 12, "tl_sample_clear lists every field");

static inline void tl_sample_clear(tl_sample *s)
{
	static const tl_sample empty = {
		NAN, { NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
		       NAN } };
	*s = empty;
}

/* ---- read.c: the entry points and the dispatcher ------------------------ */

typedef struct tl_sink tl_sink;
typedef struct tl_src tl_src;
typedef struct tl_phases tl_phases;                /* phases.c */
typedef struct tl_couple_report tl_couple_report;  /* phases.c */

/* Reads one input file (format found from its content) into src->sink;
 * src->file and src->host (--host or NULL) are set by the caller. */
int tl_read_file(tl_src *src);

/* Reads the n inputs into k, srcs[i] describing in[i] (srcs has n
 * entries, zeroed by the caller; they must outlive k's use of them, as
 * GPUs name the last file that named them). warn: the warnings about
 * files (tl_file_warnings). Returns 0 or an exit code with err set. */
int tl_read_inputs(tl_sink *k, const tm_tele_input *in, int n, tl_src *srcs,
                   bool warn, tm_error *err);

/* A recording read once (compare --replay): every sample of its files
 * kept in memory, so that the profile of any window of it is made
 * without reading the files again. in's strings are borrowed for its
 * life. */
typedef struct tl_recording tl_recording;
/* Reads the inputs as tm_profile_from_telemetry does (with its warnings);
 * 0 with *out new, or an exit code with err set. */
int tl_recording_read(const tm_tele_input *in, int n, tl_recording **out,
                      tm_error *err);
void tl_recording_free(tl_recording *r);
/* The span of its longest file, seconds, to the millisecond (as the
 * summary says); 0 when no file has a time. */
double tl_recording_span(const tl_recording *r);
/* The profile of the window o (NULL: the whole recording), exactly as
 * tm_profile_from_telemetry of the same inputs with o makes it: 0 with
 * *out new, or TM_EINPUT with err set (no samples in the window, GPUs too
 * far apart for a derate). */
int tl_recording_profile(const tl_recording *r, const tm_tele_opts *o,
                         tm_profile **out, tm_error *err);

/* ---- dmon.c, csv.c, prom.c: the readers -------------------------------- */

typedef struct tl_lines tl_lines;

/* Each reads one file into src->sink and returns 0 or an exit code with
 * src->err set. */
int tl_read_csv(tl_src *src, tl_lines *L);     /* nvidia-smi --query-gpu */
int tl_read_dmon(tl_src *src, tl_lines *L);    /* nvidia-smi dmon */
int tl_read_dcgmi(tl_src *src, tl_lines *L);   /* dcgmi dmon */
int tl_read_capture(tl_src *src, tl_lines *L); /* nvidia_gpu_exporter */
int tl_read_prom(tl_src *src, tl_lines *L);    /* Prometheus text */
/* Prometheus query_range JSON: the whole file is read (it is bounded by
 * TM_MAX_INPUT_BYTES), its points are kept in the sink until
 * tl_qrange_flush(), which merges the series of every query_range file
 * by GPU and time and pushes them. The tl_src of every query_range file
 * stays valid (and is the one to charge rows and samples to) until
 * tl_qrange_flush() returns. Points never flushed go with the sink. */
int tl_read_qrange(tl_src *src, const char *text, size_t len);
int tl_qrange_flush(tl_sink *k, tm_error *err);

/* The columns of a dcgmi dmon "#Entity ..." header: where each starts on
 * the line (rows pad their values to the same places), its short name,
 * and the field it fills (enum tl_field, or one of these). */
enum {
	TL_DCGMI_UNUSED = -1,     /* a field thermap does not read */
	TL_DCGMI_REASONS = -2,    /* DVCCTR: the clock event reasons bitmask */
	TL_DCGMI_MGMT_LIMIT = -3  /* PMLMT: the power limit, unless EPLMT */
};
typedef struct tl_dcgmi_col {
	size_t start;             /* byte offset on the header line */
	const char *name;         /* borrowed from the line, nlen bytes */
	size_t nlen;
	int field;
} tl_dcgmi_col;
#define TL_DCGMI_MAX_COLS 128     /* DCGM's fields per field group */
/* Reads line[0..len) as a header into cols: the number of columns (0 or
 * more), or -1 when it is no "#Entity" header or names more than max. */
int tl_dcgmi_header(const char *line, size_t len, tl_dcgmi_col *cols,
                    int max);

/* The DCGM metrics the readers know (prom.c's table, deprecated names
 * included): name i of TL_PROM_NMETRICS, and whether a metric gives one
 * of the profile's main inputs (the rest are optional), and which
 * metrics stand for the same input (the aliases, the two power limits):
 * metrics of one group share its number. */
#define TL_PROM_NMETRICS 13
#define TL_PROM_NGROUPS 7     /* the main inputs: groups 0 to 6 */
const char *tl_prom_metric(int i);
int tl_prom_metric_group(int i);   /* -1: optional */
/* Reads a Prometheus API answer whose data is a list of strings (label
 * values) named file in messages: 0 with *out (n new strings in a new
 * array; free each and it), or TM_EINPUT with err set. At most max
 * strings. */
int tl_read_label_values(const char *file, const char *text, size_t len,
                         size_t max, char ***out, size_t *n, tm_error *err);
/* The error an API answer carries ("bad_data: parse error ..."), made
 * printable, into buf; false when text is no such answer. */
bool tl_prom_error_text(const char *text, size_t len, char *buf, size_t cap);

/* ---- promapi.c: the HTTP API ------------------------------------------- */

#define TL_PROM_MAX_POINTS 11000   /* points per series a query may ask
                                      for (Prometheus refuses more) */
#define TL_PROM_GPUS_PER_HOST 8    /* what a batch of hosts is sized for */
#define TL_PROM_BUDGET (1L << 17)  /* points one query is sized for
                                      (THERMAP_PROM_POINTS sets it) */
#define TL_PROM_MAX_BODY (64u << 20) /* largest answer read, bytes */
#define TL_PROM_TRIES 4            /* tries of a request that fails
                                      transiently (429, 502-504, a
                                      dropped connection) */

/* The step for a window of w seconds when none is given: 15 s, or for
 * windows over 11,000 steps of 15 s the smallest whole number of seconds
 * that keeps a series within TL_PROM_MAX_POINTS. */
long long tl_prom_step_ms(long long w_ms);
/* The window of the last last_ms to now_ms, its end on the step's grid. */
void tl_prom_last(long long now_ms, long long last_ms, long long step_ms,
                  long long *from_ms, long long *to_ms);
/* Points of a series from from to to every step (to on or past the last
 * one). */
long long tl_prom_npoints(long long from_ms, long long to_ms,
                          long long step_ms);
/* How to cut a window of npoints for a budget of points per query:
 * points per chunk of time (at most TL_PROM_MAX_POINTS) and hosts per
 * batch (at TL_PROM_GPUS_PER_HOST series a host). */
void tl_prom_plan(long long npoints, long budget, long long *per_chunk,
                  long *hosts_per_batch);
/* The first and last time of chunk i of per_chunk points of the window
 * from from, npoints points every step. */
void tl_prom_chunk(long long from_ms, long long step_ms, long long npoints,
                   long long per_chunk, long long i, long long *start_ms,
                   long long *end_ms);
/* The series selector of a query: metric (NULL: every DCGM metric, by
 * a __name__ regex), then job, then the matchers as given, then the
 * hosts (a Hostname regex; n 0: none). New string. */
char *tl_prom_selector(const char *metric, const char *job,
                       const char *matchers, const char *const *hosts,
                       int n);
/* Reads the series q selects into k, charged to src (whose file names
 * the URL afterwards): 0, or an exit code with err set. */
int tl_read_prometheus(tl_sink *k, tl_src *src, const tm_prom_query *q,
                       tm_error *err);

/* ---- sink.c: the GPUs, the samples' checks, the warnings ---------------- */

/* Reasons a row or value was skipped, counted per file for the summary. */
enum tl_skip {
	TL_SKIP_CUT,       /* the last line of the file, cut mid-row */
	TL_SKIP_WINDOW,    /* outside --from/--to */
	TL_SKIP_NO_TIME,   /* --from/--to given but the row has no time */
	TL_SKIP_UNUSED,    /* a metric thermap does not read (Prometheus) */
	TL_SKIP_BLANK,     /* a DCGM blank sentinel or NaN: no value */
	TL_SKIP_ENTITY,    /* a dcgmi dmon row of another entity than a GPU */
	TL_NSKIP
};
extern const char *const tl_skip_names[TL_NSKIP];

/* Values and times out of their ranges (docs/profile.md, "Values"):
 * TM_EINPUT and what was expected in msg, else 0 (NAN, no value, is
 * always in range). tl_push() checks every sample with them. */
int tl_check_value(int field, double v, char *msg, size_t cap);
int tl_check_time(double t, char *msg, size_t cap);

/* Distinct GPUs one profile may hold: memory grows with each (a few KiB,
 * up to about 200 KiB with a full guard queue and histograms), and the
 * profile written must stay under the loaders' 256 MiB (read.c refuses
 * one that would not: about 1.4 KiB an entry, 2 KiB at most). 131072 is
 * 16384 hosts of 8 GPUs, the largest cluster the planner is measured
 * on. */
#define TL_MAX_GPUS 131072

/* p as text into *out, unless it is over limit bytes (TM_MAX_INPUT_BYTES:
 * a profile plan, check and the rest would refuse to read back), which
 * fails with one line naming from. */
int tl_profile_text(const tm_profile *p, const char *from, size_t limit,
                    char **out, tm_error *err);

typedef struct tl_opts {
	double from, to;      /* time window; NAN = open */
	bool from_rel, to_rel;/* seconds after the first time of each file */
	double interval_s;    /* dcgmi dmon logs, which carry no time: seconds
	                         between their samples (their -d); 0 = 1 s */
} tl_opts;

tl_sink *tl_sink_new(const tl_opts *o);
/* The phases whose means the sink's GPUs keep (ph borrowed for the
 * sink's life; set before any GPU is named), and, after tl_sink_profile,
 * what their couplings came to (NULL without phases). */
void tl_sink_phases(tl_sink *k, const tl_phases *ph);
const tl_couple_report *tl_sink_couple_report(const tl_sink *k);
/* Seconds between the samples of a dcgmi dmon log read into k. */
double tl_sink_interval(const tl_sink *k);
void tl_sink_free(tl_sink *k);
/* fn sees every sample tl_push accepts, after the window (calibrate's
 * in-job statistics; tests). */
void tl_sink_tap(tl_sink *k, void (*fn)(void *ctx, int gpu,
                 const tl_sample *s), void *ctx);
/* The identity of GPU id as the sink holds it (pci normalised; uuid,
 * pci NULL and index -1 when unknown). */
void tl_gpu_ident(const tl_sink *k, int id, const char **host,
                  const char **uuid, const char **pci, int *index);

/* One input file being read. The reader fills format, rows and line; the
 * sink fills the rest. */
struct tl_src {
	tl_sink *sink;
	const char *file;    /* name for messages */
	const char *host;    /* --host, else NULL */
	const char *fields;  /* --fields (CSV without a header), else NULL */
	const char *format;  /* what the reader found, for the summary */
	long line;           /* line being read, for messages (0: none) */
	long rows;           /* data rows / series points read */
	long samples;        /* samples handed to tl_push */
	long skipped[TL_NSKIP];
	double t_first, t_last;  /* earliest and latest time (NAN: none) */
	int ngpus;           /* distinct GPUs this file named */
	char fhost[256];     /* host taken from the file name for GPUs
	                        of this file ("" when none was), for the
	                        warning that says so */
	const char *text;    /* the input's bytes when held in memory (then
	                        file only names it), else NULL */
	size_t len;          /* bytes at text */
	tm_error *err;
};

/* Returns the sink's id (>= 0) of the GPU with this identity, creating
 * it on first use; host must be set, index is -1 when unknown, uuid and pci
 * may be NULL (pci is normalised here). Returns -1 with err set when the
 * identity contradicts one seen before. */
int tl_gpu(tl_src *src, const char *host, const char *uuid, const char *pci,
           int index);

/* The GPU model (nvidia-smi's `name`, DCGM's modelName) of GPU gpu, as
 * its first row names it; GPUs of one model share a pooled thermal fit
 * (docs/profile.md). Later names for the same GPU are ignored. */
void tl_gpu_model(tl_src *src, int gpu, const char *name, size_t len);

/* Hands one sample of GPU gpu to the sink. Returns 0, or TM_EINPUT with
 * err set ("FILE:LINE: ...") when a value is out of range or time goes
 * backwards for that GPU. */
int tl_push(tl_src *src, int gpu, const tl_sample *s);

/* Pushing in parallel: samples of different GPUs may be pushed by
 * different threads at once, each through its own copy of the source made
 * by tl_src_part() (and with no GPU added meanwhile), when this says so:
 * no tap, no recording, and no window relative to the file's first time
 * (which depends on the rows of every GPU before). tl_src_merge() adds a
 * part's counts and times back. */
bool tl_push_parallel_ok(const tl_src *src);
void tl_src_part(tl_src *part, const tl_src *src, tm_error *err);
void tl_src_merge(tl_src *src, const tl_src *part);

/* Sets TL_THERMAL and TL_PCAP from a reasons bitmask (ORed with what the
 * sample already says). */
void tl_reasons(tl_sample *s, unsigned long long mask);

/* Host name from a file name: the base name without directories and
 * without its last extension ("logs/gpu-a01.csv" -> "gpu-a01"); NULL when
 * that is not a valid host name. The caller frees it. */
char *tl_host_from_file(const char *file);

/* What a file read into k leaves unsaid about its GPUs (the host taken
 * from its name, no UUID), as warnings; each warning once per sink, as a
 * file may be read into it twice. */
void tl_file_warnings(tl_sink *k, const tl_src *s);

/* Ends every GPU's stream and makes the profile of the GPUs with
 * samples, in the order of host, index, PCI bus id, UUID: 0 with *out
 * new (no GPU: 0 entries), or TM_EINPUT with err set when the GPUs'
 * clocks are too far apart for a derate a profile holds. tl_sink_finish
 * writes it as a thermap.profile/1 document to out instead, *ngpus
 * entries. */
int tl_sink_profile(tl_sink *k, tm_profile **out, tm_error *err);
int tl_sink_finish(tl_sink *k, strbuf *out, long *ngpus, tm_error *err);

/* Recording: from now on k keeps every sample it accepts, in order, with
 * its file's first time so far (which a relative window counts from);
 * pushing is then sequential. tl_sink_replay gives an empty sink the
 * GPUs of a recording sink, from, and pushes what from recorded through
 * to's window: to then holds what reading the same files with that
 * window would give it, ready for tl_sink_profile. */
void tl_sink_record(tl_sink *k);
void tl_sink_replay(tl_sink *to, const tl_sink *from);

/* query_range points waiting in a sink to be merged across files
 * (prom.c): they are pushed by tl_qrange_flush(). */
typedef struct tl_qpoint {
	double t, v;
	unsigned seq;            /* input order: the sort is stable */
	int gpu;
	unsigned short src;      /* into srcs */
	unsigned char metric;    /* prom.c's metric number */
} tl_qpoint;

typedef struct tl_qpending {
	tl_qpoint *p;            /* n points */
	size_t n, cap;
	tl_src **srcs;           /* nsrc files the points came from */
	int nsrc, capsrc;
} tl_qpending;

tl_qpending *tl_sink_qpending(tl_sink *k);

/* ---- stats.c: the profile statistics ------------------------------------ */

/* One GPU's statistics: the settling rule of docs/profile.md applied to
 * its samples, and what the settled ones add up to. */
typedef struct tl_gpu_stats tl_gpu_stats;

tl_gpu_stats *tl_gpu_stats_new(void);
void tl_gpu_stats_free(tl_gpu_stats *g);
/* Adds one sample (in the GPU's time order: the sink checks it). */
void tl_gpu_stats_add(tl_gpu_stats *g, const tl_sample *s);
long tl_gpu_stats_samples(const tl_gpu_stats *g);
/* From now on (before the first sample), the mean temperature and power
 * of the samples with both in each phase's counted span are kept
 * (memory: 24 bytes a phase, from the first such sample on). */
void tl_gpu_stats_phases(tl_gpu_stats *g, const tl_phases *ph);
/* Phase i's samples counted, with their mean temperature (°C) and power
 * (W) in *temp and *power (NAN without samples). */
long tl_gpu_stats_phase(const tl_gpu_stats *g, int i, double *temp,
                        double *power);
double tl_gpu_stats_last_t(const tl_gpu_stats *g);  /* NAN: no time yet */

/* What the statistics need to know of a GPU besides its samples. */
typedef struct tl_ident {
	const char *host;
	const char *uuid, *pci;  /* NULL when unknown; pci normalised */
	int index;               /* -1 when unknown */
	const char *model;       /* the GPU model, or NULL */
	const char *file;        /* the last file that named it */
} tl_ident;

/* Ends the n GPUs' streams and fills out[i] (from tm_gpu_profile_init's
 * state) with GPU i's entry: levels, fit (pooled over GPUs of one model,
 * else one host, where a GPU has none of its own), derate against the
 * GPU with the fastest clock, estimated marks; rounded as the profile is
 * written. 0, or TM_EINPUT with err set (a derate beyond what a profile
 * holds). */
int tl_stats_build(const tl_ident *id, tl_gpu_stats *const *st, int n,
                   tm_gpu_profile *out, tm_error *err);

/* ---- phases.c: load phases (profile --phases) ---------------------------- */

/* A phases file (docs/formats.md, "phases"): `#` comments, blank lines,
 * and a line `START END LABEL` per phase. */
#define TL_PHASES_MAX 4096          /* phases a file may hold */
#define TL_PHASE_LINE_MAX 4096      /* bytes a line may hold */
#define TL_PHASE_LABEL_MAX 64       /* bytes a label may hold */
#define TL_PHASES_MAX_BYTES (16u << 20)  /* a file's size at most: 4096
                                       lines of 4096 bytes */
/* Which samples of a phase count: from TL_PHASE_SETTLE_S after it starts
 * (in the real one-hot recording an idle neighbour came within 1 °C of
 * its final temperature 15-20 s after the load began) to
 * TL_PHASE_GUARD_S before it ends (the last second is mixed: the load
 * script stamps the end when its load has stopped); a phase counts for a
 * host when every GPU of the host has TL_PHASE_MIN_SAMPLES such samples
 * with both a temperature and a power. */
#define TL_PHASE_SETTLE_S 20.0
#define TL_PHASE_GUARD_S 1.0
#define TL_PHASE_MIN_SAMPLES 5
/* GPUs × phases whose means one run keeps at most (24 bytes each), and
 * numbers the couplings of one profile may hold (a profile is at most
 * 256 MiB) */
#define TL_MAX_PHASE_CELLS (1L << 23)
#define TL_MAX_COUPLING_NUMBERS (1L << 25)

typedef struct tl_phase {
	double start, end;      /* seconds since 1970, end > start */
	double lo, hi;          /* the samples counted: start +
	                           TL_PHASE_SETTLE_S to end − TL_PHASE_GUARD_S
	                           (lo > hi: none) */
	char label[TL_PHASE_LABEL_MAX + 1];
	long line;              /* its line in the file */
} tl_phase;

struct tl_phases {
	char *file;             /* as given, for messages and "how" */
	int n;                  /* 1 to TL_PHASES_MAX */
	tl_phase *p;            /* sorted by start; none overlaps another */
};

/* Reads a phases file (at most TL_PHASES_MAX_BYTES, a regular file):
 * 0 with *out new, or TM_EINPUT with one line "FILE:LINE: ..." (or
 * "FILE: ...") saying what was expected. tl_phases_parse does the same
 * over len bytes at text, file naming them. */
int tl_phases_read(const char *file, tl_phases **out, tm_error *err);
int tl_phases_parse(const char *file, const char *text, size_t len,
                     tl_phases **out, tm_error *err);
void tl_phases_free(tl_phases *ph);

/* What the couplings of one run came to, for the warnings and the
 * summary (docs/profile.md, "Neighbours: --phases"). */
enum tl_nocouple {
	TL_NC_FEW,       /* too few phases count for the host */
	TL_NC_MISSING,   /* a number (an idle power) or a GPU's name missing */
	TL_NC_SINGULAR,  /* a neighbour's power moves with the others' */
	TL_NC_UNCERTAIN, /* a coupling uncertain beyond TM_COUPLING_SD_MAX */
	TL_NC_PHYSICAL,  /* the joint fit is not physical */
	TL_NNC
};
struct tl_couple_report {
	const char *file;       /* the phases file */
	int nphases;            /* phases in it */
	long hosts, gpus;       /* of the profile */
	long coupled;           /* GPUs given a coupling */
	long alone;             /* GPUs alone on their host: no neighbour */
	int counted_min, counted_max; /* phases counted per host of 2 GPUs
	                           or more; -1 when there is none */
	struct {
		long gpus;          /* GPUs left without a coupling so */
		long hosts;         /* on this many hosts */
		char first[400];    /* the first of them and why */
	} no[TL_NNC];
};

/* The joint fit of every GPU of every host of 2 GPUs or more on the
 * phases that count for its host, into out[0..m) (the profile's entries,
 * id and st in the same order, a host's entries together), replacing
 * ambient_c, r_c_per_w and temp_fit_sd_c where it identifies a
 * coupling; one warning per reason GPUs get none. 0 with *rep filled, or
 * TM_EINPUT with err set (more phases count for a host than a coupling
 * holds; couplings beyond what a profile holds). */
int tl_couple(const tl_phases *ph, const tl_ident *id,
              tl_gpu_stats *const *st, int m, tm_gpu_profile *out,
              tl_couple_report *rep, tm_error *err);
/* The report as the summary's "phases" object (key "phases"). */
void tl_couple_summary(jw *w, const tl_couple_report *rep);

/* ---- lines.c: reading lines -------------------------------------------- */

#define TL_MAX_LINE (1u << 16)  /* longest line accepted, bytes */
/* Every line a reader gets is followed by a '\n', '\r' or '\0' and then
 * at least TL_SLACK readable bytes, so scans may read whole words past its
 * end (and ignore what they find there). */
#define TL_SLACK 16

struct tl_lines {
	int fd;
	const char *file;
	char *buf;
	size_t cap, start, end;
	long long base;       /* file offset of buf[0] */
	long lineno;          /* number of the line last returned */
	bool eof;
	bool unterminated;    /* the line last returned had no '\n' */
	tm_error *err;
};

/* Opens file ("-" reads stdin). Returns 0 or TM_EINPUT with err set: a
 * file that is not a regular one (a FIFO, a device, a directory) is
 * refused, as it could block or never end; stdin is read as it is. */
int tl_lines_open(tl_lines *L, const char *file, tm_error *err);
/* The same over len bytes at text, copied; file only names them. */
int tl_lines_openb(tl_lines *L, const char *file, const char *text,
                   size_t len, tm_error *err);
/* Up to n bytes from the start of the file, without consuming them. */
size_t tl_lines_peek(tl_lines *L, const char **p);
/* Returns 1 and the next line (without "\n" or "\r\n"), 0 at the end, or
 * TM_EINPUT with err set (read error, NUL byte, line over TL_MAX_LINE). */
int tl_lines_next(tl_lines *L, const char **line, size_t *len);
void tl_lines_close(tl_lines *L);
/* File offset of the next line tl_lines_next() would return. */
long long tl_lines_tell(const tl_lines *L);
/* Continues at file offset off, the start of line number lineno + 1. */
int tl_lines_seek(tl_lines *L, long long off, long lineno);
/* Does p[0..n) contain needle? */
bool tl_contains(const char *p, size_t n, const char *needle);

/* ---- parse.c: numbers and times in text -------------------------------- */

/* Parses [-]digits[.digits] at p (before e) exactly as strtod would
 * (mantissa below 2^53 and at most 22 fraction digits: one correctly
 * rounded division), else through strtod. Returns the end, or NULL when
 * there is no number. */
const char *tl_parse_num(const char *p, const char *e, double *out);
extern const double tl_pow10[23];   /* 1e0 .. 1e22, exact */
/* Parses a time: "2026/11/21 12:15:28.037", ISO 8601 with optional
 * fraction and zone ("2025-09-24T03:17:04.490Z", "... +02:00"), or
 * seconds since 1970. Returns false when it is none of these. */
bool tl_parse_time(const char *s, size_t n, double *t);
/* A duration as Prometheus writes one: whole numbers with units, largest
 * first ("2h", "1h30m", "900s", "500ms"; y w d h m s ms), or a number
 * of seconds ("900", "0.5"). Seconds into *s; false when it is none of
 * these, or not above 0, or over 10 years. */
bool tl_parse_duration(const char *str, double *s);
/* t as "2026-01-01T00:00:00.000Z" (UTC, to the millisecond). */
void tl_iso_time(char *buf, size_t cap, double t);

#endif
