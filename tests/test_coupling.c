/*
 * test_coupling.c — the joint thermal fit of a host's GPUs
 * (format/coupling.c) and the least squares under it (base/lsq.c): exact
 * systems and singular ones; synthetic 4- and 8-GPU chassis with known
 * ambient, slopes and couplings, measured with noise, recovered within
 * stated tolerances; a coupling the truth has at 0 held at 0, never
 * negative; the designs that cannot identify a coupling (a uniform burn
 * with idle, too few steady states, equal powers, NaN) refused with why;
 * and `thermap profile --phases` on the real one-hot 4×H200 recording.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "testutil.h"

/* ---- lsq.c ---------------------------------------------------------------- */

/* y = 2 + 3·x1 − x2, exactly: the solve gives the coefficients, and the
 * inverse is the inverse. */
static void test_lsq_exact(void **state)
{
	double X[6 * 3], y[6], xtx[9], xty[3], b[3], inv[9];
	(void)state;
	for (int i = 0; i < 6; i++) {
		double x1 = i, x2 = (i * i) % 5;
		X[i * 3] = 1;
		X[i * 3 + 1] = x1;
		X[i * 3 + 2] = x2;
		y[i] = 2 + 3 * x1 - x2;
	}
	tm_lsq_normal(X, y, 6, 3, xtx, xty);
	assert_int_equal(tm_lsq_solve(xtx, xty, 3, NULL, b, inv, NULL), 0);
	assert_true(fabs(b[0] - 2) < 1e-12);
	assert_true(fabs(b[1] - 3) < 1e-12);
	assert_true(fabs(b[2] + 1) < 1e-12);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			double s = 0;
			for (int k = 0; k < 3; k++)
				s += xtx[i * 3 + k] * inv[k * 3 + j];
			assert_true(fabs(s - (i == j)) < 1e-9);
		}
	/* the last column held at 0: the fit of the first two alone */
	{
		bool use[3] = { true, true, false };
		double b2[3], inv2[9];
		assert_int_equal(tm_lsq_solve(xtx, xty, 3, use, b2, inv2, NULL),
		                 0);
		assert_true(b2[2] == 0 && inv2[8] == 0 && inv2[2] == 0);
		/* the normal equations of the two used columns hold */
		for (int i = 0; i < 2; i++)
			assert_true(fabs(xtx[i * 3] * b2[0] + xtx[i * 3 + 1] * b2[1] -
			                 xty[i]) < 1e-9 * fabs(xty[i]) + 1e-9);
	}
}

/* A column that is another one scaled, one that is zero, a NaN: refused,
 * naming the column, never a crash. */
static void test_lsq_singular(void **state)
{
	double X[5 * 3], y[5], xtx[9], xty[3], b[3];
	int bad;
	(void)state;
	for (int i = 0; i < 5; i++) {
		X[i * 3] = 1;
		X[i * 3 + 1] = 70 + 100 * i;
		X[i * 3 + 2] = 2 * (70 + 100 * i);    /* the column before, ×2 */
		y[i] = i;
	}
	tm_lsq_normal(X, y, 5, 3, xtx, xty);
	assert_int_equal(tm_lsq_solve(xtx, xty, 3, NULL, b, NULL, &bad), -1);
	assert_int_equal(bad, 2);
	assert_true(isnan(b[0]));
	for (int i = 0; i < 5; i++)
		X[i * 3 + 2] = 0;
	tm_lsq_normal(X, y, 5, 3, xtx, xty);
	assert_int_equal(tm_lsq_solve(xtx, xty, 3, NULL, b, NULL, &bad), -1);
	assert_int_equal(bad, 2);
	X[4] = NAN;
	tm_lsq_normal(X, y, 5, 3, xtx, xty);
	assert_int_equal(tm_lsq_solve(xtx, xty, 3, NULL, b, NULL, &bad), -2);
	assert_int_equal(tm_lsq_solve(xtx, xty, 0, NULL, b, NULL, &bad), -2);
}

/* ---- synthetic chassis ---------------------------------------------------- */

/* A normal deviate (Box–Muller) from the tests' generator. */
static double gauss(tt_rng *r)
{
	double u = tt_real(r, 1e-12, 1), v = tt_real(r, 0, 1);
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

#define MAXG 8

/* A chassis: what each GPU truly is, and what its neighbours do to it. */
typedef struct chassis {
	int g;
	double a[MAXG], r[MAXG], idle[MAXG];
	double c[MAXG][MAXG];     /* c[g][h]: h heats g, °C per W */
} chassis;

/* One steady state: which GPUs run. Powers: the load at 690 ± 6 W, idle
 * at the GPU's idle ± 0.4 W; temperatures the truth plus noise_c of
 * normal noise; both rounded as a profile writes them. */
static void steady(const chassis *ch, unsigned load, tt_rng *rng,
                   double noise_c, double *T, double *P)
{
	for (int h = 0; h < ch->g; h++)
		P[h] = (load >> h & 1) ? 690 + tt_real(rng, -6, 6)
		                       : ch->idle[h] + tt_real(rng, -0.4, 0.4);
	for (int g = 0; g < ch->g; g++) {
		double t = ch->a[g] + ch->r[g] * P[g];
		for (int h = 0; h < ch->g; h++)
			if (h != g)
				t += ch->c[g][h] * (P[h] - ch->idle[h]);
		T[g] = round((t + noise_c * gauss(rng)) * 100) / 100;
	}
	for (int h = 0; h < ch->g; h++)
		P[h] = round(P[h] * 100) / 100;
}

/* GPU g's coupling over the steady states of the load masks: its
 * sources every other GPU, in index order. idle: theirs. */
static tm_coupling *coupling_of(const chassis *ch, int g,
                                const unsigned *loads, int n, uint64_t seed,
                                double noise_c, double *idle)
{
	tm_coupling *c = xcalloc(1, sizeof *c);
	tt_rng rng = { seed };
	int w = 1 + ch->g, k = 0;
	c->how = xstrdup("test");
	c->nfrom = ch->g - 1;
	c->from = xcalloc((size_t)c->nfrom, sizeof *c->from);
	for (int h = 0; h < ch->g; h++)
		if (h != g) {
			c->from[k].index = h;
			idle[k++] = ch->idle[h];
		}
	c->npoints = n;
	c->points = xcalloc((size_t)(n * w), sizeof(double));
	for (int i = 0; i < n; i++) {
		double T[MAXG] = { 0 }, P[MAXG] = { 0 }, *q = &c->points[i * w];
		/* every GPU's steady state is one draw of the whole chassis */
		steady(ch, loads[i], &rng, noise_c, T, P);
		q[0] = T[g];
		q[1] = P[g];
		k = 2;
		for (int h = 0; h < ch->g; h++)
			if (h != g)
				q[k++] = P[h];
	}
	return c;
}

/* idle, each GPU alone, all, all but each: 2 + 2G steady states */
static int phase_design(int g, unsigned *loads)
{
	int n = 0;
	unsigned all = (1u << g) - 1;
	loads[n++] = 0;
	for (int h = 0; h < g; h++)
		loads[n++] = 1u << h;
	loads[n++] = all;
	for (int h = 0; h < g; h++)
		loads[n++] = all & ~(1u << h);
	return n;
}

/* The tolerances the synthetic fits must meet, with temperature noise of
 * 0.25 °C (about the real recording's residual SD): each coupling within
 * 0.002 °C/W of the truth (about three of its standard uncertainties),
 * the own slope within 0.002 °C/W, the ambient within 1.5 °C, the
 * residual SD within a factor two of the noise, and every coupling the
 * truth has at 0 at most 0.002 and never negative. */
#define TOL_C 0.002
#define TOL_R 0.002
#define TOL_A 1.5

static int check_chassis(const chassis *ch, uint64_t seed, int *held)
{
	unsigned loads[2 + 2 * MAXG];
	int n = phase_design(ch->g, loads), identified = 0;
	for (int g = 0; g < ch->g; g++) {
		double idle[MAXG];
		tm_thermal_fit fit;
		tm_coupling *c = coupling_of(ch, g, loads, n, seed + (uint64_t)g,
		                             0.25, idle);
		int k = 0;
		bool ok = tm_coupling_fit(c, idle, &fit);
		if (!ok)
			print_message("GPU %d: %s\n", g, fit.why);
		assert_true(ok);
		identified++;
		assert_true(fabs(fit.ambient_c - ch->a[g]) <= TOL_A);
		assert_true(fabs(fit.r_c_per_w - ch->r[g]) <= TOL_R);
		assert_true(fit.sd_c >= TM_FIT_SD_FLOOR_C && fit.sd_c < 0.5);
		for (int h = 0; h < ch->g; h++) {
			const tm_coupling_src *s;
			if (h == g)
				continue;
			s = &c->from[k++];
			assert_int_equal(s->index, h);
			assert_true(s->c_per_w >= 0);
			assert_true(s->sd_c_per_w > 0 &&
			            s->sd_c_per_w <= TM_COUPLING_SD_MAX);
			if (fabs(s->c_per_w - ch->c[g][h]) > TOL_C)
				print_message("GPU %d from %d: %.5f, truth %.5f\n", g, h,
				              s->c_per_w, ch->c[g][h]);
			assert_true(fabs(s->c_per_w - ch->c[g][h]) <= TOL_C);
			*held += s->c_per_w == 0;
		}
		tm_coupling_free(c);
	}
	return identified;
}

/* The real 4×H200's pattern: GPU 0 heats GPU 1, GPU 3 heats GPU 2. */
static void test_chassis_4(void **state)
{
	chassis ch = { .g = 4 };
	int held = 0;
	(void)state;
	for (int g = 0; g < 4; g++) {
		ch.a[g] = 32.5 + 0.6 * g;
		ch.r[g] = 0.036 + 0.001 * g;
		ch.idle[g] = 75 + 1.3 * g;
	}
	ch.c[1][0] = 0.0078;
	ch.c[2][3] = 0.0089;
	ch.c[0][1] = 0.0012;     /* a weak one, back the other way */
	for (uint64_t seed = 1; seed <= 40; seed += 13)
		assert_int_equal(check_chassis(&ch, seed * 1000, &held), 4);
	/* of the 9 couplings the truth has at 0 in each run, noise puts
	 * about half below 0 unconstrained: those are held at exactly 0 */
	assert_true(held > 0);
}

/* Eight GPUs in two rows of four, the air front to back: each front GPU
 * heats the one behind it, and a little the one behind and beside. */
static void test_chassis_8(void **state)
{
	chassis ch = { .g = 8 };
	int held = 0;
	(void)state;
	for (int g = 0; g < 8; g++) {
		ch.a[g] = 31 + 0.4 * g;
		ch.r[g] = 0.034 + 0.0008 * g;
		ch.idle[g] = 70 + g;
	}
	for (int f = 0; f < 4; f++) {
		ch.c[4 + f][f] = 0.006 + 0.001 * f;
		if (f < 3)
			ch.c[5 + f][f] = 0.0025;
	}
	for (uint64_t seed = 7; seed <= 70; seed += 21)
		assert_int_equal(check_chassis(&ch, seed * 977, &held), 8);
	assert_true(held > 0);
}

/* A coupling the truth has at 0 whose unconstrained estimate is
 * negative comes out exactly 0, its uncertainty still given, and the
 * others refitted without it. */
static void test_held_at_zero(void **state)
{
	chassis ch = { .g = 4 };
	unsigned loads[10];
	int n, found = 0;
	(void)state;
	for (int g = 0; g < 4; g++) {
		ch.a[g] = 33;
		ch.r[g] = 0.037;
		ch.idle[g] = 77;
	}
	ch.c[1][0] = 0.008;
	n = phase_design(4, loads);
	for (uint64_t seed = 1; seed < 200 && !found; seed++) {
		double idle[3], X[10 * 5], y[10], xtx[25], xty[5], b[5];
		tm_thermal_fit fit;
		tm_coupling *c = coupling_of(&ch, 1, loads, n, seed, 0.3, idle);
		/* the unconstrained fit, as the design gives it */
		for (int i = 0; i < n; i++) {
			const double *q = &c->points[i * 5];
			X[i * 5] = 1;
			X[i * 5 + 1] = q[1];
			for (int k = 0; k < 3; k++)
				X[i * 5 + 2 + k] = q[2 + k] - idle[k];
			y[i] = q[0];
		}
		tm_lsq_normal(X, y, n, 5, xtx, xty);
		assert_int_equal(tm_lsq_solve(xtx, xty, 5, NULL, b, NULL, NULL), 0);
		assert_true(tm_coupling_fit(c, idle, &fit));
		for (int k = 1; k < 3; k++)   /* the sources GPU 2 and GPU 3 */
			if (b[2 + k] < 0) {
				found = 1;
				assert_true(c->from[k].c_per_w == 0);
				assert_true(c->from[k].sd_c_per_w > 0);
			}
		for (int k = 0; k < 3; k++)
			assert_true(c->from[k].c_per_w >= 0);
		assert_true(fabs(c->from[0].c_per_w - 0.008) <= TOL_C);
		tm_coupling_free(c);
	}
	assert_true(found);
}

/* ---- designs that cannot identify ---------------------------------------- */

static void expect_refused(tm_coupling *c, const double *idle, int kind,
                           const char *why)
{
	tm_thermal_fit fit;
	assert_false(tm_coupling_fit(c, idle, &fit));
	assert_false(fit.ok);
	if (fit.kind != kind || !strstr(fit.why, why))
		print_message("kind %d, why: %s\n", fit.kind, fit.why);
	assert_int_equal(fit.kind, kind);
	assert_non_null(strstr(fit.why, why));
	assert_null(strchr(fit.why, '\n'));
	for (int k = 0; k < c->nfrom; k++) {
		assert_true(c->from[k].c_per_w == 0);
		assert_true(isnan(c->from[k].sd_c_per_w));
	}
}

static chassis real_like(void)
{
	chassis ch = { .g = 4 };
	for (int g = 0; g < 4; g++) {
		ch.a[g] = 33;
		ch.r[g] = 0.038;
		ch.idle[g] = 76 + g;
	}
	ch.c[1][0] = 0.0078;
	ch.c[2][3] = 0.0089;
	return ch;
}

/* A uniform burn with idle phases, however many: every neighbour's power
 * moves with this GPU's, so the fit cannot say whose heat it is. */
static void test_uniform_burn(void **state)
{
	chassis ch = real_like();
	unsigned loads[12];
	double idle[3];
	tm_coupling *c;
	(void)state;
	for (int i = 0; i < 12; i++)
		loads[i] = i % 2 ? 0xf : 0;
	for (int g = 0; g < 4; g++) {
		tm_thermal_fit fit;
		c = coupling_of(&ch, g, loads, 12, 99 + (uint64_t)g, 0.25, idle);
		assert_false(tm_coupling_fit(c, idle, &fit));
		assert_true(fit.kind == TM_FIT_UNCERTAIN ||
		            fit.kind == TM_FIT_SINGULAR);
		tm_coupling_free(c);
	}
	/* without noise in the powers the columns are exactly dependent */
	c = coupling_of(&ch, 1, loads, 12, 5, 0.25, idle);
	for (int i = 0; i < 12; i++)
		for (int k = 1; k < 5; k++)
			c->points[i * 5 + k] = i % 2 ? 690 : 76;
	idle[0] = idle[1] = idle[2] = 76;
	expect_refused(c, idle, TM_FIT_SINGULAR, "never moves apart");
	tm_coupling_free(c);
}

/* Five unknowns need six steady states; none needs a neighbour. */
static void test_too_few(void **state)
{
	chassis ch = real_like();
	unsigned loads[10];
	double idle[3];
	tm_coupling *c;
	(void)state;
	phase_design(4, loads);
	c = coupling_of(&ch, 1, loads, 5, 3, 0.25, idle);
	expect_refused(c, idle, TM_FIT_FEW, "5 steady states for 5 unknowns");
	tm_coupling_free(c);
	c = coupling_of(&ch, 1, loads, 6, 3, 0.25, idle);
	{
		tm_thermal_fit fit;
		/* six are enough to be tried; these six identify it */
		assert_true(tm_coupling_fit(c, idle, &fit));
	}
	c->nfrom = 0;   /* a GPU alone */
	{
		tm_thermal_fit fit;
		assert_false(tm_coupling_fit(c, idle, &fit));
		assert_int_equal(fit.kind, TM_FIT_FEW);
	}
	c->nfrom = 3;
	tm_coupling_free(c);
}

/* Every power equal, a NaN temperature, a NaN idle power, an infinite
 * power: refused, no crash, nothing written but 0 and NAN. */
static void test_degenerate(void **state)
{
	chassis ch = real_like();
	unsigned loads[10];
	double idle[3];
	tm_coupling *c;
	(void)state;
	phase_design(4, loads);
	c = coupling_of(&ch, 1, loads, 10, 11, 0.25, idle);
	for (int i = 0; i < 10; i++)
		for (int k = 1; k < 5; k++)
			c->points[i * 5 + k] = 300;
	expect_refused(c, idle, TM_FIT_SINGULAR, "its own power does not move");
	tm_coupling_free(c);

	c = coupling_of(&ch, 1, loads, 10, 11, 0.25, idle);
	c->points[3 * 5] = NAN;
	expect_refused(c, idle, TM_FIT_NOT_FINITE, "not a number");
	c->points[3 * 5] = 40;
	c->points[4 * 5 + 2] = INFINITY;
	expect_refused(c, idle, TM_FIT_NOT_FINITE, "not a number");
	c->points[4 * 5 + 2] = 690;
	idle[2] = NAN;
	expect_refused(c, idle, TM_FIT_NOT_FINITE, "not a number");
	tm_coupling_free(c);

	/* temperatures that fall with power: no physical slope */
	c = coupling_of(&ch, 1, loads, 10, 11, 0.25, idle);
	for (int i = 0; i < 10; i++)
		c->points[i * 5] = 100 - 0.05 * c->points[i * 5 + 1];
	expect_refused(c, idle, TM_FIT_NOT_PHYSICAL, "own slope");
	tm_coupling_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lsq_exact),
		cmocka_unit_test(test_lsq_singular),
		cmocka_unit_test(test_chassis_4),
		cmocka_unit_test(test_chassis_8),
		cmocka_unit_test(test_held_at_zero),
		cmocka_unit_test(test_uniform_burn),
		cmocka_unit_test(test_too_few),
		cmocka_unit_test(test_degenerate),
	};
	tm_set_warn(tt_quiet, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
