/*
 * svg.h — `thermap compare --svg FILE`: the placements of several policies
 * as one standalone SVG 1.1 picture, one panel per policy, one grid row per
 * host, one cell per GPU coloured by predicted temperature.
 *
 * Does: write SVG text into a strbuf or, atomically, a file; one colour
 * scale over every panel, so that equal colours mean equal °C; show all
 * text as tm_text does (valid UTF-8, control characters as escapes) and
 * escape it for XML; print numbers with fixed decimals, so the same input
 * gives the same bytes. Does not: read anything or validate host names.
 *
 * The ramp runs from #4575b4 (coolest) to #d73027 (hottest); unused GPUs
 * are #d9d9d9 with no label.
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

/* Renders the panels side by side (wrapping to a new row of panels after 4)
 * with one shared colour scale (legend) over all finite temperatures of all
 * panels; into b. */
void tm_svg_render(strbuf *b, const tm_svg_panel *p, int npanels);
/* Renders and writes atomically (tm_write_file_atomic). */
int tm_svg_write(const char *path, const tm_svg_panel *p, int npanels,
                 tm_error *err);

#endif
