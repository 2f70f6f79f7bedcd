/*
 * test_topo_smi.c — the nvidia-smi readers of topo_smi.c. Every public
 * `nvidia-smi topo -m` sample is read twice: by tp_read_smi_topo and by a
 * deliberately simple reading here (escapes stripped, rows split on
 * whitespace, the first n cells after the label), and the two must agree
 * cell for cell; the samples whose matrix is cut must fail with their
 * exact message. Malformed matrices and GPU lists (-L, -q, CSV) are checked
 * by exact values and messages (FILE stands for the file name).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topo/topo.h"
#include "testutil.h"

#define TOPO_DIR "fixtures/topo/nvidia-smi-topo"
#define LIST_DIR "fixtures/topo/gpu-lists"
#define H200 "fixtures/h200x4-a"
#define CAPTURES "fixtures/telemetry/nvidia_gpu_exporter-captures"

/* ---- helpers ------------------------------------------------------------ */

/* An input error whose message is want with FILE replaced by file. */
static void expect_msg(const tm_error *err, const char *file,
                       const char *want)
{
	assert_int_equal(err->code, TM_EINPUT);
	tt_expect_msg(err->msg, file, want);
}

typedef int (*reader)(const char *, tp_view *, tm_error *);

/* Reads text through a temporary file; the view is left to the caller. */
static int read_text(reader rd, const char *text, size_t len, tp_view *v,
                     tm_error *err, char *file, size_t cap)
{
	int rc;
	memset(err, 0, sizeof *err);
	tt_write_tmp(file, cap, "/tmp/ttoposmiXXXXXX", text, len);
	rc = rd(file, v, err);
	unlink(file);
	return rc;
}

/* A text that must be rejected with want. */
static void reject(reader rd, const char *text, size_t len, const char *want)
{
	char file[64];
	tm_error err;
	tp_view v;
	int rc = read_text(rd, text, len, &v, &err, file, sizeof file);
	if (rc == 0)
		fail_msg("accepted, expected: %s", want);
	assert_int_equal(rc, TM_EINPUT);
	expect_msg(&err, file, want);
	assert_int_equal(v.ngpus, 0);
	assert_null(v.gpus);
	assert_null(v.link);
	tp_view_clear(&v);
}

static void reject_topo(const char *text, const char *want)
{
	reject(tp_read_smi_topo, text, strlen(text), want);
}

static void reject_list(const char *text, const char *want)
{
	reject(tp_read_gpu_list, text, strlen(text), want);
}

static const char *cell(const tp_view *v, int i, int k, char buf[16])
{
	int n = v->ngpus;
	return tm_link_name(v->link[i * n + k], v->nv[i * n + k], buf);
}

/* ---- the simple second reading ------------------------------------------ */

#define SMAX 32

typedef struct simple {
	int n;                   /* GPU columns in the header */
	int nrows;               /* GPU rows */
	char c[SMAX][SMAX][8];   /* [row][column] as printed */
} simple;

/* Drops every ESC ... m sequence. */
static void strip_esc(char *s)
{
	char *o = s;
	while (*s) {
		if (*s == 0x1b) {
			while (*s && *s != 'm')
				s++;
			if (*s)
				s++;
			continue;
		}
		*o++ = *s++;
	}
	*o = '\0';
}

/* The header is the first line with a GPU0 token; n counts its GPU<d>
 * tokens. Rows are the later lines whose first token is GPU<d>. */
static void simple_read(const char *file, simple *S)
{
	char *text = tt_slurp(file, NULL), *line, *save = NULL;
	bool header = false;
	memset(S, 0, sizeof *S);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *tok, *s2 = NULL;
		int k = 0;
		strip_esc(line);
		tok = strtok_r(line, " \t\r", &s2);
		if (!tok)
			continue;
		if (!header) {
			for (; tok; tok = strtok_r(NULL, " \t\r", &s2))
				if (!strncmp(tok, "GPU", 3) && tok[3] >= '0' &&
				    tok[3] <= '9')
					S->n++;
				else if (S->n)
					break;
			header = S->n > 0;
			assert_true(S->n <= SMAX);
			continue;
		}
		if (strncmp(tok, "GPU", 3) != 0 || tok[3] < '0' || tok[3] > '9')
			continue;
		assert_true(S->nrows < SMAX);
		while (k < S->n && (tok = strtok_r(NULL, " \t\r", &s2)))
			snprintf(S->c[S->nrows][k++], 8, "%s", tok);
		S->nrows++;
	}
	free(text);
}

/* ---- every public sample ------------------------------------------------ */

typedef struct topo_case {
	const char *file;   /* under TOPO_DIR, or a path */
	int n;              /* GPUs */
	const char *numa;   /* NUMA Affinity per GPU, NULL: all unknown */
	const char *error;  /* the expected message, NULL: it parses */
	bool seen;
} topo_case;

static topo_case topo_cases[] = {
	{ "2gpu-nvlink-bridge-NV2_ml-engineering.txt", 2, NULL, NULL, 0 },
	{ "2gpu-pcie-PHB_ml-engineering.txt", 2, NULL, NULL, 0 },
	{ "a10-4gpu-allSYS-2nic_xuesongtap.txt", 4, "0 0 0 0", NULL, 0 },
	{ "a100-8gpu-NV12-17nic_xuesongtap.txt", 8, "0 0 0 0 0 0 0 0", NULL,
	  0 },
	{ "a100-8gpu-NV12_ml-engineering.txt", 8, "0 0 0 0 1 1 1 1", NULL, 0 },
	{ "dgx1-v100-8gpu-4nic_msccl-tools.txt", 8, NULL, NULL, 0 },
	{ "gtx1080ti-2gpu-PHB_xuesongtap.txt", 2, NULL, NULL, 0 },
	{ "h100-8gpu-NV18_ml-engineering-network.txt", 8, "0 0 0 0 1 1 1 1",
	  NULL, 0 },
	{ "h100-8gpu-NV18_ml-engineering-performance.txt", 8,
	  "0 0 0 0 1 1 1 1", NULL, 0 },
	{ "from-issues/dgx-a100-40gb-12nic_nccl-issue-1505_TRUNCATED.txt", 8,
	  NULL, "FILE:5: matrix cut short after row GPU3: rows GPU4..GPU7 "
	  "missing (the header at line 1 names GPU0..GPU7)", 0 },
	{ "from-issues/dgx2-v100-16gpu-NV6-10nic_nccl-tests-issue-78_"
	  "TRUNCATED.txt", 16, NULL, "FILE:5: matrix cut short after row GPU3: "
	  "rows GPU4..GPU15 missing (the header at line 1 names GPU0..GPU15)",
	  0 },
	{ "from-issues/h100x4-NV6-4nic_nccl-issue-1617.txt", 4, "3 1 7 5",
	  NULL, 0 },
	{ "from-issues/h100x8-NV18_thunderkittens-issue-167.txt", 8,
	  "0 0 0 0 1 1 1 1", NULL, 0 },
	{ "from-issues/pcie-8gpu-PIX-PHB-SYS-mlx4_kubernetes-issue-53497_"
	  "TRUNCATED.txt", 8, NULL, "FILE:6: matrix cut short after row GPU4: "
	  "rows GPU5..GPU7 missing (the header at line 1 names GPU0..GPU7)", 0 },
	{ "from-issues/rtx4090x8-pcie-allSYS-2nic_go-gpuallocator-issue-17.txt",
	  8, "0 0 0 0 1 1 1 1", NULL, 0 },
	{ "from-issues/rtx5090x2-PHB_club-3090-issue-1133.txt", 2, "0 0", NULL,
	  0 },
	{ H200 "/topo-m.txt", 4, "0 0 0 0", NULL, 0 },
};
#define NTOPO ((int)(sizeof topo_cases / sizeof topo_cases[0]))

static void check_topo_case(const char *path, const topo_case *c)
{
	simple S;
	tp_view v;
	tm_error err = { 0 };
	int rc;

	simple_read(path, &S);
	assert_int_equal(S.n, c->n);
	rc = tp_read_smi_topo(path, &v, &err);
	if (c->error) {
		/* the file really is cut: fewer rows than the header names */
		assert_true(S.nrows < S.n);
		assert_int_equal(rc, TM_EINPUT);
		expect_msg(&err, path, c->error);
		assert_int_equal(v.ngpus, 0);
		tp_view_clear(&v);
		return;
	}
	if (rc)
		fail_msg("%s: %s", path, err.msg);
	assert_int_equal(S.nrows, S.n);
	assert_string_equal(v.source, "smi-topo");
	assert_string_equal(v.file, path);
	assert_null(v.host);
	assert_false(v.nv_only);
	assert_int_equal(v.ngpus, c->n);
	assert_non_null(v.link);
	for (int i = 0; i < v.ngpus; i++) {
		const tp_gpu *g = &v.gpus[i];
		const char *p = c->numa;
		assert_int_equal(g->index, i);
		assert_null(g->uuid);
		assert_null(g->pci);
		assert_null(g->model);
		assert_true(isnan(g->memory_gib));
		if (p) {
			for (int k = 0; k < i; k++)
				p = strchr(p, ' ') + 1;
			assert_int_equal(g->numa, atoi(p));
		} else {
			assert_int_equal(g->numa, -1);
		}
		for (int k = 0; k < v.ngpus; k++) {
			char b[16];
			const char *want = !strcmp(S.c[i][k], "SOC") ? "SYS"
			                   : S.c[i][k];
			if (strcmp(cell(&v, i, k, b), want) != 0)
				fail_msg("%s: GPU%d/GPU%d: read %s, printed %s", path,
				         i, k, b, want);
		}
	}
	tp_view_clear(&v);
}

/* Every file of the public directory (and its from-issues) is in the
 * table, and each matches it. */
static void scan_dir(const char *dir, const char *prefix, int *files)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	assert_non_null(d);
	while ((e = readdir(d))) {
		char rel[512], path[1024], src[1100];
		size_t len = strlen(e->d_name);
		struct stat st;
		int found = -1;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (e->d_name[0] == '.' || stat(path, &st) != 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (len > 8 && !strcmp(e->d_name + len - 8, ".src.txt"))
			continue;
		snprintf(rel, sizeof rel, "%s%s", prefix, e->d_name);
		for (int i = 0; i < NTOPO; i++)
			if (!strcmp(topo_cases[i].file, rel))
				found = i;
		if (found < 0)
			fail_msg("%s: no expectation in topo_cases[]", path);
		/* every sample names its source */
		snprintf(src, sizeof src, "%s.src.txt", path);
		assert_int_equal(access(src, R_OK), 0);
		check_topo_case(path, &topo_cases[found]);
		topo_cases[found].seen = true;
		(*files)++;
	}
	closedir(d);
}

static void public_samples(void **state)
{
	int files = 0;
	(void)state;
	scan_dir(TOPO_DIR, "", &files);
	scan_dir(TOPO_DIR "/from-issues", "from-issues/", &files);
	for (int i = 0; i < NTOPO; i++)
		if (!strchr(topo_cases[i].file, '/') ||
		    !strncmp(topo_cases[i].file, "from-issues/", 12)) {
			if (!topo_cases[i].seen)
				fail_msg("%s: expected in %s, not found",
				         topo_cases[i].file, TOPO_DIR);
		} else {
			check_topo_case(topo_cases[i].file, &topo_cases[i]);
		}
	assert_int_equal(files, NTOPO - 1);
}

/* The DGX-1 hybrid cube-mesh keeps its uneven NV1/NV2 bonds and its SYS
 * pairs; cells as printed in the file. */
static void dgx1(void **state)
{
	static const struct { int i, k; const char *code; } cells[] = {
		{ 0, 1, "NV1" }, { 0, 3, "NV2" }, { 0, 4, "NV2" }, { 0, 5, "SYS" },
		{ 1, 5, "NV2" }, { 2, 6, "NV1" }, { 3, 7, "NV1" }, { 4, 7, "NV2" },
		{ 5, 6, "NV2" }, { 6, 7, "NV2" }, { 7, 0, "SYS" }, { 3, 0, "NV2" },
	};
	const char *f = TOPO_DIR "/dgx1-v100-8gpu-4nic_msccl-tools.txt";
	tp_view v;
	tm_error err = { 0 };
	char b[16], note[512];
	(void)state;
	assert_int_equal(tp_read_smi_topo(f, &v, &err), 0);
	assert_int_equal(v.ngpus, 8);
	for (size_t j = 0; j < sizeof cells / sizeof cells[0]; j++)
		assert_string_equal(cell(&v, cells[j].i, cells[j].k, b),
		                    cells[j].code);
	/* a V100 has 6 NVLinks, bonded to 4 peers */
	for (int i = 0; i < 8; i++) {
		int links = 0, peers = 0;
		for (int k = 0; k < 8; k++)
			if (v.link[i * 8 + k] == TM_LINK_NV) {
				links += v.nv[i * 8 + k];
				peers++;
			}
		assert_int_equal(links, 6);
		assert_int_equal(peers, 4);
	}
	/* no NUMA Affinity column: said, not guessed */
	assert_int_equal(v.nnotes, 1);
	snprintf(note, sizeof note, "%s: no NUMA Affinity column; NUMA nodes "
	         "unknown", f);
	assert_string_equal(v.notes[0], note);
	tp_view_clear(&v);
}

/* The recorded H200 host: underlined header, all pairs NV18, NUMA 0. */
static void h200(void **state)
{
	tp_view v;
	tm_error err = { 0 };
	(void)state;
	assert_int_equal(tp_read_smi_topo(H200 "/topo-m.txt", &v, &err), 0);
	assert_int_equal(v.ngpus, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(v.gpus[i].numa, 0);
		for (int k = 0; k < 4; k++) {
			assert_int_equal(v.link[i * 4 + k],
			                 i == k ? TM_LINK_X : TM_LINK_NV);
			assert_int_equal(v.nv[i * 4 + k], i == k ? 0 : 18);
		}
	}
	assert_int_equal(v.nnotes, 0);
	tp_view_clear(&v);
}

/* topo -m inside the nvidia_gpu_exporter captures, among other output:
 * one GPU each; the Windows 610.62 capture prints empty CPU and NUMA
 * affinity cells, so the NUMA node is unknown (and noted); the 591.86
 * one has no matrix (topo -m failed there). */
static void captures(void **state)
{
	static const struct { const char *f; int numa; } ok[] = {
		{ "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt", 0 },
		{ "linux-x86_64__nvidia-h100-mig__590.48.01.txt", 0 },
		{ "linux-x86_64__nvidia-h200__590.48.01.txt", 0 },
		{ "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.txt", -1 },
	};
	char f[512];
	tp_view v;
	tm_error err = { 0 };
	(void)state;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		snprintf(f, sizeof f, "%s/%s", CAPTURES, ok[i].f);
		assert_int_equal(tp_read_smi_topo(f, &v, &err), 0);
		assert_int_equal(v.ngpus, 1);
		assert_int_equal(v.link[0], TM_LINK_X);
		assert_int_equal(v.gpus[0].numa, ok[i].numa);
		assert_int_equal(v.nnotes, ok[i].numa < 0);
		tp_view_clear(&v);
	}
	snprintf(f, sizeof f, "%s/%s", CAPTURES,
	         "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86.txt");
	assert_int_equal(tp_read_smi_topo(f, &v, &err), TM_EINPUT);
	expect_msg(&err, f, "FILE: no GPU matrix: expected a header row "
	           "\"GPU0 GPU1 ...\" of `nvidia-smi topo -m` output, found "
	           "none");
	tp_view_clear(&v);
}

/* A sample with CRLF line ends, no-break spaces and the old SOC code
 * reads like the original. */
static void variants(void **state)
{
	static const char text[] =
		"        GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity\r\n"
		"GPU0     X      NV2     SOC     0-11            0\r\n"
		"GPU1    NV2      X \xc2\xa0    SOC     0-11            0\r\n"
		"GPU2    SOC     SOC      X      12-23           1\r\n";
	char file[64], b[16];
	tm_error err;
	tp_view v;
	(void)state;
	assert_int_equal(read_text(tp_read_smi_topo, text, sizeof text - 1, &v,
	                           &err, file, sizeof file), 0);
	assert_int_equal(v.ngpus, 3);
	assert_string_equal(cell(&v, 0, 1, b), "NV2");
	assert_string_equal(cell(&v, 2, 0, b), "SYS");
	assert_string_equal(cell(&v, 1, 2, b), "SYS");
	assert_int_equal(v.gpus[2].numa, 1);
	tp_view_clear(&v);
}

/* Every code, read back by its name. */
static void all_codes(void **state)
{
	static const char text[] =
		"\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\n"
		"GPU0\t X \tPIX\tPXB\tPHB\tNODE\tSYS\n"
		"GPU1\tPIX\t X \tNV1\tNV64\tNV4\tSOC\n"
		"GPU2\tPXB\tNV1\t X \tNV18\tNODE\tNODE\n"
		"GPU3\tPHB\tNV64\tNV18\t X \tPHB\tPXB\n"
		"GPU4\tNODE\tNV4\tNODE\tPHB\t X \tPIX\n"
		"GPU5\tSYS\tSYS\tNODE\tPXB\tPIX\t X \n";
	static const char *const want[6][6] = {
		{ "X", "PIX", "PXB", "PHB", "NODE", "SYS" },
		{ "PIX", "X", "NV1", "NV64", "NV4", "SYS" },
		{ "PXB", "NV1", "X", "NV18", "NODE", "NODE" },
		{ "PHB", "NV64", "NV18", "X", "PHB", "PXB" },
		{ "NODE", "NV4", "NODE", "PHB", "X", "PIX" },
		{ "SYS", "SYS", "NODE", "PXB", "PIX", "X" },
	};
	char file[64], b[16];
	tm_error err;
	tp_view v;
	(void)state;
	assert_int_equal(read_text(tp_read_smi_topo, text, sizeof text - 1, &v,
	                           &err, file, sizeof file), 0);
	assert_int_equal(v.ngpus, 6);
	for (int i = 0; i < 6; i++)
		for (int k = 0; k < 6; k++)
			assert_string_equal(cell(&v, i, k, b), want[i][k]);
	assert_int_equal(v.link[0 * 6 + 2], TM_LINK_PXB);
	assert_int_equal(v.link[0 * 6 + 4], TM_LINK_NODE);
	assert_int_equal(v.nv[1 * 6 + 3], 64);
	tp_view_clear(&v);
}

/* ---- malformed matrices ------------------------------------------------- */

#define HDR2 "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
#define HDR4 "\tGPU0\tGPU1\tGPU2\tGPU3\n"

static void asymmetric(void **state)
{
	(void)state;
	reject_topo(HDR2 "GPU0\t X \tPHB\t0-11\tN/A\n"
	            "GPU1\tPIX\t X \t0-11\tN/A\n",
	            "FILE:3: row GPU1, column GPU0 is PIX but row GPU0, column "
	            "GPU1 (line 2) is PHB; expected a symmetric matrix");
	/* the NVLink count is part of the code */
	reject_topo(HDR4 "GPU0\t X \tNV1\tNV1\tNV2\n"
	            "GPU1\tNV1\t X \tNV2\tNV1\n"
	            "GPU2\tNV1\tNV2\t X \tNV2\n"
	            "GPU3\tNV2\tNV2\tNV2\t X \n",
	            "FILE:5: row GPU3, column GPU1 is NV2 but row GPU1, column "
	            "GPU3 (line 3) is NV1; expected a symmetric matrix");
}

static void unknown_code(void **state)
{
	(void)state;
	reject_topo(HDR2 "GPU0\t X \tPXX\t0-11\tN/A\n"
	            "GPU1\tPXB\t X \t0-11\tN/A\n",
	            "FILE:2: row GPU0, column GPU1: expected a link code (X, "
	            "NV#, PIX, PXB, PHB, NODE, SYS), found \"PXX\"");
	reject_topo(HDR2 "GPU0\t X \tNV0\n" "GPU1\tNV0\t X \n",
	            "FILE:2: row GPU0, column GPU1: expected a link code (X, "
	            "NV#, PIX, PXB, PHB, NODE, SYS), found \"NV0\"");
	reject_topo(HDR2 "GPU0\t X \tNV18\n" "GPU1\tNV65\t X \n",
	            "FILE:3: row GPU1, column GPU0: expected a link code (X, "
	            "NV#, PIX, PXB, PHB, NODE, SYS), found \"NV65\"");
	/* a NIC cell in the GPU block: the row lost a GPU cell */
	reject_topo(HDR2 "GPU0\t X \tPHB\t0-11\tN/A\n"
	            "GPU1\t0-11\tN/A\n",
	            "FILE:3: row GPU1, column GPU0: expected a link code (X, "
	            "NV#, PIX, PXB, PHB, NODE, SYS), found \"0-11\"");
}

static void diagonal(void **state)
{
	(void)state;
	reject_topo(HDR2 "GPU0\t X \tPHB\t0-11\tN/A\n"
	            "GPU1\tPHB\tPHB\t0-11\tN/A\n",
	            "FILE:3: row GPU1, column GPU1: expected X on the diagonal, "
	            "found PHB");
	reject_topo(HDR2 "GPU0\t X \t X \t0-11\tN/A\n"
	            "GPU1\tPHB\t X \t0-11\tN/A\n",
	            "FILE:2: row GPU0, column GPU1: expected the link between "
	            "two GPUs, found X (a GPU with itself)");
}

static void empty_and_binary(void **state)
{
	static const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03";
	static const char high[] = "\xff\xfe\xa0\x80 \x91\xee\n\xf0\x9f\x98";
	(void)state;
	reject(tp_read_smi_topo, "", 0,
	       "FILE: empty file; expected `nvidia-smi topo -m` output");
	reject_topo("\n \t\r\n\n",
	            "FILE: empty file; expected `nvidia-smi topo -m` output");
	reject(tp_read_smi_topo, elf, sizeof elf - 1,
	       "FILE:1: expected `nvidia-smi topo -m` output, found binary "
	       "data (byte 0x7f)");
	reject(tp_read_smi_topo, "GPU0\n\nok\x01", 10,
	       "FILE:3: expected `nvidia-smi topo -m` output, found binary "
	       "data (byte 0x01)");
	/* bytes above 0x7f are text (UTF-8), but hold no matrix */
	reject(tp_read_smi_topo, high, sizeof high - 1,
	       "FILE: no GPU matrix: expected a header row \"GPU0 GPU1 ...\" "
	       "of `nvidia-smi topo -m` output, found none");
	reject_topo("Legend:\n\n  X    = Self\n  SYS  = Connection\n",
	            "FILE: no GPU matrix: expected a header row \"GPU0 GPU1 "
	            "...\" of `nvidia-smi topo -m` output, found none");
}

static void missing_rows(void **state)
{
	(void)state;
	/* a row left out in the middle */
	reject_topo(HDR4 "GPU0\t X \tSYS\tSYS\tSYS\n"
	            "GPU1\tSYS\t X \tSYS\tSYS\n"
	            "GPU3\tSYS\tSYS\tSYS\t X \n",
	            "FILE:4: expected row GPU2, found row GPU3");
	/* the last row cut off */
	reject_topo(HDR4 "GPU0\t X \tSYS\tSYS\tSYS\n"
	            "GPU1\tSYS\t X \tSYS\tSYS\n"
	            "GPU2\tSYS\tSYS\t X \tSYS\n\nLegend:\n",
	            "FILE:4: matrix cut short after row GPU2: row GPU3 missing "
	            "(the header at line 1 names GPU0..GPU3)");
	reject_topo(HDR2, "FILE:1: matrix cut short after the header: rows "
	            "GPU0..GPU1 missing");
	/* a row cut inside */
	reject_topo(HDR4 "GPU0\t X \tSYS\tSYS\tSYS\n" "GPU1\tSYS\t X\n",
	            "FILE:3: row GPU1 cut short: expected 4 GPU cells "
	            "(GPU0..GPU3), found 2");
	/* rows the header does not name, rows twice */
	reject_topo(HDR2 "GPU0\t X \tPHB\n" "GPU1\tPHB\t X \n"
	            "GPU2\tPHB\tPHB\t X \n",
	            "FILE:4: expected rows GPU0..GPU1 as the header at line 1 "
	            "names, found row GPU2");
	reject_topo(HDR2 "GPU0\t X \tPHB\n" "GPU0\t X \tPHB\n",
	            "FILE:3: expected each row once, found row GPU0 again "
	            "(first at line 2)");
}

static void bad_header(void **state)
{
	(void)state;
	reject_topo("GPU0\t X \tPHB\n" "GPU1\tPHB\t X \n",
	            "FILE:1: expected a header row \"GPU0 GPU1 ...\" above the "
	            "matrix, found row GPU0 first");
	reject_topo("\tGPU0\tGPU2\n" "GPU0\t X \tPHB\n",
	            "FILE:1: header: expected column GPU1, found GPU2");
	reject_topo("\tGPU0\tNIC0\tGPU1\n",
	            "FILE:1: header: expected the GPU columns first, found GPU1 "
	            "after other columns");
	reject_topo(HDR2 "GPU0\t X \tPHB\n" "GPU1\tPHB\t X \n" HDR2,
	            "FILE:4: expected one matrix, found a second header row "
	            "(the first is at line 1)");
}

static void missing_file(void **state)
{
	tp_view v;
	tm_error err = { 0 };
	const char *f = "fixtures/topo/no-such-file.txt";
	(void)state;
	assert_int_equal(tp_read_smi_topo(f, &v, &err), TM_EINPUT);
	expect_msg(&err, f, "FILE: cannot open: No such file or directory");
	tp_view_clear(&v);
	memset(&err, 0, sizeof err);
	assert_int_equal(tp_read_gpu_list(f, &v, &err), TM_EINPUT);
	expect_msg(&err, f, "FILE: cannot open: No such file or directory");
	tp_view_clear(&v);
}

/* ---- GPU lists ---------------------------------------------------------- */

static void expect_gpu(const tp_gpu *g, int index, const char *uuid,
                       const char *pci, const char *model, double mem)
{
	assert_int_equal(g->index, index);
	if (uuid)
		assert_string_equal(g->uuid, uuid);
	else
		assert_null(g->uuid);
	if (pci)
		assert_string_equal(g->pci, pci);
	else
		assert_null(g->pci);
	if (model)
		assert_string_equal(g->model, model);
	else
		assert_null(g->model);
	if (isnan(mem))
		assert_true(isnan(g->memory_gib));
	else
		assert_true(g->memory_gib == mem);
	assert_int_equal(g->numa, -1);
}

static void read_list(const char *f, tp_view *v)
{
	tm_error err = { 0 };
	if (tp_read_gpu_list(f, v, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(v->source, "gpu-list");
	assert_string_equal(v->file, f);
	assert_null(v->link);
	assert_null(v->nv);
}

static const char *const h200_uuid[4] = {
	"GPU-a0000000-0000-4000-8000-000000000000",
	"GPU-a0000001-0000-4000-8000-000000000001",
	"GPU-a0000002-0000-4000-8000-000000000002",
	"GPU-a0000003-0000-4000-8000-000000000003",
};
static const char *const h200_pci[4] = {
	"0000:00:06.0", "0000:00:07.0", "0000:00:08.0", "0000:00:09.0",
};
#define MASKED "GPU-00000000-0000-0000-0000-000000000000"

/* nvidia-smi nvlink -s then -c: -L lines among link lines, each GPU
 * twice. */
static void list_L(void **state)
{
	tp_view v;
	char note[512];
	(void)state;
	read_list(H200 "/nvlink.txt", &v);
	assert_int_equal(v.ngpus, 4);
	for (int i = 0; i < 4; i++)
		expect_gpu(&v.gpus[i], i, h200_uuid[i], NULL, "NVIDIA H200", NAN);
	assert_int_equal(v.nnotes, 0);
	tp_view_clear(&v);

	read_list(LIST_DIR "/h100-mig_L.txt", &v);
	assert_int_equal(v.ngpus, 1);
	expect_gpu(&v.gpus[0], 0, MASKED, NULL, "NVIDIA H100 80GB HBM3", NAN);
	assert_int_equal(v.nnotes, 1);
	snprintf(note, sizeof note, "%s: GPU 0: 4 MIG devices read past; "
	         "thermap places whole GPUs", LIST_DIR "/h100-mig_L.txt");
	assert_string_equal(v.notes[0], note);
	tp_view_clear(&v);
}

static void list_q(void **state)
{
	tp_view v;
	char note[512];
	(void)state;
	/* 143771 MiB -> 140 GiB */
	read_list(H200 "/smi-q.txt", &v);
	assert_int_equal(v.ngpus, 4);
	for (int i = 0; i < 4; i++)
		expect_gpu(&v.gpus[i], i, h200_uuid[i], h200_pci[i],
		           "NVIDIA H200", 140);
	assert_int_equal(v.nnotes, 0);
	tp_view_clear(&v);

	/* the MIG devices' Shared FB Memory Usage is not the GPU's:
	 * 81559 MiB -> 80 GiB */
	read_list(LIST_DIR "/h100-mig_q.txt", &v);
	assert_int_equal(v.ngpus, 1);
	expect_gpu(&v.gpus[0], 0, MASKED, "0000:00:09.0",
	           "NVIDIA H100 80GB HBM3", 80);
	assert_int_equal(v.nnotes, 1);
	snprintf(note, sizeof note, "%s:19: GPU 0 has MIG enabled; thermap "
	         "places whole GPUs", LIST_DIR "/h100-mig_q.txt");
	assert_string_equal(v.notes[0], note);
	tp_view_clear(&v);
}

static void list_csv(void **state)
{
	tp_view v;
	(void)state;
	read_list(LIST_DIR "/h100-mig_query-gpu.csv", &v);
	assert_int_equal(v.ngpus, 1);
	expect_gpu(&v.gpus[0], 0, MASKED, "0000:00:09.0",
	           "NVIDIA H100 80GB HBM3", 80);
	assert_int_equal(v.nnotes, 0);
	tp_view_clear(&v);

	/* 212 columns; the five are among them */
	read_list(LIST_DIR "/h200_query-gpu-all.csv", &v);
	assert_int_equal(v.ngpus, 1);
	expect_gpu(&v.gpus[0], 0, MASKED, "0000:83:00.0", "NVIDIA H200", 140);
	tp_view_clear(&v);
}

/* The same GPUs in every spelling nvidia-smi has: units in the header
 * only (nounits), columns in another order, rows out of index order, a
 * log with -l (rows repeat), no index column. */
static void csv_spellings(void **state)
{
	static const char *const texts[] = {
		"index, uuid, pci.bus_id, name, memory.total [MiB]\n"
		"0, GPU-a0000000-0000-4000-8000-000000000000, 00000000:00:06.0, "
		"NVIDIA H200, 143771\n"
		"1, GPU-a0000001-0000-4000-8000-000000000001, 00000000:00:07.0, "
		"NVIDIA H200, 143771\n",
		"memory.total [MiB], name, pci.bus_id, index, uuid\n"
		"143771 MiB, NVIDIA H200, 00000000:00:07.0, 1, "
		"GPU-a0000001-0000-4000-8000-000000000001\n"
		"143771 MiB, NVIDIA H200, 00000000:00:06.0, 0, "
		"GPU-a0000000-0000-4000-8000-000000000000\n",
		"timestamp, index, uuid, pci.bus_id, name, memory.total [MiB]\r\n"
		"2026/11/21 12:15:25.100, 0, GPU-a0000000-0000-4000-8000-"
		"000000000000, 00000000:00:06.0, NVIDIA H200, 143771 MiB\r\n"
		"2026/11/21 12:15:25.100, 1, GPU-a0000001-0000-4000-8000-"
		"000000000001, 00000000:00:07.0, NVIDIA H200, 143771 MiB\r\n"
		"2026/11/21 12:15:26.100, 0, GPU-a0000000-0000-4000-8000-"
		"000000000000, 00000000:00:06.0, NVIDIA H200, 143771 MiB\r\n"
		"2026/11/21 12:15:26.100, 1, GPU-a0000001-0000-4000-8000-"
		"000000000001, 00000000:00:07.0, NVIDIA H200, 143771 MiB\r\n",
		"uuid,pci.bus_id,name,memory.total [MiB]\n"
		"GPU-a0000000-0000-4000-8000-000000000000,00000000:00:06.0,"
		"NVIDIA H200,143771\n"
		"GPU-a0000001-0000-4000-8000-000000000001,00000000:00:07.0,"
		"NVIDIA H200,143771\n",
	};
	for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
		char file[64], note[256];
		tm_error err;
		tp_view v;
		(void)state;
		if (read_text(tp_read_gpu_list, texts[t], strlen(texts[t]), &v,
		              &err, file, sizeof file))
			fail_msg("text %zu: %s", t, err.msg);
		assert_int_equal(v.ngpus, 2);
		for (int i = 0; i < 2; i++)
			expect_gpu(&v.gpus[i], i, h200_uuid[i], h200_pci[i],
			           "NVIDIA H200", 140);
		assert_int_equal(v.nnotes, t == 3);
		if (t == 3) {
			snprintf(note, sizeof note, "%s: no index column; GPUs "
			         "numbered in row order, as nvidia-smi prints them",
			         file);
			assert_string_equal(v.notes[0], note);
		}
		tp_view_clear(&v);
	}
}

#define CSV_HDR "index, uuid, pci.bus_id, name, memory.total [MiB]\n"
#define CSV_ROW0 "0, GPU-a0000000-0000-4000-8000-000000000000, " \
	"00000000:00:06.0, NVIDIA H200, 143771 MiB\n"

static void csv_rejects(void **state)
{
	(void)state;
	reject_list(CSV_ROW0, "FILE:1: expected a --query-gpu CSV header "
	            "(--format=csv without noheader), found a data row");
	reject_list(CSV_HDR "0, GPU-zz, 00000000:00:06.0, NVIDIA H200, 1 MiB\n",
	            "FILE:2: expected a GPU UUID (GPU-...), found \"GPU-zz\"");
	reject_list(CSV_HDR "0, MIG-a0000000-0000-4000-8000-000000000000, "
	            "00000000:00:06.0, NVIDIA H200, 1 MiB\n",
	            "FILE:2: expected a GPU UUID (GPU-...), found "
	            "\"MIG-a0000000-0000-4000-8000-000000000000\"");
	reject_list(CSV_HDR "0, GPU-a0000000-0000-4000-8000-000000000000, "
	            "00:06, NVIDIA H200, 1 MiB\n",
	            "FILE:2: pci.bus_id: expected a PCI bus id "
	            "(00000000:00:06.0), found \"00:06\"");
	reject_list(CSV_HDR "0, GPU-a0000000-0000-4000-8000-000000000000, "
	            "00000000:00:06.0, NVIDIA H200\n",
	            "FILE:2: expected 5 fields as in the header at line 1, "
	            "found 4");
	reject_list(CSV_HDR "0, GPU-a0000000-0000-4000-8000-000000000000, "
	            "00000000:00:06.0, NVIDIA H200, 140 GiB\n",
	            "FILE:2: memory.total: expected MiB (\"81559 MiB\"), found "
	            "\"140 GiB\"");
	reject_list("index, memory.total [GiB]\n0, 140\n",
	            "FILE:1: memory.total: expected [MiB], found [GiB]");
	reject_list(CSV_HDR "first, GPU-a0000000-0000-4000-8000-000000000000, "
	            "00000000:00:06.0, NVIDIA H200, 1 MiB\n",
	            "FILE:2: index: expected a GPU index 0..1023, found "
	            "\"first\"");
	reject_list("name, memory.total [MiB]\nNVIDIA H200, 143771 MiB\n",
	            "FILE:1: expected a column that names the GPU (index, uuid "
	            "or pci.bus_id), found none");
	reject_list("index, index\n0, 0\n",
	            "FILE:1: expected each column once, found index twice");
	reject_list(CSV_HDR, "FILE:1: expected GPU rows after the header, "
	            "found none");
	/* a GPU left out, a GPU under two names */
	reject_list(CSV_HDR CSV_ROW0 "2, GPU-a0000002-0000-4000-8000-"
	            "000000000002, 00000000:00:08.0, NVIDIA H200, 143771 MiB\n",
	            "FILE: expected GPUs 0..2, found no GPU 1 (the list goes on "
	            "with GPU 2)");
	reject_list(CSV_HDR CSV_ROW0 "0, GPU-a0000001-0000-4000-8000-"
	            "000000000001, 00000000:00:07.0, NVIDIA H200, 143771 MiB\n",
	            "FILE:3: expected each GPU once, found GPU 0 "
	            "GPU-a0000001-0000-4000-8000-000000000001 again with other "
	            "values (first at line 2)");
}

static void L_rejects(void **state)
{
	(void)state;
	reject_list("GPU 0: NVIDIA H200 (UUID: GPU-a0000000-0000-4000-8000-"
	            "000000000000)\nGPU 1: NVIDIA H200 (UUID: GPU-0x1)\n",
	            "FILE:2: expected a GPU UUID (GPU-...), found \"GPU-0x1\"");
	reject_list("GPU 1: NVIDIA H200 (UUID: GPU-a0000001-0000-4000-8000-"
	            "000000000001)\n",
	            "FILE: expected GPUs 0..1, found no GPU 0 (the list goes on "
	            "with GPU 1)");
	reject_list("GPU 0: NVIDIA H200 (UUID: GPU-a0000000-0000-4000-8000-"
	            "000000000000)\nGPU 0: NVIDIA H200 (UUID: GPU-a0000001-"
	            "0000-4000-8000-000000000001)\n",
	            "FILE:2: expected each GPU once, found GPU 0 "
	            "GPU-a0000001-0000-4000-8000-000000000001 again with other "
	            "values (first at line 1)");
}

/* smi-q.txt cut before its last GPU, and edited copies of it. */
static void q_rejects(void **state)
{
	size_t len;
	char *text = tt_slurp(H200 "/smi-q.txt", &len), *p, *copy;
	(void)state;
	p = strstr(text, "\nGPU 00000000:00:09.0\n");
	assert_non_null(p);
	reject(tp_read_gpu_list, text, (size_t)(p - text) + 1,
	       "FILE:8: cut short: Attached GPUs says 4, found 3 GPU "
	       "sections");

	copy = strdup(text);
	p = strstr(copy, "Bus Id                                         : "
	           "00000000:00:07.0");
	assert_non_null(p);
	memcpy(strstr(p, "07.0"), "17.0", 4);
	reject(tp_read_gpu_list, copy, len, "FILE:320: expected Bus Id "
	       "0000:00:07.0 as the section names, found \"00000000:00:17.0\"");
	free(copy);

	copy = strdup(text);
	p = strstr(copy, "143771 MiB");
	memcpy(p, "143771 KiB", 10);
	reject(tp_read_gpu_list, copy, len, "FILE:112: FB Memory Usage Total: "
	       "expected \"<number> MiB\", found \"143771 KiB\"");
	free(copy);

	/* the same GPU twice (two logs in one file) */
	copy = malloc(2 * len + 1);
	memcpy(copy, text, len);
	memcpy(copy + len, text, len);
	copy[2 * len] = '\0';
	reject(tp_read_gpu_list, copy, 2 * len, "FILE:1013: expected each GPU "
	       "once, found GPU 0000:00:06.0 again (first at line 9)");
	free(copy);

	reject_list("==============NVSMI LOG==============\n\nAttached GPUs"
	            "                                          : 0\n",
	            "FILE: expected GPU sections (\"GPU 00000000:00:06.0\") in "
	            "`nvidia-smi -q` output, found none");
	free(text);
}

static void list_garbage(void **state)
{
	static const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03";
	static const char none[] = "FILE: expected a GPU list (`nvidia-smi -L`, "
		"`nvidia-smi -q` or `nvidia-smi --query-gpu=index,uuid,pci.bus_id,"
		"name,memory.total --format=csv`), found none of them";
	(void)state;
	reject(tp_read_gpu_list, "", 0, "FILE: empty file; expected a GPU list "
	       "(`nvidia-smi -L`, `nvidia-smi -q` or `nvidia-smi --query-gpu="
	       "index,uuid,pci.bus_id,name,memory.total --format=csv`)");
	reject(tp_read_gpu_list, elf, sizeof elf - 1, "FILE:1: expected a GPU "
	       "list (`nvidia-smi -L`, `nvidia-smi -q` or `nvidia-smi "
	       "--query-gpu=index,uuid,pci.bus_id,name,memory.total "
	       "--format=csv`), found binary data (byte 0x7f)");
	reject_list("No devices were found\n", none);
	/* a topo -m matrix is no GPU list */
	{
		size_t len;
		char *t = tt_slurp(H200 "/topo-m.txt", &len);
		reject(tp_read_gpu_list, t, len, none);
		free(t);
	}
}

/* ---- mutated real inputs ------------------------------------------------ */

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Real files with bytes replaced by the inputs' own characters, cut at
 * random places: each reading succeeds with a well-formed view or fails
 * with one line naming the file. */
static void fuzz(void **state)
{
	static const char alpha[] = "\t \n\r X NV18 SYS PHB GPU0 GPU1 GPU9 NIC0 "
		"0123456789-,:()[]\x1b[4m\x1b[0mCPU NUMA Affinity MiB UUID GPU- "
		"\xc2\xa0\xff";
	static const char *const files[] = {
		H200 "/topo-m.txt",
		TOPO_DIR "/a10-4gpu-allSYS-2nic_xuesongtap.txt",
		TOPO_DIR "/dgx1-v100-8gpu-4nic_msccl-tools.txt",
		H200 "/nvlink.txt",
		LIST_DIR "/h100-mig_q.txt",
		LIST_DIR "/h100-mig_query-gpu.csv",
		LIST_DIR "/h100-mig_L.txt",
	};
	(void)state;
	for (int it = 0; it < 1400; it++) {
		const char *src = files[it % (sizeof files / sizeof files[0])];
		size_t len, n;
		char *text = tt_slurp(src, &len), file[64];
		reader rd = it % 2 ? tp_read_gpu_list : tp_read_smi_topo;
		tm_error err;
		tp_view v;
		int rc;
		n = len;
		if (len > 4000)
			n = len = 4000;
		for (int m = (int)(rnd() % 6); m > 0; m--)
			text[rnd() % len] = alpha[rnd() % (sizeof alpha - 1)];
		if (rnd() % 3 == 0)
			n = (size_t)(rnd() % (len + 1));
		rc = read_text(rd, text, n, &v, &err, file, sizeof file);
		assert_true(rc == 0 || rc == TM_EINPUT);
		if (rc) {
			assert_true(!strncmp(err.msg, file, strlen(file)));
			assert_null(strchr(err.msg, '\n'));
			assert_int_equal(v.ngpus, 0);
		} else if (rd == tp_read_smi_topo) {
			int g = v.ngpus;
			assert_true(g > 0);
			for (int i = 0; i < g; i++)
				for (int k = 0; k < g; k++) {
					assert_int_equal(v.link[i * g + k] == TM_LINK_X,
					                 i == k);
					assert_int_equal(v.link[i * g + k],
					                 v.link[k * g + i]);
					assert_int_equal(v.nv[i * g + k], v.nv[k * g + i]);
				}
		} else {
			assert_true(v.ngpus > 0);
			assert_null(v.link);
			for (int i = 0; i < v.ngpus; i++) {
				assert_int_equal(v.gpus[i].index, i);
				assert_true(!v.gpus[i].uuid ||
				            tm_valid_uuid(v.gpus[i].uuid));
			}
		}
		tp_view_clear(&v);
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(public_samples),
		cmocka_unit_test(dgx1),
		cmocka_unit_test(h200),
		cmocka_unit_test(captures),
		cmocka_unit_test(variants),
		cmocka_unit_test(all_codes),
		cmocka_unit_test(asymmetric),
		cmocka_unit_test(unknown_code),
		cmocka_unit_test(diagonal),
		cmocka_unit_test(empty_and_binary),
		cmocka_unit_test(missing_rows),
		cmocka_unit_test(bad_header),
		cmocka_unit_test(missing_file),
		cmocka_unit_test(list_L),
		cmocka_unit_test(list_q),
		cmocka_unit_test(list_csv),
		cmocka_unit_test(csv_spellings),
		cmocka_unit_test(csv_rejects),
		cmocka_unit_test(L_rejects),
		cmocka_unit_test(q_rejects),
		cmocka_unit_test(list_garbage),
		cmocka_unit_test(fuzz),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
