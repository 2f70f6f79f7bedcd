/*
 * nvml.c — sampling the machine in hand through NVIDIA's NVML, loaded at
 * run time (dlopen of libnvidia-ml.so.1: no build dependency), for
 * `thermap profile --live` (docs/profile.md, "Live"). Every interval it
 * reads each GPU's temperature, power, enforced power limit, SM clock and
 * its maximum, utilisation, clock event reasons and the margin to its
 * temperature limit (nvidia-smi's T.Limit),
 * and writes the samples in the layout of nvidia-smi --query-gpu CSV, so
 * the same reader profiles them and they can be kept and profiled again.
 * Loading NVML and starting it are base/nvml.c's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "telemetry/telemetry.h"

typedef tm_nvml_dev nvml_dev;
typedef struct { unsigned int gpu, memory; } nvml_util;
/* nvmlMarginTemperature_v1_t: the margin nvidia-smi shows as T.Limit */
typedef struct { unsigned int version; int margin; } nvml_margin;
#define NVML_MARGIN_V1 ((unsigned int)(sizeof(nvml_margin) | 1u << 24))

/* The NVML functions sampled, each looked up by name (the library, its
 * start and the GPU handles are base/nvml.c's). */
typedef struct nvml {
	tm_nvml L;
	int (*uuid)(nvml_dev, char *, unsigned int);
	int (*pci)(nvml_dev, tm_nvml_pci *);
	int (*index)(nvml_dev, unsigned int *);
	int (*temp)(nvml_dev, int, unsigned int *);
	int (*margin)(nvml_dev, nvml_margin *);
	int (*power)(nvml_dev, unsigned int *);
	int (*limit)(nvml_dev, unsigned int *);
	int (*clock)(nvml_dev, int, unsigned int *);
	int (*max_clock)(nvml_dev, int, unsigned int *);
	int (*util)(nvml_dev, nvml_util *);
	int (*reasons)(nvml_dev, unsigned long long *);
} nvml;

#define NVML_CLOCK_SM 1
#define NVML_TEMPERATURE_GPU 0

static int load(nvml *N, tm_error *err)
{
	const char *what = NULL;
	tm_nvml *L = &N->L;
	int rc;
	memset(N, 0, sizeof *N);
	if ((rc = tm_nvml_open(L, "--live: ", err)))
		return rc;
	*(void **)&N->uuid = tm_nvml_sym(L, "nvmlDeviceGetUUID", NULL);
	*(void **)&N->pci = tm_nvml_sym(L, "nvmlDeviceGetPciInfo_v3",
	                                "nvmlDeviceGetPciInfo_v2");
	*(void **)&N->index = tm_nvml_sym(L, "nvmlDeviceGetIndex", NULL);
	*(void **)&N->temp = tm_nvml_sym(L, "nvmlDeviceGetTemperature", NULL);
	*(void **)&N->margin = tm_nvml_sym(L, "nvmlDeviceGetMarginTemperature",
	                                   NULL);
	*(void **)&N->power = tm_nvml_sym(L, "nvmlDeviceGetPowerUsage", NULL);
	*(void **)&N->limit = tm_nvml_sym(L, "nvmlDeviceGetEnforcedPowerLimit",
	                                  NULL);
	*(void **)&N->clock = tm_nvml_sym(L, "nvmlDeviceGetClockInfo", NULL);
	*(void **)&N->max_clock = tm_nvml_sym(L, "nvmlDeviceGetMaxClockInfo",
	                                      NULL);
	*(void **)&N->util = tm_nvml_sym(L, "nvmlDeviceGetUtilizationRates",
	                                 NULL);
	*(void **)&N->reasons = tm_nvml_sym(L,
		"nvmlDeviceGetCurrentClocksEventReasons",
		"nvmlDeviceGetCurrentClocksThrottleReasons");
	if (!N->uuid) what = "nvmlDeviceGetUUID";
	else if (!N->temp) what = "nvmlDeviceGetTemperature";
	else if (!N->power) what = "nvmlDeviceGetPowerUsage";
	else if (!N->clock) what = "nvmlDeviceGetClockInfo";
	if (what)
		return tm_nvml_missing(L, "--live: ", what, err);
	return 0;
}

static const char *nvml_err(const nvml *N, int rc)
{
	return tm_nvml_strerror(&N->L, rc);
}

/* One value, or an empty field when NVML does not give it. */
static void field_u(strbuf *b, int ok, double v, const char *unit)
{
	if (ok)
		sb_addf(b, ", %.2f%s", v, unit);
	else
		sb_add(b, ", [N/A]");
}

int tm_nvml_record(const char *path, double seconds, int interval_ms,
                   bool progress, tm_error *err)
{
	nvml N;
	unsigned int n = 0;
	nvml_dev *dev = NULL;
	char (*uuid)[96] = NULL, (*bus)[40] = NULL;
	unsigned int *idx = NULL, *maxclk = NULL;
	int *has_max = NULL, rc = 0, e;
	strbuf b;
	double t0, next, last_said = -10;
	long rows = 0;

	if ((rc = load(&N, err)))
		return rc;
	if ((rc = tm_nvml_start(&N.L, "--live: ", err)))
		return rc;
	if ((e = N.L.count(&n)) != 0 || n == 0) {
		rc = tm_fail(err, TM_EINPUT, "--live: NVML finds no GPU%s%s",
		             e ? ": " : "", e ? nvml_err(&N, e) : "");
		goto out;
	}
	dev = xcalloc(n, sizeof *dev);
	uuid = xcalloc(n, sizeof *uuid);
	bus = xcalloc(n, sizeof *bus);
	idx = xcalloc(n, sizeof *idx);
	maxclk = xcalloc(n, sizeof *maxclk);
	has_max = xcalloc(n, sizeof *has_max);
	for (unsigned int i = 0; i < n && !rc; i++) {
		tm_nvml_pci p;
		if ((e = N.L.handle(i, &dev[i])) != 0 ||
		    (e = N.uuid(dev[i], uuid[i], sizeof uuid[i])) != 0) {
			rc = tm_fail(err, TM_EINPUT, "--live: NVML GPU %u: %s", i,
			             nvml_err(&N, e));
			break;
		}
		uuid[i][sizeof uuid[i] - 1] = '\0';
		idx[i] = i;
		if (N.index)
			N.index(dev[i], &idx[i]);
		if (N.pci && N.pci(dev[i], &p) == 0) {
			p.bus_id[sizeof p.bus_id - 1] = '\0';
			snprintf(bus[i], sizeof bus[i], "%s", p.bus_id);
		}
		has_max[i] = N.max_clock && N.max_clock(dev[i], NVML_CLOCK_SM,
		                                        &maxclk[i]) == 0;
	}
	if (rc)
		goto out;
	sb_init(&b);
	sb_add(&b, "timestamp, index, pci.bus_id, uuid, temperature.gpu, "
	       "power.draw [W], power.limit [W], clocks.current.sm [MHz], "
	       "clocks.max.sm [MHz], utilization.gpu [%], "
	       "clocks_event_reasons.active, temperature.gpu.tlimit\n");
	t0 = next = tm_now_ms();
	for (;;) {
		double now = tm_now_ms();
		struct timespec ts;
		struct tm tmv;
		char stamp[40];
		if (now - t0 > seconds * 1e3)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tmv);
		strftime(stamp, sizeof stamp, "%Y/%m/%d %H:%M:%S", &tmv);
		for (unsigned int i = 0; i < n; i++) {
			unsigned int temp = 0, mw = 0, lim = 0, clk = 0;
			unsigned long long why = 0;
			nvml_util u = { 0, 0 };
			/* every reading before its value is used */
			int has_t = N.temp(dev[i], NVML_TEMPERATURE_GPU, &temp) == 0;
			int has_p = N.power(dev[i], &mw) == 0;
			int has_l = N.limit && N.limit(dev[i], &lim) == 0;
			int has_c = N.clock(dev[i], NVML_CLOCK_SM, &clk) == 0;
			int has_u = N.util && N.util(dev[i], &u) == 0;
			nvml_margin mg = { NVML_MARGIN_V1, 0 };
			int has_m = N.margin && N.margin(dev[i], &mg) == 0;
			sb_addf(&b, "%s.%03ld, %u, %s, %s", stamp,
			        (long)(ts.tv_nsec / 1000000), idx[i],
			        bus[i][0] ? bus[i] : "[N/A]", uuid[i]);
			field_u(&b, has_t, temp, "");
			field_u(&b, has_p, mw / 1000.0, " W");
			field_u(&b, has_l, lim / 1000.0, " W");
			field_u(&b, has_c, clk, " MHz");
			field_u(&b, has_max[i], maxclk[i], " MHz");
			field_u(&b, has_u, u.gpu, " %");
			if (N.reasons && N.reasons(dev[i], &why) == 0)
				sb_addf(&b, ", 0x%016llx", why);
			else
				sb_add(&b, ", [N/A]");
			/* the margin nvidia-smi shows as T.Limit (older NVML
			 * has none: the column is [N/A]) */
			field_u(&b, has_m, mg.margin, "");
			sb_add(&b, "\n");
		}
		rows++;
		if (progress && (now - t0) / 1e3 >= last_said + 10) {
			last_said = floor((now - t0) / 1e4) * 10;
			fprintf(stderr, "thermap: --live: %.0f of %.0f s, %u GPU(s), "
			        "%ld samples each\n", (now - t0) / 1e3, seconds, n,
			        rows);
		}
		next += interval_ms;
		while ((now = tm_now_ms()) < next) {
			struct timespec d;
			double ms = next - now;
			d.tv_sec = (time_t)(ms / 1e3);
			d.tv_nsec = (long)((ms - d.tv_sec * 1e3) * 1e6);
			nanosleep(&d, NULL);
		}
	}
	rc = tm_write_file_atomic(path, b.s, b.len, err);
	sb_free(&b);
out:
	tm_nvml_close(&N.L);
	free(dev);
	free(uuid);
	free(bus);
	free(idx);
	free(maxclk);
	free(has_max);
	return rc;
}
