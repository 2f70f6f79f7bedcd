/* layout.h — Megatron-Core `--pipeline-model-parallel-layout` strings and the
 * `--decoder-first/last-pipeline-num-layers` uneven split.
 *
 * Does: parse a layout string into per-stage layer counts, write a layout
 * back as a short canonical string, build the layout thermap emits from
 * decoder layers per virtual stage, check a layout against a model the way
 * Megatron does, and tell whether per-stage layer counts can be written
 * with the two uneven-split flags instead. Portable C11, no global state,
 * no printing; errors come back as one line in a caller's buffer.
 * Does not: know about layer costs, GPUs or placement; read files; accept
 * every string Megatron's regex-based parser accepts (docs/layout.md lists
 * the few quirks refused on purpose). The grammar, the messages and the
 * flag rule: docs/layout.md.
 *
 * Stage order is Megatron's: stage i holds virtual chunk i / PP of pipeline
 * rank i % PP, that is index = vpp_chunk * PP + pp_rank.
 */
#ifndef TM_LAYOUT_H
#define TM_LAYOUT_H
#include <stdbool.h>
#include <stddef.h>

/* Most layers plus '|' separators a layout may expand to; parse refuses
 * more, so a hostile "t*999999999" costs no memory or time. */
#define TM_LAYOUT_MAX 1000000

/* One stage. Within a stage Megatron builds layers in the order E, t, m, L
 * whatever the string says, and its checks refuse any other order, so
 * counts keep everything that matters. */
typedef struct tm_layout_stage {
	int emb;   /* E: embedding layers (count) */
	int dec;   /* t: transformer decoder layers (count) */
	int mtp;   /* m: multi-token-prediction layers (count) */
	int loss;  /* L: loss layers (count) */
} tm_layout_stage;

typedef struct tm_layout {
	int nstages;          /* PP x VPP stages, in Megatron's order (above) */
	tm_layout_stage *st;  /* nstages entries, owned; free with tm_layout_free() */
} tm_layout;

/* Parses s into *out (overwritten, not freed first). Returns 0, or -1 with
 * out empty and a one-line message "column N: what was expected" in err
 * (1-based column of the byte at fault; N = strlen(s) + 1 at the end). */
int tm_layout_parse(const char *s, tm_layout *out, char *err, size_t errlen);

/* Frees what l owns and empties it; l may be NULL or already empty. */
void tm_layout_free(tm_layout *l);

/* Returns a new canonical string for l (free with free()): runs of a layer
 * as x*N from N = 3, runs of identical stages as (s|)*N where that is
 * shorter. NULL for a layout parse could not have produced (no stage, one
 * empty stage, a negative count, past TM_LAYOUT_MAX) or out of memory. */
char *tm_layout_format(const tm_layout *l);

/* Builds into *out the layout for pp * vpp virtual stages holding layers[i]
 * decoder layers (i in stage order above): E in the first stage, m (when
 * mtp) and L in the last. Returns 0, or -1 for bad arguments or out of
 * memory (out left empty). */
int tm_layout_from_layers(int pp, int vpp, const int *layers, bool mtp, tm_layout *out);

/* Checks l as Megatron's validate_layer_layout does, for a model of
 * num_layers decoder layers and mtp_layers MTP layers run with pp x vpp
 * stages. Returns 0, or -1 with one line in err. */
int tm_layout_check(const tm_layout *l, int pp, int vpp, int num_layers, int mtp_layers,
		    char *err, size_t errlen);

/* Megatron's uneven split: fills layers[pp * vpp] (stage order) with the
 * decoder layers per virtual stage that num_layers get from
 * --decoder-first-pipeline-num-layers first and
 * --decoder-last-pipeline-num-layers last (-1: flag not given). Returns 0,
 * or -1 where Megatron refuses the combination. */
int tm_layout_split_flags(int pp, int vpp, int num_layers, int first, int last, int *layers);

/* Whether layers[pp * vpp] (stage order) is what Megatron builds with the
 * default split or the two flags. Returns 1 and sets *first and *last
 * (-1: flag not needed; the fewest flags win, first before last), or 0
 * when no flag values give these counts (bad arguments also give 0). */
int tm_layout_uneven_flags(int pp, int vpp, const int *layers, int *first, int *last);

#endif
