/*
 * plancheck.c — plan.json read for `thermap check`, which checks a plan
 * on its own terms and so shares no reading code with planread.c (the
 * reader of diff, replan and calibrate). Nothing is judged here: each
 * value is copied as the file has it, with what jansson's accessors say
 * of a value that is absent or of another type (NULL for a string, 0 for
 * an integer or number read as such, NAN where check reads a number that
 * may be absent, -1 for the length of what is not an array), so that
 * check.c alone decides what is wrong, in its own order, with its own
 * messages. Only a file that cannot be read, is not JSON or is not a
 * thermap.plan fails here, with jin_load's message.
 *
 * Layer: format (above base). check.c sees the struct, never jansson.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format/format.h"

/* obj[key] as a copied string, NULL when absent or not a string */
static char *str(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s ? xstrdup(s) : NULL;
}

/* obj[key] as json_integer_value reads it: 0 when not an integer */
static long long ival(json_t *obj, const char *key)
{
	return json_integer_value(json_object_get(obj, key));
}

/* obj[key] as a number, NAN when absent or not a number */
static double num(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The length of an array, -1 when v is not one. */
static long alen(json_t *v)
{
	return json_is_array(v) ? (long)json_array_size(v) : -1;
}

static void read_rank(json_t *o, tm_pc_rank *d)
{
	json_t *gi = json_object_get(o, "gpu_index");
	d->rank = ival(o, "rank");
	d->host = str(o, "host");
	d->uuid = str(o, "uuid");
	d->gpu_index_ok = json_is_integer(gi);
	d->gpu_index = json_integer_value(gi);
	d->node_rank = ival(o, "node_rank");
	d->local_rank = ival(o, "local_rank");
	for (int k = 0; k < TM_NDIM; k++)
		d->coord[k] = ival(o, tm_dim_names[k]);
}

static void read_layers(json_t *root, tm_pc_layers *L)
{
	json_t *o = json_object_get(root, "layers"), *ch;
	L->present = o != NULL;
	ch = json_object_get(o, "chunks");
	L->n = alen(ch);
	if (L->n > 0) {
		L->chunks = xmalloc(sizeof *L->chunks * (size_t)L->n);
		for (long c = 0; c < L->n; c++) {
			json_t *v = json_array_get(ch, (size_t)c);
			L->chunks[c] = json_is_integer(v) ? json_integer_value(v) : -1;
		}
	}
	L->layout = str(o, "pipeline_model_parallel_layout");
}

static void read_constraints(json_t *root, tm_pc_constraints *C)
{
	json_t *o = json_object_get(root, "constraints");
	json_t *mm = json_object_get(o, "max_moves");
	C->present = json_is_object(o);
	C->tp_nvlink = json_is_true(json_object_get(o, "tp_nvlink"));
	C->pp_nvlink = json_is_true(json_object_get(o, "pp_nvlink"));
	C->max_moves_ok = json_is_integer(mm);
	C->max_moves = json_integer_value(mm);
	C->max_temp_c = num(o, "max_temp_c");
}

static void read_predicted(json_t *root, tm_pc_predicted *R)
{
	json_t *o = json_object_get(root, "predicted");
	json_t *ar = json_object_get(o, "allreduce_ms");
	R->iteration_ms = json_number_value(json_object_get(o,
	                                                    "iteration_ms"));
	R->peak_temp_c = json_number_value(json_object_get(o, "peak_temp_c"));
	R->allreduce_present = ar != NULL;
	R->allreduce_ok = json_is_number(ar);
	R->allreduce_ms = json_number_value(ar);
	ar = json_object_get(o, "alltoall_ms");
	R->alltoall_present = ar != NULL;
	R->alltoall_ok = json_is_number(ar);
	R->alltoall_ms = json_number_value(ar);
}

static void read_decision(json_t *root, tm_pc_decision *D)
{
	json_t *o = json_object_get(root, "decision");
	json_t *g = json_object_get(o, "gain");
	json_t *mg = json_object_get(o, "min_gain");
	D->verdict = str(o, "verdict");
	D->ref_breaks = json_is_true(json_object_get(o,
	                                             "reference_breaks_policy"));
	D->time_pct = num(g, "time_pct");
	D->time_sd_pct = num(g, "time_sd_pct");
	D->peak_c = num(g, "peak_c");
	D->peak_sd_c = num(g, "peak_sd_c");
	D->min_time_pct = num(mg, "time_pct");
	D->min_peak_c = num(mg, "peak_c");
	D->exchange_c_per_pct = num(o, "exchange_c_per_pct");
}

static void read_replan(json_t *root, tm_pc_replan *R)
{
	json_t *o = json_object_get(root, "replan");
	json_t *from = json_object_get(o, "from");
	json_t *mv = json_object_get(o, "moves");
	R->present = o != NULL;
	R->previous = str(o, "previous");
	R->nfrom = alen(from);
	if (R->nfrom > 0) {
		R->from = xcalloc((size_t)R->nfrom, sizeof *R->from);
		for (long r = 0; r < R->nfrom; r++) {
			const char *s = json_string_value(json_array_get(from,
			                                                 (size_t)r));
			R->from[r] = s ? xstrdup(s) : NULL;
		}
	}
	R->nmoves = alen(mv);
	if (R->nmoves > 0) {
		R->moves = xcalloc((size_t)R->nmoves, sizeof *R->moves);
		for (long i = 0; i < R->nmoves; i++) {
			json_t *e = json_array_get(mv, (size_t)i);
			json_t *x = json_object_get(e, "rank");
			R->moves[i].rank = json_is_integer(x) ? json_integer_value(x)
			                                      : -1;
			R->moves[i].to = str(e, "to");
		}
	}
}

int tm_plancheck_load(const char *file, tm_plancheck *P, tm_error *err)
{
	json_t *root = NULL, *in, *ranks;
	int rc;

	memset(P, 0, sizeof *P);
	if ((rc = jin_load(file, "thermap.plan", &root, NULL, err)))
		return rc;
	P->id = str(root, "id");
	in = json_object_get(root, "inputs");
	P->inputs.present = json_is_object(in);
	P->inputs.cluster = str(in, "cluster");
	P->inputs.job = str(in, "job");
	read_constraints(root, &P->cons);
	read_layers(root, &P->layers);
	ranks = json_object_get(root, "ranks");
	P->nranks = alen(ranks);
	if (P->nranks > 0) {
		P->ranks = xcalloc((size_t)P->nranks, sizeof *P->ranks);
		for (long r = 0; r < P->nranks; r++)
			read_rank(json_array_get(ranks, (size_t)r), &P->ranks[r]);
	}
	read_predicted(root, &P->pred);
	read_decision(root, &P->dec);
	read_replan(root, &P->replan);
	json_decref(root);
	return 0;
}

void tm_plancheck_clear(tm_plancheck *P)
{
	free(P->id);
	free(P->inputs.cluster);
	free(P->inputs.job);
	free(P->layers.chunks);
	free(P->layers.layout);
	for (long r = 0; r < P->nranks; r++) {
		free(P->ranks[r].host);
		free(P->ranks[r].uuid);
	}
	free(P->ranks);
	free(P->dec.verdict);
	free(P->replan.previous);
	for (long r = 0; r < P->replan.nfrom; r++)
		free(P->replan.from[r]);
	free(P->replan.from);
	for (long i = 0; i < P->replan.nmoves; i++)
		free(P->replan.moves[i].to);
	free(P->replan.moves);
	memset(P, 0, sizeof *P);
}
