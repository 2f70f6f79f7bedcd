/*
 * nccl.c — NCCL topology files (NCCL_TOPO_FILE, NCCL_TOPO_DUMP_FILE):
 * GPUs (<gpu dev=...> in <pci busid=...> in <cpu numaid=...>), NVLink
 * (<nvlink target= count= tclass=>, to GPUs or NVSwitches) and PCIe/SMP
 * codes from the nesting of <pci> and <cpu> elements.
 *
 * No XML library is among thermap's dependencies, so the file is read by a
 * small strict scanner for the subset NCCL writes: elements, attributes in
 * '"' or '\'' quotes, self-closing tags, comments, processing instructions
 * (the <?xml?> declaration), a DOCTYPE without internal subset. No
 * entities but the five predefined ones, no CDATA, no text between tags.
 * Anything else, and any file cut short, is an error with its line. Sizes
 * are bounded: the file, the depth, the attributes of an element.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

#define NC_MAX_BYTES (16u << 20)  /* NCCL dumps are a few KiB */
#define NC_MAX_DEPTH 64           /* NCCL nests about 8 deep */
#define NC_MAX_ATTRS 64           /* NCCL writes at most about 12 */
#define NC_MAX_NV 64              /* NV1 ... NV64 (docs/topology.md) */

/* ---- the XML scanner ---------------------------------------------------- */

typedef struct xn {
	char *name;      /* element name */
	char **attr;     /* name, value, name, value, ... (decoded) */
	int nattr;       /* attribute pairs */
	int line;        /* line of the start tag */
	int parent;      /* element index, -1 for the root */
} xn;

typedef struct xdoc {
	xn *n;           /* elements in document order */
	int nn;          /* number of them */
} xdoc;

typedef struct xp {
	const char *file;  /* for messages */
	const char *p;     /* next byte */
	const char *end;   /* end of the buffer */
	int line;          /* line of *p */
	xdoc *d;           /* what is built */
	tm_error *err;
} xp;

static void xdoc_free(xdoc *d)
{
	for (int i = 0; i < d->nn; i++) {
		for (int k = 0; k < 2 * d->n[i].nattr; k++)
			free(d->n[i].attr[k]);
		free(d->n[i].attr);
		free(d->n[i].name);
	}
	free(d->n);
	memset(d, 0, sizeof *d);
}

/* What is at p, for "found ..." in messages. */
static const char *found(const xp *x, char buf[24])
{
	unsigned char ch;
	if (x->p >= x->end)
		return "the end of the file";
	ch = (unsigned char)*x->p;
	if (ch > 0x20 && ch < 0x7f)
		snprintf(buf, 24, "'%c'", ch);
	else if (ch == '\n')
		return "the end of the line";
	else
		snprintf(buf, 24, "byte 0x%02x", ch);
	return buf;
}

static int xfail(xp *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int xfail(xp *x, const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = tm_vfail_at(x->err, TM_EINPUT, x->file, x->line, fmt, ap);
	va_end(ap);
	return rc;
}

static void adv(xp *x, size_t k)
{
	for (; k && x->p < x->end; k--, x->p++)
		if (*x->p == '\n')
			x->line++;
}

static bool at(const xp *x, const char *s)
{
	size_t k = strlen(s);
	return (size_t)(x->end - x->p) >= k && memcmp(x->p, s, k) == 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void skip_space(xp *x)
{
	while (x->p < x->end && is_space(*x->p))
		adv(x, 1);
}

static bool name_start(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
	       c == ':';
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* Copies a name at p; NULL (and no error set) when there is none. */
static char *read_name(xp *x)
{
	const char *s = x->p;
	char *out;
	if (x->p >= x->end || !name_start(*x->p))
		return NULL;
	while (x->p < x->end && name_char(*x->p) && x->p - s < 128)
		x->p++;
	out = xmalloc((size_t)(x->p - s) + 1);
	memcpy(out, s, (size_t)(x->p - s));
	out[x->p - s] = '\0';
	return out;
}

/* Skips a comment or processing instruction that starts at p. */
static int skip_until(xp *x, const char *open, const char *close)
{
	int line = x->line;
	adv(x, strlen(open));
	while (x->p < x->end && !at(x, close))
		adv(x, 1);
	if (x->p >= x->end) {
		x->line = line;
		return xfail(x, "%s is not closed by %s before the end of the "
		             "file", open, close);
	}
	adv(x, strlen(close));
	return 0;
}

/* &lt; &gt; &amp; &quot; &apos; and ASCII character references. */
static int entity(xp *x, strbuf *b)
{
	static const char *const names[][2] = {
		{ "&lt;", "<" }, { "&gt;", ">" }, { "&amp;", "&" },
		{ "&quot;", "\"" }, { "&apos;", "'" },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (at(x, names[i][0])) {
			sb_add(b, names[i][1]);
			adv(x, strlen(names[i][0]));
			return 0;
		}
	if (at(x, "&#")) {
		const char *q = x->p + 2;
		int base = 10;
		long ch = 0;
		if (q < x->end && *q == 'x') {
			base = 16;
			q++;
		}
		while (q < x->end && q - x->p < 10 &&
		       ((*q >= '0' && *q <= '9') ||
		        (base == 16 && strchr("abcdefABCDEF", *q)))) {
			ch = ch * base + (*q <= '9' ? *q - '0' :
			                  (*q | 0x20) - 'a' + 10);
			q++;
		}
		if (q < x->end && *q == ';' && ch > 0 && ch < 0x80) {
			char s[2] = { (char)ch, '\0' };
			sb_add(b, s);
			adv(x, (size_t)(q + 1 - x->p));
			return 0;
		}
	}
	return xfail(x, "expected an entity (&lt; &gt; &amp; &quot; &apos; "
	             "or an ASCII &#...;), found '&' without one");
}

static int add_element(xp *x, char *name, int parent)
{
	xn *e;
	if (x->d->nn >= 1000000) {
		free(name);
		return xfail(x, "more than 1000000 elements");
	}
	x->d->n = xrealloc(x->d->n, (size_t)(x->d->nn + 1) * sizeof *x->d->n);
	e = &x->d->n[x->d->nn++];
	memset(e, 0, sizeof *e);
	e->name = name;
	e->line = x->line;
	e->parent = parent;
	return 0;
}

/* The attributes and end of a start tag whose name was just read; *empty
 * is set for a self-closing tag. */
static int read_attrs(xp *x, xn *e, bool *empty)
{
	char buf[24];
	for (;;) {
		bool spaced = x->p < x->end && is_space(*x->p);
		char *key, quote;
		strbuf val;

		skip_space(x);
		if (at(x, "/>")) {
			adv(x, 2);
			*empty = true;
			return 0;
		}
		if (at(x, ">")) {
			adv(x, 1);
			*empty = false;
			return 0;
		}
		if (!spaced || !(key = read_name(x)))
			return xfail(x, "expected an attribute, '>' or '/>' in "
			             "<%s>, found %s", e->name, found(x, buf));
		for (int k = 0; k < e->nattr; k++)
			if (strcmp(e->attr[2 * k], key) == 0) {
				xfail(x, "attribute %s appears twice in <%s>", key,
				      e->name);
				free(key);
				return TM_EINPUT;
			}
		if (e->nattr >= NC_MAX_ATTRS) {
			free(key);
			return xfail(x, "more than %d attributes in <%s>",
			             NC_MAX_ATTRS, e->name);
		}
		e->attr = xrealloc(e->attr, (size_t)(2 * e->nattr + 2) *
		                   sizeof *e->attr);
		e->attr[2 * e->nattr] = key;
		e->attr[2 * e->nattr + 1] = NULL;
		e->nattr++;
		skip_space(x);
		if (!at(x, "="))
			return xfail(x, "expected '=' after %s in <%s>, found %s",
			             key, e->name, found(x, buf));
		adv(x, 1);
		skip_space(x);
		if (!at(x, "\"") && !at(x, "'"))
			return xfail(x, "expected a quoted value for %s in <%s>, "
			             "found %s", key, e->name, found(x, buf));
		quote = *x->p;
		adv(x, 1);
		sb_init(&val);
		while (x->p < x->end && *x->p != quote) {
			if (*x->p == '<' || *x->p == '\0') {
				sb_free(&val);
				return xfail(x, "expected the closing %c of %s in "
				             "<%s>, found %s", quote, key, e->name,
				             found(x, buf));
			}
			if (*x->p == '&') {
				if (entity(x, &val)) {
					sb_free(&val);
					return TM_EINPUT;
				}
				continue;
			}
			{
				char s[2] = { *x->p, '\0' };
				sb_add(&val, s);
			}
			adv(x, 1);
		}
		if (x->p >= x->end) {
			sb_free(&val);
			return xfail(x, "the file ends inside the value of %s in "
			             "<%s>", key, e->name);
		}
		adv(x, 1);
		e->attr[2 * e->nattr - 1] = val.s ? val.s : xstrdup("");
	}
}

/* Comments, processing instructions and white space between elements. */
static int skip_misc(xp *x)
{
	for (;;) {
		skip_space(x);
		if (at(x, "<!--")) {
			if (skip_until(x, "<!--", "-->"))
				return TM_EINPUT;
		} else if (at(x, "<?")) {
			if (skip_until(x, "<?", "?>"))
				return TM_EINPUT;
		} else {
			return 0;
		}
	}
}

static int xml_parse(xp *x)
{
	int stack[NC_MAX_DEPTH], depth = 0;
	char buf[24];
	bool root_done = false;

	if (at(x, "\xef\xbb\xbf"))
		adv(x, 3);
	for (;;) {
		if (skip_misc(x))
			return TM_EINPUT;
		if (x->p >= x->end) {
			if (depth) {
				xn *e = &x->d->n[stack[depth - 1]];
				return xfail(x, "the file ends inside <%s> (opened "
				             "at line %d): cut short?", e->name,
				             e->line);
			}
			if (!root_done)
				return xfail(x, "expected an XML element, found "
				             "none");
			return 0;
		}
		if (at(x, "<!DOCTYPE")) {
			/* hwloc writes one; an internal subset could declare
			 * entities, which are not read */
			const char *q = x->p;
			if (depth || root_done)
				return xfail(x, "expected nothing %s, found "
				             "<!DOCTYPE", depth ? "inside an element" :
				             "after the root element");
			while (q < x->end && *q != '>' && *q != '[')
				q++;
			if (q >= x->end || *q == '[') {
				adv(x, (size_t)(q - x->p));
				return xfail(x, "expected a DOCTYPE without an "
				             "internal subset, found %s",
				             found(x, buf));
			}
			adv(x, (size_t)(q + 1 - x->p));
			continue;
		}
		if (at(x, "<![CDATA["))
			return xfail(x, "expected an element, found <![CDATA[ "
			             "(CDATA is not read)");
		if (at(x, "<!"))
			return xfail(x, "expected an element, found a <! "
			             "declaration");
		if (at(x, "</")) {
			char *name;
			xn *e;
			if (!depth)
				return xfail(x, "expected an element, found a "
				             "closing tag");
			e = &x->d->n[stack[depth - 1]];
			adv(x, 2);
			name = read_name(x);
			if (!name || strcmp(name, e->name) != 0) {
				xfail(x, "expected </%s> (opened at line %d), found "
				      "</%s>", e->name, e->line, name ? name : "");
				free(name);
				return TM_EINPUT;
			}
			free(name);
			skip_space(x);
			if (!at(x, ">"))
				return xfail(x, "expected '>' to end </%s>, found %s",
				             e->name, found(x, buf));
			adv(x, 1);
			if (--depth == 0)
				root_done = true;
			continue;
		}
		if (at(x, "<")) {
			char *name;
			bool empty = false;
			int idx;
			if (root_done)
				return xfail(x, "expected nothing after the root "
				             "element, found another element");
			adv(x, 1);
			name = read_name(x);
			if (!name)
				return xfail(x, "expected an element name after "
				             "'<', found %s", found(x, buf));
			if (depth >= NC_MAX_DEPTH) {
				free(name);
				return xfail(x, "elements nested deeper than %d",
				             NC_MAX_DEPTH);
			}
			if (add_element(x, name, depth ? stack[depth - 1] : -1))
				return TM_EINPUT;
			idx = x->d->nn - 1;
			if (read_attrs(x, &x->d->n[idx], &empty))
				return TM_EINPUT;
			/* another kind of file (hwloc XML has text, say):
			 * its root is enough for the message */
			if (!depth && strcmp(x->d->n[idx].name, "system") != 0)
				return 0;
			if (empty) {
				if (!depth)
					root_done = true;
			} else {
				stack[depth++] = idx;
			}
			continue;
		}
		{
			const char *s = x->p;
			int k = 0;
			while (s + k < x->end && k < 16 && s[k] != '<' &&
			       s[k] != '\n')
				k++;
			return xfail(x, "expected an element, found text \"%.*s\"",
			             k, s);
		}
	}
}

/* ---- NCCL topology ------------------------------------------------------ */

static const char *attr(const xn *e, const char *key)
{
	for (int k = 0; k < e->nattr; k++)
		if (strcmp(e->attr[2 * k], key) == 0)
			return e->attr[2 * k + 1];
	return NULL;
}

/* A decimal integer in [lo, hi], the whole string. */
static bool dec(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;
	if (!s || !*s || is_space(*s))
		return false;
	v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* A PCI class "0x030200" (or "030200"); -1 when absent or not hex. */
static long pci_class(const char *s)
{
	char *end;
	long v;
	if (!s || !*s)
		return -1;
	v = strtol(s, &end, 16);
	return *end || v < 0 || v > 0xffffff ? -1 : v;
}

typedef struct nc_gpu {
	int node;       /* the GPU's <pci> element */
	int gpu;        /* its <gpu> element, -1 for a display-class <pci> */
	int dev;        /* the index */
	char *pci;      /* normalised bus id */
	int numa;       /* numaid of the enclosing <cpu>, -1 when unknown */
} nc_gpu;

typedef struct nc_ctx {
	const char *file;
	xdoc d;
	nc_gpu *g;
	int n;
	int ignored;    /* display-class <pci> of another vendor */
	tp_view *v;
	tm_error *err;
} nc_ctx;

static int efail(nc_ctx *c, const xn *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* An attribute value for a message: quoted, at most 40 bytes. The
 * message shows it as tm_text does (tm_vfail_at): a line break, an ESC
 * or a byte that is no UTF-8 becomes an escape, so it stays one line. */
static const char *shown(const char *s, char buf[200])
{
	size_t n = strnlen(s, 41);
	if (n > 40)
		snprintf(buf, 200, "\"%.40s...\"", s);
	else
		snprintf(buf, 200, "\"%s\"", s);
	return buf;
}

static int efail(nc_ctx *c, const xn *e, const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = tm_vfail_at(c->err, TM_EINPUT, c->file, e->line, fmt, ap);
	va_end(ap);
	return rc;
}

static int enclosing(const nc_ctx *c, int i, const char *name)
{
	for (i = c->d.n[i].parent; i >= 0; i = c->d.n[i].parent)
		if (strcmp(c->d.n[i].name, name) == 0)
			return i;
	return -1;
}

static int add_gpu(nc_ctx *c, int node, int gpu, int dev)
{
	const xn *p = &c->d.n[node];
	const char *busid = attr(p, "busid");
	char *pci = busid ? tm_normalise_pci(busid) : NULL;
	int cpu = enclosing(c, node, "cpu");
	nc_gpu *g;
	long numa = -1;
	char q[200];

	if (!pci)
		return efail(c, p, busid ? "<pci> busid %s is not a PCI bus id" :
		             "<pci> of a GPU has no busid%.0s",
		             busid ? shown(busid, q) : "");
	if (cpu >= 0 && attr(&c->d.n[cpu], "numaid") &&
	    !dec(attr(&c->d.n[cpu], "numaid"), -1, 65535, &numa)) {
		free(pci);
		return efail(c, &c->d.n[cpu], "<cpu> numaid %s is not a NUMA "
		             "node number", shown(attr(&c->d.n[cpu], "numaid"), q));
	}
	if (c->n >= TM_MAX_GPUS_PER_NODE) {
		free(pci);
		return efail(c, p, "more than %d GPUs", TM_MAX_GPUS_PER_NODE);
	}
	c->g = xrealloc(c->g, (size_t)(c->n + 1) * sizeof *c->g);
	g = &c->g[c->n++];
	g->node = node;
	g->gpu = gpu;
	g->dev = dev;
	g->pci = pci;
	g->numa = (int)numa;
	return 0;
}

/* GPUs are the <gpu> elements. A file without any (a partial
 * NCCL_TOPO_FILE that NCCL completes from the machine) may still list
 * GPUs as display-class <pci> devices. */
static int find_gpus(nc_ctx *c)
{
	int rc;
	for (int i = 0; i < c->d.nn; i++) {
		const xn *e = &c->d.n[i];
		long dev;
		char q[200];
		if (strcmp(e->name, "gpu") != 0)
			continue;
		if (e->parent < 0 || strcmp(c->d.n[e->parent].name, "pci") != 0)
			return efail(c, e, "expected <gpu> inside a <pci> element, "
			             "found it inside <%s>", e->parent < 0 ? "" :
			             c->d.n[e->parent].name);
		if (!dec(attr(e, "dev"), 0, TM_MAX_GPUS_PER_NODE - 1, &dev))
			return efail(c, e, attr(e, "dev") ? "<gpu> dev %s is not a "
			             "device number (0 to %d)" : "<gpu> has no dev "
			             "attribute%.0s (a device number 0 to %d)",
			             attr(e, "dev") ? shown(attr(e, "dev"), q) : "",
			             TM_MAX_GPUS_PER_NODE - 1);
		rc = add_gpu(c, e->parent, i, (int)dev);
		if (rc)
			return rc;
	}
	if (c->n)
		return 0;
	for (int i = 0; i < c->d.nn; i++) {
		const xn *e = &c->d.n[i];
		long cls = pci_class(attr(e, "class"));
		const char *vendor = attr(e, "vendor");
		if (strcmp(e->name, "pci") != 0 || cls < 0 || (cls >> 16) != 0x03)
			continue;
		if (vendor && pci_class(vendor) != 0x10de) {
			c->ignored++;
			continue;
		}
		rc = add_gpu(c, i, -1, -1);
		if (rc)
			return rc;
	}
	return 0;
}

static int cmp_dev(const void *a, const void *b)
{
	const nc_gpu *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (x->node > y->node) - (x->node < y->node);  /* file order */
}

static int cmp_pci(const void *a, const void *b)
{
	const nc_gpu *x = a, *y = b;
	return strcmp(x->pci, y->pci);
}

static int number_gpus(nc_ctx *c)
{
	bool by_dev = c->g[0].gpu >= 0;

	qsort(c->g, (size_t)c->n, sizeof *c->g, by_dev ? cmp_dev : cmp_pci);
	for (int i = 0; i < c->n; i++) {
		if (!by_dev)
			c->g[i].dev = i;
		for (int j = 0; j < i; j++)
			if (strcmp(c->g[i].pci, c->g[j].pci) == 0)
				return efail(c, &c->d.n[c->g[i].node], "PCI bus id "
				             "%s holds two GPUs", c->g[i].pci);
		if (i && c->g[i].dev == c->g[i - 1].dev)
			return efail(c, &c->d.n[c->g[i].gpu], "GPU dev %d appears "
			             "twice (also at line %d)", c->g[i].dev,
			             c->d.n[c->g[i - 1].gpu].line);
	}
	if (!by_dev)
		tp_note(c->v, "%s has no <gpu> elements: its GPUs are the "
		        "display-class <pci> devices, numbered in PCI bus id "
		        "order", c->file);
	return 0;
}

/* The code nvidia-smi would print, from the nesting alone, as NCCL
 * computes its own path types:
 *   PIX  both GPUs' <pci> elements sit in the same <pci> (one switch);
 *   PXB  their lowest common ancestor is another <pci> (more bridges);
 *   NODE the common ancestor is their <cpu>: two PCIe trees of one NUMA
 *        node. NCCL calls this PHB; the file does not say whether the
 *        trees share a host bridge, so the lower of nvidia-smi's codes;
 *   SYS  different <cpu> elements, or none. */
static int pcie_code(const nc_ctx *c, const nc_gpu *a, const nc_gpu *b)
{
	int pa = c->d.n[a->node].parent;

	if (pa >= 0 && pa == c->d.n[b->node].parent &&
	    strcmp(c->d.n[pa].name, "pci") == 0)
		return TM_LINK_PIX;
	for (int x = pa; x >= 0; x = c->d.n[x].parent)
		for (int y = c->d.n[b->node].parent; y >= 0;
		     y = c->d.n[y].parent)
			if (x == y) {
				if (strcmp(c->d.n[x].name, "pci") == 0)
					return TM_LINK_PXB;
				if (strcmp(c->d.n[x].name, "cpu") == 0)
					return TM_LINK_NODE;
				return TM_LINK_SYS;
			}
	return TM_LINK_SYS;
}

static int gpu_by_pci(const nc_ctx *c, const char *pci)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->g[i].pci, pci) == 0)
			return i;
	return -1;
}

/* NVLink: <nvlink> to a GPU of the file bonds the two (counts from either
 * side; the larger wins if they differ). To an NVSwitch (tclass 0x068000,
 * or a target that is no GPU and has no class) it adds to the GPU's links
 * into the switch fabric; two GPUs on the fabric are joined with the
 * smaller of their link counts, the most either can send through it. To a
 * CPU (tclass 0x068001, POWER) it joins no GPU pair. */
static int read_nvlink(nc_ctx *c)
{
	int n = c->n, nlinks = 0, nself = 0, self_line = 0, nout = 0;
	int out_line = 0;
	int *direct = xcalloc((size_t)n * (size_t)n, sizeof *direct);
	int *swl = xcalloc((size_t)n, sizeof *swl);
	int rc = 0;

	for (int i = 0; i < c->d.nn && !rc; i++) {
		const xn *e = &c->d.n[i];
		const char *target = attr(e, "target");
		long count, cls = pci_class(attr(e, "tclass"));
		char q[200];
		int g = -1, peer;
		char *t;

		if (strcmp(e->name, "nvlink") != 0)
			continue;
		nlinks++;
		for (int k = 0; k < n; k++)
			if (c->g[k].gpu == e->parent)
				g = k;
		if (g < 0) {
			rc = efail(c, e, "expected <nvlink> inside a <gpu> "
			           "element, found it inside <%s>", e->parent < 0 ?
			           "" : c->d.n[e->parent].name);
			break;
		}
		if (!target || !(t = tm_normalise_pci(target))) {
			rc = efail(c, e, target ? "<nvlink> target %s is not a PCI "
			           "bus id" : "<nvlink> has no target%.0s",
			           target ? shown(target, q) : "");
			break;
		}
		if (!dec(attr(e, "count"), 1, NC_MAX_NV, &count)) {
			rc = efail(c, e, "<nvlink> count %s is not a link count "
			           "(1 to %d)", shown(attr(e, "count") ?
			           attr(e, "count") : "", q), NC_MAX_NV);
			free(t);
			break;
		}
		peer = gpu_by_pci(c, t);
		free(t);
		if (peer == g) {
			/* a GPU whose peer is hidden from the VM reports
			 * itself (Azure NC A100 v4) */
			if (!nself++)
				self_line = e->line;
		} else if (cls == 0x068001) {
			continue;
		} else if (cls == 0x068000 || (cls < 0 && peer < 0)) {
			swl[g] += (int)count;
		} else if (peer >= 0) {
			direct[g * n + peer] += (int)count;
		} else if (!nout++) {
			out_line = e->line;
		}
	}
	if (rc) {
		free(direct);
		free(swl);
		return rc;
	}
	if (nself)
		tp_note(c->v, "%s:%d: %d <nvlink> element%s name%s own GPU as "
		        "target: ignored, the peer is not in the file", c->file,
		        self_line, nself, nself == 1 ? "" : "s",
		        nself == 1 ? "s its" : " their");
	if (nout)
		tp_note(c->v, "%s:%d: %d <nvlink> element%s target%s no GPU or "
		        "NVSwitch of the file: ignored", c->file, out_line, nout,
		        nout == 1 ? "" : "s", nout == 1 ? "s" : "");
	if (!nlinks)
		tp_note(c->v, "no NVLink information in %s: pairs are given "
		        "PCIe/SMP codes only", c->file);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			int k = direct[i * n + j] > direct[j * n + i] ?
			        direct[i * n + j] : direct[j * n + i];
			if (i == j)
				continue;
			if (swl[i] && swl[j])
				k += swl[i] < swl[j] ? swl[i] : swl[j];
			if (k) {
				c->v->link[i * n + j] = TM_LINK_NV;
				c->v->nv[i * n + j] = (unsigned char)(k > 255 ? 255 : k);
			}
		}
	free(direct);
	free(swl);
	return 0;
}

static int read_topology(nc_ctx *c)
{
	const xn *root = &c->d.n[0];
	int rc;

	if (strcmp(root->name, "graphs") == 0)
		return tm_fail(c->err, TM_EINPUT, "%s: an NCCL graph file "
		               "(NCCL_GRAPH_FILE), not a topology file", c->file);
	if (strcmp(root->name, "system") != 0)
		return tm_fail(c->err, TM_EINPUT, "%s: not an NCCL topology file "
		               "(root element <%s>, expected <system>%s)", c->file,
		               root->name, strcmp(root->name, "topology") == 0 ?
		               ": hwloc XML?" : "");
	rc = find_gpus(c);
	if (rc)
		return rc;
	if (!c->n && c->ignored)
		return tm_fail(c->err, TM_EINPUT, "%s: lists no NVIDIA GPUs (%d "
		               "other GPU%s ignored)", c->file, c->ignored,
		               c->ignored == 1 ? "" : "s");
	if (!c->n)
		return tm_fail(c->err, TM_EINPUT, "%s: lists no GPUs (no <gpu> "
		               "element, no display-class <pci>): a partial "
		               "NCCL_TOPO_FILE that NCCL completes from the machine; "
		               "give thermap an NCCL_TOPO_DUMP_FILE instead", c->file);
	rc = number_gpus(c);
	if (rc)
		return rc;
	for (int i = 0; i < c->n; i++) {
		tp_gpu *t = tp_add_gpu(c->v);
		t->index = c->g[i].dev;
		t->pci = xstrdup(c->g[i].pci);
		t->numa = c->g[i].numa;
	}
	c->v->ignored = c->ignored;
	if (c->ignored)
		tp_note(c->v, "%s: %d non-NVIDIA GPU%s ignored", c->file,
		        c->ignored, c->ignored == 1 ? "" : "s");
	tp_alloc_links(c->v);
	for (int i = 0; i < c->n; i++)
		for (int j = 0; j < c->n; j++)
			if (i != j)
				c->v->link[i * c->n + j] = (unsigned char)
					pcie_code(c, &c->g[i], &c->g[j]);
	/* PCIe/SMP codes come from the nesting, never from a report */
	c->v->nv_only = true;
	if (c->g[0].gpu < 0) {
		tp_note(c->v, "no NVLink information in %s: pairs are given "
		        "PCIe/SMP codes only", c->file);
		return 0;
	}
	return read_nvlink(c);
}

int tp_read_nccl(const char *file, tp_view *v, tm_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	rc = tm_read_file(file, NC_MAX_BYTES, &buf, &len, err);
	if (rc) {
		tp_view_init(v, "nccl", file);
		tp_view_clear(v);
		return rc;
	}
	rc = tp_read_nccl_text(file, buf, len, v, err);
	free(buf);
	return rc;
}

int tp_read_nccl_text(const char *file, const char *buf, size_t len,
                      tp_view *v, tm_error *err)
{
	nc_ctx c;
	xp x;
	int rc;

	tp_view_init(v, "nccl", file);
	if (len > NC_MAX_BYTES) {
		tp_view_clear(v);
		return tm_fail(err, TM_EINPUT, "%s: file is %zu bytes; the limit "
		               "is %u", file, len, NC_MAX_BYTES);
	}
	memset(&c, 0, sizeof c);
	c.file = file;
	c.v = v;
	c.err = err;
	memset(&x, 0, sizeof x);
	x.file = file;
	x.p = buf;
	x.end = buf + len;
	x.line = 1;
	x.d = &c.d;
	x.err = err;
	if (memchr(buf, '\0', len)) {
		x.p = memchr(buf, '\0', len);
		x.line = 1;
		for (const char *q = buf; q < x.p; q++)
			x.line += *q == '\n';
		rc = xfail(&x, "expected text, found a NUL byte: a binary file?");
	} else {
		rc = xml_parse(&x);
	}
	if (!rc)
		rc = read_topology(&c);
	for (int i = 0; i < c.n; i++)
		free(c.g[i].pci);
	free(c.g);
	xdoc_free(&c.d);
	if (rc)
		tp_view_clear(v);  /* nothing is left to free on error */
	return rc;
}
