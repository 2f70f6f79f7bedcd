/*
 * thermap.h — the public interface of libthermap.
 *
 * libthermap loads the four input documents of the thermap contract
 * (cluster, profile, job, policy), builds the placement problem that torchrun
 * can express (which host gets each node rank, which GPU each local rank),
 * evaluates placements with the iteration-time and temperature model of
 * docs/model.md, solves the problem (identity, greedy, exact ILP through
 * GLPK, brute force), writes plan directories and checks them; it also
 * does the work of the other commands: topology reports to a cluster
 * (tm_topo_build), telemetry to a profile (tm_profile_from_telemetry),
 * replan, compare (on a profile or over a recording) and their reports in
 * the formats of enum tm_format.
 *
 * It never prints or exits (but for running out of memory: one line on
 * stderr, then abort): every function returns an exit code of enum
 * tm_status and fills a tm_error with one line of text; warnings go to
 * the tm_set_warn callback, and reports come back as text for the caller
 * to print.
 *
 * Ownership: a function named *_load or *_new returns a new object that the
 * caller frees with the matching *_free; *_free(NULL) does nothing. A
 * struct the caller owns (on its stack, say) that a function filled is
 * emptied with the matching *_clear, which frees what it holds and leaves
 * it zeroed, not the struct itself. Pointers passed in are borrowed unless
 * a comment says otherwise.
 */
#ifndef THERMAP_THERMAP_H
#define THERMAP_THERMAP_H

#include <stdbool.h>
#include <stddef.h>

#define TM_VERSION "0.1.0"

/* Exit codes of the thermap program, and return codes of the library. */
enum tm_status {
	TM_OK = 0,         /* success */
	TM_EINTERNAL = 1,  /* internal error (I/O failure, solver failure) */
	TM_EUSAGE = 2,     /* bad command line */
	TM_ENOCHANGE = 3,  /* replan: no change worth making */
	TM_EINPUT = 4,     /* invalid input: parse or validation error */
	TM_EINFEASIBLE = 5,/* no placement satisfies the constraints */
	TM_ELIMIT = 6      /* solver limit reached without a feasible placement */
};

/* The first error met: a full one-line message (file, place, expectation).
 * Messages, warnings included, are valid UTF-8 without control characters:
 * the input text they quote is shown with escapes (\n, \e, \xNN; see
 * docs/formats.md, Common rules). */
typedef struct tm_error {
	int code;        /* enum tm_status */
	char msg[1024];  /* message without the "thermap: error: " prefix */
} tm_error;

/* Receives warnings (unknown fields, assumptions); NULL drops them. */
typedef void (*tm_warn_fn)(void *ud, const char *msg);
void tm_set_warn(tm_warn_fn fn, void *ud);

/* ---- cluster: thermap.cluster/1 ---------------------------------------- */

enum tm_link {
	TM_LINK_X = 0,   /* the GPU itself */
	TM_LINK_NV,      /* bonded NVLinks (count in nv) */
	TM_LINK_PIX,     /* at most one PCIe bridge */
	TM_LINK_PXB,     /* several PCIe bridges */
	TM_LINK_PHB,     /* through a PCIe host bridge */
	TM_LINK_NODE,    /* between host bridges of one NUMA node */
	TM_LINK_SYS      /* across the SMP interconnect */
};

typedef struct tm_gpu {
	int index;          /* nvidia-smi index */
	char *uuid;         /* "GPU-…", or NULL when unknown */
	char *pci_bus_id;   /* normalised "0000:00:06.0", or NULL */
	char *model;        /* marketing name, or NULL */
	double memory_gib;  /* GiB of device memory; NAN when unknown */
	bool has_numa;      /* numa_node is known */
	int numa_node;      /* the NUMA node of the CPUs nearest the GPU */
} tm_gpu;

typedef struct tm_node {
	char *host;         /* host name, [A-Za-z0-9._-] */
	int ngpus;          /* number of GPUs */
	tm_gpu *gpus;       /* ngpus GPUs, in file order */
	unsigned char *link;/* ngpus*ngpus enum tm_link, row-major */
	unsigned char *nv;  /* ngpus*ngpus NVLink counts (for TM_LINK_NV) */
	double *bw;         /* ngpus*ngpus GB/s one direction, resolved */
	double net_gb_per_s;/* NIC bandwidth of this host; NAN = unknown */
	char *net_group;    /* network group name, or NULL */
} tm_node;

typedef struct tm_cluster {
	int nnodes;                   /* number of hosts */
	tm_node *nodes;               /* hosts in file order */
	double same_group_gb_per_s;   /* NAN when absent */
	double cross_group_gb_per_s;  /* NAN when absent */
	char sha256[72];              /* "sha256:<hex>" of the file bytes */
	char *file;                   /* file name, for messages */
} tm_cluster;

int tm_cluster_load(const char *file, tm_cluster **out, tm_error *err);
/* The same from len bytes of text; name stands for the file in messages. */
int tm_cluster_loadb(const char *name, const char *text, size_t len,
                     tm_cluster **out, tm_error *err);
void tm_cluster_free(tm_cluster *c);
/* Default bandwidth (GB/s, one direction) for a link code on a GPU model. */
double tm_link_default_gb_per_s(int link, int nv, const char *model);
/* Writes "NV18", "SYS", … into buf. */
const char *tm_link_name(int link, int nv, char buf[16]);

/* ---- profile: thermap.profile/1 ----------------------------------------- */

/* The number fields of a profile entry, in the order the profile writer
 * writes them (derate_basis after derate_sd; power_wait_w,
 * power_wait_sd_w, background_power_w and background_power_sd_w only when
 * not null). Bit f of tm_gpu_profile's estimated and calibrated masks
 * stands for field f. */
enum tm_profile_field {
	TM_PF_SAMPLES, TM_PF_LOAD_SAMPLES, TM_PF_SPAN_S,
	TM_PF_TEMP_IDLE_C, TM_PF_TEMP_LOAD_C, TM_PF_TEMP_P95_C,
	TM_PF_TEMP_MAX_C, TM_PF_HEADROOM_C,
	TM_PF_POWER_IDLE_W, TM_PF_POWER_LOAD_W, TM_PF_POWER_LIMIT_W,
	TM_PF_AMBIENT_C, TM_PF_R_C_PER_W, TM_PF_TEMP_FIT_SD_C,
	TM_PF_SM_CLOCK_LOAD_MHZ, TM_PF_SM_CLOCK_MAX_MHZ,
	TM_PF_THERMAL_SLOWDOWN_FRAC, TM_PF_POWER_CAP_FRAC,
	TM_PF_DERATE, TM_PF_DERATE_SD,
	TM_PF_POWER_WAIT_W, TM_PF_POWER_WAIT_SD_W,
	TM_PF_BACKGROUND_W, TM_PF_BACKGROUND_SD_W,
	TM_PF_N
};
/* "temp_idle_c", ...: the JSON name of a number field. */
const char *tm_profile_field_name(int field);

/* How the GPUs of one host heat each other (docs/model.md, section 5):
 * this GPU's temperature rises by c_per_w °C for every W that GPU `from`
 * of the same host draws above that GPU's own power_idle_w. */
typedef struct tm_coupling_src {
	int index;              /* the source's nvidia-smi index, -1 when null */
	char *uuid;             /* its UUID, or NULL */
	double c_per_w;         /* °C per W, ≥ 0 */
	double sd_c_per_w;      /* standard uncertainty, NAN when unknown */
} tm_coupling_src;

typedef struct tm_coupling {
	char *how;              /* how it was obtained, one line */
	int nfrom;              /* sources */
	tm_coupling_src *from;
	int npoints;            /* the steady states it was fitted on */
	double *points;         /* npoints × (2 + nfrom): temperature (°C),
	                           this GPU's power, then each source's power
	                           (W), in the order of from */
	char **point_source;    /* per point: where it came from, or NULL */
} tm_coupling;

typedef struct tm_gpu_profile {
	char *host;             /* host name, or NULL */
	char *uuid;             /* or NULL */
	char *pci_bus_id;       /* normalised, or NULL */
	int index;              /* nvidia-smi index, -1 when null */
	double samples;         /* rows seen */
	double load_samples;    /* rows counted as loaded */
	double span_s;          /* seconds covered */
	double temp_idle_c;     /* median idle temperature */
	double temp_load_c;     /* median loaded temperature */
	double temp_p95_c;      /* 95th percentile loaded temperature */
	double temp_max_c;      /* highest temperature */
	double headroom_c;      /* margin to the slowdown point under load */
	double power_idle_w;    /* idle power */
	double power_load_w;    /* loaded power */
	double power_limit_w;   /* enforced power limit */
	double ambient_c;       /* fit T = ambient + r·P */
	double r_c_per_w;       /* fit slope, °C per W */
	double sm_clock_load_mhz;/* sustained SM clock under load */
	double sm_clock_max_mhz;/* maximum SM clock */
	double thermal_slowdown_frac; /* loaded time in thermal slowdown */
	double power_cap_frac;  /* loaded time power-capped */
	double derate;          /* ≥ 1: slowness relative to the fastest GPU */
	double derate_sd;       /* standard uncertainty of derate */
	int derate_basis;       /* enum tm_derate_basis; TM_BASIS_UNSET */
	double temp_fit_sd_c;   /* residual spread of the fit, °C */
	double power_wait_w;    /* a job's rank while it waits (calibrate) */
	double power_wait_sd_w; /* its standard uncertainty */
	double background_power_w;    /* power of work that is not the job's
	                                 (calibrate), W */
	double background_power_sd_w; /* its standard uncertainty */
	tm_coupling *coupling;  /* how its neighbours heat it, or NULL */
	unsigned long long estimated;  /* number fields marked "estimated":
	                                  bit f set where estimated_how[f] is */
	unsigned long long calibrated; /* the same for "calibrated" */
	char *estimated_how[TM_PF_N];  /* per enum tm_profile_field: how the
	                                  value was estimated, or NULL */
	char *calibrated_how[TM_PF_N]; /* how thermap calibrate fitted it */
	char **from_baseline;   /* "from_baseline": the fields taken from an
	                           earlier profile (profile --baseline), in
	                           the order taken; NULL when none */
	int nfrom_baseline;     /* entries of from_baseline */
} tm_gpu_profile;           /* every double is NAN when null; strings
                               owned by the profile */

/* What a derate stands on (docs/profile.md). */
enum tm_derate_basis {
	TM_BASIS_UNSET = -1,    /* the profile does not say */
	TM_BASIS_NONE = 0,      /* no clock data */
	TM_BASIS_CLOCK,         /* clocks under load, neither capped nor hot */
	TM_BASIS_THERMAL,       /* clocks under thermal slowdown */
	TM_BASIS_POWER_CAP,     /* clocks under the power cap: not a speed */
	TM_BASIS_JOB,           /* the job's own run (thermap calibrate) */
	TM_NBASIS
};
const char *tm_derate_basis_name(int basis);

typedef struct tm_profile {
	int ngpus;              /* entries */
	tm_gpu_profile *gpus;   /* entries in file order */
	char sha256[72];        /* "sha256:<hex>" of the file bytes */
	char *file;             /* file name */
	bool quiet_join;        /* the planner does not warn about entries
	                           joined without a UUID (its notes still say
	                           so): the telemetry reader already did */
} tm_profile;

int tm_profile_load(const char *file, tm_profile **out, tm_error *err);
/* The same from len bytes of text; name stands for the file in messages. */
int tm_profile_loadb(const char *name, const char *text, size_t len,
                     tm_profile **out, tm_error *err);
void tm_profile_free(tm_profile *p);
/* The profile as a thermap.profile/1 document, new text to be freed: the
 * one writer of profiles (thermap profile, --baseline, calibrate), so a
 * profile reads the same whoever wrote it. Every number is written with
 * its field's decimals (docs/profile.md) where that reads back as the same
 * value, else with the fewest digits that do: what was loaded is written
 * back unchanged. Fields the loader ignores are not kept. */
char *tm_profile_text(const tm_profile *p);

/* Topology to cluster (`thermap topo`): joins, per host, what
 * `nvidia-smi topo -m`, a GPU list, hwloc XML, NCCL topology XML or the live
 * machine say, checks them against each other, and writes the cluster
 * document as JSON text. Inputs with the same host pointer form one set. */
typedef struct tm_topo_input {
	const char *host;   /* --host in force, or NULL */
	const char *kind;   /* "smi-topo", "gpus", "hwloc", "nccl", "local" */
	const char *file;   /* NULL for "local" */
} tm_topo_input;

int tm_topo_build(const tm_topo_input *in, int n, const char *prefer,
                  char **cluster, tm_error *err);

/* Telemetry to profile (`thermap profile`): reads nvidia-smi --query-gpu
 * CSV, nvidia-smi dmon, dcgm-exporter Prometheus text and Prometheus
 * query_range JSON, one GPU's state at a time, and writes the profile
 * document (and a summary of what was read) as JSON text. */
typedef struct tm_tele_input {
	const char *file;    /* "-" reads stdin */
	const char *host;    /* host of the GPUs in it, or NULL: from the
	                        Hostname label, else the file name */
	const char *fields;  /* columns of a CSV without a header, or NULL */
} tm_tele_input;

typedef struct tm_tele_opts {
	double from, to;        /* time window, NAN = open */
	bool from_rel, to_rel;  /* seconds after each file's first time */
	int interval_ms;        /* dcgmi dmon logs, which carry no time:
	                           milliseconds between their samples (their
	                           -d); 0 = 1000, dcgmi's default */
} tm_tele_opts;

int tm_profile_from_telemetry(const tm_tele_input *in, int n,
                              const tm_tele_opts *o, char **profile,
                              char **summary, tm_error *err);
/* The same, with the load phases of the phases file phases (NULL: none;
 * `profile --phases`, docs/profile.md, "Neighbours: --phases"): each GPU
 * whose neighbours' power the phases move apart from its own gets its
 * coupling, and its ambient and slope from the joint fit; the summary
 * says what the phases came to. The phases file is read first; one that
 * is not a phases file is TM_EINPUT naming its line. */
int tm_profile_from_telemetry_ex(const tm_tele_input *in, int n,
                                 const tm_tele_opts *o, const char *phases,
                                 char **profile, char **summary,
                                 tm_error *err);
/* The DCGM series of a Prometheus server, read through its HTTP API
 * (`profile --prometheus`, docs/profile.md, "Prometheus"). */
typedef struct tm_prom_query {
	const char *url;        /* the server's base URL (http or https) */
	double from, to;        /* window, seconds since 1970; or */
	double last;            /* > 0: the last this many seconds to now */
	double step;            /* seconds between points; 0: chosen */
	const char *selector;   /* more label matchers, `k="v",...` (what
	                           --selector gives inside its braces), or
	                           NULL */
	const char *job;        /* the job label, or NULL */
	const char *const *hosts; /* Hostname values to read (nhosts), or
	                           NULL: every host the selector finds */
	int nhosts;
	const char *host;       /* --host: the host of every series, or NULL */
	double timeout_s;       /* per request */
	bool progress;          /* lines on stderr while it queries */
} tm_prom_query;

/* As tm_profile_from_telemetry, from the series q selects: the same
 * profile as from the same points in query_range files. TM_EINPUT, one
 * line naming the URL, when a request fails or the answer is not usable,
 * or holds no samples, or lacks a host q->hosts names; TM_EUSAGE for an
 * unusable query (scheme, window, step). */
int tm_profile_from_prometheus(const tm_prom_query *q, char **profile,
                               char **summary, tm_error *err);
/* Samples every GPU through NVML (libnvidia-ml.so.1, loaded at run time)
 * every interval_ms for seconds, and writes them to path (atomically) as
 * nvidia-smi --query-gpu CSV; with progress, a line on stderr every 10 s.
 * TM_EINPUT when NVML cannot be loaded or started, or finds no GPU. */
int tm_nvml_record(const char *path, double seconds, int interval_ms,
                   bool progress, tm_error *err);

/* ---- job: thermap.job/1 -------------------------------------------------- */

enum tm_dim { TM_TP, TM_CP, TM_EP, TM_DP, TM_PP, TM_NDIM };
enum tm_sched { TM_SCHED_1F1B, TM_SCHED_INTERLEAVED, TM_SCHED_GPIPE };

typedef struct tm_stage {
	double fwd_ms;       /* forward time per microbatch at full clocks */
	double bwd_ms;       /* backward time per microbatch at full clocks */
	int layers;          /* transformer layers, -1 when not given */
	double act_mib;      /* MiB each rank sends to its next-stage peer */
	double grad_mib;     /* MiB of gradients each rank all-reduces with its
	                        data-parallel peers per iteration */
	double a2a_mib;      /* MiB each rank exchanges with its expert-
	                        parallel peers per microbatch (all-to-all,
	                        forward and backward together) */
	double mem_gib;      /* memory a rank of this stage needs; NAN = unknown */
	double extra_fwd_ms; /* the extras of a stage given by layers, else 0 */
	double extra_bwd_ms;
	bool measured;       /* times were given, not derived from layers */
} tm_stage;

typedef struct tm_job {
	int size[TM_NDIM];   /* tp, cp, ep, dp, pp */
	int vpp;             /* virtual pipeline chunks per pipeline rank */
	int order[TM_NDIM];  /* dimensions, fastest-varying first */
	int norder;          /* dimensions named in order */
	int nproc_per_node;  /* ranks per node */
	int sched;           /* enum tm_sched */
	int microbatches;    /* microbatches per iteration */
	int nstages;         /* pp·vpp model chunks */
	tm_stage *stages;    /* chunk j runs on pipeline rank j % pp */
	int world;           /* tp·cp·dp·pp ranks */
	double layer_fwd_ms; /* per layer, NAN when absent */
	double layer_bwd_ms;
	double layer_mem_gib;/* memory per layer, NAN when absent */
	double tokens_per_iteration; /* NAN when absent */
	bool by_layers;      /* every stage is given by layers */
	bool relayered;      /* a copy with a policy's layers (tm_job_relayer) */
	char sha256[72];     /* "sha256:<hex>" of the file bytes */
	char *file;          /* file name */
} tm_job;

int tm_job_load(const char *file, tm_job **out, tm_error *err);
/* The same from len bytes of text; name stands for the file in messages. */
int tm_job_loadb(const char *name, const char *text, size_t len,
                 tm_job **out, tm_error *err);
void tm_job_free(tm_job *j);
/* Coordinates of a global rank under the job's order string. */
void tm_job_coords(const tm_job *j, int rank, int coord[TM_NDIM]);
/* A copy of j (given by layers) whose chunk c holds layers[c] layers:
 * times re-derived, memory moved by layer_mem_gib per layer (unknown when
 * the job does not give it and a count changed). file and sha256 stay
 * those of j. */
tm_job *tm_job_relayer(const tm_job *j, const int *layers);
/* Σ layers of the chunks; -1 unless the job is given by layers. */
int tm_job_total_layers(const tm_job *j);

/* ---- policy: thermap.policy/1 -------------------------------------------- */

enum tm_method { TM_METHOD_IDENTITY, TM_METHOD_GREEDY, TM_METHOD_ILP,
                 TM_METHOD_BRUTE, TM_METHOD_GREEDY_COOLEST,
                 TM_METHOD_ALTERNATING };
enum tm_crit { TM_CRIT_TIME, TM_CRIT_PEAK, TM_CRIT_MOVES, TM_CRIT_WEAR };
#define TM_MAX_CRIT 4

typedef struct tm_min_gain {
	double time_pct;     /* iteration-time gain net of move costs, %;
	                        INFINITY: never enough on its own */
	double peak_c;       /* peak temperature drop, °C; INFINITY: same */
} tm_min_gain;
#define TM_MIN_GAIN_DEFAULT "1%,2C"  /* replan's */
/* "1%", "2C", "1%,2C" or "0"; a kind left out is never enough alone.
 * 0, or -1 for text it cannot read. */
int tm_min_gain_parse(const char *s, tm_min_gain *g);

typedef struct tm_policy {
	char *name;          /* policy name */
	int method;          /* enum tm_method */
	int ncrit;           /* criteria in order */
	int crit[TM_MAX_CRIT]; /* enum tm_crit, lexicographic */
	double tolerance;    /* relative tolerance between criteria */
	double move_cost_ms; /* iteration-time price of one moved rank */
	bool tp_nvlink;      /* tensor-parallel groups on NVLink */
	bool pp_nvlink;      /* pipeline neighbours on NVLink */
	double max_temp_c;   /* cap on predicted temperature; NAN = none */
	bool rebalance;      /* choose layers per stage with the placement */
	int min_layers;      /* fewest layers per stage when rebalancing */
	int max_moves;       /* at most this many moved ranks; -1 = any */
	double max_slowdown_pct; /* no placement more than this % slower than
	                        the reference placement (NAN: any) */
	double time_limit_s; /* solver wall-clock limit */
	double mip_gap;      /* accepted relative MIP gap */
	bool evidence;       /* keep torchrun's placement unless the best
	                        one's gain beats the model's uncertainty */
	tm_min_gain min_gain;/* and this least gain */
	double exchange_c_per_pct; /* °C of peak worth 1 % of time; NAN: the
	                        policy trades neither for the other */
	char sha256[72];     /* of the file, or of the built-in text */
	char *file;          /* file name, or "(built-in thermal policy)" */
} tm_policy;

int tm_policy_load(const char *file, tm_policy **out, tm_error *err);
/* The same from len bytes of text; name stands for the file in messages. */
int tm_policy_loadb(const char *name, const char *text, size_t len,
                    tm_policy **out, tm_error *err);
/* "ilp", "greedy-coolest", … */
const char *tm_method_name(int method);
/* "time", "peak_temp", "moves" or "wear" (enum tm_crit). */
const char *tm_crit_name(int crit);
/* The built-in default policy (policies/thermal.json). */
int tm_policy_default(tm_policy **out, tm_error *err);
void tm_policy_free(tm_policy *p);

/* ---- problem, placement, evaluation ------------------------------------- */

typedef struct tm_problem tm_problem;   /* opaque */

/* Builds the placement problem; allow_unprofiled lets GPUs without a profile
 * entry stand in as the worst profiled GPU. */
int tm_problem_new(const tm_cluster *c, const tm_profile *p, const tm_job *j,
                   const tm_policy *pol, bool allow_unprofiled,
                   tm_problem **out, tm_error *err);
void tm_problem_free(tm_problem *pb);

/* A placement: the GPU of every global rank, as (host, GPU position). */
typedef struct tm_placement {
	int nranks;          /* world size */
	int *host;           /* rank → node index in the cluster */
	int *gpu;            /* rank → position in that node's gpus[] */
} tm_placement;

tm_placement *tm_placement_new(int nranks);
void tm_placement_free(tm_placement *pl);

/* What the model predicts for one placement. */
typedef struct tm_eval {
	double iteration_ms; /* predicted iteration time */
	double cost_ms;      /* the time criterion: iteration_ms, plus the
	                        policy's move_cost_ms per moved rank in replan */
	double peak_temp_c;  /* highest predicted temperature of a used GPU */
	double peak_ref_c;   /* same, at the reference iteration time */
	double wear;         /* Σ over used GPUs of 2^((θ − 50 °C)/10 °C) */
	double wear_ref;     /* same, at the reference iteration time */
	int moves;           /* ranks on another GPU than the reference */
	bool feasible;       /* satisfies the policy's constraints */
} tm_eval;

/* Gains of one placement over another, each with the model's uncertainty
 * (docs/model.md, section 16): positive is better. */
typedef struct tm_gain {
	double time_pct, time_sd;   /* faster, % of the reference's time */
	double peak_c, peak_sd;     /* cooler at the peak, °C */
	int hot_rank;               /* the predicted temperatures sorted from
	                               the hottest: the first place k (1 =
	                               the peak) where the two placements
	                               differ beyond the uncertainty; 0: none */
	double hot_c, hot_sd;       /* there: the k-th hottest GPU cooler, °C */
} tm_gain;

/* What the evidence rule decided about the solver's placement. */
enum tm_verdict {
	TM_VERDICT_NONE,        /* the rule did not apply (policy, method) */
	TM_VERDICT_SAME,        /* the best placement is the reference */
	TM_VERDICT_MOVE,        /* a gain beats its uncertainty: moved */
	TM_VERDICT_KEEP         /* nothing resolvable: the reference kept */
};

/* A criterion on which the best placement was no resolvable gain over
 * the reference (docs/model.md, section 16): the candidates tied on it,
 * and the next criterion decided among them. */
typedef struct tm_tie {
	int crit;               /* TM_CRIT_TIME, TM_CRIT_PEAK or TM_CRIT_WEAR
	                           (the placement with the least wear, the
	                           peak held) */
	tm_gain gain;           /* of the best placement on it (with the
	                           earlier ties held) over the reference */
	tm_eval best;           /* that placement */
	bool same;              /* it is the reference itself */
} tm_tie;

typedef struct tm_ruling {
	int verdict;            /* enum tm_verdict */
	tm_gain gain;           /* of the written placement over identity */
	tm_gain best_gain;      /* of the solver's best, when kept */
	tm_eval best;           /* the solver's best, when kept */
	bool resolved;          /* the policy's best was re-solved under the
	                           no-loss constraints */
	bool ref_breaks;        /* torchrun's placement breaks the policy */
	int decided_by;         /* the criterion whose best placement's
	                           resolved gain moved the plan (TM_CRIT_TIME,
	                           TM_CRIT_PEAK, TM_CRIT_WEAR); -1: none */
	int nties;              /* criteria tied before it (all, when kept) */
	tm_tie ties[3];
	char reason[900];       /* one sentence for people */
} tm_ruling;

typedef struct tm_solution {
	tm_placement *pl;    /* owned */
	tm_eval ev;          /* its evaluation */
	char status[16];     /* "optimal", "feasible" or "heuristic" */
	char formulation[32];/* ilp: "integer program" or "greedy+bound" */
	double objective;    /* value of the first criterion */
	double bound;        /* proven bound on the first criterion */
	double gap;          /* relative gap between them */
	double time_ms;      /* wall time of the solve */
	double t_ref_ms;     /* reference iteration time of peak_ref_c */
	double best[TM_MAX_CRIT]; /* optimum of each criterion in its phase */
	tm_eval baseline;    /* the identity placement, same model */
	bool baseline_ok;    /* identity is possible on this cluster */
	tm_ruling rule;      /* the evidence rule's verdict (tm_decide) */
	bool stopped;        /* time_limit_s ended a heuristic's search: the
	                        placement is the best found by then */
	double gaps[TM_MAX_CRIT]; /* per criterion, in the policy's order:
	                        the relative gap proven for it with the
	                        earlier ones held; NAN where none is proven */
	double peak_bound;   /* greedy+bound with peak_temp among the
	                        criteria: a proven lower bound on the peak
	                        at the plan's iteration time; NAN otherwise */
	double wear_bound;   /* the same for wear, with wear among the
	                        criteria; NAN otherwise */
	double moves_bound;  /* greedy+bound: a proven lower bound on the
	                        ranks moved by any placement as good as the
	                        plan in the criteria before moves; NAN
	                        otherwise */
} tm_solution;

int tm_solve(const tm_problem *pb, tm_solution *sol, tm_error *err);
/* Writes, atomically, the integer program of the ilp method's first phase
 * (the best iteration time under every constraint but max_temp_c) to file
 * in CPLEX LP format, whatever the policy's method (docs/model.md,
 * section 10). */
int tm_write_lp(const tm_problem *pb, const char *file, tm_error *err);
void tm_solution_clear(tm_solution *sol);

/* Runs a policy end to end: the job it plans (the input, or a copy with
 * other layers per chunk for "alternating" and rebalance_layers), the
 * problem on that job and its solution, whose baseline is always the
 * identity placement of the job as given. */
typedef struct tm_run {
	tm_job *job;         /* owned copy when the layers changed, else NULL */
	tm_problem *pb;      /* owned, built on job (or on the input job) */
	tm_solution sol;     /* owned */
	int *layers;         /* per chunk when the layers changed, else NULL */
	int rounds;          /* rebalance: placement/layer rounds played */
} tm_run;

int tm_run_policy(const tm_cluster *c, const tm_profile *p, const tm_job *job,
                  const tm_policy *pol, bool allow_unprofiled, tm_run *run,
                  tm_error *err);
void tm_run_clear(tm_run *run);

/* `thermap replan` (docs/replan.md): at a checkpoint, the previous plan
 * in prev_dir against the policy's best placement under a new profile.
 * The best is written to out_dir (when not NULL) only when it beats
 * keeping the previous plan by more than min_gain; when the previous plan
 * cannot stay (a GPU or host gone, the policy broken), its least change
 * (the fewest moved ranks) is written instead. Returns 0 when a plan is
 * written (or would be, out_dir NULL), TM_ENOCHANGE when the previous one
 * stays, or an error; res is filled in the first two cases. */
enum tm_decision { TM_KEEP, TM_MOVE, TM_REPAIR };

typedef struct tm_replan_result {
	int decision;        /* enum tm_decision */
	char prev_id[17];    /* the previous plan's id */
	char plan_id[17];    /* the plan written, "" when kept */
	tm_placement *pl;    /* the placement that runs next */
	int moved;           /* ranks it moves from the previous plan */
	int fewest_moves;    /* moves that no valid placement avoids */
	char *json;          /* the decision as one JSON line (no newline) */
	char *text;          /* the same for people, with the plan summary */
} tm_replan_result;

int tm_replan(const tm_cluster *c, const tm_profile *p, const tm_job *j,
              const tm_policy *pol, const char *prev_dir,
              bool allow_unprofiled, const tm_min_gain *min_gain,
              const char *out_dir, tm_replan_result *res, tm_error *err);
void tm_replan_result_clear(tm_replan_result *r);

/* ---- output formats of the commands' reports ---------------------------- */

/* The one registry of report formats: compare renders all four, diff and
 * check text and json. The numbers are the ones tm_compare_format has
 * always returned. */
enum tm_format {
	TM_FORMAT_TEXT,      /* for people: aligned columns, notes (default) */
	TM_FORMAT_MARKDOWN,  /* a markdown table and a list of notes */
	TM_FORMAT_CSV,       /* a header line and one line per row */
	TM_FORMAT_JSON,      /* one JSON document (docs/formats.md) */
	TM_NFORMATS
};
/* The formats each command offers, as sets of TM_FORMAT_BIT(enum
 * tm_format). */
#define TM_FORMAT_BIT(f) (1u << (f))
#define TM_FORMATS_COMPARE (TM_FORMAT_BIT(TM_FORMAT_TEXT) | \
	TM_FORMAT_BIT(TM_FORMAT_MARKDOWN) | TM_FORMAT_BIT(TM_FORMAT_CSV) | \
	TM_FORMAT_BIT(TM_FORMAT_JSON))
#define TM_FORMATS_DIFF (TM_FORMAT_BIT(TM_FORMAT_TEXT) | \
	TM_FORMAT_BIT(TM_FORMAT_JSON))
#define TM_FORMATS_CHECK TM_FORMATS_DIFF
/* The format called name ("text", "markdown", "csv", "json") when it is
 * in the set accepted; -1 for another name or one not in the set. */
int tm_format_lookup(const char *name, unsigned accepted);
/* fmt's name, or NULL for a number that is no enum tm_format. */
const char *tm_format_name(int fmt);
/* The names in accepted, in enum order, into buf (cut short to len):
 * sep between them and last before the last one, as in "text, markdown,
 * csv or json" (sep ", ", last " or ") or "text|json" (both "|"). */
void tm_format_list(unsigned accepted, const char *sep, const char *last,
                    char *buf, size_t len);

/* `thermap compare` (docs/compare.md): each policy run and its placement
 * simulated with thermal feedback, against the identity placement of the
 * job as given. fmt: an enum tm_format of TM_FORMATS_COMPARE; svg (may be
 * NULL) gets the placements as a picture, coloured on the scale svg_scale
 * gives ({lo, hi} °C; NULL: the fixed 30 to 90 °C; NANs: the pictured
 * GPUs' range). *out: the table, to be freed. A policy that cannot place
 * gets a row that says why; only inputs the comparison cannot start from
 * fail. tm_compare_format(name) is tm_format_lookup(name,
 * TM_FORMATS_COMPARE): the enum for "text", "markdown", "csv", "json", -1
 * for another name. */
int tm_compare_format(const char *name);
int tm_compare(const tm_cluster *c, const tm_profile *p, const tm_job *j,
               tm_policy *const *pols, int npol, bool allow_unprofiled,
               int fmt, const char *svg, const double *svg_scale,
               char **out, tm_error *err);
/* Over a recording: windows of window_s seconds from each file's first
 * sample; each policy plans on window k and is scored on window k + 1. */
int tm_compare_replay(const tm_cluster *c, const tm_tele_input *in, int nin,
                      double window_s, const tm_job *j,
                      tm_policy *const *pols, int npol,
                      bool allow_unprofiled, int fmt, char **out,
                      tm_error *err);

/* ---- plan directory ----------------------------------------------------- */

/* Writes the plan directory atomically (temporary directory, then rename). */
int tm_plan_write(const tm_problem *pb, const tm_solution *sol,
                  const char *dir, tm_error *err);

/* Checks a plan directory against cluster and job (and, when given, the
 * profile that predicted it, and the plan a replan replaced). */
int tm_plan_check(const tm_cluster *c, const tm_job *j, const tm_profile *p,
                  const char *dir, const char *prev_dir, char *summary,
                  size_t summary_len, tm_error *err);

/* The verifications of tm_plan_check, in the order they run, and what
 * became of each (`thermap check --format json`, docs/formats.md). */
enum tm_check_step {
	TM_CK_INPUT_FILES,   /* cluster, job (and profile) read and valid */
	TM_CK_PLAN_JSON,     /* plan.json: a thermap.plan with id, inputs,
	                      * constraints, and layers that fit the job */
	TM_CK_INPUTS,        /* made for these cluster and job files */
	TM_CK_ENV_FILES,     /* env files read, and consistent with the job */
	TM_CK_RANKS,         /* every rank from the env files as in ranks[] */
	TM_CK_LAUNCHERS,     /* entry.sh, the Slurm, MPI and DeepSpeed files */
	TM_CK_TP_NVLINK, TM_CK_PP_NVLINK, TM_CK_MEMORY,
	TM_CK_REPLAN_MOVES,  /* a replan's from and moves */
	TM_CK_MAX_MOVES,
	TM_CK_PREVIOUS,      /* --previous: the plan it replaces */
	TM_CK_PREDICTIONS,   /* --profile: iteration time, peak temperature */
	TM_CK_MAX_TEMP, TM_CK_ALLREDUCE, TM_CK_ALLTOALL,
	TM_CK_EVIDENCE,      /* the decision under the evidence rule */
	TM_CK_NSTEPS
};
enum tm_check_result { TM_CK_NOT_RUN, TM_CK_PASS, TM_CK_FAIL,
                       TM_CK_SKIPPED, TM_CK_NOT_APPLICABLE };
typedef struct tm_check_report {
	char plan_id[17];          /* "" until plan.json gave it */
	int ranks, nodes;          /* the job's, -1 when not known */
	int result[TM_CK_NSTEPS];  /* enum tm_check_result */
	int failed;                /* the step that failed, or -1 */
} tm_check_report;

void tm_check_report_init(tm_check_report *r);
/* Marks step failed with rc (for what the caller checks itself, such as
 * reading the inputs) and returns rc. */
int tm_check_report_fail(tm_check_report *r, int step, int rc);
int tm_plan_check_ex(const tm_cluster *c, const tm_job *j,
                     const tm_profile *p, const char *dir,
                     const char *prev_dir, char *summary, size_t summary_len,
                     tm_check_report *r, tm_error *err);
/* The report as one JSON object (thermap.check/1; code: the exit code,
 * msg: the failure's message or NULL), to be freed. */
char *tm_check_json(const tm_check_report *r, const char *dir, int code,
                    const char *msg);

#endif
