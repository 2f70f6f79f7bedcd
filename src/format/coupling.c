/*
 * coupling.c — the joint steady-state fit of one GPU and the other GPUs of
 * its host (docs/profile.md, "Neighbours: --phases"):
 *
 *     T = a + r·P + Σ_k c_k·(P_k − idle_k),   every c_k ≥ 0,
 *
 * over the steady states a tm_coupling holds (its points), and the rules
 * that say whether the points identify it. `thermap profile --phases`
 * fits it on load phases; `thermap calibrate` can refit it on a job's own
 * steady states. The least squares themselves are base/lsq.c's.
 *
 * It knows no telemetry and no files: points in, coefficients and a
 * verdict out.
 */
#include <stdlib.h>
#include <string.h>

#include "format/format.h"


/* "GPU 3", or by UUID where the source has no index. */
static const char *src_name(const tm_coupling_src *s, char *buf, size_t cap)
{
	if (s->index >= 0)
		snprintf(buf, cap, "GPU %d", s->index);
	else
		snprintf(buf, cap, "GPU %.60s", s->uuid ? s->uuid : "?");
	return buf;
}

static bool fail(tm_thermal_fit *fit, int kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fail(tm_thermal_fit *fit, int kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fit->why, sizeof fit->why, fmt, ap);
	va_end(ap);
	fit->kind = kind;
	fit->ok = false;
	return false;
}

/* The design: a row per point, [1, P, P_1 − idle_1, ...]; y the
 * temperatures. False when a number is not finite. */
static bool design(const tm_coupling *c, const double *idle, double *X,
                   double *y)
{
	int p = 2 + c->nfrom;
	for (int i = 0; i < c->npoints; i++) {
		const double *q = &c->points[(size_t)i * (size_t)p];
		double *x = &X[(size_t)i * (size_t)p];
		y[i] = q[0];
		x[0] = 1;
		x[1] = q[1];
		for (int k = 0; k < c->nfrom; k++)
			x[2 + k] = q[2 + k] - idle[k];
		for (int j = 0; j < p; j++)
			if (!isfinite(x[j]))
				return false;
		if (!isfinite(y[i]))
			return false;
	}
	return true;
}

/* The active set: while a coupling is negative, the most negative is held
 * at 0 and the rest refitted. A neighbour cannot cool a GPU by drawing
 * power; a negative estimate is noise about 0. b: the unconstrained
 * solution in, the constrained one out; use: the free columns. */
static void hold_negatives(const double *xtx, const double *xty, int p,
                           bool *use, double *b)
{
	for (;;) {
		int worst = -1;
		for (int j = 2; j < p; j++)
			if (use[j] && b[j] < 0 && (worst < 0 || b[j] < b[worst]))
				worst = j;
		if (worst < 0)
			return;
		use[worst] = false;
		/* a subset of a design that solved solves: its pivots are
		 * those of a principal block, no smaller than the whole's */
		if (tm_lsq_solve(xtx, xty, p, use, b, NULL, NULL))
			for (int j = 0; j < p; j++)
				b[j] = use[j] ? NAN : 0;
	}
}

bool tm_coupling_fit(tm_coupling *c, const double *idle, tm_thermal_fit *fit)
{
	int m = c->nfrom, p = 2 + m, n = c->npoints, nfree = 0, bad = -1, rc;
	double *X = NULL, *y = NULL, *xtx = NULL, *xty = NULL, *b = NULL;
	double *inv = NULL, rss = 0, s, worst_sd = -1;
	bool *use = NULL, ok = false;
	char name[80];
	int worst = -1;

	memset(fit, 0, sizeof *fit);
	fit->ambient_c = fit->r_c_per_w = fit->sd_c = NAN;
	for (int k = 0; k < m; k++) {
		c->from[k].c_per_w = 0;
		c->from[k].sd_c_per_w = NAN;
	}
	if (m < 1)
		return fail(fit, TM_FIT_FEW, "no other GPU to be heated by");
	/* one degree of freedom at least, or the residuals say nothing */
	if (n < p + 1 || p > TM_LSQ_MAX)
		return fail(fit, TM_FIT_FEW, "%d steady states for %d unknowns "
		            "(ambient, own slope and %d neighbours); at least %d "
		            "needed", n, p, m, p + 1);
	X = xmalloc(sizeof(double) * (size_t)n * (size_t)p);
	y = xmalloc(sizeof(double) * (size_t)n);
	xtx = xmalloc(sizeof(double) * (size_t)p * (size_t)p);
	inv = xmalloc(sizeof(double) * (size_t)p * (size_t)p);
	xty = xmalloc(sizeof(double) * (size_t)p);
	b = xmalloc(sizeof(double) * (size_t)p);
	use = xmalloc(sizeof(bool) * (size_t)p);
	if (!design(c, idle, X, y)) {
		fail(fit, TM_FIT_NOT_FINITE, "a temperature, a power or a "
		     "neighbour's idle power is not a number");
		goto out;
	}
	tm_lsq_normal(X, y, n, p, xtx, xty);
	for (int j = 0; j < p; j++)
		use[j] = true;
	rc = tm_lsq_solve(xtx, xty, p, use, b, inv, &bad);
	if (rc == -1 && bad >= 2) {
		fail(fit, TM_FIT_SINGULAR, "the power of %s never moves apart "
		     "from this GPU's and its other neighbours' across the %d "
		     "steady states", src_name(&c->from[bad - 2], name,
		                               sizeof name), n);
		goto out;
	} else if (rc == -1) {
		fail(fit, TM_FIT_SINGULAR, "its own power does not move across "
		     "the %d steady states", n);
		goto out;
	} else if (rc) {
		fail(fit, TM_FIT_NOT_FINITE, "the steady states are out of the "
		     "range a fit can take");
		goto out;
	}
	hold_negatives(xtx, xty, p, use, b);
	for (int i = 0; i < n; i++) {
		double e = y[i];
		for (int j = 0; j < p; j++)
			e -= X[(size_t)i * (size_t)p + (size_t)j] * b[j];
		rss += e * e;
	}
	for (int j = 0; j < p; j++)
		nfree += use[j];
	/* whole-degree readings leave phase means good to a few tenths of
	 * a degree; with few degrees of freedom the residuals can show less
	 * by chance, and the uncertainties would claim too much */
	s = fmax(sqrt(rss / (n - nfree)), TM_FIT_SD_FLOOR_C);
	if (!isfinite(s)) {
		fail(fit, TM_FIT_NOT_FINITE, "the residuals are not finite");
		goto out;
	}
	for (int k = 0; k < m; k++) {
		double v = inv[(size_t)(2 + k) * (size_t)p + (size_t)(2 + k)];
		c->from[k].c_per_w = tm_round_as_written(b[2 + k], 5);
		c->from[k].sd_c_per_w = tm_round_as_written(s * sqrt(fmax(v, 0)),
		                                            5);
		if (c->from[k].sd_c_per_w > worst_sd) {
			worst_sd = c->from[k].sd_c_per_w;
			worst = k;
		}
	}
	fit->ambient_c = b[0];
	fit->r_c_per_w = b[1];
	fit->sd_c = s;
	if (!(worst_sd <= TM_COUPLING_SD_MAX)) {
		fail(fit, TM_FIT_UNCERTAIN, "its coupling to %s is uncertain by "
		     "%.5f °C/W, above %.3f", src_name(&c->from[worst], name,
		                                      sizeof name),
		     worst_sd, TM_COUPLING_SD_MAX);
		goto out;
	}
	if (!(b[1] > 0 && b[1] <= 10) || !(b[0] >= -50 && b[0] <= 200)) {
		fail(fit, TM_FIT_NOT_PHYSICAL, "ambient %.1f °C and own slope "
		     "%.4g °C/W; expected -50 to 200 °C and above 0 to 10 °C/W",
		     b[0], b[1]);
		goto out;
	}
	for (int k = 0; k < m; k++)
		if (c->from[k].c_per_w > 1) {
			fail(fit, TM_FIT_NOT_PHYSICAL, "its coupling to %s is %.3g "
			     "°C/W; expected at most 1", src_name(&c->from[k], name,
			                                          sizeof name),
			     c->from[k].c_per_w);
			goto out;
		}
	fit->ok = ok = true;
	fit->kind = TM_FIT_OK;
out:
	if (!ok)
		for (int k = 0; k < m; k++) {
			c->from[k].c_per_w = 0;
			c->from[k].sd_c_per_w = NAN;
		}
	free(X);
	free(y);
	free(xtx);
	free(inv);
	free(xty);
	free(b);
	free(use);
	return ok;
}
