/*
 * svg.h — `thermap compare --svg FILE`: the placements of several policies
 * as one standalone SVG 1.1 picture, one panel per policy, one grid row per
 * host, one cell per GPU coloured by predicted temperature.
 *
 * Does: write SVG text into a strbuf or, atomically, a file; one colour
 * scale over every panel (fixed by default, stated in the legend), so that
 * equal colours mean equal °C; label every cell; show all text as tm_text
 * does (valid UTF-8, control characters as escapes) and escape it for XML;
 * print numbers with fixed decimals, so the same input gives the same
 * bytes. Does not: read anything or validate host names.
 *
 * The ramp runs from #4575b4 (the scale's low end) to #d73027 (its high
 * end); unused GPUs are #d9d9d9 with an en dash for their temperature.
 */
#ifndef THERMAP_SVG_H
#define THERMAP_SVG_H

#include "internal.h"

/* One panel: a placement policy's GPUs as a grid, one row per host, one
 * cell per GPU, filled by predicted temperature, labelled with the stage. */
typedef struct tm_svg_panel {
	const char *title;      /* policy name */
	const char *subtitle;   /* e.g. "412.3 ms/iter, peak 67.2 °C", may be NULL */
	int nhosts;
	const char *const *host;/* nhosts host names */
	const int *ngpus;       /* per host */
	const double *temp_c;   /* flat over hosts in order: predicted °C, NAN = GPU not used */
	const char *const *label;/* flat: stage label like "s3" or "s3/d1", NULL = unused */
} tm_svg_panel;

/* The colour scale, °C: fixed bounds, or (either NAN, or NULL) from the
 * coolest to the hottest GPU pictured. */
typedef struct tm_svg_scale {
	double lo, hi;
} tm_svg_scale;
#define TM_SVG_LO_C 30.0   /* compare's default: room to slowdown */
#define TM_SVG_HI_C 90.0

/* Renders the panels side by side (wrapping to a new row of panels after 4)
 * with one shared colour scale (legend) over all panels; into b. Each cell
 * shows its GPU's index, stage and temperature; past 32 hosts a grid row
 * holds several hosts and a cell the hottest of their GPUs there. */
void tm_svg_render(strbuf *b, const tm_svg_panel *p, int npanels,
                   const tm_svg_scale *scale);
/* Renders and writes atomically (tm_write_file_atomic). */
int tm_svg_write(const char *path, const tm_svg_panel *p, int npanels,
                 const tm_svg_scale *scale, tm_error *err);

#endif
