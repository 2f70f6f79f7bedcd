/*
 * format.h — the documents of docs/formats.md read as untrusted input:
 * the JSON edge (jsonin.c: validated fields, JSON paths in messages),
 * the cluster, profile, job, policy and plan.json loaders (planread.c,
 * and plancheck.c apart for check), the profile writer and a profile
 * filled from a baseline, the fit of a profile entry's coupling
 * (coupling.c), and Megatron's layout strings (layout.c).
 *
 * Layer: above base. Only this folder (and the query_range reader of
 * telemetry/) includes <jansson.h>; this header names jansson's json_t
 * only as an incomplete struct, so what includes it does not see jansson.
 */
#ifndef THERMAP_FORMAT_H
#define THERMAP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"

struct json_t;  /* jansson's; complete in the files that include it */

/* job.c: the names of enum tm_dim ("tp", "cp", "ep", "dp", "pp"), the
 * one spelling of job files, plans and messages */
extern const char *const tm_dim_names[TM_NDIM];

/* cluster.c */
int tm_parse_link(const char *s, int *nv);


/* jsonin.c: reading validated fields with JSON paths in messages */
typedef struct jin {
	const char *file;  /* file name for messages */
	tm_error *err;     /* first error */
} jin;
enum { JF_REQ = 1, JF_NULL = 2 };  /* required; null allowed */
int jin_load(const char *file, const char *format, struct json_t **root,
             char sha[72], tm_error *err);
int jin_loadb(const char *file, const char *text, size_t len,
              const char *format, struct json_t **root, tm_error *err);
void jin_unknown(const jin *J, struct json_t *obj, const char *path,
                 const char *const *known);
int jin_fail(const jin *J, const char *path, const char *key,
             const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int jin_obj(const jin *J, struct json_t *obj, const char *path, const char *key,
            int flags, struct json_t **out);
int jin_arr(const jin *J, struct json_t *obj, const char *path, const char *key,
            int flags, struct json_t **out);
int jin_num(const jin *J, struct json_t *obj, const char *path, const char *key,
            int flags, double lo, double hi, double *out);
int jin_int(const jin *J, struct json_t *obj, const char *path, const char *key,
            int flags, long lo, long hi, int *out);
int jin_str(const jin *J, struct json_t *obj, const char *path, const char *key,
            int flags, char **out);
int jin_bool(const jin *J, struct json_t *obj, const char *path, const char *key,
             int flags, bool *out);


/* profile.c: the entries of a profile as the builder (telemetry/stats.c),
 * --baseline and calibrate make them. init: every number null, index -1,
 * basis unset; clear: frees what it holds, leaving it zeroed. round: every
 * number to the decimals the writer writes it with, so that an entry the
 * builder made is what a reader of its text gets. num: the number field
 * (enum tm_profile_field) of g. mark: field's "estimated" (or
 * "calibrated") line, how (NULL drops it). took: appends name to
 * "from_baseline"; untake drops it from there. */
void tm_gpu_profile_init(tm_gpu_profile *g);
/* x as the profile writer writes it with d decimals, read back. */
double tm_round_as_written(double x, int d);
void tm_gpu_profile_clear(tm_gpu_profile *g);
void tm_gpu_profile_round(tm_gpu_profile *g);
double *tm_gpu_profile_num(tm_gpu_profile *g, int field);
void tm_gpu_profile_mark(tm_gpu_profile *g, bool calibrated, int field,
                         const char *how);
void tm_gpu_profile_took(tm_gpu_profile *g, const char *name);
/* "coupling" (docs/formats.md): at most this many sources and points. */
#define TM_COUPLING_MAX_FROM 1024
#define TM_COUPLING_MAX_POINTS 256
/* A coupling's deep copy (NULL for NULL), and its release. */
tm_coupling *tm_coupling_dup(const tm_coupling *c);
void tm_coupling_free(tm_coupling *c);
void tm_gpu_profile_untake(tm_gpu_profile *g, const char *name);

/* profile.c: a profile (of a window of telemetry) with what the window
 * could not measure taken from an earlier profile of the same GPUs (base):
 * the idle level always, and for a GPU never at full load in the window
 * its load level, headroom, clocks, derate and fit too (not with
 * idle_only). The fields taken are listed per GPU in "from_baseline" (not
 * with idle_only). Returns how many fields were taken. tm_profile_fill
 * does the same on texts (that thermap wrote or already read: it warns of
 * nothing) and returns the new text, to be freed; *nfilled: the count. */
int tm_profile_fill_from(tm_profile *p, const tm_profile *base,
                         bool idle_only);
char *tm_profile_fill(const char *text, const char *base_text, bool idle_only,
                      int *nfilled);


/* coupling.c: the joint steady-state fit of one GPU and the other GPUs of
 * its host (docs/profile.md, "Neighbours: --phases"), on the steady states
 * of a coupling (its points):
 *
 *     T = a + r·P + Σ_k c_k·(P_k − idle[k]),   every c_k ≥ 0,
 *
 * idle[k] being source k's power_idle_w (nfrom numbers). Least squares;
 * a negative c_k is held at 0 (the most negative first, then a refit,
 * until none is negative). Identified only with at least one point more
 * than unknowns (2 + nfrom), a design whose columns are not dependent
 * (tm_lsq_solve's pivot test), every source's standard uncertainty at
 * most TM_COUPLING_SD_MAX, and 0 < r ≤ 10 °C/W, −50 ≤ a ≤ 200 °C, every
 * c_k ≤ 1 °C/W. The residual SD s is √(RSS / (points − free
 * coefficients)), at least TM_FIT_SD_FLOOR_C; each c_k's uncertainty is
 * s·√((XᵀX)⁻¹)_kk of the unconstrained design, also where c_k is held at
 * 0. Fills c->from[k].c_per_w and sd_c_per_w (rounded to the 5 decimals
 * the profile writer writes; 0 and NAN when not identified) and *fit
 * (ambient, slope and s unrounded; why and kind when not identified).
 * Returns fit->ok. */
enum tm_fit_kind {
	TM_FIT_OK,           /* identified */
	TM_FIT_FEW,          /* too few steady states, or no neighbour */
	TM_FIT_NOT_FINITE,   /* a number is missing or not finite */
	TM_FIT_SINGULAR,     /* a column moves with the others: XᵀX singular */
	TM_FIT_UNCERTAIN,    /* a neighbour's c_k uncertain beyond the bound */
	TM_FIT_NOT_PHYSICAL, /* a, r or a c_k outside what a GPU can be */
	TM_FIT_NKINDS
};
#define TM_FIT_SD_FLOOR_C 0.2     /* °C: least residual SD a fit claims */
#define TM_COUPLING_SD_MAX 0.005  /* °C/W: most uncertainty of a c_k */
typedef struct tm_thermal_fit {
	double ambient_c;    /* a, °C */
	double r_c_per_w;    /* the GPU's own slope r, °C per W */
	double sd_c;         /* residual standard deviation s, °C */
	bool ok;             /* identified */
	int kind;            /* enum tm_fit_kind */
	char why[200];       /* when not identified: why, one line */
} tm_thermal_fit;
bool tm_coupling_fit(tm_coupling *c, const double *idle, tm_thermal_fit *fit);


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
	struct json_t *root;          /* owns every borrowed string */
	const char *id;
	const char *job;       /* inputs.job */
	int n;                 /* world size */
	tm_plan_rank *r;       /* n ranks */
	const char *previous;  /* replan.previous, NULL when none */
	const char **why;      /* rank → replan.moves[].why, NULL when none */
} tm_plan_doc;

/* Reads DIR/plan.json (TM_EINPUT with one line naming the file and the
 * JSON path when it is not a plan); free with tm_plan_doc_clear. */
int tm_plan_doc_load(const char *dir, tm_plan_doc *P, tm_error *err);
/* The same from len bytes of plan.json text; name stands for the file. */
int tm_plan_doc_loadb(const char *name, const char *text, size_t len,
                      tm_plan_doc *P, tm_error *err);
void tm_plan_doc_clear(tm_plan_doc *P);
/* The layers per chunk a plan chose ("layers": {"chunks": [...]}, written
 * by a policy that changes layers): *chunks (to be freed) and *n, or NULL
 * and 0 when the plan has none; TM_EINPUT naming the field when it is not
 * an array of 1 to TM_MAX_RANKS layer counts (0 to 100000). */
int tm_plan_doc_chunks(const tm_plan_doc *P, int **chunks, int *n,
                       tm_error *err);
/* Whether len bytes of text are a JSON object whose "format" is
 * thermap.plan/N: what may be replaced as a plan (no message). */
bool tm_plan_text_is_plan(const char *text, size_t len);


/* ---- plancheck.c: plan.json as `thermap check` reads it ----------------
 * Apart from planread.c on purpose: check shares no reading code with the
 * commands that start from a plan. Each value as the file has it, with
 * what a reader of JSON says of one absent or of another type (below), so
 * that check alone decides what is wrong, in its order and words. Every
 * string is a copy (NULL: absent or not a string); a count is -1 for what
 * is not an array. */

/* One entry of "ranks"; an integer that is not one reads 0. */
typedef struct tm_pc_rank {
	long long rank;          /* "rank" */
	char *host;
	char *uuid;
	bool gpu_index_ok;       /* "gpu_index" is an integer */
	long long gpu_index;
	long long node_rank, local_rank;
	long long coord[TM_NDIM];/* "tp", "cp", "ep", "dp", "pp" */
} tm_pc_rank;

typedef struct tm_pc_inputs {
	bool present;            /* "inputs" is an object */
	char *cluster, *job;     /* inputs.cluster, inputs.job (hashes) */
} tm_pc_inputs;

typedef struct tm_pc_constraints {
	bool present;            /* "constraints" is an object */
	bool tp_nvlink, pp_nvlink;  /* true, not merely present */
	bool max_moves_ok;       /* max_moves is an integer */
	long long max_moves;     /* its value, else 0 */
	double max_temp_c;       /* °C; NAN when not a number */
} tm_pc_constraints;

typedef struct tm_pc_layers {
	bool present;            /* "layers" is there (of any type) */
	long n;                  /* layers.chunks entries, -1 */
	long long *chunks;       /* each; -1 for one that is no integer */
	char *layout;            /* pipeline_model_parallel_layout */
} tm_pc_layers;

/* "predicted": a number that is not one reads 0. */
typedef struct tm_pc_predicted {
	double iteration_ms, peak_temp_c;
	bool allreduce_present;  /* allreduce_ms is there */
	bool allreduce_ok;       /* and is a number */
	double allreduce_ms;
	bool alltoall_present;   /* alltoall_ms is there */
	bool alltoall_ok;        /* and is a number */
	double alltoall_ms;
} tm_pc_predicted;

/* "decision": a number that is not one reads NAN. */
typedef struct tm_pc_decision {
	char *verdict;
	bool ref_breaks;         /* reference_breaks_policy is true */
	double time_pct, time_sd_pct, peak_c, peak_sd_c;  /* gain.* */
	double min_time_pct, min_peak_c;                  /* min_gain.* */
	double exchange_c_per_pct;
} tm_pc_decision;

/* One entry of replan.moves. */
typedef struct tm_pc_move {
	long long rank;          /* -1 when not an integer */
	char *to;                /* "host:index" */
} tm_pc_move;

typedef struct tm_pc_replan {
	bool present;            /* "replan" is there (of any type) */
	char *previous;          /* the plan id it replaces */
	long nfrom;              /* replan.from entries, -1 */
	char **from;             /* each "host:index", NULL when no string */
	long nmoves;             /* replan.moves entries, -1 */
	tm_pc_move *moves;
} tm_pc_replan;

typedef struct tm_plancheck {
	char *id;
	tm_pc_inputs inputs;
	tm_pc_constraints cons;
	tm_pc_layers layers;
	long nranks;             /* "ranks" entries, -1 */
	tm_pc_rank *ranks;
	tm_pc_predicted pred;
	tm_pc_decision dec;
	tm_pc_replan replan;
} tm_plancheck;

/* Reads file into P: TM_EINPUT (jin_load's message) only when it is not a
 * JSON thermap.plan, else 0 whatever it holds. Release with
 * tm_plancheck_clear. */
int tm_plancheck_load(const char *file, tm_plancheck *P, tm_error *err);
void tm_plancheck_clear(tm_plancheck *P);


/* ---- job.c: the job's "measured" section (docs/formats.md, job) ------- */

/* One rank's compute per microbatch in the run that measured it. */
typedef struct tm_measured_rank {
	double fwd_ms;       /* median forward compute per microbatch, ms */
	double bwd_ms;       /* median backward compute per microbatch, ms */
	double sd_ms;        /* sd over iterations of fwd + bwd per
	                        microbatch, ms; NAN when not given */
	double iterations;   /* measured iterations; NAN when not given */
	int pid;             /* its process id on its host; 0 when not given */
} tm_measured_rank;

typedef struct tm_job_measured {
	double iteration_ms; /* the run's median iteration, ms; NAN = none */
	double start_unix_s; /* the first rank ready, before any work on a
	                        GPU, s since 1970; NAN = not given */
	double end_unix_s;   /* the last rank finished, s; NAN = not given */
	int nranks;          /* world size when ranks are given, else 0 */
	bool pids;           /* every rank gives its pid */
	tm_measured_rank *ranks; /* rank order, or NULL */
} tm_job_measured;

/* Reads the "measured" section of the job file j was loaded from (the
 * file must still have j's bytes: its hash is checked). m->nranks is 0
 * and iteration_ms NAN when the job has none. Free with
 * tm_job_measured_clear. tm_job_load validates the same section with the
 * same code, so every command rejects a malformed one. */
int tm_job_measured_load(const tm_job *j, tm_job_measured *m, tm_error *err);
void tm_job_measured_clear(tm_job_measured *m);


/* ---- layout.c: Megatron-Core `--pipeline-model-parallel-layout` strings
 * and the `--decoder-first/last-pipeline-num-layers` uneven split
 * (docs/layout.md). Stage order is Megatron's: stage i holds virtual chunk
 * i / PP of pipeline rank i % PP. No global state, no printing; errors
 * come back as one line in a caller's buffer. */

/* Most layers plus '|' separators a layout may expand to; parse refuses
 * more, so a hostile "t*999999999" costs no memory or time. */
#define TM_LAYOUT_MAX 1000000

/* One stage. Within a stage Megatron builds layers in the order E, t, m, L
 * whatever the string says, and its checks refuse any other order, so
 * counts keep everything that matters. */
typedef struct tm_layout_stage {
	int emb;   /* E: embedding layers (count) */
	int dec;   /* t: transformer decoder layers (count) */
	int mtp;   /* m: multi-token-prediction layers (count) */
	int loss;  /* L: loss layers (count) */
} tm_layout_stage;

typedef struct tm_layout {
	int nstages;          /* PP x VPP stages, in Megatron's order (above) */
	tm_layout_stage *st;  /* nstages entries, owned; free with tm_layout_clear() */
} tm_layout;

/* Parses s into *out (overwritten, not freed first). Returns 0, or -1 with
 * out empty and a one-line message "column N: what was expected" in err
 * (1-based column of the byte at fault; N = strlen(s) + 1 at the end). */
int tm_layout_parse(const char *s, tm_layout *out, char *err, size_t errlen);

/* Frees what l owns and empties it; l may be NULL or already empty. */
void tm_layout_clear(tm_layout *l);

/* Returns a new canonical string for l (free with free()): runs of a layer
 * as x*N from N = 3, runs of identical stages as (s|)*N where that is
 * shorter. NULL for a layout parse could not have produced (no stage, one
 * empty stage, a negative count, past TM_LAYOUT_MAX) or out of memory. */
char *tm_layout_format(const tm_layout *l);

/* Builds into *out the layout for pp * vpp virtual stages holding layers[i]
 * decoder layers (i in stage order above): E in the first stage, m (when
 * mtp) and L in the last. Returns 0, or -1 for bad arguments or out of
 * memory (out left empty). */
int tm_layout_from_layers(int pp, int vpp, const int *layers, bool mtp, tm_layout *out);

/* Checks l as Megatron's validate_layer_layout does, for a model of
 * num_layers decoder layers and mtp_layers MTP layers run with pp x vpp
 * stages. Returns 0, or -1 with one line in err. */
int tm_layout_check(const tm_layout *l, int pp, int vpp, int num_layers, int mtp_layers,
		    char *err, size_t errlen);

/* Megatron's uneven split: fills layers[pp * vpp] (stage order) with the
 * decoder layers per virtual stage that num_layers get from
 * --decoder-first-pipeline-num-layers first and
 * --decoder-last-pipeline-num-layers last (-1: flag not given). Returns 0,
 * or -1 where Megatron refuses the combination. */
int tm_layout_split_flags(int pp, int vpp, int num_layers, int first, int last, int *layers);

/* Whether layers[pp * vpp] (stage order) is what Megatron builds with the
 * default split or the two flags. Returns 1 and sets *first and *last
 * (-1: flag not needed; the fewest flags win, first before last), or 0
 * when no flag values give these counts (bad arguments also give 0). */
int tm_layout_uneven_flags(int pp, int vpp, const int *layers, int *first, int *last);


#endif
