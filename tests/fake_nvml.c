/*
 * fake_nvml.c — a stand-in for NVIDIA's libnvidia-ml.so.1 with the
 * functions `thermap profile --live` looks up, for tests/profile/live.sh
 * on machines without a GPU (the real NVML ran on a GPU machine:
 * docs/profile.md, "Live"). Two H100-like GPUs with fixed values, GPU i
 * i °C warmer and i W busier; FAKE_NVML=nogpu reports none, =fail fails
 * to start. Built as build/fakenvml/libnvidia-ml.so.1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { unsigned int gpu, memory; } util_t;
typedef struct {
	char bus_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
} pci_t;

static const char *mode(void)
{
	const char *m = getenv("FAKE_NVML");
	return m ? m : "";
}

int nvmlInit_v2(void) { return strcmp(mode(), "fail") ? 0 : 9; }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int rc)
{
	return rc == 9 ? "Driver Not Loaded" : "Unknown Error";
}
int nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = strcmp(mode(), "nogpu") ? 2 : 0;
	return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **d)
{
	*d = (void *)(unsigned long)(i + 1);
	return i < 2 ? 0 : 2;
}
static unsigned int gpu(void *d) { return (unsigned int)(unsigned long)d - 1; }
int nvmlDeviceGetUUID(void *d, char *s, unsigned int n)
{
	snprintf(s, n, "GPU-f0000000-0000-4000-8000-00000000000%u", gpu(d));
	return 0;
}
int nvmlDeviceGetPciInfo_v3(void *d, pci_t *p)
{
	memset(p, 0, sizeof *p);
	snprintf(p->bus_id, sizeof p->bus_id, "00000000:00:0%u.0", 6 + gpu(d));
	return 0;
}
int nvmlDeviceGetIndex(void *d, unsigned int *i) { *i = gpu(d); return 0; }
int nvmlDeviceGetTemperature(void *d, int s, unsigned int *t)
{
	(void)s;
	*t = 40 + gpu(d);
	return 0;
}
typedef struct { unsigned int version; int margin; } margin_t;
int nvmlDeviceGetMarginTemperature(void *d, margin_t *m)
{
	if (m->version != (sizeof *m | 1u << 24))
		return 3;   /* NVML_ERROR_INVALID_ARGUMENT */
	m->margin = 47 - (int)gpu(d);
	return 0;
}
int nvmlDeviceGetPowerUsage(void *d, unsigned int *mw)
{
	*mw = 100000 + 1000 * gpu(d);
	return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(void *d, unsigned int *mw)
{
	(void)d;
	*mw = 700000;
	return 0;
}
int nvmlDeviceGetClockInfo(void *d, int k, unsigned int *mhz)
{
	(void)d;
	*mhz = k == 1 ? 1980 : 0;
	return 0;
}
int nvmlDeviceGetMaxClockInfo(void *d, int k, unsigned int *mhz)
{
	(void)d;
	*mhz = k == 1 ? 1980 : 0;
	return 0;
}
int nvmlDeviceGetUtilizationRates(void *d, util_t *u)
{
	(void)d;
	u->gpu = u->memory = 0;
	return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r)
{
	(void)d;
	*r = 1;   /* GPU idle */
	return 0;
}
