/*
 * fake_nvml.c — a stand-in for NVIDIA's libnvidia-ml.so.1 with the
 * functions `thermap profile --live` and `thermap topo --local` look up,
 * for tests/profile/live.sh and tests/topo/local.sh on machines without a
 * GPU (the real NVML ran on GPU machines: fixtures/real/). H100-like GPUs
 * with fixed values, GPU i i °C warmer and i W busier, at PCI bus
 * 00000000:00:(6+i).0; FAKE_NVML=nogpu reports none, =fail fails to
 * start. For the topology:
 *   FAKE_NVML_GPUS=N     N GPUs (default 2; any number, absurd ones too)
 *   FAKE_NVML_PCIE=L     the common PCIe ancestor of every pair, as
 *                        nvmlGpuTopologyLevel_t (default 30, PHB);
 *                        "fail": the call fails
 *   FAKE_NVML_NVLINK=... NVLinks, entries separated by commas:
 *                        A-B*K  K links between GPUs A and B (both ends)
 *                        A>B*K  K links of GPU A to GPU B (A's end only)
 *                        A>S*K  K links of GPU A into an NVSwitch
 *                        A>@BUS*K  K links of A to a GPU at bus id BUS
 *                        A>?T*K K links of A to a device of type T
 *                        each GPU's links take link numbers 0, 1, ... up
 *                        to NVML's 18; inactive ones are reported so.
 * Built as build/fakenvml/libnvidia-ml.so.1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { unsigned int gpu, memory; } util_t;
typedef struct { unsigned long long total, free, used; } memory_t;
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
static unsigned int ngpus(void)
{
	const char *n = getenv("FAKE_NVML_GPUS");
	if (!strcmp(mode(), "nogpu"))
		return 0;
	return n ? (unsigned int)strtoul(n, NULL, 10) : 2;
}
int nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = ngpus();
	return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **d)
{
	*d = (void *)(unsigned long)(i + 1);
	return i < ngpus() ? 0 : 2;
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
	snprintf(p->bus_id, sizeof p->bus_id, "00000000:%02x:%02x.0",
	         (6 + gpu(d)) / 32, (6 + gpu(d)) % 32);
	return 0;
}
int nvmlDeviceGetName(void *d, char *s, unsigned int n)
{
	(void)d;
	snprintf(s, n, "NVIDIA H100 80GB HBM3");
	return 0;
}
int nvmlDeviceGetMemoryInfo(void *d, memory_t *m)
{
	(void)d;
	m->total = 81559ull << 20;
	m->free = m->total;
	m->used = 0;
	return 0;
}
int nvmlDeviceGetMemoryAffinity(void *d, unsigned int n, unsigned long *set,
                                int scope)
{
	(void)d;
	if (scope != 0 || n == 0)
		return 3;
	memset(set, 0, n * sizeof *set);
	set[0] = 1;   /* NUMA node 0 */
	return 0;
}
int nvmlDeviceGetTopologyCommonAncestor(void *a, void *b, int *level)
{
	const char *l = getenv("FAKE_NVML_PCIE");
	(void)a;
	(void)b;
	if (l && !strcmp(l, "fail"))
		return 3;
	*level = l ? atoi(l) : 30;
	return 0;
}

/* GPU g's NVLink number k from FAKE_NVML_NVLINK: false when inactive;
 * else its remote's type (0 GPU, 2 NVSwitch, ...) and bus id. */
static int nvlink(unsigned int g, unsigned int k, int *type, char bus[32])
{
	const char *p = getenv("FAKE_NVML_NVLINK");
	unsigned int used = 0;
	while (p && *p) {
		char *e;
		unsigned long a = strtoul(p, &e, 10), b = 0, n;
		char how = *e, to;
		const char *t = e + 1, *star = strchr(t, '*');
		if (!star || (how != '-' && how != '>'))
			return 0;
		to = *t;
		n = strtoul(star + 1, &e, 10);
		if (to >= '0' && to <= '9')
			b = strtoul(t, NULL, 10);
		for (int end = 0; end < (how == '-' ? 2 : 1); end++) {
			unsigned long me = end ? b : a, peer = end ? a : b;
			if (me != g)
				continue;
			if (k >= used && k < used + n) {
				*type = to == 'S' ? 2 : to == '?' ? atoi(t + 1) : 0;
				if (to == '@')
					snprintf(bus, 32, "%.*s", (int)(star - t - 1), t + 1);
				else
					snprintf(bus, 32, "00000000:%02lx:%02lx.0",
					         (6 + peer) / 32, (6 + peer) % 32);
				return 1;
			}
			used += (unsigned int)n;
		}
		p = *e == ',' ? e + 1 : e;
	}
	return 0;
}
int nvmlDeviceGetNvLinkState(void *d, unsigned int k, int *active)
{
	int type;
	char bus[32];
	if (k >= 18)
		return 2;   /* NVML_ERROR_INVALID_ARGUMENT */
	*active = nvlink(gpu(d), k, &type, bus);
	return 0;
}
int nvmlDeviceGetNvLinkRemoteDeviceType(void *d, unsigned int k, int *type)
{
	char bus[32];
	return nvlink(gpu(d), k, type, bus) ? 0 : 2;
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void *d, unsigned int k, pci_t *p)
{
	int type;
	memset(p, 0, sizeof *p);
	return nvlink(gpu(d), k, &type, p->bus_id) ? 0 : 2;
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
