/*
 * svg.c — the SVG picture of `thermap compare --svg`. Plain text, no
 * library: every size is a whole pixel and every temperature is printed
 * with "%.1f" (the program never calls setlocale), so output is
 * byte-deterministic and never holds nan or inf.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

enum {
	CELL_W = 60, CELL_H = 36, /* GPU index, stage and °C in each cell */
	GAP = 2,                  /* between cells */
	MARGIN = 16,              /* around the picture and between panels */
	HEAD = 44,                /* title and subtitle above a panel's grid */
	PER_ROW = 4,              /* panels side by side before wrapping */
	CHAR_W = 7,               /* generous width of one 12px character */
	MAX_ROWS = 32,            /* past this many hosts, rows of several */
	LEGEND_W = 300, LEGEND_H = 76
};

/* Cool blue to hot red through pale yellow (ColorBrewer RdYlBu, reversed):
 * ordered in lightness on each side, readable under black text, and the
 * ends stay distinct for colour-blind readers. */
static const unsigned char ramp[][3] = {
	{ 0x45, 0x75, 0xb4 }, { 0x91, 0xbf, 0xdb }, { 0xe0, 0xf3, 0xf8 },
	{ 0xff, 0xff, 0xbf }, { 0xfe, 0xe0, 0x90 }, { 0xfc, 0x8d, 0x59 },
	{ 0xd7, 0x30, 0x27 },
};
#define NRAMP ((int)(sizeof ramp / sizeof ramp[0]))
#define UNUSED_FILL "#d9d9d9"

/* t in [0, 1] to "#rrggbb", linear in sRGB between neighbouring stops */
static void colour(double t, char out[8])
{
	double pos, f;
	int i, c[3];
	if (!(t > 0))  /* also NAN */
		t = 0;
	if (t > 1)
		t = 1;
	pos = t * (NRAMP - 1);
	i = (int)pos;
	if (i > NRAMP - 2)
		i = NRAMP - 2;
	f = pos - i;
	for (int k = 0; k < 3; k++)
		c[k] = (int)(ramp[i][k] + (ramp[i + 1][k] - ramp[i][k]) * f + 0.5);
	snprintf(out, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

/* XML text and attribute values alike, of the text as tm_text shows it:
 * valid UTF-8 without control characters, which XML 1.0 does not allow
 * (a tab or line break would not show either). U+FFFE and U+FFFF, no XML
 * characters, become U+FFFD. */
static void esc(strbuf *b, const char *s)
{
	char one[2] = { 0, 0 };
	strbuf t;
	sb_init(&t);
	sb_add_text(&t, s);
	for (const char *p = t.s; *p; p++) {
		const unsigned char *u = (const unsigned char *)p;
		switch (*p) {
		case '&': sb_add(b, "&amp;"); break;
		case '<': sb_add(b, "&lt;"); break;
		case '>': sb_add(b, "&gt;"); break;
		case '"': sb_add(b, "&quot;"); break;
		case '\'': sb_add(b, "&apos;"); break;
		default:
			if (u[0] == 0xef && u[1] == 0xbf && (u[2] & 0xfe) == 0xbe) {
				sb_add(b, "\xef\xbf\xbd");
				p += 2;
				break;
			}
			one[0] = *p;
			sb_add(b, one);
		}
	}
	sb_free(&t);
}

static int slen(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n > 1000 ? 1000 : (int)n;  /* bytes: over-counts UTF-8, fine */
}

/* Hosts per grid row: 1, or as many as keep a panel within MAX_ROWS
 * rows (a cell then stands for the GPUs at its position in those hosts,
 * and shows the hottest of them). */
static int per_row(const tm_svg_panel *p)
{
	return p->nhosts <= MAX_ROWS ? 1 :
	       (p->nhosts + MAX_ROWS - 1) / MAX_ROWS;
}

static int nrows_of(const tm_svg_panel *p)
{
	int k = per_row(p);
	return p->nhosts > 0 ? (p->nhosts + k - 1) / k : 0;
}

/* The row's label: the host, or the first and last of its hosts. */
static void row_label(strbuf *b, const tm_svg_panel *p, int r)
{
	int k = per_row(p), h0 = r * k, h1 = h0 + k - 1;
	if (h1 >= p->nhosts)
		h1 = p->nhosts - 1;
	esc(b, p->host[h0]);
	if (h1 > h0) {
		sb_add(b, " … ");
		esc(b, p->host[h1]);
		sb_addf(b, " (%d)", h1 - h0 + 1);
	}
}

static int host_col(const tm_svg_panel *p)
{
	int w = 0;
	for (int r = 0; r < nrows_of(p); r++) {
		strbuf b;
		int n;
		sb_init(&b);
		row_label(&b, p, r);
		n = slen(b.s);
		sb_free(&b);
		if (n > w)
			w = n;
	}
	return (w < 4 ? 4 : w) * CHAR_W + 12;
}

static int panel_w(const tm_svg_panel *p)
{
	int g = 0, w;
	for (int h = 0; h < p->nhosts; h++)
		if (p->ngpus[h] > g)
			g = p->ngpus[h];
	w = host_col(p) + g * CELL_W;
	if (slen(p->title) * (CHAR_W + 2) > w)  /* the title is 14px bold */
		w = slen(p->title) * (CHAR_W + 2);
	if (slen(p->subtitle) * CHAR_W > w)
		w = slen(p->subtitle) * CHAR_W;
	return w;
}

static int panel_h(const tm_svg_panel *p)
{
	return HEAD + nrows_of(p) * CELL_H;
}

/* One cell: GPU position i of the hosts h0..h1-1 (first flat index of
 * each in first[]): the hottest of their GPUs there, and how many are in
 * use. */
static void render_cell(strbuf *b, const tm_svg_panel *p, const int *first,
                        int h0, int h1, int i, int x, int y,
                        const tm_svg_scale *sc)
{
	double t = NAN;
	const char *l = NULL;
	int used = 0, have = 0;
	char fill[8];

	for (int h = h0; h < h1; h++) {
		double x1;
		if (i >= p->ngpus[h])
			continue;
		have++;
		x1 = p->temp_c[first[h] + i];
		if (!isfinite(x1))
			continue;
		used++;
		if (!(x1 <= t)) {
			t = x1;
			l = p->label ? p->label[first[h] + i] : NULL;
		}
	}
	if (!have)
		return;
	if (used)
		colour((t - sc->lo) / (sc->hi - sc->lo), fill);
	sb_addf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
	        "fill=\"%s\"><title>", x, y, CELL_W - GAP, CELL_H - GAP,
	        used ? fill : UNUSED_FILL);
	if (h1 - h0 == 1) {
		esc(b, p->host[h0]);
		sb_addf(b, " GPU %d: ", i);
		esc(b, l ? l : "unused");
	} else {
		sb_addf(b, "GPU %d of %d hosts: %d in use", i, h1 - h0, used);
	}
	if (used)
		sb_addf(b, ", %s%.1f °C", h1 - h0 > 1 ? "hottest " : "", t);
	sb_add(b, "</title></rect>\n");
	/* the GPU (and its stage), then its temperature, on the cell itself */
	sb_addf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" "
	        "text-anchor=\"middle\">%d", x + (CELL_W - GAP) / 2, y + 14, i);
	if (h1 - h0 == 1 && l) {
		sb_add(b, " ");
		esc(b, l);
	} else if (h1 - h0 > 1 && used) {
		sb_addf(b, " ×%d", used);
	}
	sb_add(b, "</text>\n");
	sb_addf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" "
	        "font-weight=\"bold\" text-anchor=\"middle\">",
	        x + (CELL_W - GAP) / 2, y + 29);
	if (used)
		sb_addf(b, "%.1f", t);
	else
		sb_add(b, "–");
	sb_add(b, "</text>\n");
}

static void render_panel(strbuf *b, const tm_svg_panel *p, int x0, int y0,
                         const tm_svg_scale *sc)
{
	int hw = host_col(p), k = per_row(p), g = 0;
	int *first = xmalloc(sizeof(int) * (size_t)(p->nhosts + 1));

	for (int h = 0, f = 0; h < p->nhosts; h++) {
		first[h] = f;
		f += p->ngpus[h];
		if (p->ngpus[h] > g)
			g = p->ngpus[h];
	}
	sb_addf(b, "<g transform=\"translate(%d,%d)\">\n", x0, y0);
	sb_add(b, "<text x=\"0\" y=\"16\" font-size=\"14\" font-weight=\"bold\">");
	esc(b, p->title);
	sb_add(b, "</text>\n");
	if (p->subtitle) {
		sb_add(b, "<text x=\"0\" y=\"34\" font-size=\"12\">");
		esc(b, p->subtitle);
		sb_add(b, "</text>\n");
	}
	for (int r = 0; r < nrows_of(p); r++) {
		int y = HEAD + r * CELL_H, h0 = r * k, h1 = h0 + k;
		if (h1 > p->nhosts)
			h1 = p->nhosts;
		sb_addf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" "
		        "text-anchor=\"end\">", hw - 6, y + 22);
		row_label(b, p, r);
		sb_add(b, "</text>\n");
		for (int i = 0; i < g; i++)
			render_cell(b, p, first, h0, h1, i, hw + i * CELL_W, y, sc);
	}
	sb_add(b, "</g>\n");
	free(first);
}

/* The legend: the colour bar with a tick every 10 °C, what the colours
 * mean, and how many hosts a row holds when that is more than one. */
static void render_legend(strbuf *b, int x0, int y0, const tm_svg_scale *sc,
                          bool fixed, bool any, int most_per_row)
{
	sb_addf(b, "<g id=\"legend\" transform=\"translate(%d,%d)\">\n", x0,
	        y0);
	sb_addf(b, "<rect width=\"%d\" height=\"14\" fill=\"url(#ramp)\" "
	        "stroke=\"#888888\"/>\n", LEGEND_W);
	if (any || fixed) {
		double step = 10, t0 = ceil(sc->lo / step) * step;
		for (double t = t0; t <= sc->hi + 1e-9; t += step) {
			int x = (int)lround((t - sc->lo) / (sc->hi - sc->lo) * LEGEND_W);
			sb_addf(b, "<line x1=\"%d\" y1=\"14\" x2=\"%d\" y2=\"18\" "
			        "stroke=\"#444444\"/><text x=\"%d\" y=\"30\" "
			        "font-size=\"11\" text-anchor=\"middle\">%.0f</text>\n",
			        x, x, x, t);
		}
		sb_addf(b, "<text x=\"0\" y=\"46\" font-size=\"12\">predicted "
		        "steady temperature, °C, simulated; %s scale %.1f to "
		        "%.1f °C%s</text>\n", fixed ? "fixed" : "the pictured GPUs'",
		        sc->lo, sc->hi, fixed ? " (beyond it: the end colours)" : "");
	} else {
		sb_add(b, "<text x=\"0\" y=\"30\" font-size=\"12\">no GPU in "
		       "use</text>\n");
	}
	sb_addf(b, "<rect x=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>\n"
	        "<text x=\"%d\" y=\"12\" font-size=\"12\">unused</text>\n",
	        LEGEND_W + 16, UNUSED_FILL, LEGEND_W + 34);
	sb_add(b, "<text x=\"0\" y=\"62\" font-size=\"12\">each cell: GPU "
	       "index and stage (sS, or sS/dD with data parallelism), its "
	       "°C");
	if (most_per_row > 1)
		sb_addf(b, "; past %d hosts a row holds up to %d, and a cell the "
		        "hottest of their GPUs at that position (×N in use)",
		        MAX_ROWS, most_per_row);
	sb_add(b, "</text>\n</g>\n");
}

void tm_svg_render(strbuf *b, const tm_svg_panel *p, int npanels,
                   const tm_svg_scale *scale)
{
	tm_svg_scale sc = { INFINITY, -INFINITY };
	bool fixed = scale && isfinite(scale->lo) && isfinite(scale->hi) &&
	             scale->hi > scale->lo;
	int colw = 0, width, height = MARGIN, nrows, k = 0, most = 1;
	char c[8];

	if (npanels < 0)
		npanels = 0;
	/* one scale over every panel, so that colours compare across them:
	 * fixed, or the coolest to the hottest GPU pictured */
	for (int i = 0; i < npanels; i++) {
		int n = 0;
		for (int h = 0; h < p[i].nhosts; h++)
			n += p[i].ngpus[h];
		for (int g = 0; g < n; g++)
			if (isfinite(p[i].temp_c[g])) {
				sc.lo = fmin(sc.lo, p[i].temp_c[g]);
				sc.hi = fmax(sc.hi, p[i].temp_c[g]);
			}
		if (panel_w(&p[i]) > colw)
			colw = panel_w(&p[i]);
		if (per_row(&p[i]) > most)
			most = per_row(&p[i]);
	}
	bool any = sc.lo <= sc.hi;
	if (fixed) {
		sc = *scale;
	} else if (any && sc.hi - sc.lo < 1) {
		/* no spread to show: a degree around it, the middle colour */
		double m = (sc.lo + sc.hi) / 2;
		sc.lo = m - 0.5;
		sc.hi = m + 0.5;
	}
	/* equal columns keep the panels of different rows aligned */
	nrows = (npanels + PER_ROW - 1) / PER_ROW;
	width = MARGIN + (npanels < PER_ROW ? npanels : PER_ROW) * (colw + MARGIN);
	if (width < LEGEND_W + 2 * MARGIN + 120)
		width = LEGEND_W + 2 * MARGIN + 120;
	if (most > 1 && width < 1000)
		width = 1000;  /* the legend's line about rows of hosts */
	for (int r = 0; r < nrows; r++) {
		int rh = 0;
		for (int i = r * PER_ROW; i < npanels && i < (r + 1) * PER_ROW; i++)
			rh = panel_h(&p[i]) > rh ? panel_h(&p[i]) : rh;
		height += rh + MARGIN;
	}
	height += LEGEND_H;

	sb_add(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	sb_addf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
	        "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	        "font-family=\"sans-serif\">\n", width, height, width, height);
	sb_add(b, "<title>thermap: predicted GPU temperature by placement "
	       "policy</title>\n");
	sb_add(b, "<defs><linearGradient id=\"ramp\">");
	for (int i = 0; i < NRAMP; i++) {
		colour((double)i / (NRAMP - 1), c);
		sb_addf(b, "<stop offset=\"%.3f\" stop-color=\"%s\"/>",
		        (double)i / (NRAMP - 1), c);
	}
	sb_add(b, "</linearGradient></defs>\n");
	sb_addf(b, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
	        width, height);

	height = MARGIN;
	for (int r = 0; r < nrows; r++) {
		int rh = 0;
		for (int j = 0; j < PER_ROW && k < npanels; j++, k++) {
			render_panel(b, &p[k], MARGIN + j * (colw + MARGIN), height,
			             &sc);
			rh = panel_h(&p[k]) > rh ? panel_h(&p[k]) : rh;
		}
		height += rh + MARGIN;
	}
	render_legend(b, MARGIN, height, &sc, fixed, any, most);
	sb_add(b, "</svg>\n");
}

int tm_svg_write(const char *path, const tm_svg_panel *p, int npanels,
                 const tm_svg_scale *scale, tm_error *err)
{
	strbuf b;
	int rc;
	sb_init(&b);
	tm_svg_render(&b, p, npanels, scale);
	rc = tm_write_file_atomic(path, b.s, b.len, err);
	sb_free(&b);
	return rc;
}
