/*
 * solve.h — running a policy end to end (tm_run_policy, run.c), the layer
 * policies it may run first (rebalance.c), the dispatcher tm_solve and the
 * placement, solution and run objects (solve.c), and the methods behind
 * tm_solve: greedy and coolest-first (greedy.c), brute force (brute.c),
 * the host decomposition (host.c) and the integer program (ilp.c). Calls
 * run down that list: run.c over rebalance.c over solve.c over the
 * methods. GLPK is included by ilp.c and rebalance.c alone.
 *
 * Layer: above model.
 */
#ifndef THERMAP_SOLVE_H
#define THERMAP_SOLVE_H

#include "model/model.h"

/* greedy.c: places node n on host h, whose GPUs are all free: tensor-
 * parallel groups (or ranks) in decreasing work on the best free GPUs */
bool tm_greedy_node(const tm_problem *pb, int n, int h, int *flat);

/* greedy.c: pairwise exchanges of two ranks' GPUs (and moves to idle GPUs)
 * inside each host, each kept when keep(ud, flat) says so (it sees the
 * changed placement), for at most passes rounds while one is kept */
void tm_swap_descent(const tm_problem *pb, int *flat, int passes,
                     bool (*keep)(void *ud, const int *flat), void *ud);


/* greedy.c: the greedy method (TM_EINFEASIBLE when it finds no
 * placement), and coolest-first (the ranks of each node rank in
 * decreasing work on torchrun's host's GPUs in increasing full-load
 * temperature) */
int tm_solve_greedy(const tm_problem *pb, double deadline_ms, int *flat,
                    bool *stopped);
/* With time first and peak_temp after it: the hottest node rank's host
 * given lighter work while the time holds (greedy.c, "the peak after the
 * time"); flat changes only when the result is better by the policy's
 * order and valid. Returns whether it changed; *stopped when the
 * deadline ended it. */
bool tm_cool_peak(const tm_problem *pb, double deadline_ms, int *flat,
                  bool *stopped);
/* Moves come last: node ranks alike in load take back their reference
 * hosts from each other, and instances their reference GPUs, where the
 * iteration time and every temperature stay as they are (greedy.c, "fewer
 * moves at the same time and heat"). flat changes only when the model finds
 * time, peak and wear no worse with fewer moves and every constraint
 * holds. Returns whether it changed; *stopped when the deadline ended it. */
bool tm_fewer_moves(const tm_problem *pb, double deadline_ms, int *flat,
                    bool *stopped);
void tm_solve_coolest(const tm_problem *pb, int *flat);

/* brute.c: every placement; t_ref gets the best iteration time and
 * best[k] the best value of criterion k with the earlier ones held */
int tm_solve_brute(const tm_problem *pb, int *flat, double *t_ref,
                   double *best, tm_error *err);

/* ilp.c: the integer program, every phase stopping at deadline
 * (tm_now_ms; tm_solve's start plus time_limit_s); tm_ilp_direct says
 * whether a problem is small enough for it */
int tm_solve_ilp(const tm_problem *pb, const int *warm, double deadline,
                 int *flat, tm_solution *sol, tm_error *err);
bool tm_ilp_direct(const tm_problem *pb);


/* solve.c: builds the problem of job (or of owned, a relayered copy of
 * job that run takes over) and solves it into run */
int tm_run_job(const tm_cluster *c, const tm_profile *p, tm_job *owned,
               const tm_job *job, const tm_policy *pol, bool allow,
               tm_run *run, tm_error *err);

/* run.c: the evidence rule (docs/model.md, section 16). Weighs the
 * solver's placement in sol against the problem's reference (torchrun's
 * placement) and fills sol->rule; when the rule keeps the reference, or a
 * placement without losses replaces a trade, sol's placement and
 * evaluation become that one. */
void tm_decide(const tm_problem *pb, tm_solution *sol);
/* The policy's best with the time held at most tcap ms and the peak at
 * the reference time at most pcap °C (INFINITY: not held), ranked by the
 * criteria of pb not held: the evidence rule's re-solve of a tie (and
 * replan's), into flat. hint (may be NULL) is a placement the caps allow,
 * weighed as the solver's warm start. 0 or an error code. */
int tm_solve_held(const tm_problem *pb, double tcap, double pcap,
                  const int *hint, int *flat);

/* rebalance.c: the layers of "alternating" into n (per chunk), and
 * rebalance_layers: placement and layers in turn, the best run into out */
void tm_alternating_layers(const tm_job *j, int min_layers, int *n);
int tm_rebalance(const tm_cluster *c, const tm_profile *p, const tm_job *job,
                 const tm_policy *pol, bool allow, tm_run *out, tm_error *err);


/* host.c: the host decomposition (docs/model.md, section 10) */
bool tm_host_decomposable(const tm_problem *pb);
/* Fills flat and sol's status, formulation, best, t_ref_ms, objective,
 * bound and gap; warm (may be NULL) competes for the time phase. Past
 * deadline (tm_now_ms), the search for the last phase's proof stops with
 * the best placement so far (sol->stopped). Returns -1 when it has no
 * placement to offer. */
int tm_solve_host(const tm_problem *pb, const int *warm, double deadline,
                  int *flat, tm_solution *sol);


#endif
