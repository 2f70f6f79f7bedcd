/*
 * planread.c — reads a plan directory's plan.json as untrusted input, for
 * the commands that start from a plan (diff, replan): the id, the job it
 * was made for, every rank's GPU and coordinates, and replan's reasons.
 * Every rejection is one line naming DIR/plan.json and the JSON path.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "format/format.h"


void tm_plan_doc_clear(tm_plan_doc *P)
{
	free(P->file);
	free(P->r);
	free(P->why);
	json_decref(P->root);
	memset(P, 0, sizeof *P);
}

/* obj[key] as a string borrowed from the document: NULL when absent (not
 * JF_REQ) or null (JF_NULL). Strings with a NUL would print cut short. */
static int bstr(const jin *J, json_t *obj, const char *path, const char *key,
                int flags, const char **out)
{
	json_t *v = json_object_get(obj, key);
	*out = NULL;
	if (!v)
		return flags & JF_REQ ? jin_fail(J, path, key, "missing; expected "
		                                 "a string") : 0;
	if (json_is_null(v))
		return flags & JF_NULL ? 0 : jin_fail(J, path, key, "is null; "
		                                      "expected a string");
	if (!json_is_string(v))
		return jin_fail(J, path, key, "expected a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return jin_fail(J, path, key, "string contains a NUL character");
	*out = json_string_value(v);
	return 0;
}

static bool plan_id_ok(const char *s)
{
	size_t n = strlen(s);
	if (n != 16)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static int read_rank(const jin *J, json_t *o, int r, tm_plan_rank *d)
{
	char path[48];
	int v, rc;
	snprintf(path, sizeof path, "ranks[%d]", r);
	if (!json_is_object(o))
		return jin_fail(J, path, NULL, "expected an object");
	if ((rc = jin_int(J, o, path, "rank", JF_REQ, 0, TM_MAX_RANKS, &v)))
		return rc;
	if (v != r)
		return jin_fail(J, path, "rank", "%d; expected %d (one entry per "
		                "rank, in rank order)", v, r);
	if ((rc = bstr(J, o, path, "host", JF_REQ, &d->host)))
		return rc;
	/* host names and UUIDs are printed as they are: only sane ones */
	if (!tm_valid_host(d->host))
		return jin_fail(J, path, "host", "expected a host name of "
		                "letters, digits, '.', '-' and '_'");
	if ((rc = jin_int(J, o, path, "node_rank", JF_REQ, 0, TM_MAX_RANKS,
	                  &d->node)) ||
	    (rc = jin_int(J, o, path, "local_rank", JF_REQ, 0, TM_MAX_RANKS,
	                  &d->local)) ||
	    (rc = jin_int(J, o, path, "gpu_index", JF_REQ, 0, TM_MAX_RANKS,
	                  &d->gpu)) ||
	    (rc = bstr(J, o, path, "uuid", JF_NULL, &d->uuid)))
		return rc;
	if (d->uuid && !tm_valid_uuid(d->uuid))
		return jin_fail(J, path, "uuid", "expected \"GPU-…\", \"MIG-…\" "
		                "or null");
	for (int k = 0; k < TM_NDIM; k++)
		if ((rc = jin_int(J, o, path, tm_dim_names[k], JF_REQ, 0, TM_MAX_RANKS,
		                  &d->coord[k])))
			return rc;
	d->temp = NAN;
	return jin_num(J, o, path, "predicted_temp_c", JF_NULL, -300, 10000,
	               &d->temp);
}

/* The "replan" section of a plan made by `thermap replan`: the plan it
 * replaces and one reason per moved rank (the first entry of a rank). */
static int read_replan(const jin *J, json_t *root, tm_plan_doc *P)
{
	json_t *rp, *moves;
	int rc;
	if ((rc = jin_obj(J, root, "", "replan", JF_NULL, &rp)) || !rp)
		return rc;
	if ((rc = bstr(J, rp, "replan", "previous", JF_NULL, &P->previous)) ||
	    (rc = jin_arr(J, rp, "replan", "moves", JF_NULL, &moves)) || !moves)
		return rc;
	if (json_array_size(moves) > (size_t)P->n)
		return jin_fail(J, "replan", "moves", "%zu entries for %d ranks",
		                json_array_size(moves), P->n);
	P->why = xcalloc((size_t)P->n, sizeof *P->why);
	for (size_t i = 0; i < json_array_size(moves); i++) {
		json_t *m = json_array_get(moves, i);
		const char *why;
		char path[48];
		int r;
		snprintf(path, sizeof path, "replan.moves[%zu]", i);
		if (!json_is_object(m))
			return jin_fail(J, path, NULL, "expected an object");
		if ((rc = jin_int(J, m, path, "rank", JF_REQ, 0, P->n - 1, &r)) ||
		    (rc = bstr(J, m, path, "why", JF_REQ | JF_NULL, &why)))
			return rc;
		if (!P->why[r])
			P->why[r] = why;
	}
	return 0;
}

/* The document in P->root, read into P; P->file names it. */
static int plan_doc_read(tm_plan_doc *P, tm_error *err)
{
	json_t *inputs, *ranks;
	jin J;
	int rc;

	J.file = P->file;
	J.err = err;
	if ((rc = bstr(&J, P->root, "", "id", JF_REQ, &P->id)))
		return rc;
	if (!plan_id_ok(P->id))
		return jin_fail(&J, "", "id", "expected 16 lowercase hex digits");
	if ((rc = jin_obj(&J, P->root, "", "inputs", JF_REQ, &inputs)) ||
	    (rc = bstr(&J, inputs, "inputs", "job", JF_REQ, &P->job)) ||
	    (rc = jin_arr(&J, P->root, "", "ranks", JF_REQ, &ranks)))
		return rc;
	if (json_array_size(ranks) == 0)
		return jin_fail(&J, "", "ranks", "empty; expected one entry per "
		                "rank");
	if (json_array_size(ranks) > TM_MAX_RANKS)
		return jin_fail(&J, "", "ranks", "%zu entries; at most %d are read",
		                json_array_size(ranks), TM_MAX_RANKS);
	P->n = (int)json_array_size(ranks);
	P->r = xcalloc((size_t)P->n, sizeof *P->r);
	for (int r = 0; r < P->n; r++)
		if ((rc = read_rank(&J, json_array_get(ranks, (size_t)r), r,
		                    &P->r[r])))
			return rc;
	return read_replan(&J, P->root, P);
}

int tm_plan_doc_load(const char *dir, tm_plan_doc *P, tm_error *err)
{
	struct stat st;
	size_t dl = strlen(dir);
	strbuf f;
	int rc;

	memset(P, 0, sizeof *P);
	if (dl == 0 || dl > 4000)
		return tm_fail(err, TM_EINPUT, "plan directory name is empty or "
		               "too long");
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	sb_init(&f);
	sb_addf(&f, "%.*s%splan.json", (int)dl, dir,
	        dir[dl - 1] == '/' ? "" : "/");
	P->file = f.s;
	if (stat(dir, &st) != 0)
		return tm_fail(err, TM_EINPUT, "%s: %s; expected a plan directory",
		               dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return tm_fail(err, TM_EINPUT, "%s: not a directory; expected a "
		               "plan directory", dir);
	if (stat(P->file, &st) != 0 && errno == ENOENT)
		return tm_fail(err, TM_EINPUT, "%s: missing; %s is not a plan "
		               "directory", P->file, dir);
	if ((rc = jin_load(P->file, "thermap.plan", &P->root, NULL, err)))
		return rc;
	return plan_doc_read(P, err);
}

int tm_plan_doc_loadb(const char *name, const char *text, size_t len,
                      tm_plan_doc *P, tm_error *err)
{
	int rc;
	memset(P, 0, sizeof *P);
	P->file = xstrdup(name);
	if ((rc = jin_loadb(P->file, text, len, "thermap.plan", &P->root,
	                    err)))
		return rc;
	return plan_doc_read(P, err);
}

int tm_plan_doc_chunks(const tm_plan_doc *P, int **chunks, int *n,
                       tm_error *err)
{
	json_t *lay = json_object_get(json_object_get(P->root, "layers"),
	                              "chunks");
	int *v;

	*chunks = NULL;
	*n = 0;
	if (!lay)
		return 0;
	if (!json_is_array(lay) || json_array_size(lay) == 0 ||
	    json_array_size(lay) > TM_MAX_RANKS)
		return tm_fail(err, TM_EINPUT, "%s: layers.chunks: expected an "
		               "array of layer counts", P->file);
	v = xmalloc(sizeof(int) * json_array_size(lay));
	for (size_t c = 0; c < json_array_size(lay); c++) {
		json_t *x = json_array_get(lay, c);
		if (!json_is_integer(x) || json_integer_value(x) < 0 ||
		    json_integer_value(x) > 100000) {
			free(v);
			return tm_fail(err, TM_EINPUT, "%s: layers.chunks[%zu]: "
			               "expected a layer count", P->file, c);
		}
		v[c] = (int)json_integer_value(x);
	}
	*chunks = v;
	*n = (int)json_array_size(lay);
	return 0;
}

bool tm_plan_text_is_plan(const char *text, size_t len)
{
	json_t *root = json_loadb(text, len, 0, NULL);
	const char *f = json_string_value(json_object_get(root, "format"));
	bool ok = f && !strncmp(f, "thermap.plan/", 13);
	json_decref(root);
	return ok;
}
