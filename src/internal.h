/*
 * internal.h — declarations shared by the files of libthermap, grouped by
 * the file that defines them. Nothing here is part of the public interface.
 */
#ifndef THERMAP_INTERNAL_H
#define THERMAP_INTERNAL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <jansson.h>

#include "thermap/thermap.h"
#include "base/sha256.h"

#define TM_MAX_INPUT_BYTES (256u << 20) /* largest JSON input we read */
#define TM_MAX_GPUS_PER_NODE 1024       /* a sanity bound on hostile input */
#define TM_MAX_NODES 65536
#define TM_MAX_RANKS (1 << 20)

/* util.c */
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
/* Writes data to path through a temporary beside it (tm_out). */
int tm_write_file_atomic(const char *path, const char *data, size_t len,
                         tm_error *err);
char *tm_normalise_pci(const char *s);
bool tm_valid_host(const char *s);
bool tm_valid_uuid(const char *s);
int tm_levenshtein(const char *a, const char *b);
/* qsort comparator of doubles, ascending */
int tm_cmp_dbl(const void *a, const void *b);
/* cluster.c */
int tm_parse_link(const char *s, int *nv);

typedef struct strbuf {
	char *s;     /* NUL-terminated contents */
	size_t len;  /* bytes used, without the NUL */
	size_t cap;  /* bytes allocated */
} strbuf;
void sb_init(strbuf *b);
void sb_free(strbuf *b);
void sb_add(strbuf *b, const char *s);
void sb_addf(strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sb_add_text(strbuf *b, const char *s);
/* Safe writes (util.c; docs/formats.md, "Writing and replacing").
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

/* jsonin.c: reading validated fields with JSON paths in messages */
typedef struct jin {
	const char *file;  /* file name for messages */
	tm_error *err;     /* first error */
} jin;
enum { JF_REQ = 1, JF_NULL = 2 };  /* required; null allowed */
int jin_load(const char *file, const char *format, json_t **root,
             char sha[72], tm_error *err);
int jin_loadb(const char *file, const char *text, size_t len,
              const char *format, json_t **root, tm_error *err);
void jin_unknown(const jin *J, json_t *obj, const char *path,
                 const char *const *known);
int jin_fail(const jin *J, const char *path, const char *key,
             const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int jin_obj(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, json_t **out);
int jin_arr(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, json_t **out);
int jin_num(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, double lo, double hi, double *out);
int jin_int(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, long lo, long hi, int *out);
int jin_str(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, char **out);
int jin_bool(const jin *J, json_t *obj, const char *path, const char *key,
             int flags, bool *out);

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
void jw_int(jw *w, const char *key, long v);
void jw_bool(jw *w, const char *key, bool v);
void jw_null(jw *w, const char *key);
void jw_escape(strbuf *b, const char *s);

/* problem.c: the placement problem in flat arrays */
typedef struct tm_hop {
	int from;       /* pipeline rank that sends */
	int to;         /* pipeline rank that receives */
	double act_mib; /* MiB each rank sends per microbatch */
} tm_hop;

struct tm_problem {
	const tm_cluster *c;  /* borrowed */
	const tm_job *job;    /* borrowed */
	const tm_policy *pol; /* borrowed */
	const tm_profile *prof_doc; /* borrowed: the profile it was built on */
	bool allow_unprofiled;  /* as built, for tm_problem_clone */
	bool uneven_hosts;      /* as built, for tm_problem_clone */
	char profile_sha256[72]; /* of the profile file */
	int nhost;            /* hosts in the cluster */
	int ngpu;             /* GPUs in the cluster, flattened */
	int *gpu_host;        /* flat GPU → host */
	int *gpu_pos;         /* flat GPU → position in its host */
	int *host_first;      /* host → first flat GPU */
	/* per flat GPU, from the profile */
	double *derate;       /* ≥ 1 */
	double *t_wait;       /* temperature of a rank that waits, °C */
	double *t_slope;      /* °C per unit busy fraction */
	double *p_wait;       /* power of a rank that waits, W (NAN) */
	double *p_slope;      /* W per unit busy fraction */
	double *t_wait_sd;    /* °C: t_wait's uncertainty from p_wait's */
	double *t_fit_sd;     /* °C: the thermal fit's residual spread */
	double *derate_sd;    /* derate's standard uncertainty */
	double *headroom;     /* headroom_c, NAN when unknown */
	double *mem_gib;      /* device memory, NAN when unknown */
	int *prof;            /* profile entry, -1 when unprofiled */
	double *net_bw;       /* nhost*nhost GB/s between hosts */
	/* ranks */
	int nranks;           /* world size */
	int nproc;            /* ranks per node */
	int nnodes;           /* node ranks */
	int (*coord)[TM_NDIM];/* rank → coordinates */
	int *rank_stage;      /* rank → pipeline rank */
	int *rank_rep;        /* rank → data-parallel replica */
	int *rank_member;     /* rank → position within its stage instance */
	int nmember;          /* tp·cp ranks per stage instance */
	int nrep;             /* data-parallel replicas (dp) */
	int npp;              /* pipeline ranks */
	int *inst_rank;       /* (rep*npp + stage)*nmember + member → rank */
	double *work;         /* pipeline rank → fwd+bwd ms per microbatch */
	double *fwd, *bwd;    /* pipeline rank → fwd / bwd ms per microbatch */
	int nhops;            /* activation hops per microbatch */
	tm_hop *hops;         /* the hops, chunk j → chunk j+1 */
	double *mem_need;     /* pipeline rank → GiB a rank needs, NAN = unknown */
	int *usable;          /* hosts with at least nproc GPUs, in file order */
	int nusable;          /* number of them */
	int *ref_gpu;         /* rank → flat GPU of the reference placement:
	                         torchrun's, or a previous plan's (replan),
	                         -1 where that GPU is gone */
	bool ref_custom;      /* ref_gpu is a previous plan's */
	int ref_lost;         /* ranks whose reference GPU is gone */
	double move_cost_ms;  /* replan: the time criterion adds this per move */
	int *hint;            /* replan: a placement the solver must weigh
	                         (the previous one, or its repair), or NULL */
	int ncrit;            /* criteria: the policy's, wear after peak_temp
	                         and moves last when it does not name them */
	int crit[TM_MAX_CRIT];/* enum tm_crit, lexicographic */
	bool uniform_derate;  /* every GPU has the same derate */
	bool uniform_links;   /* every pair of GPUs in a host has the same
	                         bandwidth, and there is one host */
	char **notes;         /* assumptions the plan must state */
	int nnotes;           /* number of notes */
};

double tm_bw(const tm_problem *pb, int g, int h);
bool tm_nvlink(const tm_problem *pb, int g, int h);
bool tm_fits(const tm_problem *pb, int rank, int g);
double tm_rank_busy(const tm_problem *pb, int rank, int g, double t_iter);
double tm_rank_temp(const tm_problem *pb, int rank, int g, double t_iter);
double tm_rank_power(const tm_problem *pb, int rank, int g, double t_iter);
void tm_identity(const tm_problem *pb, int *flat);
/* tm_problem_new; with uneven_hosts, the hosts of a multi-node job may
 * differ in GPU count (replan: GPUs gone from a host), and a host with
 * fewer than nproc_per_node GPUs is not used. */
int tm_problem_open(const tm_cluster *c, const tm_profile *p, const tm_job *j,
                    const tm_policy *pol, bool allow_unprofiled,
                    bool uneven_hosts, tm_problem **out, tm_error *err);
/* Makes ref (rank → flat GPU, -1 where gone) the reference of the moves
 * criterion, prices each move at move_cost_ms in the time criterion, and
 * asks the solvers to weigh hint (may be NULL) as a candidate. */
void tm_problem_set_reference(tm_problem *pb, const int *ref,
                              double move_cost_ms, const int *hint);
void tm_problem_note(tm_problem *pb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same problem under another policy (borrowed by the new problem),
 * with the same reference and move prices. */
int tm_problem_clone(const tm_problem *pb, const tm_policy *pol,
                     tm_problem **out, tm_error *err);

/* profile.c: a profile's text (of a window of telemetry) with what the
 * window could not measure taken from an earlier profile of the same GPUs
 * (base_text): the idle level always, and for a GPU never at full load
 * in the window its load level, headroom, clocks, derate and fit too
 * (not with idle_only). The fields taken are listed per GPU in
 * "from_baseline" (not with idle_only). Returns new text, to be freed;
 * *nfilled: how many fields were taken. */
char *tm_profile_fill(const char *text, const char *base_text, bool idle_only,
                      int *nfilled);

/* planread.c: a plan directory's plan.json, read for diff and replan.
 * One entry of "ranks"; strings borrowed from the document. */
typedef struct tm_plan_rank {
	const char *host;
	const char *uuid;      /* NULL when null or absent */
	int gpu;               /* gpu_index */
	int node, local;       /* node_rank, local_rank */
	int coord[TM_NDIM];    /* tp, cp, ep, dp, pp */
	double temp;           /* predicted_temp_c, NAN when unknown */
} tm_plan_rank;

typedef struct tm_plan_doc {
	char *file;            /* DIR/plan.json, for messages */
	json_t *root;          /* owns every borrowed string */
	const char *id;
	const char *job;       /* inputs.job */
	int n;                 /* world size */
	tm_plan_rank *r;       /* n ranks */
	const char *previous;  /* replan.previous, NULL when none */
	const char **why;      /* rank → replan.moves[].why, NULL when none */
} tm_plan_doc;

/* Reads DIR/plan.json (TM_EINPUT with one line naming the file and the
 * JSON path when it is not a plan); free with tm_plan_doc_free. */
int tm_plan_doc_load(const char *dir, tm_plan_doc *P, tm_error *err);
/* The same from len bytes of plan.json text; name stands for the file. */
int tm_plan_doc_loadb(const char *name, const char *text, size_t len,
                      tm_plan_doc *P, tm_error *err);
void tm_plan_doc_free(tm_plan_doc *P);

/* plan.c: tm_plan_write with more of plan.json: extra (may be NULL)
 * writes members of the top-level object after "predicted"; id (may be
 * NULL) gets the plan id. */
typedef void (*tm_plan_extra)(jw *w, void *ud);
/* Whether dir may be replaced by a plan (absent, an empty directory, or a
 * thermap plan holding nothing else): 0, TM_EUSAGE naming what is in the
 * way, or TM_EINTERNAL when its parent cannot be opened. tm_plan_write
 * checks again when it replaces it. */
int tm_plan_check_target(const char *dir, tm_error *err);
int tm_plan_write_ex(const tm_problem *pb, const tm_solution *sol,
                     tm_plan_extra extra, void *ud, const char *dir,
                     char id[17], tm_error *err);
/* The plan id of a placement (16 hex digits). */
void tm_plan_id(const tm_problem *pb, const int *flat, char id[17]);
/* The "why" of pipeline rank s in placement flat, at iteration time t;
 * base: the placement to compare temperatures with (torchrun's). */
void tm_why_stage(const tm_problem *pb, const int *flat, const int *base,
                  double t, int s, strbuf *b);

/* model.c: the prediction model of docs/model.md */
double tm_hop_ms(const tm_problem *pb, double act_mib, int g, int h);
double tm_eval_flat(const tm_problem *pb, const int *flat, double t_ref,
                    tm_eval *ev);
double tm_inst_ms(const tm_problem *pb, const int *flat, int rep, int stage);
double tm_hop_inst_ms(const tm_problem *pb, const int *flat, int rep,
                      const tm_hop *hop);
double tm_rep_ms(const tm_problem *pb, const int *flat, int d);
/* The data-parallel gradient all-reduce (docs/model.md, 4): the MiB a rank
 * of pipeline rank s all-reduces, one ring edge's time from GPU g to GPU h
 * for that volume, and the placement's all-reduce time, the slowest ring's
 * (0 with dp = 1 or no gradients). */
double tm_grad_mib(const tm_problem *pb, int s);
double tm_ring_edge_ms(const tm_problem *pb, double grad_mib, int g, int h);
double tm_allreduce_ms(const tm_problem *pb, const int *flat);
bool tm_constraints_ok(const tm_problem *pb, const int *flat, double t_ref,
                       char *why, size_t whylen);
int tm_explain_infeasible(const tm_problem *pb, tm_error *err);
/* lexicographic order with tolerance: 1 if a is a better than b, 0 if not */
int tm_eval_better(const tm_problem *pb, const tm_eval *a, const tm_eval *b);
double tm_crit_value(const tm_eval *ev, int crit);
/* One GPU's share of the wear criterion at temperature t (°C): 1 at
 * 50 °C, twice as much for every 10 °C more (docs/model.md, section 7). */
double tm_wear_of(double t);
double tm_crit_bound(const tm_problem *pb, int crit, double best);

/* decide.c: the evidence rule (docs/model.md, section 16) */
/* A temperature prediction's standard uncertainty on GPU g at busy
 * fraction busy (°C). */
double tm_temp_sd(const tm_problem *pb, int g, double busy);
/* The gains of cand over ref, each with its uncertainty. */
void tm_gain_of(const tm_problem *pb, const int *ref, const int *cand,
                tm_gain *g);
/* A loss on time or peak that its uncertainty does not cover. */
bool tm_gain_lost(const tm_gain *g);
/* At rate °C of peak per 1 % of time (NAN: none), is what g wins worth
 * what it loses, each at the unfavourable end of its uncertainty? */
bool tm_gain_worth(const tm_gain *g, double rate);
/* "1.86 ± 0.50 % faster, peak 3.8 ± 1.7 °C hotter, wear as if …" */
void tm_gain_text(const tm_gain *g, strbuf *b);
/* Weighs the solver's placement in sol against the problem's reference
 * (torchrun's placement) and fills sol->rule; when the rule keeps the
 * reference, or a placement without losses replaces a trade, sol's
 * placement and evaluation become that one. */
void tm_decide(const tm_problem *pb, tm_solution *sol);

/* sim.c: the event-level simulator (docs/model.md, section 14). Per rank
 * (one rank per GPU): clock factor (1 = full clock), busy fraction, power,
 * temperature and the compute time run throttled, per iteration. */
typedef struct tm_sim {
	double iteration_ms;  /* the slowest replica's flush, then all-reduce */
	double flush_ms;      /* the slowest replica's last pass */
	double allreduce_ms;  /* the gradient all-reduce (section 4) */
	double bubble;        /* idle share of the instances' time to flush */
	double energy_j;      /* the GPUs in use, one iteration */
	double peak_temp_c;   /* the hottest GPU in use */
	double throttle_total_ms; /* Σ of throttle_ms */
	int rounds;           /* thermal feedback rounds played */
	bool converged;       /* the clocks settled */
	double *clock, *busy, *power_w, *temp_c, *throttle_ms;
} tm_sim;
/* Plays one iteration of flat; with feedback, until the clocks of GPUs
 * that would pass their slowdown temperature settle. −1 on a schedule
 * that cannot proceed (an internal error), −2 for an interleaved schedule
 * whose microbatches are not a multiple of pp, −3 when microbatches ×
 * chunks exceed 4·10⁶. out is to be freed with tm_sim_free in any case. */
int tm_simulate(const tm_problem *pb, const int *flat, bool feedback,
                tm_sim *out);
void tm_sim_free(tm_sim *s);

/* solve.c: places node n on host h, whose GPUs are all free: tensor-
 * parallel groups (or ranks) in decreasing work on the best free GPUs */
bool tm_greedy_node(const tm_problem *pb, int n, int h, int *flat);

/* solve.c: pairwise exchanges of two ranks' GPUs (and moves to idle GPUs)
 * inside each host, each kept when keep(ud, flat) says so (it sees the
 * changed placement), for at most passes rounds while one is kept */
void tm_swap_descent(const tm_problem *pb, int *flat, int passes,
                     bool (*keep)(void *ud, const int *flat), void *ud);

/* solve_greedy.c, solve_brute.c, solve_ilp.c: backends of tm_solve */
int tm_solve_greedy(const tm_problem *pb, int *flat);
int tm_solve_brute(const tm_problem *pb, int *flat, double *t_ref,
                   double *best, tm_error *err);
int tm_solve_ilp(const tm_problem *pb, const int *warm, int *flat,
                 tm_solution *sol, tm_error *err);
bool tm_ilp_direct(const tm_problem *pb);

/* bound.c: lower bounds for any size (docs/model.md, "Bounds") */
double tm_time_lower_bound(const tm_problem *pb);
double tm_peak_lower_bound(const tm_problem *pb, double t_ref);
/* The speeds host h offers to instances of size GPUs: each instance is as
 * slow as its slowest GPU, so with the host's derates sorted, every
 * size-th one. Writes them to out (at most ngpus / size); returns how
 * many. */
int tm_host_slots(const tm_problem *pb, int h, int size, double *out);
/* Each replica's hops at the least they can cost: each at the best
 * bandwidth inside a host or between two, as rank numbers decide (nrep
 * values). */
void tm_replica_hops_lower(const tm_problem *pb, double *out);
/* Every stage instance's ranks lie in one node rank. */
bool tm_instances_in_nodes(const tm_problem *pb);

/* solve_host.c: the host decomposition (docs/model.md, section 10) */
bool tm_host_decomposable(const tm_problem *pb);
/* Fills flat and sol's status, formulation, best, t_ref_ms, objective,
 * bound and gap; warm (may be NULL) competes for the time phase. Returns
 * -1 when it has no placement to offer. */
int tm_solve_host(const tm_problem *pb, const int *warm, int *flat,
                  tm_solution *sol);

/* plan.c */
void tm_flat_to_placement(const tm_problem *pb, const int *flat,
                          tm_placement *pl);
void tm_placement_to_flat(const tm_problem *pb, const tm_placement *pl,
                          int *flat);
char *tm_plan_summary(const tm_problem *pb, const tm_solution *sol);

#endif
