/*
 * calibrate.h — `thermap calibrate` (docs/calibrate.md): from a plan that
 * ran and the telemetry recorded while it ran, the model's parameters of
 * the GPUs it ran on, written back into the profile. Also the job's
 * optional "measured" section that calibrate reads (job.c).
 *
 * Does: read the plan directory, the telemetry (the readers of `thermap
 * profile`) and the job's measured times as untrusted input; fit each
 * GPU's waiting power, its derate at the job's operating point and the
 * spread of its thermal fit; write the input profile with those fields
 * replaced and listed in "calibrated"; tabulate measured against
 * predicted, before and after. Does not: change ambient_c or r_c_per_w
 * (docs/calibrate.md says why), plan, or accumulate several runs.
 */
#ifndef THERMAP_CALIBRATE_H
#define THERMAP_CALIBRATE_H

#include "internal.h"

/* ---- job.c: the job's "measured" section (docs/formats.md, job) ------- */

/* One rank's compute per microbatch in the run that measured it. */
typedef struct tm_measured_rank {
	double fwd_ms;       /* median forward compute per microbatch, ms */
	double bwd_ms;       /* median backward compute per microbatch, ms */
	double sd_ms;        /* sd over iterations of fwd + bwd per
	                        microbatch, ms; NAN when not given */
	double iterations;   /* measured iterations; NAN when not given */
} tm_measured_rank;

typedef struct tm_job_measured {
	double iteration_ms; /* the run's median iteration, ms; NAN = none */
	int nranks;          /* world size when ranks are given, else 0 */
	tm_measured_rank *ranks; /* rank order, or NULL */
} tm_job_measured;

/* Reads the "measured" section of the job file j was loaded from (the
 * file must still have j's bytes: its hash is checked). m->nranks is 0
 * and iteration_ms NAN when the job has none. Free with
 * tm_job_measured_free. tm_job_load validates the same section with the
 * same code, so every command rejects a malformed one. */
int tm_job_measured_load(const tm_job *j, tm_job_measured *m, tm_error *err);
void tm_job_measured_free(tm_job_measured *m);

/* ---- calibrate.c ---------------------------------------------------------- */

typedef struct tm_cal_opts {
	const char *cluster;        /* thermap.cluster/1 file */
	const char *profile;        /* thermap.profile/1 file, the prior */
	const char *job;            /* thermap.job/1 file */
	const char *plan;           /* the plan directory that ran */
	const tm_tele_input *tele;  /* telemetry recorded while it ran */
	int ntele;
	tm_tele_opts window;        /* --from / --to */
} tm_cal_opts;

/* One GPU of the plan: what was measured, what the model said before and
 * says after calibration, and what was fitted. */
typedef struct tm_cal_gpu {
	int rank;               /* the rank it ran */
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
	double wait_own, wait_own_sd;      /* this GPU's own P_wait, W; NAN
	                                      when it says nothing (b ≈ 1) */
	double wait_w, wait_sd;            /* the written P_wait, W; NAN: not
	                                      calibrated */
	double wait_before;                /* the model's P_wait before, W */
	double derate, derate_sd;          /* written; NAN: kept */
	int derate_basis;                  /* enum tm_derate_basis written */
	double derate_before;              /* the input profile's, NAN = none */
	double derate_sd_before;           /* the input profile's, NAN = none */
	int basis_before;                  /* the input profile's, or
	                                      TM_BASIS_UNSET */
	double fit_sd_c;                   /* temp_fit_sd_c written, NAN: not */
} tm_cal_gpu;

typedef struct tm_cal_result {
	char *profile;          /* the calibrated thermap.profile/1 text */
	char *table;            /* measured against predicted, for people */
	char plan_id[17];       /* the plan that ran */
	int ngpu;               /* GPUs of the plan = ranks */
	tm_cal_gpu *gpu;        /* in rank order */
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
void tm_cal_result_free(tm_cal_result *res);

#endif
