/*
 * gen_cluster — writes a synthetic cluster, profile and job for the scale
 * benchmark (scripts/bench-scale.sh): HOSTS hosts of 8 H200 GPUs, every
 * GPU pair of a host NV18 as on a DGX H100/H200, and a pipeline job of the
 * given parallel sizes. Deterministic: a fixed seed and splitmix64, nothing
 * from the clock, so the same arguments give the same bytes.
 *
 * usage: gen_cluster HOSTS TP PP DP OUTDIR
 *        (writes OUTDIR/cluster.json, profile.json, job.json; creates
 *        OUTDIR; TP·PP·DP must be a multiple of 8 and at most 8·HOSTS)
 *
 * Where the numbers come from:
 *  - absolute levels (ambient, °C/W, idle and loaded power, 700 W cap,
 *    power-capped SM clock) from the real 4xH200 recording,
 *    fixtures/h200x4-a/profile.json;
 *  - the persistent hot/cool pattern of the 8 positions of a chassis from
 *    the 8-GPU training recording
 *    fixtures/telemetry/gpu_metrics_8gpu_power-temp_nanoGPT-pr643_*.csv
 *    (its temp_load_c per GPU, in tests/profile/expected/): spread 21.2 °C;
 *  - how a hot position splits into higher ambient and higher °C/W: as on
 *    the H200 host, where GPUs 1 and 2 run ~5 °C hotter than 0 and 3, about
 *    60 % of it in ambient_c and 40 % in r_c_per_w · power;
 *  - invented, and only to vary hosts: a host offset (rack inlet) of
 *    ±2.5 °C and ±0.75 °C per GPU; ~2 % of GPUs (at least one) throttle
 *    (derate 1.03–1.08, 5 °C hotter, in thermal slowdown part of the
 *    time), the others have a derate of 1.000–1.010.
 *
 * The job: 96 layers split evenly over pp stages; the first stage also
 * holds the embedding (one layer's time) and the last the LM head and loss
 * (5.5 layers' time, as in fixtures/h200x4-a/job-pp2-dp2.json); layer
 * times 1.1 / 2.2 ms at tp 1 (the same job), divided by tp with 8 % extra
 * per doubling of tp; 4·pp microbatches; 64/tp MiB of activations per hop.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define GPUS_PER_HOST 8
#define HOSTS_PER_GROUP 32   /* hosts behind one leaf switch (net_group) */
#define SEED 0x746865726d6170ULL  /* "thermap" */
#define LAYERS 96

/* temp_load_c of GPUs 0..7 in the 8-GPU training recording */
static const double pos_load_c[GPUS_PER_HOST] = {
	52.7, 68.8, 48.2, 55.4, 61.3, 47.6, 55.9, 48.7
};

/* PCI bus numbers of the 8 GPUs of a DGX H100 / H200 */
static const int pos_bus[GPUS_PER_HOST] = {
	0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb
};

static uint64_t rng_state = SEED;

static uint64_t splitmix64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static double uniform(double lo, double hi)
{
	return lo + (hi - lo) * (double)(splitmix64() >> 11) * 0x1.0p-53;
}

static double round_to(double x, double step)
{
	return round(x / step) * step;
}

static FILE *open_out(const char *dir, const char *name, char *path,
                      size_t size)
{
	FILE *f;
	snprintf(path, size, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		perror(path);
	return f;
}

static int close_out(FILE *f, const char *path)
{
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "gen_cluster: %s: write error\n", path);
		return 1;
	}
	return 0;
}

static void host_name(int h, char *buf, size_t size)
{
	snprintf(buf, size, "gpu-%04d", h);
}

static void gpu_uuid(int h, int i, char *buf, size_t size)
{
	snprintf(buf, size, "GPU-%08x-%04x-4000-8000-%012x", (unsigned)h,
	         (unsigned)i, (unsigned)(h * GPUS_PER_HOST + i));
}

static int write_cluster(const char *dir, int hosts)
{
	char path[4096], name[32], uuid[64];
	FILE *f = open_out(dir, "cluster.json", path, sizeof path);
	if (!f)
		return 1;
	fprintf(f, "{\n  \"format\": \"thermap.cluster/1\",\n  \"nodes\": [\n");
	for (int h = 0; h < hosts; h++) {
		host_name(h, name, sizeof name);
		fprintf(f, "    {\n      \"host\": \"%s\",\n      \"gpus\": [\n",
		        name);
		for (int i = 0; i < GPUS_PER_HOST; i++) {
			gpu_uuid(h, i, uuid, sizeof uuid);
			fprintf(f, "        {\"index\": %d, \"uuid\": \"%s\", "
			        "\"pci_bus_id\": \"00000000:%02x:00.0\", "
			        "\"model\": \"NVIDIA H200\", \"memory_gib\": 140}%s\n",
			        i, uuid, pos_bus[i], i + 1 < GPUS_PER_HOST ? "," : "");
		}
		fprintf(f, "      ],\n      \"links\": [\n");
		for (int i = 0; i < GPUS_PER_HOST; i++) {
			fprintf(f, "        [");
			for (int k = 0; k < GPUS_PER_HOST; k++)
				fprintf(f, "%s\"%s\"", k ? ", " : "",
				        i == k ? "X" : "NV18");
			fprintf(f, "]%s\n", i + 1 < GPUS_PER_HOST ? "," : "");
		}
		fprintf(f, "      ],\n      \"link_gb_per_s\": null,\n"
		        "      \"net_gb_per_s\": 50,\n"
		        "      \"net_group\": \"leaf-%02d\"\n    }%s\n",
		        h / HOSTS_PER_GROUP, h + 1 < hosts ? "," : "");
	}
	fprintf(f, "  ],\n  \"network\": {\"same_group_gb_per_s\": 50, "
	        "\"cross_group_gb_per_s\": 25}\n}\n");
	return close_out(f, path);
}

static int write_profile(const char *dir, int hosts)
{
	int n = hosts * GPUS_PER_HOST, nthrottle = (n + 25) / 50;  /* ~2 % */
	char path[4096], name[32], uuid[64];
	unsigned char *throttle = calloc((size_t)n, 1);
	double mean = 0;
	FILE *f;

	if (!throttle) {
		fprintf(stderr, "gen_cluster: out of memory\n");
		return 1;
	}
	if (nthrottle < 1)
		nthrottle = 1;
	for (int i = 0; i < GPUS_PER_HOST; i++)
		mean += pos_load_c[i] / GPUS_PER_HOST;
	/* distinct throttling GPUs, drawn before anything else */
	for (int k = 0; k < nthrottle;) {
		int g = (int)(splitmix64() % (uint64_t)n);
		if (!throttle[g]) {
			throttle[g] = 1;
			k++;
		}
	}
	f = open_out(dir, "profile.json", path, sizeof path);
	if (!f) {
		free(throttle);
		return 1;
	}
	fprintf(f, "{\n  \"format\": \"thermap.profile/1\",\n  \"gpus\": [\n");
	for (int h = 0; h < hosts; h++) {
		double host_off = uniform(-2.5, 2.5);
		host_name(h, name, sizeof name);
		for (int i = 0; i < GPUS_PER_HOST; i++) {
			int g = h * GPUS_PER_HOST + i;
			/* H200 recording: cool pair ambient 31.5 °C, 0.0415 °C/W,
			 * 60.2 °C at 691.4 W; the four GPUs average 62.7 °C */
			double p_idle = round_to(uniform(78.3, 79.0), 0.01);
			double p_load = round_to(uniform(691.3, 691.7), 0.01);
			double t_load = 62.7 + (pos_load_c[i] - mean) + host_off +
			                uniform(-0.75, 0.75);
			double derate, slowdown = 0, hot, amb, r, t_idle;
			int clock;
			if (throttle[g]) {
				derate = uniform(1.03, 1.08);
				slowdown = round_to(uniform(0.15, 0.5), 0.001);
				t_load += 5;
			} else {
				derate = uniform(1.0, 1.01);
			}
			derate = round_to(derate, 0.001);
			clock = (int)lround(1496 / derate);
			hot = t_load - 60.2;
			amb = round_to(31.5 + 0.6 * hot, 0.1);
			r = round_to((t_load - amb) / p_load, 0.0001);
			t_idle = round_to(amb + r * p_idle, 0.1);
			t_load = round_to(amb + r * p_load, 0.1);
			gpu_uuid(h, i, uuid, sizeof uuid);
			fprintf(f, "    {\"host\": \"%s\", \"uuid\": \"%s\", "
			        "\"pci_bus_id\": \"00000000:%02x:00.0\", \"index\": %d,\n"
			        "     \"samples\": 590, \"load_samples\": 340, "
			        "\"span_s\": 308.6,\n"
			        "     \"temp_idle_c\": %.1f, \"temp_load_c\": %.1f, "
			        "\"temp_p95_c\": %.1f, \"temp_max_c\": %.1f, "
			        "\"headroom_c\": %.1f,\n"
			        "     \"power_idle_w\": %.2f, \"power_load_w\": %.2f, "
			        "\"power_limit_w\": 700.0,\n"
			        "     \"ambient_c\": %.1f, \"r_c_per_w\": %.4f,\n"
			        "     \"sm_clock_load_mhz\": %d, "
			        "\"sm_clock_max_mhz\": 1980,\n"
			        "     \"thermal_slowdown_frac\": %.3f, "
			        "\"power_cap_frac\": 1.0, \"derate\": %.3f}%s\n",
			        name, uuid, pos_bus[i], i, t_idle, t_load,
			        t_load + 0.7, t_load + 1.7, 87.0 - t_load, p_idle,
			        p_load, amb, r, clock, slowdown, derate,
			        g + 1 < n ? "," : "");
		}
	}
	fprintf(f, "  ]\n}\n");
	free(throttle);
	return close_out(f, path);
}

static int write_job(const char *dir, int tp, int pp, int dp)
{
	char path[4096];
	double scale = pow(1.08, log2(tp)) / tp;
	double lf = round_to(1.1 * scale, 0.0001), lb = round_to(2.2 * scale,
	                                                         0.0001);
	int layers = LAYERS / pp > 0 ? LAYERS / pp : 1;
	FILE *f = open_out(dir, "job.json", path, sizeof path);
	if (!f)
		return 1;
	fprintf(f, "{\n  \"format\": \"thermap.job/1\",\n"
	        "  \"name\": \"synthetic %d layers, tp=%d pp=%d dp=%d\",\n"
	        "  \"parallel\": {\"tp\": %d, \"cp\": 1, \"ep\": 1, \"dp\": %d, "
	        "\"pp\": %d, \"vpp\": 1, \"order\": \"tp-cp-ep-dp-pp\"},\n"
	        "  \"nproc_per_node\": %d,\n"
	        "  \"schedule\": {\"kind\": \"1f1b\", \"microbatches\": %d},\n"
	        "  \"layer_fwd_ms\": %.4f, \"layer_bwd_ms\": %.4f,\n"
	        "  \"stages\": [\n", layers * pp, tp, pp, dp, tp, dp, pp,
	        GPUS_PER_HOST, 4 * pp, lf, lb);
	for (int s = 0; s < pp; s++) {
		double ef = 0, eb = 0;
		int mem = 60;
		if (s == 0) {             /* embedding */
			ef += lf;
			eb += lb;
			mem += 10;
		}
		if (s == pp - 1) {        /* LM head and loss */
			ef += 5.5 * lf;
			eb += 5.5 * lb;
			mem += 20;
		}
		fprintf(f, "    {\"layers\": %d", layers);
		if (ef > 0)
			fprintf(f, ", \"extra_fwd_ms\": %.4f, \"extra_bwd_ms\": %.4f",
			        ef, eb);
		if (s + 1 < pp)
			fprintf(f, ", \"act_mib\": %g", 64.0 / tp);
		fprintf(f, ", \"mem_gib\": %d}%s\n", mem, s + 1 < pp ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	return close_out(f, path);
}

static int arg(const char *s, const char *what, long most)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1 || v > most) {
		fprintf(stderr, "gen_cluster: %s: \"%s\" is not an integer from 1 "
		        "to %ld\n", what, s, most);
		return -1;
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	int hosts, tp, pp, dp;
	long world;

	if (argc != 6) {
		fprintf(stderr, "usage: gen_cluster HOSTS TP PP DP OUTDIR\n");
		return 2;
	}
	if ((hosts = arg(argv[1], "HOSTS", 65536)) < 0 ||
	    (tp = arg(argv[2], "TP", GPUS_PER_HOST)) < 0 ||
	    (pp = arg(argv[3], "PP", 1024)) < 0 ||
	    (dp = arg(argv[4], "DP", 65536)) < 0)
		return 2;
	world = (long)tp * pp * dp;
	if (world % GPUS_PER_HOST || world > (long)hosts * GPUS_PER_HOST) {
		fprintf(stderr, "gen_cluster: world size %ld (TP·PP·DP) must be a "
		        "multiple of %d and at most %d·HOSTS = %ld\n", world,
		        GPUS_PER_HOST, GPUS_PER_HOST, (long)hosts * GPUS_PER_HOST);
		return 2;
	}
	if (mkdir(argv[5], 0755) && errno != EEXIST) {
		perror(argv[5]);
		return 1;
	}
	if (write_cluster(argv[5], hosts) || write_profile(argv[5], hosts) ||
	    write_job(argv[5], tp, pp, dp))
		return 1;
	return 0;
}
