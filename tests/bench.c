/*
 * bench.c — `make bench`: solve times of the planner's methods on real and
 * public inputs, as medians over repeated runs, with the greedy method of
 * the same run as the baseline ratio, and the process's peak RSS.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ops/ops.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double run(tm_problem *pb, tm_policy *pol, int method, int reps,
                  tm_solution *keep)
{
	double t[64];
	tm_error e = { 0, "" };
	pol->method = method;
	for (int i = 0; i < reps; i++) {
		tm_solution s;
		double t0 = now_ms();
		if (tm_solve(pb, &s, &e)) {
			fprintf(stderr, "bench: %s\n", e.msg);
			exit(1);
		}
		t[i] = now_ms() - t0;
		if (i == 0 && keep)
			*keep = s;
		else
			tm_solution_clear(&s);
	}
	qsort(t, (size_t)reps, sizeof(double), cmp);
	return t[reps / 2];
}

static void bench(const char *name, const char *cf, const char *pf,
                  const char *jf)
{
	tm_cluster *c = NULL;
	tm_profile *p = NULL;
	tm_job *j = NULL;
	tm_policy *pol = NULL;
	tm_problem *pb = NULL;
	tm_error e = { 0, "" };
	tm_solution s;
	double tg, ti, tb = NAN;

	if (tm_cluster_load(cf, &c, &e) || tm_profile_load(pf, &p, &e) ||
	    tm_job_load(jf, &j, &e) || tm_policy_default(&pol, &e) ||
	    tm_problem_new(c, p, j, pol, false, &pb, &e)) {
		fprintf(stderr, "bench: %s\n", e.msg);
		exit(1);
	}
	tg = run(pb, pol, TM_METHOD_GREEDY, 21, NULL);
	ti = run(pb, pol, TM_METHOD_ILP, 21, &s);
	if (pb->ngpu <= 8)
		tb = run(pb, pol, TM_METHOD_BRUTE, 3, NULL);
	printf("| %s | %d | %.3f | %.3f | %.1fx | %.3f | %s | %.2f %% | %.2f °C |\n",
	       name, pb->nranks, tg, ti, ti / tg, tb, s.status,
	       (s.baseline.iteration_ms - s.ev.iteration_ms) /
	       s.baseline.iteration_ms * 100,
	       s.baseline.peak_temp_c - s.ev.peak_temp_c);
	tm_solution_clear(&s);
	tm_problem_free(pb);
	tm_policy_free(pol);
	tm_job_free(j);
	tm_profile_free(p);
	tm_cluster_free(c);
}

int main(void)
{
	struct rusage ru;
	printf("| case | ranks | greedy ms | ilp ms | ilp/greedy | brute ms | "
	       "ilp status | time gain vs identity | peak drop vs identity |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	bench("h200x4-a pp2 dp2 (real)", "fixtures/h200x4-a/cluster.json",
	      "fixtures/h200x4-a/profile.json",
	      "fixtures/h200x4-a/job-pp2-dp2.json");
	bench("dgx1 tp2 pp4 (public topology)",
	      "fixtures/public/dgx1-v100/cluster.json",
	      "tests/cli/data/dgx1-profile.json", "tests/cli/data/job-tp2pp4.json");
	getrusage(RUSAGE_SELF, &ru);
	printf("\npeak RSS %.1f MiB (medians of 21 runs; brute of 3)\n",
	       ru.ru_maxrss / 1024.0);
	return 0;
}
