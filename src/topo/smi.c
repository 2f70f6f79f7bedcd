/*
 * smi.c — the nvidia-smi readers of `thermap topo`: the GPU x GPU
 * matrix of `nvidia-smi topo -m`, and GPU lists (`nvidia-smi -L`,
 * `nvidia-smi -q`, `--query-gpu=... --format=csv`).
 *
 * The inputs are often pasted by hand: tabs turned into spaces, columns
 * squeezed, the header underlined with ANSI escapes, NIC rows and legends
 * present or not, the matrix cut by an excerpt. Whitespace therefore
 * separates cells, anything around the matrix is read past, and a matrix
 * that is cut, asymmetric or holds an unknown code is an error naming the
 * place: a view never guesses a missing cell.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

#define SMI_MAX_BYTES (4u << 20)  /* far above any real printout */

/* ---- text --------------------------------------------------------------- */

typedef struct text {
	const char *file;
	char *buf;      /* the file, lines NUL-terminated as they are read */
	char *p, *end;  /* the unread rest */
	int line;       /* number of the line last returned */
} text;

/* Reads file as text, or takes a copy of len bytes at data when data is
 * not NULL (file then only names them): a NUL or control byte means binary
 * data, nothing but whitespace an empty file. what names the expected
 * input for messages. */
static int text_open(text *T, const char *file, const char *data,
                     size_t len, const char *what, tm_error *err)
{
	int rc, line = 1;
	bool blank = true;

	memset(T, 0, sizeof *T);
	T->file = file;
	if (data) {
		if (len > SMI_MAX_BYTES)
			return tm_fail(err, TM_EINPUT, "%s: file is %zu bytes; the "
			               "limit is %u", file, len, SMI_MAX_BYTES);
		T->buf = xmalloc(len + 1);
		memcpy(T->buf, data, len);
		T->buf[len] = '\0';
	} else if ((rc = tm_read_file(file, SMI_MAX_BYTES, &T->buf, &len,
	                              err))) {
		return rc;
	}
	T->p = T->buf;
	T->end = T->buf + len;
	if (len >= 3 && !memcmp(T->p, "\xef\xbb\xbf", 3))  /* byte order mark */
		T->p += 3;
	for (const char *q = T->p; q < T->end; q++) {
		unsigned char c = (unsigned char)*q;
		if (c == '\n')
			line++;
		/* ESC starts the underline nvidia-smi puts on the header */
		if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' &&
		     c != 0x1b) || c == 0x7f) {
			tm_fail(err, TM_EINPUT, "%s:%d: expected %s, found binary "
			        "data (byte 0x%02x)", file, line, what, c);
			free(T->buf);
			T->buf = NULL;
			return TM_EINPUT;
		}
		if (!isspace(c))
			blank = false;
	}
	if (blank) {
		free(T->buf);
		T->buf = NULL;
		return tm_fail(err, TM_EINPUT, "%s: empty file; expected %s",
		               file, what);
	}
	return 0;
}

/* The next line without its end (LF or CRLF), or NULL at the end. */
static char *text_line(text *T)
{
	char *s = T->p, *nl;
	size_t n;
	if (T->p >= T->end)
		return NULL;
	nl = memchr(T->p, '\n', (size_t)(T->end - T->p));
	if (nl) {
		*nl = '\0';
		T->p = nl + 1;
	} else {
		T->p = T->end;  /* tm_read_file ends the buffer with a NUL */
	}
	T->line++;
	n = strlen(s);
	while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

static void text_close(text *T)
{
	free(T->buf);
	T->buf = NULL;
}

/* Removes ANSI escape sequences (ESC [ params final) in place and turns
 * UTF-8 no-break spaces, which web pages put into pasted tables, into
 * spaces. */
static void clean_line(char *s)
{
	char *o = s;
	while (*s) {
		if (*s == 0x1b) {
			s++;
			if (*s == '[') {
				s++;
				while (*s && ((*s >= '0' && *s <= '9') || *s == ';' ||
				              *s == '?'))
					s++;
				if (*s >= 0x40 && *s <= 0x7e)
					s++;
			}
			continue;
		}
		if ((unsigned char)s[0] == 0xc2 && (unsigned char)s[1] == 0xa0) {
			*o++ = ' ';
			s += 2;
			continue;
		}
		*o++ = *s++;
	}
	*o = '\0';
}

typedef struct toks {
	char **t;
	int n, cap;
} toks;

/* Splits s in place on whitespace. */
static void split_ws(toks *T, char *s)
{
	T->n = 0;
	for (;;) {
		while (*s && isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		if (T->n == T->cap) {
			T->cap = T->cap ? 2 * T->cap : 32;
			T->t = xrealloc(T->t, (size_t)T->cap * sizeof *T->t);
		}
		T->t[T->n++] = s;
		while (*s && !isspace((unsigned char)*s))
			s++;
		if (*s)
			*s++ = '\0';
	}
}

/* A decimal number without sign or leading zeros, at most max; -1 if not. */
static long plain_num(const char *s, long max)
{
	long v = 0;
	if (!*s || (s[0] == '0' && s[1]))
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > max)
			return -1;
	}
	return v;
}

/* ---- nvidia-smi topo -m ------------------------------------------------- */

#define TOPO_WHAT "`nvidia-smi topo -m` output"

/* A cell of the matrix, spelt as cluster.c reads links (SOC, the older name
 * of SYS, is SYS); -1 when it is not a link code. */
static int parse_code(const char *t, int *nv)
{
	return tm_parse_link(t, nv);
}

/* "GPU7" -> 7; -1 for anything else (NIC0, mlx5_0, "GPU" of "GPU NUMA ID"). */
static int gpu_label(const char *t)
{
	if (strncmp(t, "GPU", 3) != 0)
		return -1;
	return (int)plain_num(t + 3, 99999);
}

/* The header starts with GPU0 and goes on with a column name; a GPU0 row
 * goes on with its first cell, X. */
static bool is_header(const toks *W)
{
	int nv;
	return W->n > 0 && !strcmp(W->t[0], "GPU0") &&
	       (W->n == 1 || parse_code(W->t[1], &nv) < 0);
}

/* Headings after the GPU and NIC columns, as nvidia-smi prints them. */
enum { H_CPU, H_NUMA, H_GPUNUMA, H_OTHER };
static const char *const headings[][4] = {
	[H_CPU] = { "CPU", "Affinity", NULL },
	[H_NUMA] = { "NUMA", "Affinity", NULL },
	[H_GPUNUMA] = { "GPU", "NUMA", "ID", NULL },
};

static int heading_at(const toks *W, int i, int *words)
{
	for (int h = 0; h < H_OTHER; h++) {
		int k = 0;
		while (headings[h][k] && i + k < W->n &&
		       !strcmp(W->t[i + k], headings[h][k]))
			k++;
		if (!headings[h][k]) {
			*words = k;
			return h;
		}
	}
	*words = 1;
	return H_OTHER;
}

/* What the header says: n GPU columns, then ndev NIC columns, then nhead
 * headings of which "NUMA Affinity" is number numa_col (-1: absent). */
typedef struct topo_hdr {
	int line;
	int n, ndev, nhead, numa_col;
} topo_hdr;

static int read_header(text *T, const toks *W, topo_hdr *H, tm_error *err)
{
	int i = 0;
	memset(H, 0, sizeof *H);
	H->line = T->line;
	H->numa_col = -1;
	while (i < W->n && gpu_label(W->t[i]) >= 0) {
		if (gpu_label(W->t[i]) != i)
			return tm_fail(err, TM_EINPUT, "%s:%d: header: expected "
			               "column GPU%d, found %s", T->file, T->line,
			               i, W->t[i]);
		if (i == TM_MAX_GPUS_PER_NODE)
			return tm_fail(err, TM_EINPUT, "%s:%d: header: expected at "
			               "most %d GPU columns, found more", T->file,
			               T->line, TM_MAX_GPUS_PER_NODE);
		i++;
	}
	H->n = i;
	while (i < W->n) {
		int words, h = heading_at(W, i, &words);
		if (gpu_label(W->t[i]) >= 0)
			return tm_fail(err, TM_EINPUT, "%s:%d: header: expected the "
			               "GPU columns first, found %s after other "
			               "columns", T->file, T->line, W->t[i]);
		if (h == H_OTHER && H->nhead == 0) {
			H->ndev++;  /* NIC0, mlx5_0, ...: read past */
		} else {
			if (h == H_NUMA)
				H->numa_col = H->nhead;
			H->nhead++;
		}
		i += words;
	}
	return 0;
}

typedef struct topo_mat {
	int n;
	int nrows;         /* rows read so far, GPU0..GPU(nrows-1) */
	unsigned char *link, *nv;
	int *rowline;      /* line of each row */
	int *numa;         /* -1 unknown */
	int lastline;      /* line of the last row */
	bool numa_skipped; /* some row's columns did not match the header */
} topo_mat;

static int read_row(text *T, const toks *W, const topo_hdr *H, topo_mat *M,
                    int idx, tm_error *err)
{
	int n = H->n, cells = W->n - 1;

	if (idx >= n)
		return tm_fail(err, TM_EINPUT, "%s:%d: expected rows GPU0..GPU%d "
		               "as the header at line %d names, found row GPU%d",
		               T->file, T->line, n - 1, H->line, idx);
	if (idx < M->nrows)
		return tm_fail(err, TM_EINPUT, "%s:%d: expected each row once, "
		               "found row GPU%d again (first at line %d)",
		               T->file, T->line, idx, M->rowline[idx]);
	if (idx > M->nrows)
		return tm_fail(err, TM_EINPUT, "%s:%d: expected row GPU%d, found "
		               "row GPU%d", T->file, T->line, M->nrows, idx);
	if (cells < n)
		return tm_fail(err, TM_EINPUT, "%s:%d: row GPU%d cut short: "
		               "expected %d GPU cells (GPU0..GPU%d), found %d",
		               T->file, T->line, idx, n, n - 1, cells);
	for (int k = 0; k < n; k++) {
		const char *c = W->t[1 + k];
		int nv, l = parse_code(c, &nv);
		if (l < 0)
			return tm_fail(err, TM_EINPUT, "%s:%d: row GPU%d, column "
			               "GPU%d: expected a link code (X, NV#, PIX, "
			               "PXB, PHB, NODE, SYS), found \"%.40s\"",
			               T->file, T->line, idx, k, c);
		if (k == idx && l != TM_LINK_X)
			return tm_fail(err, TM_EINPUT, "%s:%d: row GPU%d, column "
			               "GPU%d: expected X on the diagonal, found %s",
			               T->file, T->line, idx, k, c);
		if (k != idx && l == TM_LINK_X)
			return tm_fail(err, TM_EINPUT, "%s:%d: row GPU%d, column "
			               "GPU%d: expected the link between two GPUs, "
			               "found X (a GPU with itself)", T->file,
			               T->line, idx, k);
		M->link[idx * n + k] = (unsigned char)l;
		M->nv[idx * n + k] = (unsigned char)nv;
	}
	/* Affinity cells hold no spaces, so they line up with the headings
	 * only when the row has every column; otherwise the NUMA node is
	 * left unknown rather than taken from the wrong column. */
	M->numa[idx] = -1;
	if (H->numa_col >= 0) {
		if (cells == n + H->ndev + H->nhead) {
			long node = plain_num(W->t[1 + n + H->ndev + H->numa_col],
			                      65535);
			M->numa[idx] = (int)node;
		} else {
			M->numa_skipped = true;
		}
	}
	M->rowline[idx] = T->line;
	M->lastline = T->line;
	M->nrows++;
	return 0;
}

static int check_symmetric(const text *T, const topo_mat *M, tm_error *err)
{
	int n = M->n;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < i; k++) {
			int a = i * n + k, b = k * n + i;
			char sa[16], sb[16];
			if (M->link[a] == M->link[b] && M->nv[a] == M->nv[b])
				continue;
			return tm_fail(err, TM_EINPUT, "%s:%d: row GPU%d, column "
			               "GPU%d is %s but row GPU%d, column GPU%d "
			               "(line %d) is %s; expected a symmetric matrix",
			               T->file, M->rowline[i], i, k,
			               tm_link_name(M->link[a], M->nv[a], sa), k, i,
			               M->rowline[k],
			               tm_link_name(M->link[b], M->nv[b], sb));
		}
	return 0;
}

/* "rows GPU4..GPU7" or "row GPU7" */
static void name_rows(char *buf, size_t cap, int from, int to)
{
	if (from == to)
		snprintf(buf, cap, "row GPU%d", from);
	else
		snprintf(buf, cap, "rows GPU%d..GPU%d", from, to);
}

static int topo_scan(text *T, toks *W, topo_hdr *H, topo_mat *M,
                     tm_error *err)
{
	char *s;
	int rc;
	bool have = false;

	while ((s = text_line(T))) {
		int idx;
		clean_line(s);
		split_ws(W, s);
		if (W->n == 0)
			continue;
		if (is_header(W)) {
			if (have)
				return tm_fail(err, TM_EINPUT, "%s:%d: expected one "
				               "matrix, found a second header row (the "
				               "first is at line %d)", T->file, T->line,
				               H->line);
			if ((rc = read_header(T, W, H, err)))
				return rc;
			have = true;
			M->n = H->n;
			M->link = xmalloc((size_t)H->n * (size_t)H->n);
			M->nv = xcalloc((size_t)H->n * (size_t)H->n, 1);
			M->rowline = xcalloc((size_t)H->n, sizeof *M->rowline);
			M->numa = xcalloc((size_t)H->n, sizeof *M->numa);
			continue;
		}
		idx = gpu_label(W->t[0]);
		if (idx < 0)
			continue;  /* NIC rows, legend, text around the matrix */
		if (!have) {
			/* a row whose header was lost: say so at the row */
			int nv;
			if (W->n > 1 && parse_code(W->t[1], &nv) >= 0)
				return tm_fail(err, TM_EINPUT, "%s:%d: expected a "
				               "header row \"GPU0 GPU1 ...\" above the "
				               "matrix, found row GPU%d first", T->file,
				               T->line, idx);
			continue;
		}
		if ((rc = read_row(T, W, H, M, idx, err)))
			return rc;
	}
	if (!have)
		return tm_fail(err, TM_EINPUT, "%s: no GPU matrix: expected a "
		               "header row \"GPU0 GPU1 ...\" of %s, found none",
		               T->file, TOPO_WHAT);
	if (M->nrows < H->n) {
		char rows[64];
		name_rows(rows, sizeof rows, M->nrows, H->n - 1);
		if (M->nrows == 0)
			return tm_fail(err, TM_EINPUT, "%s:%d: matrix cut short after "
			               "the header: %s missing", T->file, H->line,
			               rows);
		return tm_fail(err, TM_EINPUT, "%s:%d: matrix cut short after row "
		               "GPU%d: %s missing (the header at line %d names "
		               "GPU0..GPU%d)", T->file, M->lastline, M->nrows - 1,
		               rows, H->line, H->n - 1);
	}
	return check_symmetric(T, M, err);
}

int tp_read_smi_topo(const char *file, tp_view *v, tm_error *err)
{
	return tp_read_smi_topo_text(file, NULL, 0, v, err);
}

int tp_read_smi_topo_text(const char *file, const char *data, size_t len,
                          tp_view *v, tm_error *err)
{
	text T;
	toks W = { 0 };
	topo_hdr H;
	topo_mat M;
	int rc;

	tp_view_init(v, "smi-topo", file);
	memset(&M, 0, sizeof M);
	memset(&H, 0, sizeof H);
	if ((rc = text_open(&T, file, data, len, TOPO_WHAT, err)))
		goto out;
	rc = topo_scan(&T, &W, &H, &M, err);
	if (rc)
		goto out;
	for (int i = 0; i < M.n; i++) {
		tp_gpu *g = tp_add_gpu(v);
		g->index = i;
		g->numa = M.numa[i];
	}
	tp_alloc_links(v);
	memcpy(v->link, M.link, (size_t)M.n * (size_t)M.n);
	memcpy(v->nv, M.nv, (size_t)M.n * (size_t)M.n);
	if (H.numa_col < 0)
		tp_note(v, "%s: no NUMA Affinity column; NUMA nodes unknown", file);
	else if (M.numa_skipped)
		tp_note(v, "%s: some GPU rows do not have every column of the "
		        "header; their NUMA nodes are unknown", file);
out:
	if (rc)
		tp_view_clear(v);  /* empty again: freeing it twice is harmless */
	text_close(&T);
	free(W.t);
	free(M.link);
	free(M.nv);
	free(M.rowline);
	free(M.numa);
	return rc;
}

/* ---- GPU lists ---------------------------------------------------------- */

#define LIST_WHAT "a GPU list (`nvidia-smi -L`, `nvidia-smi -q` or " \
	"`nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,memory.total " \
	"--format=csv`)"

/* nvidia-smi's placeholders for a value it does not have. */
static bool is_na(const char *s)
{
	size_t n = strlen(s);
	return n == 0 || !strcmp(s, "N/A") || !strcmp(s, "Not Supported") ||
	       (s[0] == '[' && s[n - 1] == ']');
}

/* Device memory: MiB / 1024, rounded to the nearest integer, ties to
 * even (nearbyint in the default rounding mode) — the rule and rounding
 * of Python's round() in scripts/derive-h200x4a.py, which derived the
 * fixtures' cluster files: 143771 MiB -> 140 GiB. */
double tp_mib_to_gib(double mib)
{
	return nearbyint(mib / 1024.0);
}

/* "143771 MiB" or, with the unit in the header, "143771"; -1 if neither. */
static double parse_mib(const char *s, bool unit_needed)
{
	char *end;
	double x;
	if (*s < '0' || *s > '9')
		return -1;
	x = strtod(s, &end);
	if (!(x >= 0 && x < 1e9))
		return -1;
	while (*end == ' ')
		end++;
	if (!strcmp(end, "MiB") || (!*end && !unit_needed))
		return x;
	return -1;
}

static int bad_uuid(const char *file, int line, const char *u, tm_error *err)
{
	return tm_fail(err, TM_EINPUT, "%s:%d: expected a GPU UUID (GPU-...), "
	               "found \"%.60s\"", file, line, u);
}

static bool gpu_uuid(const char *u)
{
	return !strncmp(u, "GPU-", 4) && tm_valid_uuid(u);
}

static int by_index(const void *a, const void *b)
{
	const tp_gpu *x = a, *y = b;
	return (x->index > y->index) - (x->index < y->index);
}

/* Sorts by index; the indices must be 0..n-1, a gap is a GPU missing. */
static int check_indices(tp_view *v, tm_error *err)
{
	qsort(v->gpus, (size_t)v->ngpus, sizeof *v->gpus, by_index);
	for (int i = 0; i < v->ngpus; i++)
		if (v->gpus[i].index != i)
			return tm_fail(err, TM_EINPUT, "%s: expected GPUs 0..%d, "
			               "found no GPU %d (the list goes on with GPU "
			               "%d)", v->file, v->gpus[v->ngpus - 1].index,
			               i, v->gpus[i].index);
	return 0;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same_num(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

/* A GPU read again (nvidia-smi nvlink -s then -c, a CSV logged with -l):
 * the same GPU is read past, another one under the same index is an
 * error. Returns 1 when g repeats GPU k, 0 when it is new. */
static int repeated(const tp_view *v, const tp_gpu *g, int line,
                    const int *lines, tm_error *err)
{
	for (int k = 0; k < v->ngpus; k++) {
		const tp_gpu *o = &v->gpus[k];
		bool same_id = (g->index >= 0 && g->index == o->index) ||
		               (g->uuid && o->uuid && !strcmp(g->uuid, o->uuid)) ||
		               (g->pci && o->pci && !strcmp(g->pci, o->pci));
		if (!same_id)
			continue;
		if (g->index == o->index && same_str(g->uuid, o->uuid) &&
		    same_str(g->pci, o->pci) && same_str(g->model, o->model) &&
		    same_num(g->memory_gib, o->memory_gib))
			return 1;
		return tm_fail(err, TM_EINPUT, "%s:%d: expected each GPU once, "
		               "found GPU %d %s again with other values (first "
		               "at line %d)", v->file, line, g->index,
		               g->uuid ? g->uuid : g->pci ? g->pci : "",
		               lines[k]);
	}
	return 0;
}

/* Appends a copy of g unless it repeats a GPU; lines[] grows with it. */
static int add_listed(tp_view *v, tp_gpu *g, int line, int **lines,
                      tm_error *err)
{
	int rc = repeated(v, g, line, *lines, err);
	tp_gpu *d;
	if (rc) {
		free(g->uuid);
		free(g->pci);
		free(g->model);
		return rc == 1 ? 0 : rc;
	}
	if (v->ngpus == TM_MAX_GPUS_PER_NODE) {
		free(g->uuid);
		free(g->pci);
		free(g->model);
		return tm_fail(err, TM_EINPUT, "%s:%d: expected at most %d GPUs, "
		               "found more", v->file, line, TM_MAX_GPUS_PER_NODE);
	}
	d = tp_add_gpu(v);
	*d = *g;
	*lines = xrealloc(*lines, (size_t)v->ngpus * sizeof **lines);
	(*lines)[v->ngpus - 1] = line;
	return 0;
}

static void gpu_clear(tp_gpu *g)
{
	memset(g, 0, sizeof *g);
	g->index = -1;
	g->memory_gib = NAN;
	g->numa = -1;
}

/* ---- nvidia-smi -L: "GPU 0: NVIDIA H200 (UUID: GPU-...)" ---------------- */

/* 1: a GPU line, index, name and uuid cut out of s; 0: another line. */
static int l_line(char *s, int *idx, char **name, char **uuid)
{
	char *p = s, *u, *q;
	size_t len;
	long k;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, "GPU ", 4) != 0)
		return 0;
	p += 4;
	q = strchr(p, ':');
	if (!q || q[1] != ' ')
		return 0;
	*q = '\0';
	k = plain_num(p, TM_MAX_GPUS_PER_NODE - 1);
	*q = ':';
	if (k < 0)
		return 0;
	p = q + 2;
	/* the last "(UUID: " and a ")" ending the line */
	for (u = NULL, q = p; (q = strstr(q, " (UUID: ")); q++)
		u = q;
	len = strlen(s);
	if (!u || s[len - 1] != ')')
		return 0;
	s[len - 1] = '\0';
	*u = '\0';
	*idx = (int)k;
	*name = p;
	*uuid = u + 8;
	return 1;
}

static bool mig_line(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return !strncmp(s, "MIG ", 4) && strstr(s, "(UUID: MIG-");
}

static int read_list_L(text *T, tp_view *v, tm_error *err)
{
	char *s;
	int *lines = NULL, rc = 0, migs = 0, mig_gpu = -1;

	while ((s = text_line(T))) {
		int idx;
		char *name, *uuid;
		tp_gpu g;
		if (mig_line(s)) {
			migs += mig_gpu >= 0;  /* MIG lines follow their GPU */
			continue;
		}
		if (!l_line(s, &idx, &name, &uuid))
			continue;
		if (migs)
			tp_note(v, "%s: GPU %d: %d MIG devices read past; thermap "
			        "places whole GPUs", T->file, mig_gpu, migs);
		migs = 0;
		mig_gpu = idx;
		if (!gpu_uuid(uuid)) {
			rc = bad_uuid(T->file, T->line, uuid, err);
			break;
		}
		gpu_clear(&g);
		g.index = idx;
		g.uuid = xstrdup(uuid);
		g.model = *name ? xstrdup(name) : NULL;
		if ((rc = add_listed(v, &g, T->line, &lines, err)))
			break;
	}
	if (!rc && migs)
		tp_note(v, "%s: GPU %d: %d MIG devices read past; thermap places "
		        "whole GPUs", T->file, mig_gpu, migs);
	free(lines);
	return rc;
}

/* ---- nvidia-smi -q ------------------------------------------------------ */

#define Q_MAXLEVEL 8

/* "GPU 00000000:00:06.0" opens a GPU's section. */
static char *q_section(const char *s)
{
	if (strncmp(s, "GPU ", 4) != 0 || strchr(s + 4, ' '))
		return NULL;
	return tm_normalise_pci(s + 4);
}

/* Splits "    Key        : value" into level (indent / 4), key, value
 * (NULL for a line that opens a subsection). */
static void q_split(char *s, int *level, char **key, char **val)
{
	int ind = 0;
	char *c, *e;
	while (s[ind] == ' ')
		ind++;
	*level = ind / 4;
	s += ind;
	*key = s;
	*val = NULL;
	/* the key is padded with spaces up to " : "; values hold colons */
	for (c = s; (c = strchr(c, ':')); c++)
		if (c > s && c[-1] == ' ')
			break;
	if (!c)
		return;
	*c = '\0';
	for (e = c; e > s && e[-1] == ' '; )
		*--e = '\0';
	c++;
	while (*c == ' ')
		c++;
	*val = c;
}

static int q_field(text *T, tp_view *v, tp_gpu *g,
                   const char *const parent[], int level, const char *key,
                   const char *val, tm_error *err)
{
	if (level == 1 && !strcmp(key, "Product Name") && !is_na(val)) {
		free(g->model);
		g->model = xstrdup(val);
	} else if (level == 1 && !strcmp(key, "GPU UUID") && !is_na(val)) {
		if (!gpu_uuid(val))
			return bad_uuid(T->file, T->line, val, err);
		free(g->uuid);
		g->uuid = xstrdup(val);
	} else if (level == 2 && !strcmp(parent[1], "PCI") &&
	           !strcmp(key, "Bus Id") && !is_na(val)) {
		char *p = tm_normalise_pci(val);
		bool same = p && !strcmp(p, g->pci);
		free(p);
		if (!same)
			return tm_fail(err, TM_EINPUT, "%s:%d: expected Bus Id %s "
			               "as the section names, found \"%.40s\"",
			               T->file, T->line, g->pci, val);
	} else if (level == 2 && !strcmp(parent[1], "FB Memory Usage") &&
	           !strcmp(key, "Total") && !is_na(val)) {
		double mib = parse_mib(val, true);
		if (mib < 0)
			return tm_fail(err, TM_EINPUT, "%s:%d: FB Memory Usage "
			               "Total: expected \"<number> MiB\", found "
			               "\"%.40s\"", T->file, T->line, val);
		g->memory_gib = tp_mib_to_gib(mib);
	} else if (level == 2 && !strcmp(parent[1], "MIG Mode") &&
	           !strcmp(key, "Current") && !strcmp(val, "Enabled")) {
		tp_note(v, "%s:%d: GPU %d has MIG enabled; thermap places whole "
		        "GPUs", T->file, T->line, g->index);
	}
	return 0;
}

/* Ends the open section: its GPU joins the view. */
static int q_close(tp_view *v, tp_gpu *g, bool *open, int line,
                   int **lines, tm_error *err)
{
	int rc = 0;
	if (*open)
		rc = add_listed(v, g, line, lines, err);
	*open = false;
	gpu_clear(g);
	return rc;
}

static int read_list_q(text *T, tp_view *v, tm_error *err)
{
	const char *parent[Q_MAXLEVEL];
	char *s;
	int *lines = NULL, rc = 0, attached = -1, attached_line = 0;
	int secline = 0;
	tp_gpu g;
	bool open = false;

	for (int k = 0; k < Q_MAXLEVEL; k++)
		parent[k] = "";
	gpu_clear(&g);
	while ((s = text_line(T))) {
		char *pci, *key, *val;
		int level;
		if (!*s)
			continue;
		if ((pci = q_section(s))) {
			if ((rc = q_close(v, &g, &open, secline, &lines, err))) {
				free(pci);
				goto out;
			}
			for (int k = 0; k < v->ngpus; k++)
				if (!strcmp(v->gpus[k].pci, pci)) {
					rc = tm_fail(err, TM_EINPUT, "%s:%d: expected each "
					             "GPU once, found GPU %s again (first at "
					             "line %d)", T->file, T->line, pci,
					             lines[k]);
					free(pci);
					goto out;
				}
			/* nvidia-smi -q lists GPUs in index order and prints no
			 * index (Minor Number is the /dev/nvidia# number, which can
			 * differ): the section's place is the index. */
			g.index = v->ngpus;
			g.pci = pci;
			open = true;
			secline = T->line;
			for (int k = 0; k < Q_MAXLEVEL; k++)
				parent[k] = "";
			continue;
		}
		q_split(s, &level, &key, &val);
		if (level >= Q_MAXLEVEL)
			continue;
		parent[level] = key;
		if (level == 0) {
			/* "Attached GPUs", a second log's banner: the section ends */
			if (val && !strcmp(key, "Attached GPUs")) {
				attached = (int)plain_num(val, TM_MAX_GPUS_PER_NODE);
				attached_line = T->line;
			}
			if ((rc = q_close(v, &g, &open, secline, &lines, err)))
				goto out;
			continue;
		}
		if (!open || !val)
			continue;
		if ((rc = q_field(T, v, &g, parent, level, key, val, err)))
			goto out;
	}
	if ((rc = q_close(v, &g, &open, secline, &lines, err)))
		goto out;
	if (v->ngpus == 0)
		rc = tm_fail(err, TM_EINPUT, "%s: expected GPU sections "
		             "(\"GPU 00000000:00:06.0\") in `nvidia-smi -q` "
		             "output, found none", T->file);
	else if (attached >= 0 && attached != v->ngpus)
		rc = tm_fail(err, TM_EINPUT, "%s:%d: cut short: Attached GPUs "
		             "says %d, found %d GPU sections", T->file,
		             attached_line, attached, v->ngpus);
out:
	if (open) {
		free(g.uuid);
		free(g.pci);
		free(g.model);
	}
	free(lines);
	return rc;
}

/* ---- --query-gpu=... --format=csv --------------------------------------- */

enum { C_INDEX, C_UUID, C_PCI, C_NAME, C_MEM, C_NCOLS };
static const char *const csv_names[C_NCOLS] = {
	[C_INDEX] = "index", [C_UUID] = "uuid", [C_PCI] = "pci.bus_id",
	[C_NAME] = "name", [C_MEM] = "memory.total",
};

typedef struct fields {
	char **f;
	int n, cap;
} fields;

/* Splits a CSV line in place on commas, fields trimmed. nvidia-smi
 * neither quotes nor escapes. */
static void split_csv(fields *F, char *s)
{
	F->n = 0;
	for (;;) {
		char *c = strchr(s, ','), *e;
		if (c)
			*c = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (F->n == F->cap) {
			F->cap = F->cap ? 2 * F->cap : 16;
			F->f = xrealloc(F->f, (size_t)F->cap * sizeof *F->f);
		}
		F->f[F->n++] = s;
		if (!c)
			break;
		s = c + 1;
	}
}

/* Cuts " [unit]" off a header name; returns the unit or NULL. */
static char *cut_unit(char *name)
{
	char *b = strchr(name, '['), *e;
	if (!b)
		return NULL;
	e = b;
	while (e > name && e[-1] == ' ')
		e--;
	*e = '\0';
	b++;
	e = strchr(b, ']');
	if (e)
		*e = '\0';
	return b;
}

/* Which known column a header name is; -1 for the others. */
static int csv_col(const char *name)
{
	for (int c = 0; c < C_NCOLS; c++)
		if (!strcmp(name, csv_names[c]))
			return c;
	return -1;
}

/* The first line of a --query-gpu CSV: some field is a known name. */
static bool csv_header_like(const char *s)
{
	char *copy = xstrdup(s);
	fields F = { 0 };
	bool yes = false;
	if (strchr(s, ',') || csv_col(s) >= 0) {
		split_csv(&F, copy);
		for (int i = 0; i < F.n && !yes; i++) {
			cut_unit(F.f[i]);
			yes = csv_col(F.f[i]) >= 0;
		}
	}
	free(F.f);
	free(copy);
	return yes;
}

static int csv_value(text *T, int c, const char *val, bool unit_in_header,
                     tp_gpu *g, tm_error *err)
{
	long k;
	double mib;
	if (is_na(val))
		return 0;
	switch (c) {
	case C_INDEX:
		k = plain_num(val, TM_MAX_GPUS_PER_NODE - 1);
		if (k < 0)
			return tm_fail(err, TM_EINPUT, "%s:%d: index: expected a GPU "
			               "index 0..%d, found \"%.40s\"", T->file,
			               T->line, TM_MAX_GPUS_PER_NODE - 1, val);
		g->index = (int)k;
		break;
	case C_UUID:
		if (!gpu_uuid(val))
			return bad_uuid(T->file, T->line, val, err);
		g->uuid = xstrdup(val);
		break;
	case C_PCI:
		if (!(g->pci = tm_normalise_pci(val)))
			return tm_fail(err, TM_EINPUT, "%s:%d: pci.bus_id: expected "
			               "a PCI bus id (00000000:00:06.0), found "
			               "\"%.40s\"", T->file, T->line, val);
		break;
	case C_NAME:
		g->model = xstrdup(val);
		break;
	case C_MEM:
		mib = parse_mib(val, !unit_in_header);
		if (mib < 0)
			return tm_fail(err, TM_EINPUT, "%s:%d: memory.total: expected "
			               "MiB (\"81559 MiB\"), found \"%.40s\"",
			               T->file, T->line, val);
		g->memory_gib = tp_mib_to_gib(mib);
		break;
	}
	return 0;
}

static int read_list_csv(text *T, tp_view *v, tm_error *err)
{
	fields F = { 0 };
	int col[C_NCOLS], ncols = 0, hline = 0, *lines = NULL, rc = 0;
	bool mem_unit = false, ordered = false;
	char *s;

	for (int c = 0; c < C_NCOLS; c++)
		col[c] = -1;
	while ((s = text_line(T))) {
		tp_gpu g;
		if (!*s)
			continue;
		split_csv(&F, s);
		if (!hline) {
			hline = T->line;
			ncols = F.n;
			for (int i = 0; i < F.n; i++) {
				char *unit = cut_unit(F.f[i]);
				int c = csv_col(F.f[i]);
				if (c < 0)
					continue;
				if (col[c] >= 0) {
					rc = tm_fail(err, TM_EINPUT, "%s:%d: expected each "
					             "column once, found %s twice", T->file,
					             T->line, csv_names[c]);
					goto out;
				}
				col[c] = i;
				if (c == C_MEM && unit) {
					if (strcmp(unit, "MiB") != 0) {
						rc = tm_fail(err, TM_EINPUT, "%s:%d: memory.total: "
						             "expected [MiB], found [%.20s]",
						             T->file, T->line, unit);
						goto out;
					}
					mem_unit = true;
				}
			}
			if (col[C_INDEX] < 0 && col[C_UUID] < 0 && col[C_PCI] < 0) {
				rc = tm_fail(err, TM_EINPUT, "%s:%d: expected a column "
				             "that names the GPU (index, uuid or "
				             "pci.bus_id), found none", T->file, T->line);
				goto out;
			}
			continue;
		}
		if (F.n != ncols) {
			rc = tm_fail(err, TM_EINPUT, "%s:%d: expected %d fields as in "
			             "the header at line %d, found %d", T->file,
			             T->line, ncols, hline, F.n);
			goto out;
		}
		gpu_clear(&g);
		for (int c = 0; c < C_NCOLS; c++)
			if (col[c] >= 0 &&
			    (rc = csv_value(T, c, F.f[col[c]], mem_unit, &g, err)))
				break;
		if (!rc && col[C_INDEX] >= 0 && g.index < 0)
			rc = tm_fail(err, TM_EINPUT, "%s:%d: index: expected a GPU "
			             "index, found \"%.40s\"", T->file, T->line,
			             F.f[col[C_INDEX]]);
		if (rc) {
			free(g.uuid);
			free(g.pci);
			free(g.model);
			goto out;
		}
		if (col[C_INDEX] < 0) {
			/* nvidia-smi prints GPUs in index order */
			ordered = true;
			g.index = -1;
		}
		if ((rc = add_listed(v, &g, T->line, &lines, err)))
			goto out;
	}
	if (!hline) {
		rc = tm_fail(err, TM_EINPUT, "%s: empty file; expected %s",
		             T->file, LIST_WHAT);
		goto out;
	}
	if (v->ngpus == 0) {
		rc = tm_fail(err, TM_EINPUT, "%s:%d: expected GPU rows after the "
		             "header, found none", T->file, hline);
		goto out;
	}
	if (ordered) {
		for (int i = 0; i < v->ngpus; i++)
			v->gpus[i].index = i;
		tp_note(v, "%s: no index column; GPUs numbered in row order, as "
		        "nvidia-smi prints them", T->file);
	}
out:
	free(F.f);
	free(lines);
	return rc;
}

/* A line of a headerless CSV: "0, GPU-..., 00000000:..., ...". */
static bool csv_data_like(const char *s)
{
	const char *c = strchr(s, ',');
	char first[16];
	size_t n;
	if (!c)
		return false;
	n = (size_t)(c - s);
	if (n >= sizeof first)
		n = sizeof first - 1;
	memcpy(first, s, n);
	first[n] = '\0';
	return plain_num(first, 1L << 30) >= 0 || !strncmp(s, "GPU-", 4);
}

/* Which list the file holds: a CSV header on the first line, else -q
 * sections, else -L lines anywhere (they come among other text, as in
 * nvidia-smi nvlink -s). */
enum { F_NONE, F_L, F_Q, F_CSV };
static int list_kind(text *T, int *first_line, bool *data_first)
{
	char *s;
	int kind = F_NONE;
	*first_line = 0;
	*data_first = false;
	while ((s = text_line(T))) {
		char *pci, *name, *uuid, *copy;
		int idx;
		if (!*s)
			continue;
		if (!*first_line) {
			*first_line = T->line;
			if (csv_header_like(s))
				return F_CSV;
			*data_first = csv_data_like(s);
		}
		if (!strncmp(s, "==============NVSMI LOG", 23))
			return F_Q;
		if ((pci = q_section(s))) {
			free(pci);
			return F_Q;
		}
		copy = xstrdup(s);
		if (kind == F_NONE && l_line(copy, &idx, &name, &uuid))
			kind = F_L;
		free(copy);
	}
	return kind;
}

int tp_read_gpu_list(const char *file, tp_view *v, tm_error *err)
{
	return tp_read_gpu_list_text(file, NULL, 0, v, err);
}

int tp_read_gpu_list_text(const char *file, const char *data, size_t len,
                          tp_view *v, tm_error *err)
{
	text T;
	int rc, kind, first_line;
	bool data_first;

	tp_view_init(v, "gpu-list", file);
	if ((rc = text_open(&T, file, data, len, LIST_WHAT, err)))
		goto out;
	kind = list_kind(&T, &first_line, &data_first);
	if (kind == F_NONE) {
		if (data_first)
			rc = tm_fail(err, TM_EINPUT, "%s:%d: expected a --query-gpu "
			             "CSV header (--format=csv without noheader), "
			             "found a data row", file, first_line);
		else
			rc = tm_fail(err, TM_EINPUT, "%s: expected %s, found none "
			             "of them", file, LIST_WHAT);
		goto out;
	}
	/* read again from the start: the scan cut the lines */
	text_close(&T);
	if ((rc = text_open(&T, file, data, len, LIST_WHAT, err)))
		goto out;
	if (kind == F_CSV)
		rc = read_list_csv(&T, v, err);
	else if (kind == F_Q)
		rc = read_list_q(&T, v, err);
	else
		rc = read_list_L(&T, v, err);
	if (!rc && kind != F_Q)
		rc = check_indices(v, err);
out:
	if (rc)
		tp_view_clear(v);  /* empty again: freeing it twice is harmless */
	text_close(&T);
	return rc;
}
