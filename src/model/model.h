/*
 * model.h — the placement problem in flat arrays (problem.c), what a
 * placement costs and how hot it runs (model.c), lower bounds (bound.c),
 * the event-level simulator (sim.c) and the evidence the evidence rule
 * weighs (decide.c):
 * docs/model.md.
 *
 * Layer: above format and base. No files, no jansson, no GLPK.
 */
#ifndef THERMAP_MODEL_H
#define THERMAP_MODEL_H

#include "format/format.h"

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
	double *p_unused;     /* power when the job leaves the GPU unused:
	                         the larger of idle and background power, W
	                         (NAN) */
	double *p_idle;       /* power_idle_w: the zero of its coupling, W
	                         (NAN) */
	double *p_bg;         /* background power (another process), W; NAN:
	                         none */
	double *p_bg_sd;      /* its uncertainty, W */
	/* the heat the other GPUs of a host give GPU g (docs/model.md, 5):
	 * sources cp_src[k], k in cp_first[g] .. cp_first[g+1]−1, each
	 * cp_c[k] °C per W above its p_idle (uncertainty cp_sd[k]); all NULL
	 * when the profile gives no coupling */
	int *cp_first, *cp_src;
	double *cp_c, *cp_sd;
	/* the joint fit's (XᵀX)⁻¹ over its points, per coupled GPU whose
	 * every source is in the cluster: columns 1, its own power, then its
	 * sources' powers above idle (k = 2 + sources, cp_cov[cp_cov_at[g]]
	 * row-major; cp_cov_at[g] < 0: none), so that a prediction's
	 * uncertainty from the fit's coefficients is s·√(xᵀ(XᵀX)⁻¹x) with
	 * their correlations */
	long *cp_cov_at;
	double *cp_cov;
	bool coupled;         /* some GPU has a coupling source */
	double time_cap_ms;   /* no placement slower than this (INFINITY:
	                         none); the evidence rule's re-solves set it */
	double *t_fit_sd;     /* °C: the thermal fit's residual spread */
	double *derate_sd;    /* derate's standard uncertainty */
	double *headroom;     /* headroom_c, NAN when unknown */
	double *mem_gib;      /* device memory, NAN when unknown */
	int *prof;            /* profile entry, -1 when unprofiled */
	double *nic;          /* host → NIC GB/s, INFINITY when unknown */
	int *grp;             /* host → net_group id, 0 for none */
	int ngrp;             /* net_group ids */
	double net_lo, net_hi;/* least, most GB/s between two usable hosts
	                         (tm_net_range) */
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
	bool inst_in_node;    /* every instance's ranks in one node rank */
	double *work;         /* pipeline rank → fwd+bwd ms per microbatch */
	double *fwd, *bwd;    /* pipeline rank → fwd / bwd ms per microbatch */
	int nep;              /* expert-parallel ranks that exchange tokens:
	                         ep when some a2a_mib > 0, else 1 */
	int *ep_group;        /* replica → its expert-parallel group */
	int *ep_reps;         /* group*nep + k → replica (k: ep coordinate) */
	double *a2a;          /* pipeline rank → all-to-all MiB per microbatch
	                         (its chunks' a2a_mib), 0 when nep is 1 */
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
/* GB/s between hosts a and b (a ≠ b): the slower NIC, capped by the
 * cluster's same- or cross-group figure; 25 GB/s when nothing is known. */
double tm_net_bw(const tm_problem *pb, int a, int b);
/* The least and the most bandwidth between two different usable hosts
 * (found once, in time linear in the hosts, when the problem is built);
 * false (lo > hi) when fewer than two. */
bool tm_net_range(const tm_problem *pb, double *lo, double *hi);
bool tm_nvlink(const tm_problem *pb, int g, int h);
/* The cluster's record of problem GPU g (its index, UUID, NUMA node). */
const tm_gpu *tm_gpu_of(const tm_problem *pb, int g);
bool tm_fits(const tm_problem *pb, int rank, int g);
void tm_identity(const tm_problem *pb, int *flat);
/* Node rank n's reference host (pb->ref_gpu), or -1 when its reference
 * GPUs are not all on one host. */
int tm_ref_host(const tm_problem *pb, int n);
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
/* The same problem under another policy (pol, borrowed), sharing every
 * array of pb: for solving it again with other criteria or caps (and
 * time_cap_ms set on it). Released with free() alone, before pb. */
tm_problem *tm_problem_view(const tm_problem *pb, const tm_policy *pol);
/* The same problem under another policy (borrowed by the new problem),
 * with the same reference and move prices. */
int tm_problem_clone(const tm_problem *pb, const tm_policy *pol,
                     tm_problem **out, tm_error *err);


/* model.c: the prediction model of docs/model.md */
/* GPU g's temperature (°C) and power (W; NAN when the profile has none)
 * at busy fraction busy (1: computing all the time): docs/model.md,
 * section 3. */
double tm_gpu_temp(const tm_problem *pb, int g, double busy);
double tm_gpu_power(const tm_problem *pb, int g, double busy);
/* Rank rank on GPU g in an iteration of t_iter ms: the share of it the GPU
 * computes (at most 1), its temperature (°C) and its power (W; NAN when
 * the profile has none). */
double tm_rank_busy(const tm_problem *pb, int rank, int g, double t_iter);
double tm_rank_temp(const tm_problem *pb, int rank, int g, double t_iter);
double tm_rank_power(const tm_problem *pb, int rank, int g, double t_iter);
/* Rank r's temperature in placement flat at iteration time t: its own
 * level (tm_rank_temp) plus the heat the other GPUs of its host give it at
 * the powers they draw in this placement (docs/model.md, section 5). The
 * heat alone is tm_rank_heat_in, with (sd, may be NULL) the part of its
 * uncertainty the coupling's own carries. */
double tm_rank_temp_in(const tm_problem *pb, const int *flat, int r,
                       double t);
double tm_rank_heat_in(const tm_problem *pb, const int *flat, int r,
                       double t, double *sd);
/* The uncertainty that a coupled GPU's joint fit's coefficients give
 * the prediction of rank ra in placement fa at time ta (with fb, the
 * difference from rank rb, on the same GPU, in fb at tb): s·√(xᵀ(XᵀX)⁻¹x),
 * s the fit's spread; NAN when the profile's points do not give it. */
double tm_fit_spread_in(const tm_problem *pb, const int *fa, int ra,
                        double ta, const int *fb, int rb, double tb);
/* The power GPU h of rank r's host draws in placement flat at iteration
 * time t: its rank's, or its unused power. */
double tm_host_power_in(const tm_problem *pb, const int *flat, int r, int h,
                        double t);
double tm_hop_ms(const tm_problem *pb, double act_mib, int g, int h);
double tm_eval_flat(const tm_problem *pb, const int *flat, double t_ref,
                    tm_eval *ev);
double tm_inst_ms(const tm_problem *pb, const int *flat, int rep, int stage);
/* The replicas whose instances of stage run tied to rep's: its expert-
 * parallel group's at a stage with an all-to-all, else rep alone. Points
 * *reps at them (inside pb) and returns their number. */
int tm_tied_reps(const tm_problem *pb, int rep, int stage, const int **reps);
/* The slowest derate of the GPUs of rep's instance of stage and of the
 * instances tied to it (tm_inst_ms is the stage's work times this, plus
 * the all-to-all). */
double tm_inst_derate(const tm_problem *pb, const int *flat, int rep,
                      int stage);
double tm_hop_inst_ms(const tm_problem *pb, const int *flat, int rep,
                      const tm_hop *hop);
double tm_rep_ms(const tm_problem *pb, const int *flat, int d);
/* The expert-parallel all-to-all (docs/model.md, 4): one 1/ep piece of
 * a2a_mib from GPU g to GPU h, and the exchange of pipeline rank s in
 * expert-parallel group o per microbatch (0 without one). */
double tm_a2a_piece_ms(const tm_problem *pb, double a2a_mib, int g, int h);
double tm_a2a_ms(const tm_problem *pb, const int *flat, int o, int s);
/* The slowest all-to-all of any group and pipeline rank (0 without). */
double tm_alltoall_max_ms(const tm_problem *pb, const int *flat);
/* Does some stage exchange tokens between expert-parallel ranks? */
bool tm_has_a2a(const tm_problem *pb);
/* The data-parallel gradient all-reduce (docs/model.md, 4): the MiB a rank
 * of pipeline rank s all-reduces, one ring edge's time from GPU g to GPU h
 * for that volume, and the placement's all-reduce time, the slowest ring's
 * (0 with dp = 1 or no gradients). */
double tm_grad_mib(const tm_problem *pb, int s);
double tm_ring_edge_ms(const tm_problem *pb, double grad_mib, int g, int h);
double tm_allreduce_ms(const tm_problem *pb, const int *flat);
/* The rank step replicas on along rank r's all-reduce ring (its pipeline
 * rank and member; 1: the one it sends to, -1: the one it hears from). */
int tm_ring_rank(const tm_problem *pb, int r, int step);
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


/* decide.c: the evidence the evidence rule weighs (docs/model.md, section
 * 16; the rule is tm_decide, solve/run.c) */
/* The run-to-run floor of a time gain, %: the spread of one placement's
 * step time over a real run (p10–p90 of the committed 4×H200 run,
 * ±0.6 %). It floors the time gain's uncertainty, and a placement within
 * it of another's time is not resolvably slower: the evidence rule and
 * replan hold a tie on time there. */
#define TM_TIME_FLOOR_PCT 0.5
/* A temperature prediction's standard uncertainty on GPU g at busy
 * fraction busy (°C). */
double tm_temp_sd(const tm_problem *pb, int g, double busy);
/* The same for rank r in placement flat at iteration time t, with the
 * uncertainty of the heat its neighbours give it. */
double tm_rank_temp_sd_in(const tm_problem *pb, const int *flat, int r,
                          double t);
/* The gains of cand over ref, each with its uncertainty. */
void tm_gain_of(const tm_problem *pb, const int *ref, const int *cand,
                tm_gain *g);
/* A loss on time or peak that its uncertainty does not cover. */
bool tm_gain_lost(const tm_gain *g);
/* A gain in time or in a temperature beyond its uncertainty and at least
 * the least gain mg asks for. */
bool tm_gain_won(const tm_gain *g, const tm_min_gain *mg);
/* At rate °C of peak per 1 % of time (NAN: none), is what g wins worth
 * what it loses, each at the unfavourable end of its uncertainty? */
bool tm_gain_worth(const tm_gain *g, double rate);
/* "1st", "2nd", "3rd", "4th", …, "11th", "21st" into buf */
const char *tm_ordinal(int k, char *buf, size_t n);
/* "1.86 ± 0.50 % faster, peak 3.8 ± 1.7 °C hotter, wear as if …" */
void tm_gain_text(const tm_gain *g, strbuf *b);


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
 * chunks exceed 4·10⁶. out is to be freed with tm_sim_clear in any case. */
int tm_simulate(const tm_problem *pb, const int *flat, bool feedback,
                tm_sim *out);
void tm_sim_clear(tm_sim *s);


/* bound.c: lower bounds for any size (docs/model.md, "Bounds") */
double tm_time_lower_bound(const tm_problem *pb);
double tm_peak_lower_bound(const tm_problem *pb, double t_ref);
/* The least wear at t_ref of any placement with one rank per GPU (the
 * dual of a transportation problem, raised by coordinate ascent until it
 * stops rising or deadline_ms, when > 0, passes): a proven lower bound. */
double tm_wear_lower_bound(const tm_problem *pb, double t_ref,
                           double deadline_ms);
/* The fewest ranks off their reference GPU of any placement whose cost
 * is at most tcap ms and whose GPUs stay at most pcap °C at its own
 * iteration time (INFINITY: no cap): a proven lower bound. */
long tm_moves_lower_bound(const tm_problem *pb, double tcap, double pcap);
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


/* problem.c: a placement between the public form (host, GPU per rank)
 * and the flat one (rank → flat GPU) */
void tm_flat_to_placement(const tm_problem *pb, const int *flat,
                          tm_placement *pl);
void tm_placement_to_flat(const tm_problem *pb, const tm_placement *pl,
                          int *flat);

#endif
