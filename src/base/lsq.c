/*
 * lsq.c — linear least squares for the small dense fits thermap makes
 * (the joint thermal fit of the GPUs of one host: format/coupling.c):
 * the normal equations XᵀX b = Xᵀy, formed once, then solved by Cholesky
 * over all columns or a subset of them (the others held at 0), with
 * (XᵀX)⁻¹ for the coefficients' uncertainties.
 *
 * Exact and simple rather than fast: O(n·p²) to form, O(p³) to solve, for
 * at most TM_LSQ_MAX unknowns. The normal equations square the condition
 * number of X; that costs nothing here, because the solve refuses any
 * design whose columns, scaled to unit length, leave a relative pivot
 * below TM_LSQ_PIVOT (X's condition about 10⁵ and worse): such a fit
 * cannot tell its coefficients apart, however it is solved.
 *
 * No I/O, no allocation failures (x*alloc abort), no state.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

void tm_lsq_normal(const double *X, const double *y, int n, int p,
                   double *xtx, double *xty)
{
	memset(xtx, 0, sizeof(double) * (size_t)p * (size_t)p);
	memset(xty, 0, sizeof(double) * (size_t)p);
	for (int r = 0; r < n; r++) {
		const double *x = &X[(size_t)r * (size_t)p];
		for (int i = 0; i < p; i++) {
			xty[i] += x[i] * y[r];
			for (int j = 0; j <= i; j++)
				xtx[(size_t)i * (size_t)p + (size_t)j] += x[i] * x[j];
		}
	}
	for (int i = 0; i < p; i++)   /* the upper triangle from the lower */
		for (int j = 0; j < i; j++)
			xtx[(size_t)j * (size_t)p + (size_t)i] =
				xtx[(size_t)i * (size_t)p + (size_t)j];
}

/* L z = v, L lower triangular q×q (row-major), in place. */
static void forward(const double *L, int q, double *v)
{
	for (int i = 0; i < q; i++) {
		double s = v[i];
		for (int k = 0; k < i; k++)
			s -= L[(size_t)i * (size_t)q + (size_t)k] * v[k];
		v[i] = s / L[(size_t)i * (size_t)q + (size_t)i];
	}
}

/* Lᵀ z = v, in place. */
static void backward(const double *L, int q, double *v)
{
	for (int i = q - 1; i >= 0; i--) {
		double s = v[i];
		for (int k = i + 1; k < q; k++)
			s -= L[(size_t)k * (size_t)q + (size_t)i] * v[k];
		v[i] = s / L[(size_t)i * (size_t)q + (size_t)i];
	}
}

int tm_lsq_solve(const double *xtx, const double *xty, int p,
                 const bool *use, double *b, double *inv, int *bad)
{
	int q = 0, rc = 0, *col;
	double *d, *L, *v;

	if (bad)
		*bad = -1;
	if (p < 1 || p > TM_LSQ_MAX)
		return -2;
	col = xmalloc(sizeof(int) * (size_t)p);
	for (int j = 0; j < p; j++)
		if (!use || use[j])
			col[q++] = j;
	d = xcalloc((size_t)p, sizeof(double));
	L = xcalloc((size_t)q * (size_t)q + 1, sizeof(double));
	v = xcalloc((size_t)p, sizeof(double));
	for (int j = 0; j < p; j++)
		b[j] = 0;
	if (inv)
		for (size_t k = 0; k < (size_t)p * (size_t)p; k++)
			inv[k] = 0;
	for (int i = 0; i < q; i++) {
		double a = xtx[(size_t)col[i] * (size_t)p + (size_t)col[i]];
		if (!isfinite(a) || !isfinite(xty[col[i]])) {
			rc = -2;
			goto out;
		}
		/* a column of zeros cannot be scaled, nor fitted */
		if (!(a > 0)) {
			rc = -1;
			if (bad)
				*bad = col[i];
			goto out;
		}
		d[i] = 1 / sqrt(a);
	}
	/* Cholesky of D·XᵀX·D, whose diagonal is 1: each pivot is the share
	 * of its column's length that the columns before it do not explain,
	 * so one relative threshold serves every scale of input */
	for (int i = 0; i < q; i++) {
		for (int j = 0; j <= i; j++) {
			double s = xtx[(size_t)col[i] * (size_t)p + (size_t)col[j]] *
			           d[i] * d[j];
			if (!isfinite(s)) {
				rc = -2;
				goto out;
			}
			for (int k = 0; k < j; k++)
				s -= L[(size_t)i * (size_t)q + (size_t)k] *
				     L[(size_t)j * (size_t)q + (size_t)k];
			if (j < i) {
				L[(size_t)i * (size_t)q + (size_t)j] =
					s / L[(size_t)j * (size_t)q + (size_t)j];
			} else if (!(s > TM_LSQ_PIVOT)) {
				rc = -1;
				if (bad)
					*bad = col[i];
				goto out;
			} else {
				L[(size_t)i * (size_t)q + (size_t)i] = sqrt(s);
			}
		}
	}
	for (int i = 0; i < q; i++)
		v[i] = xty[col[i]] * d[i];
	forward(L, q, v);
	backward(L, q, v);
	for (int i = 0; i < q; i++)
		b[col[i]] = v[i] * d[i];
	if (inv) {
		/* column k of (D S D)⁻¹ = D S⁻¹ D: S⁻¹ e_k, scaled */
		for (int k = 0; k < q; k++) {
			for (int i = 0; i < q; i++)
				v[i] = i == k;
			forward(L, q, v);
			backward(L, q, v);
			for (int i = 0; i < q; i++)
				inv[(size_t)col[i] * (size_t)p + (size_t)col[k]] =
					v[i] * d[i] * d[k];
		}
	}
out:
	if (rc)
		for (int j = 0; j < p; j++)
			b[j] = NAN;
	free(col);
	free(d);
	free(L);
	free(v);
	return rc;
}
