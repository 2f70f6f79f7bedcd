/*
 * svg.c — the SVG picture of `thermap compare --svg`. Plain text, no
 * library: every size is a whole pixel and every temperature is printed
 * with "%.1f" (the program never calls setlocale), so output is
 * byte-deterministic and never holds nan or inf.
 */
#include <string.h>

#include "svg.h"

enum {
	CELL_W = 44, CELL_H = 28, /* fixed, so 8192 GPUs stay readable */
	GAP = 2,                  /* between cells */
	MARGIN = 16,              /* around the picture and between panels */
	HEAD = 44,                /* title and subtitle above a panel's grid */
	PER_ROW = 4,              /* panels side by side before wrapping */
	CHAR_W = 7,               /* generous width of one 12px character */
	LEGEND_W = 240, LEGEND_H = 56
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

static int host_col(const tm_svg_panel *p)
{
	int w = 0;
	for (int h = 0; h < p->nhosts; h++)
		if (slen(p->host[h]) > w)
			w = slen(p->host[h]);
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
	return HEAD + (p->nhosts > 0 ? p->nhosts : 0) * CELL_H;
}

static void render_panel(strbuf *b, const tm_svg_panel *p, int x0, int y0,
                         double lo, double hi)
{
	int hw = host_col(p), k = 0;
	char fill[8];

	sb_addf(b, "<g transform=\"translate(%d,%d)\">\n", x0, y0);
	sb_add(b, "<text x=\"0\" y=\"16\" font-size=\"14\" font-weight=\"bold\">");
	esc(b, p->title);
	sb_add(b, "</text>\n");
	if (p->subtitle) {
		sb_add(b, "<text x=\"0\" y=\"34\" font-size=\"12\">");
		esc(b, p->subtitle);
		sb_add(b, "</text>\n");
	}
	for (int h = 0; h < p->nhosts; h++) {
		int y = HEAD + h * CELL_H;
		sb_addf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" "
		        "text-anchor=\"end\">", hw - 6, y + 18);
		esc(b, p->host[h]);
		sb_add(b, "</text>\n");
		for (int i = 0; i < p->ngpus[h]; i++, k++) {
			double t = p->temp_c[k];
			const char *l = p->label ? p->label[k] : NULL;
			int x = hw + i * CELL_W, used = isfinite(t);

			/* min == max: no spread to show, so the middle colour */
			if (used)
				colour(hi > lo ? (t - lo) / (hi - lo) : 0.5, fill);
			sb_addf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
			        "fill=\"%s\"><title>", x, y, CELL_W - GAP,
			        CELL_H - GAP, used ? fill : UNUSED_FILL);
			esc(b, p->host[h]);
			sb_addf(b, " GPU %d: ", i);
			esc(b, l ? l : "unused");
			if (used)
				sb_addf(b, ", %.1f °C", t);
			sb_add(b, "</title></rect>\n");
			if (l) {
				sb_addf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" "
				        "text-anchor=\"middle\">",
				        x + (CELL_W - GAP) / 2, y + 17);
				esc(b, l);
				sb_add(b, "</text>\n");
			}
		}
	}
	sb_add(b, "</g>\n");
}

void tm_svg_render(strbuf *b, const tm_svg_panel *p, int npanels)
{
	double lo = INFINITY, hi = -INFINITY;
	int colw = 0, width, height = MARGIN, nrows, k = 0;
	char c[8];

	if (npanels < 0)
		npanels = 0;
	/* one scale over every panel, so that colours compare across them */
	for (int i = 0; i < npanels; i++) {
		int n = 0;
		for (int h = 0; h < p[i].nhosts; h++)
			n += p[i].ngpus[h];
		for (int g = 0; g < n; g++)
			if (isfinite(p[i].temp_c[g])) {
				lo = fmin(lo, p[i].temp_c[g]);
				hi = fmax(hi, p[i].temp_c[g]);
			}
		if (panel_w(&p[i]) > colw)
			colw = panel_w(&p[i]);
	}
	/* equal columns keep the panels of different rows aligned */
	nrows = (npanels + PER_ROW - 1) / PER_ROW;
	width = MARGIN + (npanels < PER_ROW ? npanels : PER_ROW) * (colw + MARGIN);
	if (width < LEGEND_W + 2 * MARGIN + 120)
		width = LEGEND_W + 2 * MARGIN + 120;
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
			             lo, hi);
			rh = panel_h(&p[k]) > rh ? panel_h(&p[k]) : rh;
		}
		height += rh + MARGIN;
	}

	sb_addf(b, "<g id=\"legend\" transform=\"translate(%d,%d)\">\n",
	        MARGIN, height);
	sb_addf(b, "<rect width=\"%d\" height=\"14\" fill=\"url(#ramp)\" "
	        "stroke=\"#888888\"/>\n", LEGEND_W);
	if (lo <= hi) {
		sb_addf(b, "<text x=\"0\" y=\"30\" font-size=\"12\">%.1f °C"
		        "</text>\n", lo);
		sb_addf(b, "<text x=\"%d\" y=\"30\" font-size=\"12\" "
		        "text-anchor=\"end\">%.1f °C</text>\n", LEGEND_W, hi);
	} else {
		sb_add(b, "<text x=\"0\" y=\"30\" font-size=\"12\">no GPU in "
		       "use</text>\n");
	}
	sb_addf(b, "<rect x=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>\n"
	        "<text x=\"%d\" y=\"12\" font-size=\"12\">unused</text>\n",
	        LEGEND_W + 16, UNUSED_FILL, LEGEND_W + 34);
	sb_add(b, "</g>\n</svg>\n");
}

int tm_svg_write(const char *path, const tm_svg_panel *p, int npanels,
                 tm_error *err)
{
	strbuf b;
	int rc;
	sb_init(&b);
	tm_svg_render(&b, p, npanels);
	rc = tm_write_file_atomic(path, b.s, b.len, err);
	sb_free(&b);
	return rc;
}
