/*
 * jsonin.c — the edge between jansson and our structs: loading a document
 * with a size bound and duplicate keys rejected, checking its "format", and
 * reading one field at a time with its type and range checked, so that every
 * rejection names the file, the JSON path and what was expected. Unknown
 * fields are warned about with a suggestion, never dropped silently.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format/format.h"

static void fullpath(char *out, size_t n, const char *path, const char *key)
{
	if (!key)
		snprintf(out, n, "%s", path && *path ? path : "(top level)");
	else if (path && *path)
		snprintf(out, n, "%s.%s", path, key);
	else
		snprintf(out, n, "%s", key);
}

int jin_fail(const jin *J, const char *path, const char *key,
             const char *fmt, ...)
{
	char p[512], m[600];
	va_list ap;
	fullpath(p, sizeof p, path, key);
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	return tm_fail(J->err, TM_EINPUT, "%s: %s: %s", J->file, p, m);
}

int jin_loadb(const char *file, const char *text, size_t len,
              const char *format, json_t **root, tm_error *err)
{
	json_error_t je;
	json_t *r, *f;
	const char *fs, *slash;
	size_t klen = strlen(format);
	jin J = { file, err };

	r = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!r) {
		/* jansson quotes input bytes; keep the message on one line */
		for (char *c = je.text; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		if (je.line > 0)
			return tm_fail(err, TM_EINPUT, "%s:%d:%d: %s", file,
			               je.line, je.column, je.text);
		return tm_fail(err, TM_EINPUT, "%s: %s", file, je.text);
	}
	if (!json_is_object(r)) {
		json_decref(r);
		return jin_fail(&J, "", NULL, "expected a JSON object");
	}
	f = json_object_get(r, "format");
	if (!f) {
		json_decref(r);
		return jin_fail(&J, "", "format", "missing; expected \"%s/1\"",
		                format);
	}
	fs = json_string_value(f);
	if (!fs) {
		json_decref(r);
		return jin_fail(&J, "", "format", "expected the string \"%s/1\"",
		                format);
	}
	slash = strrchr(fs, '/');
	if (!slash || (size_t)(slash - fs) != klen ||
	    strncmp(fs, format, klen) != 0) {
		int e = jin_fail(&J, "", "format",
		                 "\"%.100s\" is not a %s document (expected \"%s/1\")",
		                 fs, format, format);
		json_decref(r);
		return e;
	}
	if (strcmp(slash + 1, "1") != 0 && strncmp(slash + 1, "1.", 2) != 0) {
		int e = jin_fail(&J, "", "format",
		                 "version \"%.40s\" is not supported (expected \"%s/1\")",
		                 slash + 1, format);
		json_decref(r);
		return e;
	}
	*root = r;
	return 0;
}

int jin_load(const char *file, const char *format, json_t **root,
             char sha[72], tm_error *err)
{
	char *text;
	size_t len;
	char hex[65];
	int rc = tm_read_file(file, TM_MAX_INPUT_BYTES, &text, &len, err);
	if (rc)
		return rc;
	if (sha) {
		tm_sha256_hex(text, len, hex);
		snprintf(sha, 72, "sha256:%s", hex);
	}
	rc = jin_loadb(file, text, len, format, root, err);
	free(text);
	return rc;
}

void jin_unknown(const jin *J, json_t *obj, const char *path,
                 const char *const *known)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		const char *best = NULL;
		int bestd = 3;
		bool found = false;
		char p[512];
		/* known keys first: the edit distances are for the rare
		 * unknown one (they were half the load time of a large
		 * profile) */
		for (const char *const *k = known; *k && !found; k++)
			found = strcmp(*k, key) == 0;
		(void)v;
		if (found)
			continue;
		for (const char *const *k = known; *k; k++) {
			int d = tm_levenshtein(key, *k);
			if (d < bestd) {
				bestd = d;
				best = *k;
			}
		}
		fullpath(p, sizeof p, path, key);
		if (best)
			tm_warn("%s: %s: unknown field; did you mean \"%s\"?",
			        J->file, p, best);
		else
			tm_warn("%s: %s: unknown field, ignored", J->file, p);
	}
}

/* Fetches obj[key]; 1 when absent (or null and JF_NULL), 0 when present,
 * -1 when missing but required, -2 when null but not allowed (nothing is
 * reported: the caller says what it expected, see absent()). */
static int look(json_t *obj, const char *key, int flags, json_t **v)
{
	*v = json_object_get(obj, key);
	if (!*v)
		return flags & JF_REQ ? -1 : 1;
	if (json_is_null(*v))
		return flags & JF_NULL ? 1 : -2;
	return 0;
}

/* The failure of a negative look(): what is missing or null, and what was
 * expected. */
static int absent(const jin *J, const char *path, const char *key, int r,
                  const char *what)
{
	return jin_fail(J, path, key, r == -1 ? "missing; expected %s" :
	                "is null; expected %s", what);
}

/* Fetches obj[key]; 1 when absent (or null and JF_NULL), 0 when present. */
static int get(const jin *J, json_t *obj, const char *path, const char *key,
               int flags, json_t **v, const char *what)
{
	int r = look(obj, key, flags, v);
	return r < 0 ? -absent(J, path, key, r, what) : r;
}

int jin_obj(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, json_t **out)
{
	json_t *v;
	int r = get(J, obj, path, key, flags, &v, "an object");
	*out = NULL;
	if (r)
		return r < 0 ? -r : 0;
	if (!json_is_object(v))
		return jin_fail(J, path, key, "expected an object");
	*out = v;
	return 0;
}

int jin_arr(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, json_t **out)
{
	json_t *v;
	int r = get(J, obj, path, key, flags, &v, "an array");
	*out = NULL;
	if (r)
		return r < 0 ? -r : 0;
	if (!json_is_array(v))
		return jin_fail(J, path, key, "expected an array");
	*out = v;
	return 0;
}

/* The range texts of numbers are made only for a message: a valid number
 * is read without formatting anything (most of a large profile or cluster
 * is numbers). */
static void range_text(char *buf, size_t n, double lo, double hi)
{
	snprintf(buf, n, "a number from %g to %g", lo, hi);
}

static void int_range_text(char *buf, size_t n, long lo, long hi)
{
	snprintf(buf, n, "an integer from %ld to %ld", lo, hi);
}

int jin_num(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, double lo, double hi, double *out)
{
	json_t *v;
	char what[96];
	double d;
	int r = look(obj, key, flags, &v);
	if (r > 0) {
		if (v)   /* null, allowed */
			*out = NAN;
		return 0;
	}
	if (r == 0 && json_is_number(v)) {
		d = json_number_value(v);
		*out = d;
		if (d >= lo && d <= hi)
			return 0;
	}
	range_text(what, sizeof what, lo, hi);
	if (r < 0)
		return absent(J, path, key, r, what);
	if (!json_is_number(v))
		return jin_fail(J, path, key, "expected %s", what);
	return jin_fail(J, path, key, "%g is out of range; expected %s", *out,
	                what);
}

int jin_int(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, long lo, long hi, int *out)
{
	json_t *v;
	char what[96];
	double d = 0;
	int r = look(obj, key, flags, &v);
	if (r > 0)
		return 0;
	if (r == 0 && json_is_number(v)) {
		d = json_number_value(v);
		if (d == floor(d) && d >= (double)lo && d <= (double)hi) {
			*out = (int)d;
			return 0;
		}
	}
	int_range_text(what, sizeof what, lo, hi);
	if (r < 0)
		return absent(J, path, key, r, what);
	if (!json_is_number(v))
		return jin_fail(J, path, key, "expected %s", what);
	if (d != floor(d))
		return jin_fail(J, path, key, "%g is not an integer; expected %s",
		                d, what);
	return jin_fail(J, path, key, "%g is out of range; expected %s", d,
	                what);
}

int jin_str(const jin *J, json_t *obj, const char *path, const char *key,
            int flags, char **out)
{
	json_t *v;
	int r = get(J, obj, path, key, flags, &v, "a string");
	if (r)
		return r < 0 ? -r : 0;
	if (!json_is_string(v))
		return jin_fail(J, path, key, "expected a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return jin_fail(J, path, key, "string contains a NUL character");
	*out = xstrdup(json_string_value(v));
	return 0;
}

int jin_bool(const jin *J, json_t *obj, const char *path, const char *key,
             int flags, bool *out)
{
	json_t *v;
	int r = get(J, obj, path, key, flags, &v, "true or false");
	if (r)
		return r < 0 ? -r : 0;
	if (!json_is_boolean(v))
		return jin_fail(J, path, key, "expected true or false");
	*out = json_is_true(v);
	return 0;
}
