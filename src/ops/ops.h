/*
 * ops.h — the library half of each command: the plan directory
 * (plan.c) and its reasons in words (explain.c), replan, check, diff,
 * compare and its picture (svg.c), calibrate; the registry of their
 * report formats (output.c, enum tm_format in thermap.h).
 *
 * Layer: above solve, model, telemetry, topo, format and base.
 */
#ifndef THERMAP_OPS_H
#define THERMAP_OPS_H

#include "solve/solve.h"
#include "telemetry/telemetry.h"

/* plan.c: tm_plan_write with more of plan.json: extra (may be NULL)
 * writes members of the top-level object after "decision"; id (may be
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
/* launch.c: the launcher files of a plan directory (docs/launching.md):
 * entry.sh (its only variable part is the plan id), slurm.hostfile,
 * mpi.rankfile, deepspeed.hostfile, megatron.args and launch.txt. */
#define TM_NLAUNCH 6
/* Their names, in the order plan writes them: entry.sh first (the one
 * executable), launch.txt last (the one that is only for people). */
extern const char *const tm_launch_files[TM_NLAUNCH];
void tm_launch_entry(const char *id, strbuf *b);
void tm_launch_slurm_hostfile(const tm_problem *pb, const int *flat,
                              strbuf *b);
void tm_launch_rankfile(const tm_problem *pb, const int *flat,
                        const char *id, strbuf *b);
void tm_launch_ds_hostfile(const tm_problem *pb, const int *flat,
                           const char *id, strbuf *b);
void tm_launch_text(const tm_problem *pb, const int *flat, const char *id,
                    strbuf *b);
/* Megatron-LM's rank order for the job: 0 its default, 1 with
 * --use-tp-pp-dp-mapping, -1 neither; and its arguments file. */
int tm_megatron_order(const tm_job *j);
void tm_launch_megatron(const tm_problem *pb, strbuf *b);
/* The plan id of a placement (16 hex digits). */
void tm_plan_id(const tm_problem *pb, const int *flat, char id[17]);
/* The Megatron-Core arguments for the layers per chunk of a relayered
 * job: the layout string always (to be freed; NULL when it cannot be
 * built), the two uneven-split flags when they can say the same
 * (docs/layout.md): -1 for a flag not needed, -2 in both when the flags
 * cannot. */
char *tm_megatron_layers(const tm_job *j, int *first, int *last);


/* explain.c: the reasons, in words */
/* Every pipeline rank's ranks, in rank order, gathered in one pass: those
 * of stage s are by[(*at)[s]] to by[(*at)[s + 1] - 1]. Returns by; the
 * caller frees by and *at. */
int *tm_stage_ranks(const tm_problem *pb, int **at);
/* The "why" of pipeline rank s in placement flat, at iteration time t,
 * from its ranks sr[0..nsr) (in rank order, as tm_stage_ranks gives
 * them); base: the placement to compare temperatures with (torchrun's). */
void tm_why_stage(const tm_problem *pb, const int *flat, const int *base,
                  double t, int s, const int *sr, int nsr, strbuf *b);
/* Why the evidence rule gave no verdict (TM_VERDICT_NONE) for pb. */
const char *tm_why_no_verdict(const tm_problem *pb);
/* What `thermap plan` prints: the solver, the predictions against the
 * identity placement, the decision, each stage's why, the layers chosen
 * and the notes; to be freed. */
char *tm_plan_summary(const tm_problem *pb, const tm_solution *sol);


/* ---- replay.c: compare --replay's windows ------------------------------- */

/* A recording cut into windows of window seconds from its start, each as
 * a profile (NULL where the model cannot plan on it, with the reason in
 * why[k]); span: the longest file's span. TM_EINPUT when the recording
 * cannot be read or spans less than two windows. */
typedef struct tm_windows {
	double span;
	int n;
	tm_profile **prof;
	char **why;
} tm_windows;
int tm_windows_read(const tm_cluster *c, const tm_tele_input *in, int nin,
                    double window, const tm_job *j, const tm_policy *pol,
                    bool allow, tm_windows *W, tm_error *err);
void tm_windows_clear(tm_windows *W);

/* ---- diff.c: `thermap diff OLD_DIR NEW_DIR` ------------------------------ */
/* Compares the placements of two plan directories. fmt: an enum tm_format
 * of TM_FORMATS_DIFF (text or json; TM_EUSAGE for another). *out: the
 * report (to be freed). Errors: TM_EINPUT (4) for an unreadable,
 * malformed or mismatched plan, with one line naming the file and place. */
int tm_diff_plans(const char *old_dir, const char *new_dir, int fmt,
                  char **out, tm_error *err);
/* The same with the command line's former numbering, fmt 0 = text and
 * 1 = json, until it looks --format up in the registry (tm_format_lookup
 * with TM_FORMATS_DIFF) and calls tm_diff_plans. */
int tm_plan_diff(const char *old_dir, const char *new_dir, int fmt,
                 char **out, tm_error *err);


/* ---- svg.c: `thermap compare --svg FILE` --------------------------------- */
/* One panel: a placement policy's GPUs as a grid, one row per host, one
 * cell per GPU, filled by predicted temperature, labelled with the stage. */
typedef struct tm_svg_panel {
	const char *title;      /* policy name */
	const char *subtitle;   /* e.g. "412.3 ms/iter, peak 67.2 °C", may be NULL */
	int nhosts;
	const char *const *host;/* nhosts host names */
	const int *ngpus;       /* per host */
	const double *temp_c;   /* flat over hosts in order: predicted °C, NAN = GPU not used */
	const char *const *label;/* flat: stage label like "s3" or "s3/d1", NULL = unused */
} tm_svg_panel;

/* The colour scale, °C: fixed bounds, or (either NAN, or NULL) from the
 * coolest to the hottest GPU pictured. */
typedef struct tm_svg_scale {
	double lo, hi;
} tm_svg_scale;
#define TM_SVG_LO_C 30.0   /* compare's default: room to slowdown */
#define TM_SVG_HI_C 90.0

/* Renders the panels side by side (wrapping to a new row of panels after 4)
 * with one shared colour scale (legend) over all panels; into b. Each cell
 * shows its GPU's index, stage and temperature; past 32 hosts a grid row
 * holds several hosts and a cell the hottest of their GPUs there. */
void tm_svg_render(strbuf *b, const tm_svg_panel *p, int npanels,
                   const tm_svg_scale *scale);
/* Renders and writes atomically (tm_write_file_atomic). */
int tm_svg_write(const char *path, const tm_svg_panel *p, int npanels,
                 const tm_svg_scale *scale, tm_error *err);


/* ---- calibrate.c ---------------------------------------------------------- */

/* One row of nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,
 * used_gpu_memory --format=csv: a process holding a GPU. */
typedef struct tm_proc {
	char *uuid;             /* gpu_uuid; NULL: [N/A] */
	long pid;               /* its process id; -1: [N/A] */
	char *name;             /* process_name; NULL: [N/A] or no column */
	double mem_mib;         /* used_gpu_memory, MiB; NAN: not given */
	int line;               /* its line in the file */
} tm_proc;

typedef struct tm_procs {
	char *file;             /* for messages */
	tm_proc *p;             /* the rows, in file order */
	int n;
} tm_procs;

/* Reads a process list (docs/calibrate.md, "Background power"): the
 * header optional (then the four columns above, in that order), its
 * columns in any order, units or not, [N/A] and [Not Supported] for
 * unknown values; no rows is fine. TM_EINPUT with "FILE:LINE: ..." for
 * anything else. Release with tm_procs_clear. The _b form reads len
 * bytes of text standing for file name. */
int tm_procs_load(const char *file, tm_procs *P, tm_error *err);
int tm_procs_loadb(const char *name, const char *text, size_t len,
                   tm_procs *P, tm_error *err);
void tm_procs_clear(tm_procs *P);

typedef struct tm_cal_opts {
	const char *cluster;        /* thermap.cluster/1 file */
	const char *profile;        /* thermap.profile/1 file, the prior */
	const char *job;            /* thermap.job/1 file */
	const char *plan;           /* the plan directory that ran */
	const tm_tele_input *tele;  /* telemetry recorded while it ran */
	int ntele;
	tm_tele_opts window;        /* --from / --to */
	const char *const *procs;   /* --processes files (tm_procs_load),
	                               taken while it ran; may be NULL */
	int nprocs;
} tm_cal_opts;

/* Why a GPU's own estimate of its waiting power is not used. */
enum tm_cal_own {
	TM_OWN_USED,            /* it is */
	TM_OWN_BUSY,            /* it waits under 20 % of the iteration */
	TM_OWN_BELOW_IDLE,      /* below power_idle_w by over 2 sd */
	TM_OWN_ABOVE_LOAD,      /* above power_load_w by over 2 sd */
	TM_OWN_BACKGROUND,      /* its GPU draws background power */
	TM_OWN_NO_LOAD,         /* the profile has no power_load_w */
};

/* Where the power_wait_w written comes from. */
enum tm_cal_wait {
	TM_WAIT_KEPT,           /* nothing written */
	TM_WAIT_OWN,            /* its own estimate, with its peers' */
	TM_WAIT_PEERS,          /* its peers' (no own estimate) */
	TM_WAIT_PROFILE,        /* the profile's value (no own, no peers) */
	TM_WAIT_DEFAULT,        /* the model's default share (no own, no
	                           peers, none in the profile) */
};

/* What calibrate found of power that is not the job's. */
enum tm_cal_bg {
	TM_BG_NONE,             /* none, none before */
	TM_BG_DIRECT,           /* busy samples outside the job */
	TM_BG_INDIRECT,         /* its floor above its peers' waiting */
	TM_BG_UNKNOWN,          /* a foreign process, nothing to measure
	                           it by: between waiting and full load */
	TM_BG_IN_JOB,           /* a GPU the plan leaves unused, busy
	                           while the job ran */
	TM_BG_REMOVED,          /* an earlier value; no foreign work now */
	TM_BG_KEPT,             /* an earlier value; nothing tested it */
};

/* One GPU of the plan (or, rank -1, a GPU of a plan host that the plan
 * leaves unused): what was measured, what the model said before and
 * says after calibration, and what was fitted. */
typedef struct tm_cal_gpu {
	int rank;               /* the rank it ran; -1: unused */
	int stage;              /* that rank's pipeline rank */
	char host[256];         /* its host (names have at most 253 bytes) */
	int index;              /* nvidia-smi index */
	long samples;           /* settled in-job telemetry samples */
	double temp_c, temp_se; /* measured mean °C and its standard error */
	double power_w, power_se;   /* measured mean W and its standard error */
	double clock_mhz, clock_se; /* measured mean SM clock, MHz; NAN = none */
	double pcap_frac;       /* share of settled samples power-capped */
	double thermal_frac;    /* share in thermal slowdown */
	double busy;            /* the model's busy fraction (calibrated
	                           derates) at its iteration time */
	double temp_before, power_before;  /* the input profile's model */
	double temp_after, power_after;    /* the calibrated profile's */
	double floor_w, floor_sd;          /* (P − b·P_load)/(1 − b) and its
	                                      uncertainty, W; NAN when
	                                      1 − b < 0.2 */
	int own_why;                       /* enum tm_cal_own */
	double wait_own, wait_own_sd;      /* the own estimate used, W; NAN
	                                      unless own_why is USED */
	double wait_w, wait_sd;            /* the written P_wait, W; NAN: not
	                                      calibrated */
	int wait_how;                      /* enum tm_cal_wait */
	double wait_before;                /* the model's P_wait before, W */
	double derate, derate_sd;          /* written; NAN: kept */
	int derate_basis;                  /* enum tm_derate_basis written */
	double derate_before;              /* the input profile's, NAN = none */
	double derate_sd_before;           /* the input profile's, NAN = none */
	int basis_before;                  /* the input profile's, or
	                                      TM_BASIS_UNSET */
	bool slow;                         /* a job-basis derate above 1 by
	                                      more than 2 derate_sd */
	double fit_sd_c;                   /* temp_fit_sd_c written, NAN: not */
	int nforeign;                      /* processes listed on it that are
	                                      not the job's */
	double bg_s;                       /* seconds of busy samples outside
	                                      the job, 2 s into their run */
	int bg_how;                        /* enum tm_cal_bg */
	double bg_w, bg_sd;                /* background_power_w written, W;
	                                      NAN: none (removed, kept) */
	double bg_before;                  /* the input profile's, NAN = none */
} tm_cal_gpu;

typedef struct tm_cal_result {
	char *profile;          /* the calibrated thermap.profile/1 text */
	char *table;            /* measured against predicted, for people */
	char plan_id[17];       /* the plan that ran */
	int ngpu;               /* GPUs of the plan = ranks */
	tm_cal_gpu *gpu;        /* in rank order */
	int nunused;            /* GPUs of the plan's hosts it leaves unused
	                           that the telemetry has */
	tm_cal_gpu *unused;     /* those, in cluster order */
	int nentries;           /* profile entries changed */
	double iter_before_ms, iter_after_ms; /* the model's iteration time */
	double iter_measured_ms;/* the job's measured.iteration_ms, NAN */
	double mae_temp_before, mae_temp_after;   /* °C over the GPUs */
	double mae_power_before, mae_power_after; /* W over the GPUs */
	int ncalibrated;        /* fields written into "calibrated" */
} tm_cal_result;

/* Returns 0 with res filled, or TM_EINPUT (4) with one line in err naming
 * the file and what was expected; TM_EINTERNAL for what is not the
 * input's fault. Writes nothing: the caller writes res->profile. */
int tm_calibrate(const tm_cal_opts *o, tm_cal_result *res, tm_error *err);
void tm_cal_result_clear(tm_cal_result *res);


#endif
