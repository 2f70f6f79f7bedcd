/*
 * hwloc.c — NVIDIA GPUs as hwloc sees them, in an XML export
 * (`lstopo --of xml`) or on the live machine: PCI bus ids, NUMA nodes,
 * NVML/CUDA device numbers, PCIe/SMP codes derived from the PCI tree, and
 * NVLink counts from the NVLinkBandwidth distances matrix.
 *
 * hwloc objects are read here and copied into a tp_view; nothing of hwloc
 * leaves this file. What the topology does not hold (hwloc without its
 * NVML backend has no NVLinkBandwidth matrix) stays unknown and is noted,
 * never guessed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <hwloc.h>

#include "topo/topo.h"

#define HW_MAX_XML_BYTES (64u << 20)  /* lstopo exports are well below 1 MiB */
#define HW_PROBE_S 60                 /* a file hwloc reads longer hangs it */
/* exit codes of the probe (any other status is a crash) */
#define HW_PROBE_READ 100
#define HW_PROBE_REFUSED 101

typedef struct hw_gpu {
	hwloc_obj_t pci;     /* the GPU's PCI device; NULL when hwloc has none */
	hwloc_obj_t anchor;  /* pci, else the NVML OS device: where it hangs */
	int nvml;            /* nvmlN index, -1 when no such OS device */
	int cuda;            /* cudaN index, -1 when no such OS device */
	const char *uuid;    /* NVIDIAUUID info, borrowed from hwloc */
	const char *model;   /* GPUModel info, else PCIDevice info; borrowed */
	double mem_gib;      /* CUDAGlobalMemorySize, NAN when absent */
	int numa;            /* NUMA node os_index, -1 when unknown */
	int index;           /* the index the view gets */
} hw_gpu;

typedef struct hw_ctx {
	const char *name;    /* file name, or "this machine", for messages */
	hwloc_topology_t topo;
	hw_gpu *g;           /* GPUs found */
	int n;               /* number of them */
	int ignored;         /* non-NVIDIA GPUs */
	tp_view *v;
	tm_error *err;
} hw_ctx;

/* ---- the XML file before hwloc sees it ---------------------------------- */

/* The root element's name and hwloc version attribute, so that a file of
 * another kind, or of a newer hwloc, gets a message saying so rather than
 * libhwloc's bare EINVAL. Looks only at the prolog: declaration, comments,
 * DOCTYPE, then the first start tag. */
static void sniff_root(const char *s, char name[32], unsigned *major,
                       unsigned *minor)
{
	const char *p = s;
	size_t n = 0;

	name[0] = '\0';
	*major = *minor = 0;
	if ((unsigned char)p[0] == 0xef && (unsigned char)p[1] == 0xbb &&
	    (unsigned char)p[2] == 0xbf)
		p += 3;
	for (;;) {
		p += strspn(p, " \t\r\n");
		if (strncmp(p, "<?", 2) == 0 || strncmp(p, "<!DOCTYPE", 9) == 0)
			p = strchr(p, '>');
		else if (strncmp(p, "<!--", 4) == 0)
			p = strstr(p, "-->");
		else
			break;
		if (!p)
			return;
		p++;
	}
	if (*p != '<')
		return;
	p++;
	while (n < 31 && p[n] && !strchr(" \t\r\n/>", p[n])) {
		name[n] = p[n];
		n++;
	}
	name[n] = '\0';
	if (strcmp(name, "topology") == 0) {
		const char *e = strchr(p, '>');
		const char *ver = strstr(p, "version=\"");
		if (ver && (!e || ver < e))
			sscanf(ver + 9, "%u.%u", major, minor);
	}
}

/* Checks the prolog of buf (len bytes and a NUL) and hands it to hwloc. */
static int load_xml(hw_ctx *c, const char *buf, size_t len)
{
	const char *file = c->name;
	char root[32];
	unsigned major, minor;

	sniff_root(buf, root, &major, &minor);
	if (strcmp(root, "topology") != 0) {
		if (strcmp(root, "system") == 0 || strcmp(root, "graphs") == 0)
			return tm_fail(c->err, TM_EINPUT, "%s: not hwloc XML (root "
			               "element <%s>: an NCCL file?)", file, root);
		if (root[0])
			return tm_fail(c->err, TM_EINPUT, "%s: not hwloc XML (root "
			               "element <%s>, expected <topology>)", file,
			               root);
		return tm_fail(c->err, TM_EINPUT, "%s: not hwloc XML (no "
		               "<topology> element)", file);
	}
	/* hwloc 2 refuses version 3 files, which it cannot read (OS device
	 * types became bit masks, info units changed). */
	if (major > (unsigned)(HWLOC_API_VERSION >> 16))
		return tm_fail(c->err, TM_EINPUT, "%s: hwloc XML version %u.%u "
		               "needs hwloc %u; thermap is built with hwloc %u, "
		               "which reads XML up to version %u.x (export the "
		               "topology with hwloc %u's lstopo)", file, major,
		               minor, major, (unsigned)(HWLOC_API_VERSION >> 16),
		               (unsigned)(HWLOC_API_VERSION >> 16),
		               (unsigned)(HWLOC_API_VERSION >> 16));
	/* size includes the terminating NUL, as hwloc's own exports do */
	if (hwloc_topology_set_xmlbuffer(c->topo, buf, (int)len + 1) < 0 ||
	    hwloc_topology_load(c->topo) < 0)
		return tm_fail(c->err, TM_EINPUT, "%s: not hwloc XML (libhwloc "
		               "rejects it: malformed or incomplete)", file);
	return 0;
}

/* ---- finding GPUs ------------------------------------------------------- */

static bool is_io(hwloc_obj_t o)
{
	return o && hwloc_obj_type_is_io(o->type);
}

/* The PCI device an OS device hangs under, NULL when it has none. */
static hwloc_obj_t pci_of(hwloc_obj_t o)
{
	for (o = o->parent; is_io(o); o = o->parent)
		if (o->type == HWLOC_OBJ_PCI_DEVICE)
			return o;
	return NULL;
}

/* "cuda3" → 3 for prefix "cuda"; -1 when the name is something else. */
static int osdev_number(const char *name, const char *prefix)
{
	size_t k = strlen(prefix);
	long n;
	char *end;

	if (!name || strncmp(name, prefix, k) != 0 || name[k] < '0' ||
	    name[k] > '9')
		return -1;
	n = strtol(name + k, &end, 10);
	return *end || n > INT_MAX / 2 ? -1 : (int)n;
}

static bool nvidia_display(hwloc_obj_t p)
{
	return p->attr->pcidev.vendor_id == 0x10de &&
	       (p->attr->pcidev.class_id == 0x0300 ||
	        p->attr->pcidev.class_id == 0x0302);
}

/* A GPU of another vendor: a display-class PCI device that hwloc found a
 * GPU or co-processor OS device on (ROCm SMI, OpenCL), or a 3D / other
 * display controller. A board's plain VGA (ASPEED) is neither. */
static bool other_gpu(hwloc_obj_t p)
{
	unsigned cls = p->attr->pcidev.class_id;

	if (p->attr->pcidev.vendor_id == 0x10de || (cls >> 8) != 0x03)
		return false;
	if (cls == 0x0302 || cls == 0x0380)
		return true;
	for (hwloc_obj_t o = p->io_first_child; o; o = o->next_sibling)
		if (o->type == HWLOC_OBJ_OS_DEVICE &&
		    (o->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU ||
		     o->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC))
			return true;
	return false;
}

static hw_gpu *gpu_of_pci(hw_ctx *c, hwloc_obj_t pci)
{
	for (int i = 0; i < c->n; i++)
		if (pci && c->g[i].pci == pci)
			return &c->g[i];
	return NULL;
}

static hw_gpu *add_gpu(hw_ctx *c, hwloc_obj_t pci, hwloc_obj_t anchor)
{
	hw_gpu *g;
	c->g = xrealloc(c->g, (size_t)(c->n + 1) * sizeof *c->g);
	g = &c->g[c->n++];
	memset(g, 0, sizeof *g);
	g->pci = pci;
	g->anchor = anchor;
	g->nvml = g->cuda = g->numa = g->index = -1;
	g->mem_gib = NAN;
	return g;
}

/* CUDA OS devices say KiB ("16671616" in hwloc 2, "16671616KiB" later). */
static double kib_to_gib(const char *s)
{
	char *end;
	double kib = s ? strtod(s, &end) : 0;
	if (!s || end == s || kib <= 0 || (*end && strcmp(end, "KiB") != 0))
		return NAN;
	return kib / (1024.0 * 1024.0);
}

/* NVML and CUDA OS devices first: they carry the device numbers, UUID and
 * marketing name. Then NVIDIA display devices on PCI that have none (hwloc
 * without its NVML/CUDA backends, as Debian builds it). OpenCL devices are
 * not used: hwloc may attach them to the wrong PCI device in a VM. */
static void find_gpus(hw_ctx *c)
{
	hwloc_obj_t o = NULL;

	while ((o = hwloc_get_next_osdev(c->topo, o)) != NULL) {
		int nvml = osdev_number(o->name, "nvml");
		int cuda = osdev_number(o->name, "cuda");
		hwloc_obj_t pci;
		hw_gpu *g;
		const char *s;

		if (nvml < 0 && cuda < 0)
			continue;
		pci = pci_of(o);
		g = gpu_of_pci(c, pci);
		if (!g) {
			/* without a PCI device, only NVML's one-per-GPU OS
			 * device can stand for a GPU */
			if (!pci && nvml < 0)
				continue;
			g = add_gpu(c, pci, pci ? pci : o);
		}
		if (nvml >= 0)
			g->nvml = nvml;
		if (cuda >= 0) {
			g->cuda = cuda;
			g->mem_gib = kib_to_gib(hwloc_obj_get_info_by_name(o,
			                        "CUDAGlobalMemorySize"));
		}
		if ((s = hwloc_obj_get_info_by_name(o, "NVIDIAUUID")) != NULL)
			g->uuid = s;
		if ((s = hwloc_obj_get_info_by_name(o, "GPUModel")) != NULL &&
		    *s)
			g->model = s;
	}
	o = NULL;
	while ((o = hwloc_get_next_pcidev(c->topo, o)) != NULL) {
		if (nvidia_display(o)) {
			if (!gpu_of_pci(c, o))
				add_gpu(c, o, o);
		} else if (other_gpu(o)) {
			c->ignored++;
		}
	}
	for (int i = 0; i < c->n; i++) {
		hw_gpu *g = &c->g[i];
		const char *s;
		hwloc_obj_t up;

		if (!g->model && g->pci &&
		    (s = hwloc_obj_get_info_by_name(g->pci, "PCIDevice")) &&
		    *s)
			g->model = s;
		/* the NUMA node of the CPU-side object the GPU hangs under,
		 * when that object has exactly one */
		up = hwloc_get_non_io_ancestor_obj(c->topo, g->anchor);
		if (up && up->nodeset && hwloc_bitmap_weight(up->nodeset) == 1)
			g->numa = hwloc_bitmap_first(up->nodeset);
	}
}

static int cmp_bus(const void *a, const void *b)
{
	const hw_gpu *x = a, *y = b;
	const struct hwloc_pcidev_attr_s *p, *q;

	if (!x->pci || !y->pci)
		return (x->pci == NULL) - (y->pci == NULL);
	p = &x->pci->attr->pcidev;
	q = &y->pci->attr->pcidev;
	if (p->domain != q->domain)
		return p->domain < q->domain ? -1 : 1;
	if (p->bus != q->bus)
		return p->bus < q->bus ? -1 : 1;
	if (p->dev != q->dev)
		return p->dev < q->dev ? -1 : 1;
	return (p->func > q->func) - (p->func < q->func);
}

static int cmp_index(const void *a, const void *b)
{
	const hw_gpu *x = a, *y = b;
	return (x->index > y->index) - (x->index < y->index);
}

/* nvidia-smi numbers GPUs as NVML does, so NVML numbers win; CUDA's are
 * the same under CUDA_DEVICE_ORDER=PCI_BUS_ID, which hwloc's CUDA backend
 * does not promise, so they come second; without either, PCI bus id order,
 * the order NVML enumerates in. */
static int number_gpus(hw_ctx *c)
{
	bool all_nvml = true, all_cuda = true;
	const char *by;

	for (int i = 0; i < c->n; i++) {
		all_nvml &= c->g[i].nvml >= 0;
		all_cuda &= c->g[i].cuda >= 0;
	}
	qsort(c->g, (size_t)c->n, sizeof *c->g, cmp_bus);
	for (int i = 0; i < c->n; i++)
		c->g[i].index = all_nvml ? c->g[i].nvml :
		                all_cuda ? c->g[i].cuda : i;
	by = all_nvml ? "NVML" : "CUDA";
	qsort(c->g, (size_t)c->n, sizeof *c->g, cmp_index);
	for (int i = 1; i < c->n; i++)
		if (c->g[i].index == c->g[i - 1].index)
			return tm_fail(c->err, TM_EINPUT, "%s: two GPUs have %s "
			               "index %d", c->name, by, c->g[i].index);
	if (!all_nvml && !all_cuda)
		tp_note(c->v, "%s has no NVML or CUDA device numbers: GPUs are "
		        "numbered in PCI bus id order", c->name);
	return 0;
}

/* ---- PCIe/SMP codes ----------------------------------------------------- */

/* The lowest I/O object above both, NULL when they meet only on the CPU
 * side (different host bridges). */
static hwloc_obj_t io_meet(hwloc_obj_t a, hwloc_obj_t b)
{
	for (hwloc_obj_t x = a->parent; is_io(x); x = x->parent)
		for (hwloc_obj_t y = b->parent; is_io(y); y = y->parent)
			if (x == y)
				return x;
	return NULL;
}

static int hops(hwloc_obj_t from, hwloc_obj_t to)
{
	int n = 0;
	for (hwloc_obj_t x = from->parent; x && x != to; x = x->parent)
		n++;
	return n;
}

/* The code nvidia-smi would print, from the PCI tree alone:
 *   PIX  the lowest common ancestor is a PCI bridge with each GPU at most
 *        one bridge below it: one PCIe switch, whose upstream port and
 *        downstream ports are the "single bridge" of nvidia-smi's legend;
 *   PXB  the common ancestor is a PCI bridge, deeper (cascaded switches);
 *   PHB  the common ancestor is a host bridge;
 *   NODE different host bridges, both GPUs known on the same NUMA node;
 *   SYS  otherwise (different NUMA nodes, or a NUMA node unknown). */
static int pcie_code(const hw_gpu *a, const hw_gpu *b)
{
	hwloc_obj_t m = io_meet(a->anchor, b->anchor);

	if (m && m->type == HWLOC_OBJ_BRIDGE &&
	    m->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
		return TM_LINK_PHB;
	if (m)
		return hops(a->anchor, m) <= 1 && hops(b->anchor, m) <= 1 ?
		       TM_LINK_PIX : TM_LINK_PXB;
	if (a->numa >= 0 && a->numa == b->numa)
		return TM_LINK_NODE;
	return TM_LINK_SYS;
}

/* ---- NVLink ------------------------------------------------------------- */

/* What one NVLink adds to hwloc's NVLinkBandwidth matrix, in MB/s: hwloc
 * does not say the NVLink version, so it comes from the model name.
 * hwloc writes 20000 for NVLink 1 (P100), 25000 for NVLink 2 to 4 (V100,
 * A100, H100) and 50000 for NVLink 5 (Blackwell). max: links per GPU. */
static void link_mbps(const char *model, double *per, int *max)
{
	static const struct { const char *name; double per; int max; } t[] = {
		{ "GB200", 50000, 18 }, { "B200", 50000, 18 },
		{ "B100", 50000, 18 }, { "H200", 25000, 18 },
		{ "H100", 25000, 18 }, { "H800", 25000, 8 },
		{ "H20", 25000, 18 }, { "A100", 25000, 12 },
		{ "A800", 25000, 8 }, { "V100", 25000, 6 },
		{ "P100", 20000, 4 },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (model && strstr(model, t[i].name)) {
			*per = t[i].per;
			*max = t[i].max;
			return;
		}
	*per = 25000;
	*max = 0;
}

static bool is_nvswitch(hwloc_obj_t o)
{
	if (o->subtype && strcmp(o->subtype, "NVSwitch") == 0)
		return true;
	return o->type == HWLOC_OBJ_PCI_DEVICE &&
	       o->attr->pcidev.vendor_id == 0x10de &&
	       (o->attr->pcidev.class_id >> 8) == 0x06;
}

/* Position in c->g of a matrix object: an OS device or PCI device of one
 * of our GPUs; -1 otherwise. */
static int gpu_in_matrix(const hw_ctx *c, hwloc_obj_t o)
{
	hwloc_obj_t pci = o->type == HWLOC_OBJ_PCI_DEVICE ? o :
	                  o->type == HWLOC_OBJ_OS_DEVICE ? pci_of(o) : NULL;
	int nvml = o->type == HWLOC_OBJ_OS_DEVICE ?
	           osdev_number(o->name, "nvml") : -1;

	for (int i = 0; i < c->n; i++)
		if ((pci && c->g[i].pci == pci) ||
		    (!pci && nvml >= 0 && c->g[i].nvml == nvml))
			return i;
	return -1;
}

static int links_of(double bw, double per, bool *odd)
{
	double k = bw / per;
	int n = (int)(k + 0.5);
	if (bw <= 0)
		return 0;
	if (n < 1)
		n = 1;
	if (k - n > 0.05 || n - k > 0.05)
		*odd = true;
	return n > 255 ? 255 : n;
}

/* NVLink from the matrix. GPU-to-GPU cells give bonded links directly.
 * GPU-to-NVSwitch cells (NVSwitch systems) give each GPU's links into the
 * switch fabric; two GPUs on the fabric are joined with the smaller of
 * their link counts, the most either can send through it (all NVSwitches
 * of a host form one fabric). GPU-to-CPU cells (POWER) are not GPU pairs. */
static void read_nvlink(hw_ctx *c)
{
	struct hwloc_distances_s *d = NULL;
	unsigned nr = 1, m;
	int *at = NULL, *sw = NULL, *swl = NULL, n = c->n, maxl;
	unsigned *direct = NULL;
	double per;
	bool odd = false, old = false;

	if (hwloc_distances_get_by_name(c->topo, "NVLinkBandwidth", &nr, &d,
	                                0) < 0 || nr == 0 || !d) {
		tp_note(c->v, "no NVLink information %s %s: pairs are given "
		        "PCIe/SMP codes only", c->v->file ? "in" : "from hwloc on",
		        c->name);
		return;
	}
	if (!(d->kind & HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH)) {
		tp_note(c->v, "the NVLinkBandwidth matrix of %s is not a "
		        "bandwidth: ignored", c->name);
		hwloc_distances_release(c->topo, d);
		return;
	}
	m = d->nbobjs;
	at = xmalloc(m * sizeof *at);
	sw = xcalloc(m, sizeof *sw);
	for (unsigned k = 0; k < m; k++) {
		at[k] = gpu_in_matrix(c, d->objs[k]);
		sw[k] = at[k] < 0 && is_nvswitch(d->objs[k]);
	}
	link_mbps(n ? c->g[0].model : NULL, &per, &maxl);
	/* hwloc releases before 2023 wrote 50000 per NVLink 3 and 4 link:
	 * more links than the model has means that unit */
	for (unsigned a = 0; a < m && maxl && per == 25000; a++) {
		double sum = 0;
		if (at[a] < 0)
			continue;
		for (unsigned b = 0; b < m; b++)
			if (b != a)
				sum += (double)d->values[a * m + b];
		if (sum / per > maxl + 0.5 && sum / (2 * per) <= maxl + 0.5)
			old = true;
	}
	if (old) {
		per = 50000;
		tp_note(c->v, "%s counts 50 GB/s per NVLink (hwloc before "
		        "2023): link counts use that unit", c->name);
	}
	direct = xcalloc((size_t)n * (size_t)n, sizeof *direct);
	swl = xcalloc((size_t)n ? (size_t)n : 1, sizeof *swl);
	for (unsigned a = 0; a < m; a++) {
		if (at[a] < 0)
			continue;
		for (unsigned b = 0; b < m; b++) {
			double bw = (double)d->values[a * m + b];
			double wb = (double)d->values[b * m + a];
			if (b == a)
				continue;
			if (wb > bw)
				bw = wb;  /* one direction may be missing */
			if (at[b] >= 0 && at[b] != at[a])
				direct[at[a] * n + at[b]] =
					(unsigned)links_of(bw, per, &odd);
			else if (sw[b])
				swl[at[a]] += links_of(bw, per, &odd);
		}
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			unsigned k = direct[i * n + j];
			if (i == j)
				continue;
			if (swl[i] && swl[j])
				k += (unsigned)(swl[i] < swl[j] ? swl[i] : swl[j]);
			if (k) {
				c->v->link[i * n + j] = TM_LINK_NV;
				c->v->nv[i * n + j] =
					(unsigned char)(k > 255 ? 255 : k);
			}
		}
	if (odd)
		tp_note(c->v, "NVLink bandwidths in %s are not whole numbers of "
		        "%.0f MB/s links: counts are rounded", c->name, per);
	free(direct);
	free(swl);
	free(at);
	free(sw);
	hwloc_distances_release(c->topo, d);
}

/* ---- the reader --------------------------------------------------------- */

static int fill_view(hw_ctx *c)
{
	tp_view *v = c->v;
	hwloc_obj_t root = hwloc_get_root_obj(c->topo);
	const char *host = hwloc_obj_get_info_by_name(root, "HostName");
	int rc;

	if (c->n == 0) {
		if (c->ignored)
			return tm_fail(c->err, TM_EINPUT, "%s: no NVIDIA GPU (%d "
			               "other GPU%s ignored)", c->name, c->ignored,
			               c->ignored == 1 ? "" : "s");
		if (!hwloc_get_next_pcidev(c->topo, NULL))
			return tm_fail(c->err, TM_EINPUT, "%s: no NVIDIA GPU (no "
			               "PCI device at all%s)", c->name,
			               c->v->file ? ": exported without I/O "
			               "objects?" : "");
		return tm_fail(c->err, TM_EINPUT, "%s: no NVIDIA GPU", c->name);
	}
	if (c->n > TM_MAX_GPUS_PER_NODE)
		return tm_fail(c->err, TM_EINPUT, "%s: %d GPUs; at most %d are "
		               "read", c->name, c->n, TM_MAX_GPUS_PER_NODE);
	rc = number_gpus(c);
	if (rc)
		return rc;
	if (host && tm_valid_host(host))
		v->host = xstrdup(host);
	for (int i = 0; i < c->n; i++) {
		hw_gpu *g = &c->g[i];
		tp_gpu *t = tp_add_gpu(v);
		t->index = g->index;
		t->numa = g->numa;
		t->memory_gib = g->mem_gib;
		if (g->model)
			t->model = xstrdup(g->model);
		if (g->uuid && tm_valid_uuid(g->uuid))
			t->uuid = xstrdup(g->uuid);
		else if (g->uuid)
			tp_note(v, "%s: GPU %d has UUID \"%.64s\", not of the "
			        "GPU-... form: not used", c->name, g->index,
			        g->uuid);
		if (g->pci) {
			const struct hwloc_pcidev_attr_s *p = &g->pci->attr->pcidev;
			char id[32];
			snprintf(id, sizeof id, "%04x:%02x:%02x.%01x",
			         (unsigned)p->domain, p->bus, p->dev, p->func);
			t->pci = tm_normalise_pci(id);
		}
	}
	v->ignored = c->ignored;
	if (c->ignored)
		tp_note(v, "%s: %d non-NVIDIA GPU%s ignored", c->name,
		        c->ignored, c->ignored == 1 ? "" : "s");
	tp_alloc_links(v);
	for (int i = 0; i < c->n; i++)
		for (int j = 0; j < c->n; j++)
			if (i != j)
				v->link[i * c->n + j] =
					(unsigned char)pcie_code(&c->g[i], &c->g[j]);
	/* PCIe/SMP codes come from locality, never from a report */
	v->nv_only = true;
	read_nvlink(c);
	return 0;
}

/* Reads the live machine (buf NULL) or buf (len bytes and a NUL) into v,
 * which tp_view_init has prepared. */
static int read_topology(const char *name, const char *buf, size_t len,
                         tp_view *v, tm_error *err)
{
	hw_ctx c;
	int rc;

	memset(&c, 0, sizeof c);
	c.name = name;
	c.v = v;
	c.err = err;
	/* readers never print: hwloc reports odd OS or XML data on stderr
	 * unless told not to (a user's own setting is kept) */
	setenv("HWLOC_HIDE_ERRORS", "2", 0);
	if (hwloc_topology_init(&c.topo) < 0)
		return tm_fail(err, TM_EINTERNAL, "%s: hwloc cannot start",
		               c.name);
	/* I/O objects are dropped by default; GPUs are among them */
	hwloc_topology_set_io_types_filter(c.topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (buf)
		rc = load_xml(&c, buf, len);
	else if (hwloc_topology_load(c.topo) < 0)
		rc = tm_fail(err, TM_EINTERNAL, "this machine: hwloc cannot read "
		             "the topology");
	else
		rc = 0;
	if (!rc) {
		find_gpus(&c);
		rc = fill_view(&c);
	}
	free(c.g);
	hwloc_topology_destroy(c.topo);
	return rc;
}

/* libhwloc parses the XML itself, and some malformed files crash it: one
 * renamed attribute (complete_cpuset) is a SIGSEGV inside
 * hwloc_topology_load. A crash would take thermap and its message with
 * it, so a file is read first in a child process that only says whether
 * it lived; the same bytes read here then give the same result. A child
 * that dies, or runs past HW_PROBE_S, refuses the file with one line. */
static int probe(const char *name, const char *buf, size_t len,
                 tm_error *err)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return tm_fail(err, TM_EINTERNAL, "%s: cannot start a process to "
		               "read it: %s", name, strerror(errno));
	if (pid == 0) {
		tp_view v;
		tm_error e = { 0, "" };
		int fd = open("/dev/null", O_WRONLY);
		/* a crash report would be a second message */
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGFPE, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		signal(SIGABRT, SIG_DFL);
		alarm(HW_PROBE_S);
		tp_view_init(&v, "hwloc", name);
		_exit(read_topology(name, buf, len, &v, &e) ? HW_PROBE_REFUSED
		                                            : HW_PROBE_READ);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return tm_fail(err, TM_EINTERNAL, "%s: lost the process "
			               "reading it: %s", name, strerror(errno));
	if (WIFEXITED(st) && (WEXITSTATUS(st) == HW_PROBE_READ ||
	                      WEXITSTATUS(st) == HW_PROBE_REFUSED))
		return 0;
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
		return tm_fail(err, TM_EINPUT, "%s: libhwloc did not finish "
		               "reading it in %d s; not usable hwloc XML", name,
		               HW_PROBE_S);
	if (WIFSIGNALED(st))
		return tm_fail(err, TM_EINPUT, "%s: libhwloc crashed reading it "
		               "(signal %d, %s): malformed hwloc XML", name,
		               WTERMSIG(st), strsignal(WTERMSIG(st)));
	return tm_fail(err, TM_EINPUT, "%s: libhwloc crashed reading it (exit "
	               "status %d): malformed hwloc XML", name,
	               WEXITSTATUS(st));
}

int tp_read_hwloc_text(const char *file, const char *data, size_t len,
                       tp_view *v, tm_error *err)
{
	char *buf;
	int rc;

	tp_view_init(v, "hwloc", file);
	if (len > HW_MAX_XML_BYTES) {
		tp_view_clear(v);
		return tm_fail(err, TM_EINPUT, "%s: file is %zu bytes; the limit "
		               "is %u", file, len, HW_MAX_XML_BYTES);
	}
	/* hwloc wants the NUL after the text */
	buf = xmalloc(len + 1);
	memcpy(buf, data, len);
	buf[len] = '\0';
	rc = probe(file, buf, len, err);
	if (!rc)
		rc = read_topology(file, buf, len, v, err);
	free(buf);
	if (rc)
		tp_view_clear(v);  /* nothing is left to free on error */
	return rc;
}

int tp_read_hwloc(const char *file, tp_view *v, tm_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (!file) {
		tp_view_init(v, "local", NULL);
		rc = read_topology("this machine", NULL, 0, v, err);
		if (rc)
			tp_view_clear(v);
		return rc;
	}
	rc = tm_read_file(file, HW_MAX_XML_BYTES, &buf, &len, err);
	if (rc) {
		tp_view_init(v, "hwloc", file);
		tp_view_clear(v);
		return rc;
	}
	rc = tp_read_hwloc_text(file, buf, len, v, err);
	free(buf);
	return rc;
}
