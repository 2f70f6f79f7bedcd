/*
 * replay.c — the windows of a recording as profiles, for `thermap compare
 * --replay` (docs/compare.md, "Replay over a recording"): the recording
 * profiled whole, then window by window, each window's profile filled
 * from the whole one where the window cannot measure (its idle level; the
 * load level of a GPU never at full load in it), and kept only when the
 * model can plan on it; otherwise the reason it cannot.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

/* The longest span of the files, from the reader's summary. */
static double recording_span(const char *summary)
{
	json_t *root = json_loads(summary, 0, NULL), *f;
	double span = 0;
	size_t i;
	json_array_foreach(json_object_get(root, "files"), i, f) {
		json_t *s = json_object_get(f, "span_s");
		if (json_is_number(s) && json_number_value(s) > span)
			span = json_number_value(s);
	}
	json_decref(root);
	return span;
}

int tm_windows_read(const tm_cluster *c, const tm_tele_input *in, int nin,
                    double window, const tm_job *j, const tm_policy *pol,
                    bool allow, tm_windows *W, tm_error *err)
{
	tm_tele_opts o = { NAN, NAN, false, false };
	char *text = NULL, *summ = NULL, **why;
	tm_profile **prof;
	char *full;
	double span;
	int nw, rc;

	memset(W, 0, sizeof *W);
	if ((rc = tm_profile_from_telemetry(in, nin, &o, &text, &summ, err)))
		return rc;
	W->span = span = recording_span(summ);
	full = text;
	free(summ);
	text = summ = NULL;
	nw = (int)fmin(floor(span / window), 100000);
	if (nw < 2) {
		free(full);
		return tm_fail(err, TM_EINPUT, "%s: the recording spans %.1f s; "
		               "replay needs two windows of %g s at least",
		               in[0].file, span, window);
	}
	prof = xcalloc((size_t)nw, sizeof *prof);
	why = xcalloc((size_t)nw, sizeof *why);
	for (int k = 0; k < nw; k++) {
		tm_tele_opts wo = { k * window, (k + 1) * window - 1e-6, true,
		                    true };
		tm_error e = { 0, "" };
		char name[96];
		snprintf(name, sizeof name, "window %d (%g–%g s)", k, k * window,
		         (k + 1) * window);
		char *filled = NULL;
		int nf;
		/* a window of a long run is often all load: its GPUs' idle
		 * level comes from the whole recording, and so does the load
		 * level of a GPU the window never saw at full load (as replan's
		 * --baseline does), so that every window can be planned */
		if (!tm_profile_from_telemetry(in, nin, &wo, &text, &summ, &e))
			filled = tm_profile_fill(text, full, false, &nf);
		if (!filled || tm_profile_loadb(name, filled, strlen(filled),
		                                &prof[k], &e)) {
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
		free(filled);
		free(text);
		free(summ);
		text = summ = NULL;
	}
	free(full);
	W->n = nw;
	W->prof = prof;
	W->why = why;
	return 0;
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
