/*
 * run.c — running a policy end to end (tm_run_policy): the layers per
 * stage when the policy changes them (rebalance_layers and alternating,
 * rebalance.c), the placement (tm_solve, solve.c), and the evidence rule
 * that may keep torchrun's placement (tm_decide, model/decide.c); a
 * relayered job is weighed against torchrun's placement of the job as
 * given. The top of solve/: ops and the command line call it, nothing in
 * solve/ or below does.
 */
#include <stdlib.h>
#include <string.h>

#include "solve/solve.h"

/* The layers first (rebalance_layers chooses them with the placement;
 * alternating shifts one layer per pair of chunks), then the placement
 * (tm_solve), then the evidence rule (tm_decide) when the job kept its
 * layers; a relayered job is compared with torchrun's placement of the
 * job as given. */
int tm_run_policy(const tm_cluster *c, const tm_profile *p, const tm_job *job,
                  const tm_policy *pol, bool allow, tm_run *run,
                  tm_error *err)
{
	tm_problem *pb0 = NULL;
	int *flat, rc;

	memset(run, 0, sizeof *run);
	if ((pol->rebalance || pol->method == TM_METHOD_ALTERNATING) &&
	    !job->by_layers)
		return tm_fail(err, TM_EINPUT, "%s: policy %s changes the layers "
		               "per stage; expected every stage of %s given by "
		               "layers (layers, layer_fwd_ms, layer_bwd_ms)",
		               pol->file, pol->name, job->file);
	if (pol->rebalance)
		rc = tm_rebalance(c, p, job, pol, allow, run, err);
	else if (pol->method == TM_METHOD_ALTERNATING) {
		int *n = xmalloc(sizeof(int) * (size_t)job->nstages);
		tm_alternating_layers(job, pol->min_layers, n);
		rc = tm_run_job(c, p, tm_job_relayer(job, n), job, pol, allow, run,
		                err);
		free(n);
	} else
		rc = tm_run_job(c, p, NULL, job, pol, allow, run, err);
	if (rc) {
		tm_run_free(run);
		return rc;
	}
	if (!run->job) {
		tm_decide(run->pb, &run->sol);
		return 0;
	}
	run->layers = xmalloc(sizeof(int) * (size_t)job->nstages);
	for (int i = 0; i < job->nstages; i++)
		run->layers[i] = run->job->stages[i].layers;
	/* the baseline stays torchrun's placement of the job as given */
	if ((rc = tm_problem_new(c, p, job, pol, allow, &pb0, err))) {
		tm_run_free(run);
		return rc;
	}
	flat = xmalloc(sizeof(int) * (size_t)pb0->nranks);
	tm_identity(pb0, flat);
	tm_eval_flat(pb0, flat, 0, &run->sol.baseline);
	free(flat);
	tm_problem_free(pb0);
	return 0;
}
