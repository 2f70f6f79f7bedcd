/*
 * read.c — the top of the telemetry side: the entry points and the
 * dispatcher. tl_read_file finds a file's format from its first bytes
 * (a byte order mark, JSON, Prometheus text, an nvidia_gpu_exporter
 * capture, dcgmi dmon, nvidia-smi dmon, else CSV) and hands it to its reader; tl_read_inputs
 * reads the inputs of one run into a sink; tm_profile_from_telemetry
 * makes the profile and the summary of what was read; a recording
 * (compare --replay) is read once and profiled window by window.
 *
 * A new format is a reader file beside csv.c, dmon.c and prom.c, and one
 * test in tl_read_file. Below it: the readers, the sink, the statistics.
 */
#include <stdlib.h>
#include <string.h>

#include "telemetry/telemetry.h"

/* ---- one file: its format ------------------------------------------------ */

static bool starts(const char *p, size_t n, const char *pre)
{
	size_t k = strlen(pre);
	return n >= k && memcmp(p, pre, k) == 0;
}

/* Is this the start of a Prometheus exposition: a metric name followed by
 * '{' or a space? */
static bool prom_line(const char *p, size_t n)
{
	size_t i = 0;
	while (i < n && (p[i] == '_' || p[i] == ':' ||
	                 (p[i] >= 'a' && p[i] <= 'z') ||
	                 (p[i] >= 'A' && p[i] <= 'Z') ||
	                 (i > 0 && p[i] >= '0' && p[i] <= '9')))
		i++;
	return i > 0 && i < n && (p[i] == '{' || p[i] == ' ') &&
	       !tl_contains(p, i, ",");
}

int tl_read_file(tl_src *src)
{
	tl_lines L;
	const char *p;
	size_t n;
	int rc;
	char *fhost = NULL;
	const char *opt_host = src->host;

	if ((rc = src->text ? tl_lines_openb(&L, src->file, src->text,
	                                     src->len, src->err)
	                    : tl_lines_open(&L, src->file, src->err)))
		return rc;
	n = tl_lines_peek(&L, &p);
	if (starts(p, n, "\xef\xbb\xbf")) {   /* a byte order mark */
		p += 3;
		n -= 3;
		L.start += 3;
	}
	while (n && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++, n--;
	if (n == 0) {
		rc = tm_fail(src->err, TM_EINPUT, "%s: empty file", src->file);
		goto out;
	}
	{
		const char *nl = memchr(p, '\n', n);
		if (memchr(p, '\0', nl ? (size_t)(nl - p) : n))
			goto binary;
	}
	if (0) {
binary:
		rc = tm_fail(src->err, TM_EINPUT, "%s: binary data (NUL "
		             "bytes), not a telemetry log", src->file);
		goto out;
	}
	if (*p == '{' || *p == '[') {
		char *text;
		size_t len;
		tl_lines_close(&L);
		if (src->text) {
			if (src->len > TM_MAX_INPUT_BYTES)
				return tm_fail(src->err, TM_EINPUT, "%s: file is %zu "
				               "bytes; the limit is %u", src->file,
				               src->len, TM_MAX_INPUT_BYTES);
			return tl_read_qrange(src, src->text, src->len);
		}
		if ((rc = tm_read_file(src->file, TM_MAX_INPUT_BYTES, &text, &len,
		                       src->err)))
			return rc;
		rc = tl_read_qrange(src, text, len);
		free(text);
		return rc;
	}
	if (!starts(p, n, "####") &&
	    (tl_contains(p, n < 512 ? n : 512, "==============NVSMI LOG") ||
	     tl_contains(p, n < 512 ? n : 512, "Clocks Event Reasons") ||
	     tl_contains(p, n < 512 ? n : 512, "Clocks Throttle Reasons"))) {
		rc = tm_fail(src->err, TM_EINPUT, "%s: `nvidia-smi -q` output: "
		             "one snapshot without a time series; log with "
		             "nvidia-smi --query-gpu=... --format=csv -l 1 "
		             "instead", src->file);
		goto out;
	}
	if (starts(p, n, "# HELP ") || starts(p, n, "# TYPE ") ||
	    prom_line(p, n)) {
		rc = tl_read_prom(src, &L);
		goto out;
	}
	if (!src->host) {
		fhost = tl_host_from_file(src->file);
		src->host = fhost;
	}
	if (starts(p, n, "####") && tl_contains(p, n, "nvidia_gpu_exporter")) {
		rc = tl_read_capture(src, &L);
	} else if (starts(p, n, "#Entity")) {
		rc = tl_read_dcgmi(src, &L);
	} else if (starts(p, n, "#Date") || starts(p, n, "# gpu") ||
	           starts(p, n, "#gpu") || starts(p, n, "# Date")) {
		rc = tl_read_dmon(src, &L);
	} else {
		rc = tl_read_csv(src, &L);
	}
	if (!rc && fhost && src->ngpus > 0)
		snprintf(src->fhost, sizeof src->fhost, "%s", fhost);
out:
	tl_lines_close(&L);
	src->host = opt_host;
	free(fhost);
	return rc;
}

/* ---- the summary: what was read (thermap.profile-summary/1) -------------- */

static void summary(strbuf *out, const tl_src *srcs, int n, long ngpus,
                    const tl_couple_report *cr)
{
	jw w;
	long rows = 0, samples = 0;
	jw_init(&w, out);
	jw_obj(&w, NULL, false);
	jw_str(&w, "format", "thermap.profile-summary/1");
	jw_arr(&w, "files", false);
	for (int i = 0; i < n; i++) {
		const tl_src *s = &srcs[i];
		char buf[80];
		rows += s->rows;
		samples += s->samples;
		jw_obj(&w, NULL, false);
		jw_str(&w, "file", s->file);
		jw_str(&w, "format", s->format ? s->format : "unknown");
		jw_int(&w, "rows", s->rows);
		jw_int(&w, "samples", s->samples);
		jw_obj(&w, "skipped", true);
		for (int k = 0; k < TL_NSKIP; k++)
			if (s->skipped[k])
				jw_int(&w, tl_skip_names[k], s->skipped[k]);
		jw_end_obj(&w);
		jw_int(&w, "gpus", s->ngpus);
		if (isnan(s->t_first)) {
			jw_null(&w, "first");
			jw_null(&w, "last");
		} else {
			tl_iso_time(buf, sizeof buf, s->t_first);
			jw_str(&w, "first", buf);
			tl_iso_time(buf, sizeof buf, s->t_last);
			jw_str(&w, "last", buf);
		}
		jw_num(&w, "span_s", s->t_last - s->t_first, 3);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_int(&w, "rows", rows);
	jw_int(&w, "samples", samples);
	jw_int(&w, "gpus", ngpus);
	if (cr)
		tl_couple_summary(&w, cr);
	jw_end_obj(&w);
	sb_add(out, "\n");
}

/* ---- the inputs of one run ---------------------------------------------- */

int tl_read_inputs(tl_sink *k, const tm_tele_input *in, int n, tl_src *srcs,
                   bool warn, tm_error *err)
{
	bool nq = false;
	int rc = 0;

	for (int i = 0; i < n && !rc; i++) {
		tl_src *s = &srcs[i];
		s->sink = k;
		s->file = in[i].file;
		s->host = in[i].host;
		s->fields = in[i].fields;
		s->err = err;
		s->t_first = s->t_last = NAN;
		rc = tl_read_file(s);
		if (!rc && warn)
			tl_file_warnings(k, s);
		if (!rc && s->format && !strcmp(s->format,
		                                "prometheus query_range"))
			nq = true;
	}
	/* query_range series are merged across files before pushing; the
	 * tl_src of each file stays valid until here */
	if (!rc && nq)
		rc = tl_qrange_flush(k, err);
	return rc;
}

int tl_profile_text(const tm_profile *p, const char *from, size_t limit,
                    char **out, tm_error *err)
{
	char *text = tm_profile_text(p);
	size_t len = strlen(text);
	if (len > limit) {
		free(text);
		return tm_fail(err, TM_EINPUT, "%s: the profile of %d GPUs would "
		               "be %zu bytes, over the %zu every command reads "
		               "back: profile the hosts in parts", from, p->ngpus,
		               len, limit);
	}
	*out = text;
	return 0;
}

/* The profile of what k holds, or TM_EINPUT when it holds no samples
 * (of the n inputs in). */
static int profile_of(tl_sink *k, const tm_tele_input *in, int n,
                      tm_profile **out, tm_error *err)
{
	int rc = tl_sink_profile(k, out, err);
	if (!rc && (*out)->ngpus == 0) {
		tm_profile_free(*out);
		*out = NULL;
		rc = tm_fail(err, TM_EINPUT, "%s%s: no GPU samples to profile",
		             n > 1 ? "inputs ending with " : "",
		             n ? in[n - 1].file : "(no input)");
	}
	return rc;
}

int tm_profile_from_telemetry(const tm_tele_input *in, int n,
                              const tm_tele_opts *o, char **profile,
                              char **summ, tm_error *err)
{
	return tm_profile_from_telemetry_ex(in, n, o, NULL, profile, summ, err);
}

int tm_profile_from_telemetry_ex(const tm_tele_input *in, int n,
                                 const tm_tele_opts *o, const char *phases,
                                 char **profile, char **summ, tm_error *err)
{
	tl_opts to = { o->from, o->to, o->from_rel, o->to_rel,
	               o->interval_ms / 1000.0 };
	tl_sink *k = tl_sink_new(&to);
	tl_src *srcs = xcalloc((size_t)(n ? n : 1), sizeof *srcs);
	tm_profile *p = NULL;
	tl_phases *ph = NULL;
	int rc;

	*profile = *summ = NULL;
	/* the phases first: a broken phases file costs no reading of logs */
	if (phases && (rc = tl_phases_read(phases, &ph, err)))
		goto out;
	tl_sink_phases(k, ph);
	if (!(rc = tl_read_inputs(k, in, n, srcs, true, err)) &&
	    !(rc = profile_of(k, in, n, &p, err)) &&
	    !(rc = tl_profile_text(p, n > 0 ? in[0].file : "profile",
	                           TM_MAX_INPUT_BYTES, profile, err))) {
		strbuf sb;
		sb_init(&sb);
		summary(&sb, srcs, n, p->ngpus, tl_sink_couple_report(k));
		*summ = sb.s;
	}
out:
	tm_profile_free(p);
	tl_sink_free(k);
	tl_phases_free(ph);
	free(srcs);
	return rc;
}

/* ---- a Prometheus server ----------------------------------------------- */

int tm_profile_from_prometheus(const tm_prom_query *q, char **profile,
                               char **summ, tm_error *err)
{
	tl_opts open = { NAN, NAN, false, false, 0 };
	tl_sink *k = tl_sink_new(&open);
	tl_src src = { 0 };
	tm_profile *p = NULL;
	int rc;

	*profile = *summ = NULL;
	src.sink = k;
	src.file = q->url;
	src.host = q->host;
	src.err = err;
	src.t_first = src.t_last = NAN;
	if ((rc = tl_read_prometheus(k, &src, q, err)))
		goto out;
	src.format = "prometheus api";
	tl_file_warnings(k, &src);
	if ((rc = tl_sink_profile(k, &p, err)))
		goto out;
	if (p->ngpus == 0) {
		/* GPUs named, every value of them blank */
		rc = tm_fail(err, TM_EINPUT, "%s: no GPU samples to profile",
		             q->url);
		goto out;
	}
	if (!(rc = tl_profile_text(p, q->url, TM_MAX_INPUT_BYTES, profile,
	                           err))) {
		strbuf sb;
		sb_init(&sb);
		summary(&sb, &src, 1, p->ngpus, NULL);
		*summ = sb.s;
	}
out:
	tm_profile_free(p);
	tl_sink_free(k);
	return rc;
}

/* ---- a recording, read once ----------------------------------------------- */

struct tl_recording {
	const tm_tele_input *in;  /* borrowed */
	int n;
	tl_src *srcs;             /* the files as read (GPUs name them) */
	tl_sink *k;               /* its GPUs and every sample */
};

int tl_recording_read(const tm_tele_input *in, int n, tl_recording **out,
                      tm_error *err)
{
	tl_opts whole = { NAN, NAN, false, false, 0 };
	tl_recording *r = xcalloc(1, sizeof *r);
	int rc;

	r->in = in;
	r->n = n;
	r->srcs = xcalloc((size_t)(n ? n : 1), sizeof *r->srcs);
	r->k = tl_sink_new(&whole);
	tl_sink_record(r->k);
	if ((rc = tl_read_inputs(r->k, in, n, r->srcs, true, err))) {
		tl_recording_free(r);
		r = NULL;
	}
	*out = r;
	return rc;
}

void tl_recording_free(tl_recording *r)
{
	if (!r)
		return;
	tl_sink_free(r->k);
	free(r->srcs);
	free(r);
}

double tl_recording_span(const tl_recording *r)
{
	double span = 0;
	for (int i = 0; i < r->n; i++) {
		const tl_src *s = &r->srcs[i];
		char buf[64];
		double d;
		if (isnan(s->t_first))
			continue;
		/* to the millisecond, as the summary writes span_s */
		snprintf(buf, sizeof buf, "%.3f", s->t_last - s->t_first);
		d = strtod(buf, NULL);
		if (d > span)
			span = d;
	}
	return span;
}

int tl_recording_profile(const tl_recording *r, const tm_tele_opts *o,
                         tm_profile **out, tm_error *err)
{
	tl_opts to = { NAN, NAN, false, false, 0 };
	tl_sink *k;
	int rc;

	if (o)
		to = (tl_opts){ o->from, o->to, o->from_rel, o->to_rel, 0 };
	k = tl_sink_new(&to);
	tl_sink_replay(k, r->k);
	rc = profile_of(k, r->in, r->n, out, err);
	tl_sink_free(k);
	return rc;
}
