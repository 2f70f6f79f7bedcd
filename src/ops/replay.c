/*
 * replay.c — the windows of a recording as profiles, for `thermap compare
 * --replay` (docs/compare.md, "Replay over a recording"): the recording
 * read once (tl_recording, telemetry/read.c) and profiled whole, then
 * window by window from the samples in memory, each window's profile
 * filled from the whole one where the window cannot measure (its idle
 * level; the load level of a GPU never at full load in it), and kept only
 * when the model can plan on it; otherwise the reason it cannot.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

/* Window k's profile, filled from the whole recording's, as any command
 * loads a profile (the loader's checks and warnings, named name), or
 * NULL with the reason in e. */
static tm_profile *window_profile(const tl_recording *rec,
                                  const tm_profile *full,
                                  const tm_tele_opts *wo, const char *name,
                                  tm_error *e)
{
	tm_profile *w = NULL, *p = NULL;
	char *text;

	if (tl_recording_profile(rec, wo, &w, e))
		return NULL;
	/* a window of a long run is often all load: its GPUs' idle level
	 * comes from the whole recording, and so does the load level of a
	 * GPU the window never saw at full load (as replan's --baseline
	 * does), so that every window can be planned */
	tm_profile_fill_from(w, full, false);
	text = tm_profile_text(w);
	tm_profile_loadb(name, text, strlen(text), &p, e);
	free(text);
	tm_profile_free(w);
	return p;
}

int tm_windows_read(const tm_cluster *c, const tm_tele_input *in, int nin,
                    double window, const tm_job *j, const tm_policy *pol,
                    bool allow, tm_windows *W, tm_error *err)
{
	tl_recording *rec = NULL;
	tm_profile *full = NULL;
	tm_profile **prof;
	char **why;
	double span;
	int nw, rc;

	memset(W, 0, sizeof *W);
	if ((rc = tl_recording_read(in, nin, &rec, err)) ||
	    (rc = tl_recording_profile(rec, NULL, &full, err)))
		goto out;
	W->span = span = tl_recording_span(rec);
	nw = (int)fmin(floor(span / window), 100000);
	if (nw < 2) {
		rc = tm_fail(err, TM_EINPUT, "%s: the recording spans %.1f s; "
		             "replay needs two windows of %g s at least",
		             in[0].file, span, window);
		goto out;
	}
	prof = xcalloc((size_t)nw, sizeof *prof);
	why = xcalloc((size_t)nw, sizeof *why);
	for (int k = 0; k < nw; k++) {
		tm_tele_opts wo = { k * window, (k + 1) * window - 1e-6, true,
		                    true, 0 };
		tm_error e = { 0, "" };
		char name[96];
		snprintf(name, sizeof name, "window %d (%g–%g s)", k, k * window,
		         (k + 1) * window);
		prof[k] = window_profile(rec, full, &wo, name, &e);
		if (!prof[k]) {
			why[k] = xstrdup(e.msg);
		} else {
			/* reading the recording said what its GPUs lack */
			prof[k]->quiet_join = true;
			/* a window the model cannot use (no loaded samples, say) */
			tm_problem *pb = NULL;
			if (tm_problem_new(c, prof[k], j, pol, allow, &pb, &e)) {
				why[k] = xstrdup(e.msg);
				tm_profile_free(prof[k]);
				prof[k] = NULL;
			}
			tm_problem_free(pb);
		}
	}
	W->n = nw;
	W->prof = prof;
	W->why = why;
out:
	tm_profile_free(full);
	tl_recording_free(rec);
	return rc;
}

void tm_windows_clear(tm_windows *W)
{
	for (int k = 0; k < W->n; k++) {
		tm_profile_free(W->prof[k]);
		free(W->why[k]);
	}
	free(W->prof);
	free(W->why);
	memset(W, 0, sizeof *W);
}
