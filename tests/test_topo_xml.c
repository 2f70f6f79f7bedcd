/*
 * test_topo_xml.c — the hwloc and NCCL topology readers on every public
 * sample (fixtures/topo/hwloc-xml, fixtures/topo/nccl-topo with its cut
 * fragments) and on the real H200 host's hwloc.xml: exact GPU lists, PCI
 * bus ids, NUMA nodes, every cell of the link matrix, the notes, or the
 * exact one-line error. Small synthetic files (written to a temporary
 * directory) cover what no sample has: NVSwitch matrices in hwloc, hwloc's
 * older NVLink unit, GPU-to-GPU NVLink in a complete NCCL file, and each
 * way the XML scanner rejects a file. The registry of sources, which
 * reads them for `thermap topo`, is checked row by row. In expected
 * messages and notes, FILE stands for the file name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo.h"
#include "testutil.h"

#define HW "fixtures/topo/hwloc-xml/"
#define NC "fixtures/topo/nccl-topo/"
#define H200 "fixtures/h200x4-a/"

static char dir[128];  /* the temporary directory of this run */

/* Under LeakSanitizer: loading the live machine through libhwloc's pci
 * plugin (libpciaccess) leaves about 1 KB that the plugin allocated and
 * never freed; the plugin is unloaded before the leak report. Only
 * allocations made inside hwloc_topology_load are excused, and only the
 * slow unwinder can see that frame through the unloaded plugin. Both
 * hooks are ignored by builds without the sanitizers. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:hwloc_topology_load\n";
}

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "fast_unwind_on_malloc=0";
}

/* What a reader must return for one file. */
typedef struct want {
	const char *file;
	const char *host;        /* NULL: none */
	int n;                   /* GPUs */
	const char *pci[8];      /* in index order (index = position) */
	int numa[8];
	const char *uuid0;       /* UUID of GPU 0, NULL: none */
	const char *model0;      /* model of GPU 0, NULL: none */
	const char *links[8];    /* rows of tm_link_name codes */
	int nnotes;
	const char *notes[3];    /* exact, FILE for the file name */
} want;

/* s with every "FILE" replaced by file (not the one in NCCL_TOPO_FILE). */
static void subst(char *out, size_t cap, const char *s, const char *file)
{
	size_t n = 0;
	while (*s && n + 1 < cap) {
		if (strncmp(s, "FILE", 4) == 0 && (n == 0 || out[n - 1] != '_')) {
			n += (size_t)snprintf(out + n, cap - n, "%s", file);
			if (n >= cap)
				n = cap - 1;
			s += 4;
		} else {
			out[n++] = *s++;
		}
	}
	out[n] = '\0';
}

static void check_view(const tp_view *v, const want *w)
{
	char buf[1024];
	int n = w->n;

	assert_int_equal(v->ngpus, n);
	assert_true(v->nv_only);
	assert_int_equal(v->ignored, 0);
	if (w->host)
		assert_string_equal(v->host, w->host);
	else
		assert_null(v->host);
	for (int i = 0; i < n; i++) {
		assert_int_equal(v->gpus[i].index, i);
		assert_string_equal(v->gpus[i].pci, w->pci[i]);
		assert_int_equal(v->gpus[i].numa, w->numa[i]);
	}
	if (w->uuid0)
		assert_string_equal(v->gpus[0].uuid, w->uuid0);
	else
		assert_null(v->gpus[0].uuid);
	if (w->model0)
		assert_string_equal(v->gpus[0].model, w->model0);
	else
		assert_null(v->gpus[0].model);
	assert_non_null(v->link);
	for (int i = 0; i < n; i++) {
		const char *row = w->links[i];
		for (int j = 0; j < n; j++) {
			char code[16], got[16];
			size_t k = strcspn(row, " ");
			assert_true(k > 0 && k < sizeof code);
			memcpy(code, row, k);
			code[k] = '\0';
			row += k + strspn(row + k, " ");
			tm_link_name(v->link[i * n + j], v->nv[i * n + j], got);
			if (strcmp(code, got) != 0)
				fail_msg("%s: GPU %d to %d: expected %s, got %s",
				         w->file, i, j, code, got);
		}
		assert_string_equal(row, "");
	}
	assert_int_equal(v->nnotes, w->nnotes);
	for (int k = 0; k < w->nnotes; k++) {
		subst(buf, sizeof buf, w->notes[k], w->file);
		assert_string_equal(v->notes[k], buf);
	}
}

typedef int (*reader)(const char *, tp_view *, tm_error *);

static void expect_view(reader rd, const want *w)
{
	tp_view v;
	tm_error e = { 0, "" };
	int rc = rd(w->file, &v, &e);
	if (rc)
		fail_msg("%s: rc %d: %s", w->file, rc, e.msg);
	check_view(&v, w);
	tp_view_clear(&v);
}

static void expect_error(reader rd, const char *file, const char *msg)
{
	tp_view v;
	tm_error e = { 0, "" };
	char buf[1024];
	assert_int_equal(rd(file, &v, &e), TM_EINPUT);
	assert_int_equal(e.code, TM_EINPUT);
	subst(buf, sizeof buf, msg, file);
	assert_string_equal(e.msg, buf);
	/* a failed read leaves nothing to free (freeing is harmless) */
	assert_int_equal(v.ngpus, 0);
	assert_null(v.gpus);
	assert_null(v.link);
	assert_null(v.file);
	assert_int_equal(v.nnotes, 0);
	tp_view_clear(&v);
}

/* Writes len bytes to dir/name; returns the path (static buffer). */
static const char *write_tmp(const char *name, const char *text, size_t len)
{
	static char path[256];
	FILE *f;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* ---- hwloc: public samples ---------------------------------------------- */

static const char NO_NV[] = "no NVLink information in FILE: pairs are given "
	"PCIe/SMP codes only";

/* The required case: POWER8 Minsky, 4 P100 SXM2 with hwloc's NVML
 * backend. NVLinkBandwidth has 40000 MB/s between nvml0 and nvml1 and
 * between nvml2 and nvml3 (2 NVLink 1 links at 20000 each), and 40000 from
 * each GPU to its own CPU package, which is no GPU pair. */
static void test_hwloc_power8(void **state)
{
	static const want w = {
		HW "power8gpudistances.hwloc2-v2.14.xml",
		"drac-12.grenoble.grid5000.fr", 4,
		{ "0002:01:00.0", "0003:01:00.0", "000a:01:00.0",
		  "000b:01:00.0" },
		{ 0, 0, 1, 1 },
		"GPU-77bf6b9a-6906-5a93-d28b-b77d2c23d1d2", "Tesla P100-SXM2-16GB",
		{ "X NV2 SYS SYS", "NV2 X SYS SYS", "SYS SYS X NV2",
		  "SYS SYS NV2 X" },
		0, { NULL },
	};
	tp_view v;
	tm_error e = { 0, "" };
	(void)state;
	expect_view(tp_read_hwloc, &w);
	assert_int_equal(tp_read_hwloc(w.file, &v, &e), 0);
	assert_string_equal(v.source, "hwloc");
	assert_string_equal(v.file, w.file);
	assert_string_equal(v.gpus[3].uuid,
	                    "GPU-93f5db36-624e-1453-40ab-85cc675aa903");
	/* CUDAGlobalMemorySize 16671616 KiB */
	assert_true(fabs(v.gpus[0].memory_gib - 16671616.0 / 1048576) < 1e-9);
	/* GPU pairs only: exactly two bonds of two links each */
	{
		int bonds = 0;
		for (int i = 0; i < 16; i++)
			if (v.link[i] == TM_LINK_NV) {
				assert_int_equal(v.nv[i], 2);
				bonds++;
			}
		assert_int_equal(bonds, 4);
	}
	tp_view_clear(&v);
}

/* The same machine written by hwloc 3 (topology version 3.0): libhwloc 2.9
 * cannot read it, and says so. */
static void test_hwloc_power8_v3(void **state)
{
	(void)state;
	expect_error(tp_read_hwloc, HW "power8gpudistances.hwloc3-master.xml",
	             "FILE: hwloc XML version 3.0 needs hwloc 3; thermap is "
	             "built with hwloc 2, which reads XML up to version 2.x "
	             "(export the topology with hwloc 2's lstopo)");
}

/* Lassen: POWER9, 4 V100 SXM2, two per PLX switch per socket, no NVML
 * matrix; the ASPEED VGA is no GPU. */
static void test_hwloc_lassen(void **state)
{
	static const want w = {
		HW "mpibind-coral-lassen.xml", "lassen28", 4,
		{ "0004:04:00.0", "0004:05:00.0", "0035:03:00.0",
		  "0035:04:00.0" },
		{ 0, 0, 8, 8 },
		"GPU-04732404-7fc3-5ae6-cddd-c879b3a379bb", "Tesla V100-SXM2-16GB",
		{ "X PIX SYS SYS", "PIX X SYS SYS", "SYS SYS X PIX",
		  "SYS SYS PIX X" },
		1, { NO_NV },
	};
	(void)state;
	expect_view(tp_read_hwloc, &w);
}

/* CTS-1: 2 P100 PCIe behind one PLX switch, nothing but PCIe. */
static void test_hwloc_cts1(void **state)
{
	static const want w = {
		HW "mpibind-cts1-pascal.xml", "pascal4", 2,
		{ "0000:04:00.0", "0000:07:00.0" }, { 0, 0 },
		"GPU-affad486-897e-9778-18e8-26a7127927a8", "Tesla P100-PCIE-16GB",
		{ "X PIX", "PIX X" },
		1, { NO_NV },
	};
	(void)state;
	expect_view(tp_read_hwloc, &w);
}

/* g4dn.metal: 8 T4, two per host bridge (root ports of one PCIe stack),
 * two stacks per socket. */
static void test_hwloc_g4dn(void **state)
{
	static const want w = {
		HW "mpibind-g4dnmetal.xml", "gpu-st-g4dnmetal-1", 8,
		{ "0000:18:00.0", "0000:19:00.0", "0000:35:00.0", "0000:36:00.0",
		  "0000:e7:00.0", "0000:e8:00.0", "0000:f4:00.0",
		  "0000:f5:00.0" },
		{ 0, 0, 0, 0, 1, 1, 1, 1 },
		"GPU-029490c8-a116-638b-7018-1a6b7a9002ef", "Tesla T4",
		{ "X PHB NODE NODE SYS SYS SYS SYS",
		  "PHB X NODE NODE SYS SYS SYS SYS",
		  "NODE NODE X PHB SYS SYS SYS SYS",
		  "NODE NODE PHB X SYS SYS SYS SYS",
		  "SYS SYS SYS SYS X PHB NODE NODE",
		  "SYS SYS SYS SYS PHB X NODE NODE",
		  "SYS SYS SYS SYS NODE NODE X PHB",
		  "SYS SYS SYS SYS NODE NODE PHB X" },
		1, { NO_NV },
	};
	(void)state;
	expect_view(tp_read_hwloc, &w);
}

/* AMD machines: 8 MI250X GCDs (ROCm SMI) and 4 Vega 20 (OpenCL), plus an
 * ASPEED VGA that is not counted. */
static void test_hwloc_amd(void **state)
{
	(void)state;
	expect_error(tp_read_hwloc, HW "mpibind-eas-tioga.xml",
	             "FILE: no NVIDIA GPU (8 other GPUs ignored)");
	expect_error(tp_read_hwloc, HW "mpibind-epyc-corona.xml",
	             "FILE: no NVIDIA GPU (4 other GPUs ignored)");
}

/* The real 4xH200 VM: GPUs on PCI only (no NVML or CUDA backend), all on
 * the root bus of one host bridge, OpenCL devices misplaced by hwloc (not
 * used). The GPUs and their order match cluster.json, derived from
 * nvidia-smi on the same host. */
static void test_hwloc_h200(void **state)
{
	static const want w = {
		H200 "hwloc.xml", "node", 4,
		{ "0000:00:06.0", "0000:00:07.0", "0000:00:08.0",
		  "0000:00:09.0" },
		{ 0, 0, 0, 0 }, NULL, NULL,
		{ "X PHB PHB PHB", "PHB X PHB PHB", "PHB PHB X PHB",
		  "PHB PHB PHB X" },
		2, { "FILE has no NVML or CUDA device numbers: GPUs are numbered "
		     "in PCI bus id order", NO_NV },
	};
	tm_cluster *c = NULL;
	tm_error e = { 0, "" };
	tp_view v;
	(void)state;
	expect_view(tp_read_hwloc, &w);
	assert_int_equal(tm_cluster_load(H200 "cluster.json", &c, &e), 0);
	assert_int_equal(tp_read_hwloc(w.file, &v, &e), 0);
	assert_int_equal(c->nodes[0].ngpus, v.ngpus);
	for (int i = 0; i < v.ngpus; i++) {
		assert_int_equal(c->nodes[0].gpus[i].index, v.gpus[i].index);
		assert_string_equal(c->nodes[0].gpus[i].pci_bus_id, v.gpus[i].pci);
		assert_true(isnan(v.gpus[i].memory_gib));
	}
	tp_view_clear(&v);
	tm_cluster_free(c);
}

/* ---- hwloc: synthetic NVLink matrices ----------------------------------- */

/* One socket, one NUMA node, 4 A100 and an NVSwitch:
 *   host bridge [00-0f] - root port 00:01.0 - switch (up 01:00.0)
 *     - down 02:00.0 - GPU 03:00.0 (nvml0)
 *     - down 02:01.0 - GPU 04:00.0 (nvml1)
 *     - down 02:02.0 - switch (up 05:00.0) - down 06:00.0 - GPU 07:00.0 (nvml2)
 *   host bridge [10-10] - GPU 10:00.0 (nvml3)
 *   host bridge [20-20] - NVSwitch 20:00.0 (class 0680, NVIDIA)
 * m is the 5x5 NVLinkBandwidth matrix (nvml0..3, switch) in MB/s. */
static const char *hw_synth(const char *name, const unsigned long *m,
                            bool io)
{
	static const char cs[] = "cpuset=\"0x00000003\" complete_cpuset="
		"\"0x00000003\" nodeset=\"0x00000001\" complete_nodeset="
		"\"0x00000001\"";
	static const char idx[] = "OSDev:100 OSDev:101 OSDev:102 OSDev:103 "
		"PCIDev:40 ";
	strbuf b, vals;
	const char *path;

	sb_init(&b);
	sb_init(&vals);
	sb_addf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
	        "<topology version=\"2.0\">\n<object type=\"Machine\" "
	        "os_index=\"0\" %s allowed_cpuset=\"0x00000003\" "
	        "allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
	        "<info name=\"HostName\" value=\"sw-test\"/>\n"
	        "<object type=\"Package\" os_index=\"0\" %s gp_index=\"2\">\n"
	        "<object type=\"NUMANode\" os_index=\"0\" %s gp_index=\"3\" "
	        "local_memory=\"1073741824\"/>\n", cs, cs, cs);
	for (int p = 0; p < 2; p++)
		sb_addf(&b, "<object type=\"PU\" os_index=\"%d\" cpuset=\"0x%d\" "
		        "complete_cpuset=\"0x%d\" nodeset=\"0x00000001\" "
		        "complete_nodeset=\"0x00000001\" gp_index=\"%d\"/>\n",
		        p, p + 1, p + 1, p + 4);
	if (io) {
#define BR(gp, bus, range) "<object type=\"Bridge\" gp_index=\"" gp "\" " \
	"bridge_type=\"1-1\" depth=\"1\" bridge_pci=\"0000:[" range "]\" " \
	"pci_busid=\"0000:" bus "\" pci_type=\"0604 [10b5:8796] [0000:0000] " \
	"00\">\n"
#define HB(gp, range) "<object type=\"Bridge\" gp_index=\"" gp "\" " \
	"bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[" range "]\">\n"
#define GPU(gp, bus, n) "<object type=\"PCIDev\" gp_index=\"" gp "\" " \
	"pci_busid=\"0000:" bus "\" pci_type=\"0302 [10de:20b0] [10de:134f] " \
	"a1\">\n<object type=\"OSDev\" gp_index=\"10" n "\" name=\"nvml" n \
	"\" subtype=\"NVML\" osdev_type=\"1\">\n<info name=\"GPUModel\" " \
	"value=\"NVIDIA A100-SXM4-40GB\"/>\n<info name=\"NVIDIAUUID\" " \
	"value=\"GPU-0000000" n "-0000-4000-8000-00000000000" n "\"/>\n" \
	"</object>\n</object>\n"
#define END "</object>\n"
		sb_add(&b, HB("10", "00-0f") BR("11", "00:01.0", "01-0f")
		       BR("12", "01:00.0", "02-0f")
		       BR("13", "02:00.0", "03-03") GPU("20", "03:00.0", "0") END
		       BR("14", "02:01.0", "04-04") GPU("21", "04:00.0", "1") END
		       BR("15", "02:02.0", "05-0f") BR("16", "05:00.0", "06-0f")
		       BR("17", "06:00.0", "07-07") GPU("22", "07:00.0", "2")
		       END END END END END END
		       HB("30", "10-10") GPU("23", "10:00.0", "3") END
		       HB("31", "20-20") "<object type=\"PCIDev\" gp_index=\"40\" "
		       "pci_busid=\"0000:20:00.0\" pci_type=\"0680 [10de:22a3] "
		       "[10de:1796] a1\"/>\n" END);
#undef BR
#undef HB
#undef GPU
#undef END
	}
	sb_add(&b, "</object>\n</object>\n");
	if (io && m) {
		for (int i = 0; i < 25; i++)
			sb_addf(&vals, "%lu ", m[i]);
		sb_addf(&b, "<distances2hetero nbobjs=\"5\" kind=\"25\" "
		        "name=\"NVLinkBandwidth\">\n<indexes length=\"%zu\">%s"
		        "</indexes>\n<u64values length=\"%zu\">%s</u64values>\n"
		        "</distances2hetero>\n", strlen(idx), idx, vals.len,
		        vals.s);
	}
	sb_add(&b, "</topology>\n");
	path = write_tmp(name, b.s, b.len);
	sb_free(&b);
	sb_free(&vals);
	return path;
}

/* GPU 0 has 10 links into the switch and 2 to GPU 3, GPU 1 has 12 into
 * the switch, GPU 2 none: GPUs 0 and 1 share the fabric with min(10, 12)
 * links; the rest get codes from the PCI tree (0-2 PXB through two
 * cascaded switches, GPU 3 on its own host bridge of the same node). */
static void test_hwloc_nvswitch(void **state)
{
	static const char *const rows[] = {
		"X NV10 PXB NV2", "NV10 X PXB NODE", "PXB PXB X NODE",
		"NV2 NODE NODE X",
	};
	/* unit 25000 (hwloc since 2023), then 50000 (before), then a
	 * bandwidth of 1.5 links */
	static const unsigned long u = 25000;
	unsigned long m[3][25] = {
		{ 1000000, 0, 0, 2 * u, 10 * u,  0, 1000000, 0, 0, 12 * u,
		  0, 0, 1000000, 0, 0,  2 * u, 0, 0, 1000000, 0,
		  10 * u, 12 * u, 0, 0, 1000000 },
	};
	want w = {
		NULL, "sw-test", 4,
		{ "0000:03:00.0", "0000:04:00.0", "0000:07:00.0",
		  "0000:10:00.0" },
		{ 0, 0, 0, 0 },
		"GPU-00000000-0000-4000-8000-000000000000", "NVIDIA A100-SXM4-40GB",
		{ rows[0], rows[1], rows[2], rows[3] },
		0, { NULL },
	};
	(void)state;
	for (int i = 0; i < 25; i++) {
		m[1][i] = i % 6 ? 2 * m[0][i] : m[0][i];
		m[2][i] = m[0][i];
	}
	m[2][3] = m[2][15] = 3 * u / 2;
	w.file = hw_synth("sw.xml", m[0], true);
	expect_view(tp_read_hwloc, &w);
	w.file = hw_synth("sw-old.xml", m[1], true);
	w.nnotes = 1;
	w.notes[0] = "FILE counts 50 GB/s per NVLink (hwloc before 2023): "
		"link counts use that unit";
	expect_view(tp_read_hwloc, &w);
	w.file = hw_synth("sw-odd.xml", m[2], true);
	w.notes[0] = "NVLink bandwidths in FILE are not whole numbers of 25000 "
		"MB/s links: counts are rounded";
	expect_view(tp_read_hwloc, &w);
	/* no matrix at all: PCI codes everywhere */
	w.file = hw_synth("sw-none.xml", NULL, true);
	w.notes[0] = NO_NV;
	w.links[0] = "X PIX PXB NODE";
	w.links[1] = "PIX X PXB NODE";
	w.links[3] = "NODE NODE NODE X";
	expect_view(tp_read_hwloc, &w);
}

/* Files the hwloc reader must refuse, each with its own message. */
static void test_hwloc_rejects(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	tm_error e = { 0, "" };
	(void)state;
	expect_error(tp_read_hwloc, NC "azure-ndv4-topo.xml",
	             "FILE: not hwloc XML (root element <system>: an NCCL "
	             "file?)");
	expect_error(tp_read_hwloc, NC "azure-ncv4-graph.xml",
	             "FILE: not hwloc XML (root element <graphs>: an NCCL "
	             "file?)");
	expect_error(tp_read_hwloc, H200 "README.md",
	             "FILE: not hwloc XML (no <topology> element)");
	expect_error(tp_read_hwloc, write_tmp("foo.xml", "<?xml?>\n<foo/>\n", 15),
	             "FILE: not hwloc XML (root element <foo>, expected "
	             "<topology>)");
	expect_error(tp_read_hwloc, write_tmp("empty.xml", "", 0),
	             "FILE: not hwloc XML (no <topology> element)");
	expect_error(tp_read_hwloc, HW "no-such-file.xml",
	             "FILE: cannot open: No such file or directory");
	/* the POWER8 file cut after 4000 bytes */
	assert_int_equal(tm_read_file(HW "power8gpudistances.hwloc2-v2.14.xml",
	                              1 << 20, &buf, &len, &e), 0);
	assert_true(len > 4000);
	expect_error(tp_read_hwloc, write_tmp("cut.xml", buf, 4000),
	             "FILE: not hwloc XML (libhwloc rejects it: malformed or "
	             "incomplete)");
	free(buf);
	/* a topology exported without I/O objects */
	expect_error(tp_read_hwloc, hw_synth("noio.xml", NULL, false),
	             "FILE: no NVIDIA GPU (no PCI device at all: exported "
	             "without I/O objects?)");
}

/* A fixture with every occurrence of from replaced by to, written to
 * dir/name; returns its path. */
static const char *edited(const char *name, const char *fixture,
                          const char *from, const char *to)
{
	char *buf = NULL;
	size_t len = 0;
	tm_error e = { 0, "" };
	strbuf b;
	const char *p, *q;
	assert_int_equal(tm_read_file(fixture, 1 << 20, &buf, &len, &e), 0);
	sb_init(&b);
	for (p = buf; (q = strstr(p, from)) != NULL; p = q + strlen(from)) {
		sb_addf(&b, "%.*s", (int)(q - p), p);
		sb_add(&b, to);
	}
	sb_add(&b, p);
	p = write_tmp(name, b.s, b.len);
	sb_free(&b);
	free(buf);
	return p;
}

/* libhwloc 2.9 dereferences NULL inside hwloc_topology_load when an
 * object lacks complete_cpuset: read first in a child process, the file
 * is one error line instead of thermap's death. Two GPUs sharing a UUID
 * gave a cluster that every later command rejected; the view is refused
 * naming the file and the UUID. */
static void test_hwloc_crash_and_duplicates(void **state)
{
	static const char crash[] = ": libhwloc crashed reading it (";
	tp_view v;
	tm_error e = { 0, "" };
	const char *f;
	char msg[1024];
	(void)state;
	f = edited("cpucet.xml", HW "mpibind-g4dnmetal.xml", "complete_cpuset",
	           "complete_cpucet");
	assert_int_equal(tp_read_hwloc(f, &v, &e), TM_EINPUT);
	/* the signal under a plain build; a sanitizer's exit status under
	 * one, whose handler takes the SIGSEGV */
	assert_true(strncmp(e.msg, f, strlen(f)) == 0);
	assert_true(strncmp(e.msg + strlen(f), crash, sizeof crash - 1) == 0);
	assert_non_null(strstr(e.msg, "): malformed hwloc XML"));
	assert_null(strchr(e.msg, '\n'));
	assert_int_equal(v.ngpus, 0);
	tp_view_clear(&v);

	f = edited("dup.xml", HW "mpibind-coral-lassen.xml",
	           "GPU-c6f92517-d6ad-e039-6cbf-fc1d05507a3c",
	           "GPU-04732404-7fc3-5ae6-cddd-c879b3a379bb");
	memset(&e, 0, sizeof e);
	assert_int_equal(tp_read_hwloc(f, &v, &e), 0);
	assert_int_equal(tp_check_view(&v, &e), TM_EINPUT);
	subst(msg, sizeof msg, "FILE: GPU 0 and GPU 1 have the same UUID "
	      "GPU-04732404-7fc3-5ae6-cddd-c879b3a379bb; a UUID names one GPU",
	      f);
	assert_string_equal(e.msg, msg);
	tp_view_clear(&v);
	{
		/* and through the command's entry point */
		tm_topo_input in = { "a", "hwloc", f };
		char *cl = NULL;
		memset(&e, 0, sizeof e);
		assert_int_equal(tm_topo_build(&in, 1, NULL, &cl, &e), TM_EINPUT);
		assert_string_equal(e.msg, msg);
		assert_null(cl);
	}
}

/* The live machine: whatever it has, the reader returns a view or the
 * one-line error, and never prints. */
static void test_hwloc_live(void **state)
{
	tp_view v;
	tm_error e = { 0, "" };
	int rc = tp_read_hwloc(NULL, &v, &e);
	(void)state;
	assert_null(v.file);
	if (rc) {
		assert_int_equal(rc, TM_EINPUT);
		assert_true(strncmp(e.msg, "this machine: no NVIDIA GPU", 27) == 0);
	} else {
		assert_string_equal(v.source, "local");
		assert_true(v.ngpus > 0);
		for (int i = 0; i < v.ngpus; i++)
			assert_int_equal(v.link[i * v.ngpus + i], TM_LINK_X);
	}
	tp_view_clear(&v);
}

/* ---- the registry of sources --------------------------------------------- */

/* Every source is found by its name and has exactly one reader; the live
 * machine is the one without a file; the lists the messages give come
 * from the rows in order; an unknown kind is refused by the entry point. */
static void test_sources(void **state)
{
	strbuf b;
	tm_error e = { 0, "" };
	tm_topo_input in = { "a", "smi", "x" };
	char *cl = NULL;
	int live = 0;
	(void)state;
	assert_int_equal(tp_nsources, 5);
	for (int i = 0; i < tp_nsources; i++) {
		const tp_source *s = &tp_sources[i];
		assert_ptr_equal(tp_source_find(s->name), s);
		assert_true(!s->read != !s->read_live);
		live += s->read_live != NULL;
	}
	assert_int_equal(live, 1);
	assert_non_null(tp_source_find("local")->read_live);
	assert_null(tp_source_find("smi"));
	assert_true(tp_source_find("hwloc")->tells & TP_NVLINK_UNSURE);
	assert_false(tp_source_find("gpus")->tells & TP_TELLS_LINKS);
	sb_init(&b);
	tp_source_names(&b, "", 0);
	assert_string_equal(b.s, "smi-topo, gpus, hwloc, nccl or local");
	sb_free(&b);
	sb_init(&b);
	tp_source_names(&b, "--", TP_TELLS_LINKS);
	assert_string_equal(b.s, "--smi-topo, --hwloc, --nccl or --local");
	sb_free(&b);
	sb_init(&b);
	tp_source_names(&b, "--", TP_NVLINK_UNSURE);
	assert_string_equal(b.s, "--hwloc");
	sb_free(&b);
	assert_int_equal(tm_topo_build(&in, 1, NULL, &cl, &e), TM_EUSAGE);
	assert_string_equal(e.msg, "unknown source kind smi");
	assert_null(cl);
}

/* ---- NCCL: public samples ----------------------------------------------- */

/* IBM Cloud gx3d H100x8 dump: each GPU has 5+5+4+4 links to four
 * NVSwitches, so every pair is NV18. */
static void test_nccl_ibm_h100(void **state)
{
	static const want w = {
		NC "ibmcloud-gx3d-h100x8-topo.xml", NULL, 8,
		{ "0000:a4:00.0", "0000:ae:00.0", "0000:b8:00.0", "0000:c2:00.0",
		  "0000:cc:00.0", "0000:d6:00.0", "0000:e0:00.0",
		  "0000:ea:00.0" },
		{ 0, 0, 0, 0, 1, 1, 1, 1 }, NULL, NULL,
		{ "X NV18 NV18 NV18 NV18 NV18 NV18 NV18",
		  "NV18 X NV18 NV18 NV18 NV18 NV18 NV18",
		  "NV18 NV18 X NV18 NV18 NV18 NV18 NV18",
		  "NV18 NV18 NV18 X NV18 NV18 NV18 NV18",
		  "NV18 NV18 NV18 NV18 X NV18 NV18 NV18",
		  "NV18 NV18 NV18 NV18 NV18 X NV18 NV18",
		  "NV18 NV18 NV18 NV18 NV18 NV18 X NV18",
		  "NV18 NV18 NV18 NV18 NV18 NV18 NV18 X" },
		0, { NULL },
	};
	tp_view v;
	tm_error e = { 0, "" };
	(void)state;
	expect_view(tp_read_nccl, &w);
	assert_int_equal(tp_read_nccl(w.file, &v, &e), 0);
	assert_string_equal(v.source, "nccl");
	assert_string_equal(v.file, w.file);
	assert_null(v.gpus[0].uuid);
	assert_true(isnan(v.gpus[0].memory_gib));
	tp_view_clear(&v);
}

/* Azure NC A100 v4: one GPU per NUMA node, and each GPU's <nvlink> names
 * the GPU itself (the peer is outside the VM). */
static void test_nccl_ncv4(void **state)
{
	static const want w = {
		NC "azure-ncv4-topo.xml", NULL, 4,
		{ "0001:00:00.0", "0002:00:00.0", "0003:00:00.0",
		  "0004:00:00.0" },
		{ 0, 1, 2, 3 }, NULL, NULL,
		{ "X SYS SYS SYS", "SYS X SYS SYS", "SYS SYS X SYS",
		  "SYS SYS SYS X" },
		1, { "FILE:5: 4 <nvlink> elements name their own GPU as target: "
		     "ignored, the peer is not in the file" },
	};
	(void)state;
	expect_view(tp_read_nccl, &w);
}

static const char PCI_ONLY[] = "FILE has no <gpu> elements: its GPUs are "
	"the display-class <pci> devices, numbered in PCI bus id order";

/* Static NCCL_TOPO_FILEs that list GPUs as <pci class="0x030200"> only:
 * p4d (two GPUs per switch), ND A100 v4 (two per virtual switch, bus ids
 * out of order in the file), ND H100 v5 (one per virtual switch). */
static void test_nccl_pci_only(void **state)
{
	static const want w[] = {
		{ NC "aws-ofi-nccl-p4d-24xl-topo.xml", NULL, 8,
		  { "0000:10:1c.0", "0000:10:1d.0", "0000:20:1c.0",
		    "0000:20:1d.0", "0000:90:1c.0", "0000:90:1d.0",
		    "0000:a0:1c.0", "0000:a0:1d.0" },
		  { 0, 0, 0, 0, 1, 1, 1, 1 }, NULL, NULL,
		  { "X PIX NODE NODE SYS SYS SYS SYS",
		    "PIX X NODE NODE SYS SYS SYS SYS",
		    "NODE NODE X PIX SYS SYS SYS SYS",
		    "NODE NODE PIX X SYS SYS SYS SYS",
		    "SYS SYS SYS SYS X PIX NODE NODE",
		    "SYS SYS SYS SYS PIX X NODE NODE",
		    "SYS SYS SYS SYS NODE NODE X PIX",
		    "SYS SYS SYS SYS NODE NODE PIX X" },
		  2, { PCI_ONLY, NO_NV } },
		{ NC "azure-ndv4-topo.xml", NULL, 8,
		  { "0001:00:00.0", "0002:00:00.0", "0003:00:00.0",
		    "0004:00:00.0", "000b:00:00.0", "000c:00:00.0",
		    "000d:00:00.0", "000e:00:00.0" },
		  { 1, 1, 0, 0, 3, 3, 2, 2 }, NULL, NULL,
		  { "X PIX SYS SYS SYS SYS SYS SYS",
		    "PIX X SYS SYS SYS SYS SYS SYS",
		    "SYS SYS X PIX SYS SYS SYS SYS",
		    "SYS SYS PIX X SYS SYS SYS SYS",
		    "SYS SYS SYS SYS X PIX SYS SYS",
		    "SYS SYS SYS SYS PIX X SYS SYS",
		    "SYS SYS SYS SYS SYS SYS X PIX",
		    "SYS SYS SYS SYS SYS SYS PIX X" },
		  2, { PCI_ONLY, NO_NV } },
		{ NC "azure-ndv5-topo.xml", NULL, 8,
		  { "0001:00:00.0", "0002:00:00.0", "0003:00:00.0",
		    "0008:00:00.0", "0009:00:00.0", "000a:00:00.0",
		    "000b:00:00.0", "000c:00:00.0" },
		  { 0, 0, 0, 0, 1, 1, 1, 1 }, NULL, NULL,
		  { "X NODE NODE NODE SYS SYS SYS SYS",
		    "NODE X NODE NODE SYS SYS SYS SYS",
		    "NODE NODE X NODE SYS SYS SYS SYS",
		    "NODE NODE NODE X SYS SYS SYS SYS",
		    "SYS SYS SYS SYS X NODE NODE NODE",
		    "SYS SYS SYS SYS NODE X NODE NODE",
		    "SYS SYS SYS SYS NODE NODE X NODE",
		    "SYS SYS SYS SYS NODE NODE NODE X" },
		  2, { PCI_ONLY, NO_NV } },
	};
	(void)state;
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
		expect_view(tp_read_nccl, &w[i]);
}

static const char NO_GPUS[] = "FILE: lists no GPUs (no <gpu> element, no "
	"display-class <pci>): a partial NCCL_TOPO_FILE that NCCL completes "
	"from the machine; give thermap an NCCL_TOPO_DUMP_FILE instead";

static void test_nccl_rejects(void **state)
{
	(void)state;
	expect_error(tp_read_nccl, NC "aws-ofi-nccl-g5.48xl-topo.xml", NO_GPUS);
	expect_error(tp_read_nccl, NC "aws-ofi-nccl-p5.48xl-topo.xml", NO_GPUS);
	expect_error(tp_read_nccl, NC "azure-ncv4-graph.xml",
	             "FILE: an NCCL graph file (NCCL_GRAPH_FILE), not a topology "
	             "file");
	expect_error(tp_read_nccl, HW "power8gpudistances.hwloc2-v2.14.xml",
	             "FILE: not an NCCL topology file (root element <topology>, "
	             "expected <system>: hwloc XML?)");
	expect_error(tp_read_nccl, NC "missing.xml",
	             "FILE: cannot open: No such file or directory");
}

/* Excerpts pasted into GitHub issues, cut mid-file. */
static void test_nccl_fragments(void **state)
{
	(void)state;
	expect_error(tp_read_nccl,
	             NC "fragments/dgx1-v100-4gpu_nccl-issue-671_FRAGMENT.xml",
	             "FILE:16: the file ends inside <gpu> (opened at line 13): "
	             "cut short?");
	expect_error(tp_read_nccl, NC "fragments/"
	             "h200-8gpu-baremetal_nccl-tests-issue-256_FRAGMENT.xml",
	             "FILE:53: the file ends inside <nic> (opened at line 52): "
	             "cut short?");
}

/* ---- NCCL: synthetic files ---------------------------------------------- */

/* A complete file in the DGX-1 fragment's style: GPU-to-GPU links given
 * from one side (0-1) or both (1-2), a link to a GPU outside the file, a
 * link to the CPU (POWER class, no GPU pair), two switch levels, an
 * entity in a bus id, a declaration, comments and '\'' quotes. */
static void test_nccl_gpu_links(void **state)
{
	static const char text[] =
		"<?xml version=\"1.0\"?>\n"                               /* 1 */
		"<!-- DGX-1 style, written by hand -->\n"
		"<system version='1'>\n"
		"  <cpu numaid=\"0\">\n"
		"    <pci busid=\"0000:02:00.0\" class=\"0x060400\">\n"   /* 5 */
		"      <pci busid=\"0000:03:00.0\" class=\"0x060400\">\n"
		"        <pci busid=\"0000:06:00.0\" class=\"0x030200\">\n"
		"          <gpu dev=\"1\" sm=\"70\">\n"
		"            <nvlink target=\"0000:07:00.0\" count=\"1\"/>\n"
		"            <nvlink target=\"0000:0a:00.0\" count=\"2\" "  /* 10 */
		"tclass=\"0x030200\"/>\n"
		"            <nvlink target=\"0000:85:00.0\" count=\"2\" "
		"tclass=\"0x030200\"/>\n"
		"            <nvlink target=\"0000:04:00.0\" count=\"2\" "
		"tclass=\"0x068001\"/>\n"
		"          </gpu>\n"
		"        </pci>\n"
		"        <pci busid=\"0000:07:00.0\" class=\"0x030200\">"   /* 15 */
		"<gpu dev=\"0\"/></pci>\n"
		"      </pci>\n"
		"      <pci busid=\"0000:09:00.0\" class=\"0x060400\">\n"
		"        <pci busid=\"0000:0a:00&#46;0\" class=\"0x030200\">\n"
		"          <gpu dev=\"2\"><nvlink target=\"0000:06:00.0\" "
		"count=\"2\" tclass=\"0x030200\"/></gpu>\n"
		"        </pci>\n"                                         /* 20 */
		"      </pci>\n"
		"    </pci>\n"
		"  </cpu>\n"
		"  <cpu numaid=\"1\">\n"
		"    <pci busid=\"0000:84:00.0\" class=\"0x060400\">\n"   /* 25 */
		"      <pci busid=\"0000:86:00.0\" class=\"0x030200\">"
		"<gpu dev=\"3\"/></pci>\n"
		"    </pci>\n"
		"  </cpu>\n"
		"</system>\n"
		"<!-- end -->\n";
	want w = {
		NULL, NULL, 4,
		{ "0000:07:00.0", "0000:06:00.0", "0000:0a:00.0",
		  "0000:86:00.0" },
		{ 0, 0, 0, 1 }, NULL, NULL,
		{ "X NV1 PXB SYS", "NV1 X NV2 SYS", "PXB NV2 X SYS",
		  "SYS SYS SYS X" },
		1, { "FILE:11: 1 <nvlink> element targets no GPU or NVSwitch of "
		     "the file: ignored" },
	};
	(void)state;
	w.file = write_tmp("dgx1.xml", text, sizeof text - 1);
	expect_view(tp_read_nccl, &w);
}

/* Found by fuzzing and review: NVLink counts that add up past NV64 were
 * written as NV128, a cluster no command loads; an attribute value with
 * a line break made the one error line two. */
static void test_nccl_fuzz_findings(void **state)
{
	static const char over[] =
		"<system version=\"1\"><cpu numaid=\"0\">\n"
		"<pci busid=\"0000:06:00.0\" class=\"0x030200\"><gpu dev=\"0\">\n"
		"<nvlink target=\"0000:07:00.0\" count=\"64\"/>\n"
		"<nvlink target=\"0000:07:00.0\" count=\"64\"/>\n"
		"</gpu></pci>\n"
		"<pci busid=\"0000:07:00.0\" class=\"0x030200\"><gpu dev=\"1\"/>"
		"</pci>\n</cpu></system>\n";
	static const char brk[] =
		"<system version=\"1\"><cpu numaid=\"0\">\n"
		"<pci busid=\"0000:10:1c.0.\n-\" class=\"0x030200\"><gpu dev=\"0\"/>"
		"</pci>\n</cpu></system>\n";
	tp_view v;
	tm_error e = { 0, "" };
	const char *f = write_tmp("nv128.xml", over, sizeof over - 1);
	char msg[1024];
	(void)state;
	assert_int_equal(tp_read_nccl(f, &v, &e), 0);
	assert_int_equal(tp_check_view(&v, &e), TM_EINPUT);
	subst(msg, sizeof msg, "FILE: GPU 0 and GPU 1 are joined by 128 "
	      "NVLinks; expected 1 to 64 (NV1 ... NV64)", f);
	assert_string_equal(e.msg, msg);
	tp_view_clear(&v);
	expect_error(tp_read_nccl, write_tmp("brk.xml", brk, sizeof brk - 1),
	             "FILE:2: <pci> busid \"0000:10:1c.0.\\n-\" is not a PCI "
	             "bus id");
}

/* Each way a file is refused: the text and the exact message. */
static void test_nccl_malformed(void **state)
{
	static const struct { const char *text; const char *msg; } t[] = {
		{ "", "FILE:1: expected an XML element, found none" },
		{ "<!-- only a comment -->\n",
		  "FILE:2: expected an XML element, found none" },
		{ "<system>\n<cpu>\n</system>\n",
		  "FILE:3: expected </cpu> (opened at line 2), found </system>" },
		{ "<system a=\"1\" a=\"2\"/>",
		  "FILE:1: attribute a appears twice in <system>" },
		{ "<system a=1/>", "FILE:1: expected a quoted value for a in "
		  "<system>, found '1'" },
		{ "<system a=\"1\"b=\"2\"/>", "FILE:1: expected an attribute, "
		  "'>' or '/>' in <system>, found 'b'" },
		{ "<system a>", "FILE:1: expected '=' after a in <system>, "
		  "found '>'" },
		{ "<system", "FILE:1: expected an attribute, '>' or '/>' in "
		  "<system>, found the end of the file" },
		{ "<system a=\"x", "FILE:1: the file ends inside the value of a "
		  "in <system>" },
		{ "<system a=\"<\"/>", "FILE:1: expected the closing \" of a in "
		  "<system>, found '<'" },
		{ "<system>hello</system>",
		  "FILE:1: expected an element, found text \"hello\"" },
		{ "<system a=\"&bogus;\"/>", "FILE:1: expected an entity (&lt; "
		  "&gt; &amp; &quot; &apos; or an ASCII &#...;), found '&' "
		  "without one" },
		{ "<!DOCTYPE system [<!ENTITY x 'y'>]>\n<system/>", "FILE:1: "
		  "expected a DOCTYPE without an internal subset, found '['" },
		{ "<system><![CDATA[x]]></system>", "FILE:1: expected an "
		  "element, found <![CDATA[ (CDATA is not read)" },
		{ "<system/>\n<!DOCTYPE system>", "FILE:2: expected nothing "
		  "after the root element, found <!DOCTYPE" },
		{ "<system><!ELEMENT x ANY></system>", "FILE:1: expected an "
		  "element, found a <! declaration" },
		{ "<system/>\n<system/>", "FILE:2: expected nothing after the "
		  "root element, found another element" },
		{ "<system>\n<!-- open", "FILE:2: <!-- is not closed by --> "
		  "before the end of the file" },
		{ "<system><1/></system>", "FILE:1: expected an element name "
		  "after '<', found '1'" },
		{ "</system>", "FILE:1: expected an element, found a closing "
		  "tag" },
		{ "<system></system >x", "FILE:1: expected an element, found "
		  "text \"x\"" },
		{ "<system></system", "FILE:1: expected '>' to end </system>, "
		  "found the end of the file" },
		{ "<other/>", "FILE: not an NCCL topology file (root element "
		  "<other>, expected <system>)" },
		{ "<system>\n<cpu numaid=\"x\"><pci busid=\"0000:01:00.0\">"
		  "<gpu dev=\"0\"/></pci></cpu></system>",
		  "FILE:2: <cpu> numaid \"x\" is not a NUMA node number" },
		{ "<system><pci busid=\"0000:01:00.0\"><gpu/></pci></system>",
		  "FILE:1: <gpu> has no dev attribute (a device number 0 to "
		  "1023)" },
		{ "<system><pci busid=\"0000:01:00.0\"><gpu dev=\"1024\"/></pci>"
		  "</system>", "FILE:1: <gpu> dev \"1024\" is not a device "
		  "number (0 to 1023)" },
		{ "<system><cpu><gpu dev=\"0\"/></cpu></system>",
		  "FILE:1: expected <gpu> inside a <pci> element, found it "
		  "inside <cpu>" },
		{ "<system><pci busid=\"nope\"><gpu dev=\"0\"/></pci></system>",
		  "FILE:1: <pci> busid \"nope\" is not a PCI bus id" },
		{ "<system><pci><gpu dev=\"0\"/></pci></system>",
		  "FILE:1: <pci> of a GPU has no busid" },
		{ "<system>\n<pci busid=\"0000:01:00.0\"><gpu dev=\"0\"/></pci>\n"
		  "<pci busid=\"0000:02:00.0\"><gpu dev=\"0\"/></pci>\n"
		  "</system>",
		  "FILE:3: GPU dev 0 appears twice (also at line 2)" },
		{ "<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\"/></pci>"
		  "<pci busid=\"00000000:01:00.0\"><gpu dev=\"1\"/></pci></system>",
		  "FILE:1: PCI bus id 0000:01:00.0 holds two GPUs" },
		{ "<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\">\n"
		  "<nvlink target=\"0000:02:00.0\" count=\"0\"/></gpu></pci>"
		  "</system>", "FILE:2: <nvlink> count \"0\" is not a link "
		  "count (1 to 64)" },
		{ "<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\">"
		  "<nvlink target=\"0000:02:00.0\" count=\"65\"/></gpu></pci>"
		  "</system>", "FILE:1: <nvlink> count \"65\" is not a link "
		  "count (1 to 64)" },
		{ "<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\">"
		  "<nvlink target=\"zz\" count=\"1\"/></gpu></pci></system>",
		  "FILE:1: <nvlink> target \"zz\" is not a PCI bus id" },
		{ "<system><pci busid=\"0000:01:00.0\"><gpu dev=\"0\"/>"
		  "<nvlink target=\"0000:02:00.0\" count=\"1\"/></pci></system>",
		  "FILE:1: expected <nvlink> inside a <gpu> element, found it "
		  "inside <pci>" },
		{ "<system><cpu><pci busid=\"0000:01:00.0\" class=\"0x030000\" "
		  "vendor=\"0x1002\"/></cpu></system>",
		  "FILE: lists no NVIDIA GPUs (1 other GPU ignored)" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		expect_error(tp_read_nccl, write_tmp("bad.xml", t[i].text,
		             strlen(t[i].text)), t[i].msg);
	expect_error(tp_read_nccl, write_tmp("nul.xml", "<system>\n\0</system>",
	             19), "FILE:2: expected text, found a NUL byte: a binary "
	             "file?");
	{
		/* 65 nested elements: one more than the scanner allows */
		char deep[8 + 64 * 3 + 1];
		memcpy(deep, "<system>", 8);
		for (int i = 0; i < 64; i++)
			memcpy(deep + 8 + 3 * i, "<a>", 3);
		expect_error(tp_read_nccl, write_tmp("deep.xml", deep,
		             8 + 64 * 3), "FILE:1: elements nested deeper than "
		             "64");
	}
}

/* Lists of GPUs: a display-class <pci> of another vendor next to NVIDIA
 * ones is counted in ignored, with a note. */
static void test_nccl_other_vendor(void **state)
{
	static const char text[] =
		"<system version=\"1\"><cpu numaid=\"0\">"
		"<pci busid=\"0000:01:00.0\" class=\"0x030200\" vendor=\"0x10de\"/>"
		"<pci busid=\"0000:02:00.0\" class=\"0x038000\" vendor=\"0x1002\"/>"
		"</cpu></system>\n";
	tp_view v;
	tm_error e = { 0, "" };
	char note[512];
	const char *f = write_tmp("mixed.xml", text, sizeof text - 1);
	(void)state;
	assert_int_equal(tp_read_nccl(f, &v, &e), 0);
	assert_int_equal(v.ngpus, 1);
	assert_int_equal(v.ignored, 1);
	assert_int_equal(v.nnotes, 3);
	snprintf(note, sizeof note, "%s: 1 non-NVIDIA GPU ignored", f);
	assert_string_equal(v.notes[1], note);
	tp_view_clear(&v);
}

static int setup(void **state)
{
	(void)state;
	return tt_tmpdir(dir, sizeof dir, "thermap-test-topo");
}

static int teardown(void **state)
{
	static const char *const names[] = {
		"sw.xml", "sw-old.xml", "sw-odd.xml", "sw-none.xml", "noio.xml",
		"foo.xml", "empty.xml", "cut.xml", "dgx1.xml", "bad.xml",
		"nul.xml", "deep.xml", "mixed.xml", "cpucet.xml", "dup.xml",
		"nv128.xml", "brk.xml",
	};
	char path[256];
	(void)state;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hwloc_power8),
		cmocka_unit_test(test_hwloc_power8_v3),
		cmocka_unit_test(test_hwloc_lassen),
		cmocka_unit_test(test_hwloc_cts1),
		cmocka_unit_test(test_hwloc_g4dn),
		cmocka_unit_test(test_hwloc_amd),
		cmocka_unit_test(test_hwloc_h200),
		cmocka_unit_test(test_hwloc_nvswitch),
		cmocka_unit_test(test_hwloc_rejects),
		cmocka_unit_test(test_hwloc_crash_and_duplicates),
		cmocka_unit_test(test_hwloc_live),
		cmocka_unit_test(test_sources),
		cmocka_unit_test(test_nccl_ibm_h100),
		cmocka_unit_test(test_nccl_ncv4),
		cmocka_unit_test(test_nccl_pci_only),
		cmocka_unit_test(test_nccl_rejects),
		cmocka_unit_test(test_nccl_fragments),
		cmocka_unit_test(test_nccl_gpu_links),
		cmocka_unit_test(test_nccl_malformed),
		cmocka_unit_test(test_nccl_fuzz_findings),
		cmocka_unit_test(test_nccl_other_vendor),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
