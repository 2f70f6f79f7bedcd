/*
 * local.c — the live machine as a topology source (`thermap topo
 * --local`): hwloc's view of this machine (hwloc.c), and the GPUs with
 * their links from NVML (loaded at run time: base/nvml.c) when it loads
 * and starts here; else, when nvidia-smi runs here, its `topo -m` matrix
 * and its GPU list (smi.c), each read from a temporary file. It calls the
 * readers and view.c, never topo.c.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo.h"

/* ---- NVML ---------------------------------------------------------------
 * What nvidia-smi topo -m prints, asked of the library it asks: the PCIe
 * path of each pair (nvmlDeviceGetTopologyCommonAncestor) and each GPU's
 * active NVLinks with what is at their other end. Types and constants:
 * NVIDIA's public nvml.h (NVML 12.2.140, in NVIDIA/go-nvml's
 * gen/nvml/nvml.h). */

typedef struct { unsigned long long total, free, used; } nv_memory;  /* nvmlMemory_t */
#define NV_TOPOLOGY_INTERNAL 0      /* nvmlGpuTopologyLevel_t */
#define NV_TOPOLOGY_SINGLE 10
#define NV_TOPOLOGY_MULTIPLE 20
#define NV_TOPOLOGY_HOSTBRIDGE 30
#define NV_TOPOLOGY_NODE 40
#define NV_TOPOLOGY_SYSTEM 50
#define NV_FEATURE_ENABLED 1        /* nvmlEnableState_t */
#define NV_LINK_GPU 0               /* nvmlIntNvLinkDeviceType_t */
#define NV_LINK_IBMNPU 1
#define NV_LINK_SWITCH 2
#define NV_AFFINITY_SCOPE_NODE 0    /* nvmlAffinityScope_t */
#define NV_NODE_WORDS 4             /* NUMA nodes 0..255 */
/* NVML cannot be used here; why is in err: nvidia-smi is asked instead */
#define NV_UNUSABLE (-1)

typedef struct nv_fns {
	tm_nvml L;
	int (*uuid)(tm_nvml_dev, char *, unsigned int);
	int (*pci)(tm_nvml_dev, tm_nvml_pci *);
	int (*index)(tm_nvml_dev, unsigned int *);
	int (*name)(tm_nvml_dev, char *, unsigned int);
	int (*memory)(tm_nvml_dev, nv_memory *);
	int (*affinity)(tm_nvml_dev, unsigned int, unsigned long *, int);
	int (*ancestor)(tm_nvml_dev, tm_nvml_dev, int *);
	int (*state)(tm_nvml_dev, unsigned int, int *);
	int (*remote_pci)(tm_nvml_dev, unsigned int, tm_nvml_pci *);
	int (*remote_type)(tm_nvml_dev, unsigned int, int *);
} nv_fns;

/* NVML loaded and started with every function the topology needs; else
 * why not, in err (the caller reads nvidia-smi instead). */
static int nv_load(nv_fns *F, tm_error *err)
{
	tm_nvml *L = &F->L;
	const char *what = NULL;
	int rc;
	memset(F, 0, sizeof *F);
	if ((rc = tm_nvml_open(L, "", err)))
		return rc;
	*(void **)&F->uuid = tm_nvml_sym(L, "nvmlDeviceGetUUID", NULL);
	*(void **)&F->pci = tm_nvml_sym(L, "nvmlDeviceGetPciInfo_v3",
	                                "nvmlDeviceGetPciInfo_v2");
	*(void **)&F->index = tm_nvml_sym(L, "nvmlDeviceGetIndex", NULL);
	*(void **)&F->name = tm_nvml_sym(L, "nvmlDeviceGetName", NULL);
	*(void **)&F->memory = tm_nvml_sym(L, "nvmlDeviceGetMemoryInfo", NULL);
	*(void **)&F->affinity = tm_nvml_sym(L, "nvmlDeviceGetMemoryAffinity",
	                                     NULL);
	*(void **)&F->ancestor = tm_nvml_sym(L,
		"nvmlDeviceGetTopologyCommonAncestor", NULL);
	*(void **)&F->state = tm_nvml_sym(L, "nvmlDeviceGetNvLinkState", NULL);
	*(void **)&F->remote_pci = tm_nvml_sym(L,
		"nvmlDeviceGetNvLinkRemotePciInfo_v2",
		"nvmlDeviceGetNvLinkRemotePciInfo");
	/* without the remote's type a link into an NVSwitch cannot be told
	 * from one to a GPU this NVML does not list: nvidia-smi then */
	*(void **)&F->remote_type = tm_nvml_sym(L,
		"nvmlDeviceGetNvLinkRemoteDeviceType", NULL);
	if (!F->uuid) what = "nvmlDeviceGetUUID";
	else if (!F->pci) what = "nvmlDeviceGetPciInfo_v3";
	else if (!F->ancestor) what = "nvmlDeviceGetTopologyCommonAncestor";
	else if (!F->state) what = "nvmlDeviceGetNvLinkState";
	else if (!F->remote_pci) what = "nvmlDeviceGetNvLinkRemotePciInfo_v2";
	else if (!F->remote_type) what = "nvmlDeviceGetNvLinkRemoteDeviceType";
	if (what)
		return tm_nvml_missing(L, "", what, err);
	return tm_nvml_start(L, "", err);
}

/* topo -m's code of a PCIe path, as nvidia-smi names NVML's levels;
 * -1 for a level NVML does not define. INTERNAL (two GPUs of one board)
 * is the nearest there is, PIX. */
static int nv_code(int level)
{
	switch (level) {
	case NV_TOPOLOGY_INTERNAL:
	case NV_TOPOLOGY_SINGLE: return TM_LINK_PIX;
	case NV_TOPOLOGY_MULTIPLE: return TM_LINK_PXB;
	case NV_TOPOLOGY_HOSTBRIDGE: return TM_LINK_PHB;
	case NV_TOPOLOGY_NODE: return TM_LINK_NODE;
	case NV_TOPOLOGY_SYSTEM: return TM_LINK_SYS;
	default: return -1;
	}
}

/* The GPU of v at PCI bus id pci (normalised), -1 when none. */
static int gpu_at(const tp_view *v, const char *pci)
{
	for (int i = 0; pci && i < v->ngpus; i++)
		if (v->gpus[i].pci && !strcmp(v->gpus[i].pci, pci))
			return i;
	return -1;
}

/* Odd things NVML said about links, each kind one note: how many, and
 * the first. */
typedef struct nv_odd {
	int n;
	char first[160];
} nv_odd;

static void odd(nv_odd *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void odd(nv_odd *o, const char *fmt, ...)
{
	va_list ap;
	if (o->n++)
		return;
	va_start(ap, fmt);
	vsnprintf(o->first, sizeof o->first, fmt, ap);
	va_end(ap);
}

static void odd_note(tp_view *v, const nv_odd *o, const char *what)
{
	if (o->n)
		tp_note(v, "NVML: %d %s (%s%s): not counted", o->n, what,
		        o->n > 1 ? "the first: " : "", o->first);
}

/* The GPUs and their facts; NV_UNUSABLE with why in err when NVML cannot
 * be used for them (nvidia-smi is asked then), TM_EINPUT when what it says cannot
 * be a machine. */
static int nv_gpus(nv_fns *F, tp_view *v, tm_nvml_dev **dev, tm_error *err)
{
	unsigned int n = 0;
	int e;

	if ((e = F->L.count(&n)) != 0)
		return tm_fail(err, NV_UNUSABLE, "NVML cannot count the GPUs: %s",
		               tm_nvml_strerror(&F->L, e));
	if (n == 0)
		return tm_fail(err, NV_UNUSABLE, "NVML finds no GPU");
	if (n > TM_MAX_GPUS_PER_NODE)
		return tm_fail(err, TM_EINPUT, "NVML: %u GPUs; at most %d are "
		               "read", n, TM_MAX_GPUS_PER_NODE);
	*dev = xcalloc(n, sizeof **dev);
	for (unsigned int i = 0; i < n; i++) {
		tp_gpu *g = tp_add_gpu(v);
		char uuid[96] = "", name[96] = "";
		tm_nvml_pci p;
		unsigned int idx = i;
		unsigned long set[NV_NODE_WORDS];
		nv_memory m;

		memset(&p, 0, sizeof p);
		if ((e = F->L.handle(i, &(*dev)[i])) != 0 ||
		    (e = F->uuid((*dev)[i], uuid, sizeof uuid)) != 0 ||
		    (e = F->pci((*dev)[i], &p)) != 0)
			return tm_fail(err, NV_UNUSABLE, "NVML GPU %u: %s", i,
			               tm_nvml_strerror(&F->L, e));
		uuid[sizeof uuid - 1] = '\0';
		p.bus_id[sizeof p.bus_id - 1] = '\0';
		if (!(g->pci = tm_normalise_pci(p.bus_id)))
			return tm_fail(err, NV_UNUSABLE, "NVML gives GPU %u the PCI bus id "
			               "\"%s\", which is none", i, p.bus_id);
		if (tm_valid_uuid(uuid))
			g->uuid = xstrdup(uuid);
		else
			tp_note(v, "NVML: GPU %u has UUID \"%.64s\", not of the "
			        "GPU-... form: not used", i, uuid);
		/* nvidia-smi's index is NVML's; a GPU that gives none keeps
		 * its place */
		if (F->index && F->index((*dev)[i], &idx) == 0 && idx < n)
			g->index = (int)idx;
		else
			g->index = (int)i;
		if (F->name && F->name((*dev)[i], name, sizeof name) == 0) {
			name[sizeof name - 1] = '\0';
			if (name[0])
				g->model = xstrdup(name);
		}
		/* whole MiB, as nvidia-smi prints them, then the GPU list's
		 * rounding to GiB */
		if (F->memory && F->memory((*dev)[i], &m) == 0) {
			double gib = tp_mib_to_gib((double)(m.total >> 20));
			if (gib > 0 && gib <= 1e6)
				g->memory_gib = gib;
		}
		/* the NUMA node nearest the GPU's memory: topo -m's "NUMA
		 * Affinity"; the first of several */
		memset(set, 0, sizeof set);
		if (F->affinity && F->affinity((*dev)[i], NV_NODE_WORDS, set,
		                               NV_AFFINITY_SCOPE_NODE) == 0)
			for (int b = 0; b < NV_NODE_WORDS * (int)(8 * sizeof *set) &&
			     g->numa < 0; b++)
				if (set[b / (8 * sizeof *set)] >>
				    (b % (8 * sizeof *set)) & 1)
					g->numa = b;
	}
	return 0;
}

/* Every pair's code: NVLink from each GPU's active links, else NVML's
 * PCIe path, else hwloc's (hw: matched by PCI bus id), else SYS. Links
 * into NVSwitches join every two GPUs on the switch fabric with the
 * smaller of their link counts, what either can send through it (as
 * hwloc.c reads NVLinkBandwidth): all pairs NV18 on HGX H100/H200, as
 * nvidia-smi prints them. */
static void nv_links(nv_fns *F, tp_view *v, tm_nvml_dev *dev,
                     const tp_view *hw)
{
	int n = v->ngpus, nopath = 0;
	unsigned *direct = xcalloc((size_t)n * (size_t)n, sizeof *direct);
	unsigned *sw = xcalloc((size_t)n, sizeof *sw);
	nv_odd stray = { 0, "" }, self = { 0, "" }, kind = { 0, "" },
	       bad = { 0, "" }, oneway = { 0, "" };

	tp_alloc_links(v);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			int level, c = -1;
			if (F->ancestor(dev[i], dev[j], &level) == 0)
				c = nv_code(level);
			if (c < 0) {
				int a = gpu_at(hw, v->gpus[i].pci);
				int b = gpu_at(hw, v->gpus[j].pci);
				c = a >= 0 && b >= 0 && hw->link
				    ? hw->link[a * hw->ngpus + b] : TM_LINK_SYS;
				if (c == TM_LINK_NV || c == TM_LINK_X)
					c = TM_LINK_SYS;
				nopath++;
			}
			v->link[i * n + j] = v->link[j * n + i] = (unsigned char)c;
		}
	for (int i = 0; i < n; i++)
		for (unsigned k = 0; k < TM_NVML_NVLINK_MAX_LINKS; k++) {
			int on = 0, type = -1, j;
			tm_nvml_pci p;
			char *pci;
			if (F->state(dev[i], k, &on) != 0 || on != NV_FEATURE_ENABLED)
				continue;
			if (F->remote_type(dev[i], k, &type) != 0)
				type = -1;
			if (type == NV_LINK_SWITCH) {
				sw[i]++;
				continue;
			}
			if (type == NV_LINK_IBMNPU)
				continue;   /* a CPU (POWER): no GPU pair */
			if (type != NV_LINK_GPU) {
				odd(&kind, "GPU %d link %u, type %d", v->gpus[i].index,
				    k, type);
				continue;
			}
			memset(&p, 0, sizeof p);
			if (F->remote_pci(dev[i], k, &p) != 0) {
				odd(&bad, "GPU %d link %u", v->gpus[i].index, k);
				continue;
			}
			p.bus_id[sizeof p.bus_id - 1] = '\0';
			if (!(pci = tm_normalise_pci(p.bus_id))) {
				odd(&bad, "GPU %d link %u, \"%.40s\"", v->gpus[i].index,
				    k, p.bus_id);
				continue;
			}
			j = gpu_at(v, pci);
			if (j < 0)
				odd(&stray, "GPU %d link %u to %s", v->gpus[i].index, k,
				    pci);
			else if (j == i)
				odd(&self, "GPU %d link %u", v->gpus[i].index, k);
			else
				direct[i * n + j]++;
			free(pci);
		}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			unsigned c = direct[i * n + j], r = direct[j * n + i];
			if (i == j)
				continue;
			/* a link is seen from both ends; where one end does not
			 * report it, the other's word is taken */
			if (c != r && i < j)
				odd(&oneway, "GPUs %d and %d: %u and %u",
				    v->gpus[i].index, v->gpus[j].index, c, r);
			if (r > c)
				c = r;
			if (sw[i] && sw[j])
				c += sw[i] < sw[j] ? sw[i] : sw[j];
			if (c) {
				v->link[i * n + j] = TM_LINK_NV;
				v->nv[i * n + j] = (unsigned char)(c > 255 ? 255 : c);
			}
		}
	if (nopath)
		tp_note(v, "NVML gives no PCIe path for %d GPU pair%s: their "
		        "code is hwloc's", nopath, nopath == 1 ? "" : "s");
	odd_note(v, &stray, "NVLinks lead to a bus id of no GPU it lists");
	odd_note(v, &self, "NVLinks lead back to their own GPU");
	odd_note(v, &kind, "NVLinks lead to a device of unknown type");
	odd_note(v, &bad, "NVLinks give no remote PCI bus id");
	if (oneway.n)
		tp_note(v, "NVML: %d GPU pair%s counted differently from each "
		        "end (%s%s NVLinks): the larger count is used", oneway.n,
		        oneway.n == 1 ? "" : "s", oneway.n > 1 ? "the first: " : "",
		        oneway.first);
	free(direct);
	free(sw);
}

/* This machine's GPUs and links through NVML, into v (source "local",
 * file "NVML"). 0: read; NV_UNUSABLE: NVML cannot be used here, why in
 * err (a note, not an error); else an error. */
static int read_nvml(tp_view *v, const tp_view *hw, tm_error *err)
{
	nv_fns F;
	tm_nvml_dev *dev = NULL;
	int rc;

	tp_view_init(v, "local", "NVML");
	if (nv_load(&F, err)) {
		err->code = NV_UNUSABLE;
		tp_view_clear(v);
		return NV_UNUSABLE;
	}
	rc = nv_gpus(&F, v, &dev, err);
	if (!rc)
		nv_links(&F, v, dev, hw);
	tm_nvml_close(&F.L);
	free(dev);
	if (!rc)
		rc = tp_check_view(v, err);
	if (rc)
		tp_view_clear(v);
	return rc;
}

/* Runs cmd, keeping its standard output in a temporary file whose name
 * goes to path; false when it could not run or failed. */
static bool run_to_file(const char *cmd, char path[64])
{
	char buf[8192];
	FILE *p, *f;
	int fd, st;
	size_t n;
	snprintf(path, 64, "/tmp/thermap-topo-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return false;
	f = fdopen(fd, "w");
	p = popen(cmd, "r");
	if (!f || !p) {
		if (p)
			pclose(p);
		if (f)
			fclose(f);
		unlink(path);
		return false;
	}
	while ((n = fread(buf, 1, sizeof buf, p)) > 0)
		fwrite(buf, 1, n, f);
	st = pclose(p);
	fclose(f);
	if (st != 0) {
		unlink(path);
		return false;
	}
	return true;
}

/* hwloc live, and NVML, else nvidia-smi when it runs here. */
int tp_read_local(tp_view **views, int *nv, tm_error *err)
{
	tp_view hw, smi, list, nvml;
	tm_error why = { 0, "" };
	char path[64];
	int rc;

	if ((rc = tp_read_hwloc(NULL, &hw, err)))
		return rc;
	if ((rc = tp_check_view(&hw, err))) {
		tp_view_clear(&hw);
		return rc;
	}
	tp_mark_nv_unknown(&hw);
	/* named in messages beside NVML and nvidia-smi */
	hw.file = xstrdup("hwloc");
	rc = read_nvml(&nvml, &hw, &why);
	if (rc == 0) {
		*views = xrealloc(*views, (size_t)(*nv + 2) * sizeof **views);
		(*views)[(*nv)++] = nvml;
		(*views)[(*nv)++] = hw;
		return 0;
	}
	if (rc != NV_UNUSABLE) {
		tp_view_clear(&hw);
		return tm_fail(err, rc, "%s", why.msg);
	}
	tp_note(&hw, "%s; asking nvidia-smi instead", why.msg);
	if (run_to_file("nvidia-smi topo -m 2>/dev/null", path)) {
		rc = tp_read_smi_topo(path, &smi, err);
		unlink(path);
		if (!rc && (rc = tp_check_view(&smi, err)))
			tp_view_clear(&smi);
		if (rc) {
			tp_view_clear(&hw);
			return rc;
		}
		smi.source = "local";
		free(smi.file);
		smi.file = xstrdup("nvidia-smi topo -m");
		if (run_to_file("nvidia-smi --query-gpu=index,uuid,pci.bus_id,"
		                "name,memory.total --format=csv 2>/dev/null",
		                path)) {
			rc = tp_read_gpu_list(path, &list, err);
			unlink(path);
			if (!rc && (rc = tp_check_view(&list, err)))
				tp_view_clear(&list);
			if (rc) {
				tp_view_clear(&hw);
				tp_view_clear(&smi);
				return rc;
			}
			list.source = "local";
			free(list.file);
			list.file = xstrdup("nvidia-smi --query-gpu");
			*views = xrealloc(*views, (size_t)(*nv + 1) * sizeof **views);
			(*views)[(*nv)++] = list;
		}
		*views = xrealloc(*views, (size_t)(*nv + 1) * sizeof **views);
		(*views)[(*nv)++] = smi;
	} else {
		tp_note(&hw, "nvidia-smi did not run here: link codes other "
		        "than NVLink come from the PCI tree, and GPU UUIDs are "
		        "known only where hwloc's NVML backend reports them");
	}
	*views = xrealloc(*views, (size_t)(*nv + 1) * sizeof **views);
	(*views)[(*nv)++] = hw;
	return 0;
}
