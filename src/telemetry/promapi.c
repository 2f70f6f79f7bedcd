/*
 * promapi.c — `thermap profile --prometheus`: the DCGM series a
 * Prometheus server keeps, read through its HTTP API instead of from
 * query_range files. It plans the queries (which of prom.c's metrics the
 * server has, which hosts, how the window is cut), sends them through
 * libcurl with a timeout and bounded retries, and hands every answer to
 * tl_read_qrange, the query_range file reader itself: the API and the
 * files share one parser, so the profile of the API is the profile of
 * the same points saved as files (tests/profile/prometheus.sh holds it).
 *
 * Memory stays with the sink's GPUs: the points of one batch of hosts and
 * one chunk of time (every metric of it, so that a GPU's sample at one
 * time is whole) are pushed and freed before the next batch is asked
 * for. Batches and chunks partition GPUs and times, so each GPU still
 * gets its samples in time order, and the sink orders the GPUs at the
 * end: the pushes of one big query_range merge and of these batches make
 * the same profile.
 *
 * It parses no JSON itself (prom.c does), and is the one file that sees
 * libcurl (tests/layers.sh).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "telemetry/telemetry.h"

/* ---- the plan: step, window, chunks, batches, selectors ------------------ */

long long tl_prom_step_ms(long long w_ms)
{
	long long s = 15000;
	/* more than TL_PROM_MAX_POINTS points at 15 s: the smallest whole
	 * second that keeps them within it */
	if (w_ms / s + 1 > TL_PROM_MAX_POINTS)   /* w / s < 11,000 */
		s = (w_ms / (TL_PROM_MAX_POINTS * 1000LL) + 1) * 1000;
	return s;
}

void tl_prom_last(long long now_ms, long long last_ms, long long step_ms,
                  long long *from_ms, long long *to_ms)
{
	/* on the step's grid, so that runs a little apart ask for the same
	 * points, as dashboards do */
	*to_ms = now_ms / step_ms * step_ms;
	*from_ms = *to_ms - last_ms;
}

long long tl_prom_npoints(long long from_ms, long long to_ms,
                          long long step_ms)
{
	return to_ms < from_ms ? 0 : (to_ms - from_ms) / step_ms + 1;
}

void tl_prom_plan(long long npoints, long budget, long long *per_chunk,
                  long *hosts_per_batch)
{
	long long per = npoints, h;
	if (per > TL_PROM_MAX_POINTS)
		per = TL_PROM_MAX_POINTS;
	if (per > budget / TL_PROM_GPUS_PER_HOST)
		per = budget / TL_PROM_GPUS_PER_HOST;
	if (per < 1)
		per = 1;
	h = budget / (TL_PROM_GPUS_PER_HOST * per);
	*per_chunk = per;
	*hosts_per_batch = h < 1 ? 1 : h > TL_MAX_GPUS ? TL_MAX_GPUS : (long)h;
}

void tl_prom_chunk(long long from_ms, long long step_ms, long long npoints,
                   long long per_chunk, long long i, long long *start_ms,
                   long long *end_ms)
{
	long long first = i * per_chunk, last = first + per_chunk - 1;
	if (last > npoints - 1)
		last = npoints - 1;
	*start_ms = from_ms + first * step_ms;
	*end_ms = from_ms + last * step_ms;
}

/* s as a PromQL string's contents: '"', '\' and controls escaped. */
static void add_quoted(strbuf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			sb_addf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			sb_addf(b, "\\x%02x", c);
		else
			sb_addn(b, s, 1);
	}
}

char *tl_prom_selector(const char *metric, const char *job,
                       const char *matchers, const char *const *hosts,
                       int n)
{
	strbuf b;
	const char *sep = "";
	sb_init(&b);
	if (metric) {
		sb_add(&b, metric);
		sb_add(&b, "{");
	} else {
		sb_add(&b, "{__name__=~\"DCGM_FI_DEV_.+\"");
		sep = ",";
	}
	if (job) {
		sb_addf(&b, "%sjob=\"", sep);
		add_quoted(&b, job);
		sb_add(&b, "\"");
		sep = ",";
	}
	if (matchers && *matchers) {
		sb_addf(&b, "%s%s", sep, matchers);
		sep = ",";
	}
	if (n > 0) {
		/* host names are letters, digits, '.', '-', '_': only '.' means
		 * something in a regex, and its backslash is doubled for the
		 * string */
		sb_addf(&b, "%sHostname=~\"", sep);
		for (int i = 0; i < n; i++) {
			if (i)
				sb_add(&b, "|");
			for (const char *c = hosts[i]; *c; c++)
				sb_add(&b, *c == '.' ? "\\\\." : (char[2]){ *c, 0 });
		}
		sb_add(&b, "\"");
	}
	sb_add(&b, "}");
	return b.s;
}

/* A query's point at time t is the last sample at most this long before
 * it (Prometheus's default --query.lookback-delta): the series that can
 * give points in a window are those with samples from this long before
 * it. */
#define TL_PROM_LOOKBACK_MS (5 * 60 * 1000LL)

/* ---- requests -------------------------------------------------------------- */

typedef struct papi {
	CURL *c;
	char *base;            /* the URL without its trailing '/' */
	double timeout_s;
	bool reached;          /* a request has been answered: a refused
	                          connection now is a restart, worth a retry */
	strbuf body;           /* the answer, at most TL_PROM_MAX_BODY */
	bool over;             /* the answer went past that */
	long done, total;      /* queries sent, and planned */
	double t0, said;       /* start, last progress line (ms) */
	bool progress;
	tm_error *err;
} papi;

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	papi *A = ctx;
	if (A->body.len + n > TL_PROM_MAX_BODY) {
		A->over = true;
		return 0;   /* curl stops with CURLE_WRITE_ERROR */
	}
	sb_addn(&A->body, p, n);
	(void)size;   /* always 1 */
	return n;
}

static bool transient(CURLcode cc, long status, bool reached)
{
	if (cc == CURLE_OK)
		return status == 429 || status == 502 || status == 503 ||
		       status == 504;
	/* a timeout is not retried: a server that is slow now is slow the
	 * next time, and --timeout is what the user waits for */
	return (cc == CURLE_COULDNT_CONNECT && reached) ||
	       cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR ||
	       cc == CURLE_GOT_NOTHING || cc == CURLE_PARTIAL_FILE;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* GET url (form NULL) or POST form to it; what names the request in
 * messages. 0 with the answer in A->body, or TM_EINPUT with A->err set. */
static int request(papi *A, const char *url, const char *form,
                   const char *what)
{
	CURLcode cc = CURLE_OK;
	long status = 0, wait = 500;
	char ebuf[CURL_ERROR_SIZE], why[700];
	int tries;

	for (tries = 1;; tries++) {
		sb_free(&A->body);
		sb_init(&A->body);
		A->over = false;
		ebuf[0] = '\0';
		curl_easy_setopt(A->c, CURLOPT_URL, url);
		curl_easy_setopt(A->c, CURLOPT_ERRORBUFFER, ebuf);
		if (form) {
			curl_easy_setopt(A->c, CURLOPT_POSTFIELDS, form);
		} else {
			curl_easy_setopt(A->c, CURLOPT_HTTPGET, 1L);
		}
		cc = curl_easy_perform(A->c);
		status = 0;
		if (cc == CURLE_OK)
			curl_easy_getinfo(A->c, CURLINFO_RESPONSE_CODE, &status);
		if (cc == CURLE_OK && status == 200) {
			A->reached = true;
			A->done++;
			return 0;
		}
		if (cc == CURLE_OK)
			A->reached = true;
		if (!transient(cc, status, A->reached) || tries == TL_PROM_TRIES)
			break;
		pause_ms(wait);
		wait *= 2;
	}
	if (A->over)
		snprintf(why, sizeof why, "the answer is over %u MiB; expected "
		         "less (fewer hosts per query: THERMAP_PROM_POINTS, or a "
		         "longer --step)", TL_PROM_MAX_BODY >> 20);
	else if (cc == CURLE_OPERATION_TIMEDOUT)
		snprintf(why, sizeof why, "no answer within %g s (--timeout)",
		         A->timeout_s);
	else if (cc == CURLE_COULDNT_CONNECT)
		snprintf(why, sizeof why, "cannot connect (is a Prometheus server "
		         "listening there?)");
	else if (cc == CURLE_COULDNT_RESOLVE_HOST)
		snprintf(why, sizeof why, "cannot resolve the host name");
	else if (cc != CURLE_OK)
		snprintf(why, sizeof why, "%s", ebuf[0] ? ebuf :
		         curl_easy_strerror(cc));
	else {
		char m[520];
		if (tl_prom_error_text(A->body.s, A->body.len, m, sizeof m))
			snprintf(why, sizeof why, "HTTP status %ld (%s)", status, m);
		else if (status == 404)
			snprintf(why, sizeof why, "HTTP status 404 (not found); "
			         "expected the base URL of a Prometheus server (the "
			         "API is at URL/api/v1/)");
		else
			snprintf(why, sizeof why, "HTTP status %ld; expected 200",
			         status);
	}
	if (tries > 1)
		return tm_fail(A->err, TM_EINPUT, "%s: %s (tried %d times)", what,
		               why, tries);
	return tm_fail(A->err, TM_EINPUT, "%s: %s", what, why);
}

static void add_param(strbuf *b, CURL *c, const char *key, const char *v)
{
	char *e = curl_easy_escape(c, v, 0);
	if (!e)
		tm_oom();
	sb_addf(b, "%s%s=%s", b->len ? "&" : "", key, e);
	curl_free(e);
}

static void add_time(strbuf *b, CURL *c, const char *key, long long ms)
{
	char v[40];
	snprintf(v, sizeof v, "%lld.%03lld", ms / 1000, ms % 1000);
	add_param(b, c, key, v);
}

static void progress(papi *A, int ngpus)
{
	double now = tm_now_ms();
	if (!A->progress || now - A->said < 5000)
		return;
	A->said = now;
	fprintf(stderr, "thermap: --prometheus: %ld of %ld queries, %d GPU(s) "
	        "so far, %.0f s\n", A->done, A->total, ngpus,
	        (now - A->t0) / 1e3);
}

/* The values of label over the window (label values API): 0 with *out,
 * or TM_EINPUT. */
static int label_values(papi *A, const char *label, const char *match,
                        long long from_ms, long long to_ms, size_t max,
                        char ***out, size_t *n)
{
	strbuf url, q;
	char what[400];
	int rc;

	sb_init(&url);
	sb_init(&q);
	add_param(&q, A->c, "match[]", match);
	add_time(&q, A->c, "start", from_ms);
	add_time(&q, A->c, "end", to_ms);
	sb_addf(&url, "%s/api/v1/label/%s/values?%s", A->base, label, q.s);
	snprintf(what, sizeof what, "%s/api/v1/label/%s/values", A->base,
	         label);
	if (!(rc = request(A, url.s, NULL, what)))
		rc = tl_read_label_values(what, A->body.s, A->body.len, max, out,
		                          n, A->err);
	sb_free(&url);
	sb_free(&q);
	return rc;
}

static int cmp_str(const void *a, const void *b, void *ctx)
{
	(void)ctx;
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Warns of the instances whose series have no Hostname label, with match
 * (a selector ending in '}') otherwise: batches by Hostname do not read
 * them (docs/profile.md, "Prometheus"). */
static int unbatched(papi *A, const char *match, long long from,
                     long long to)
{
	size_t n = strlen(match), nv = 0;
	char *m = xmalloc(n + 16), **v = NULL;
	int rc;
	memcpy(m, match, n - 1);
	snprintf(m + n - 1, 16, ",Hostname=\"\"}");
	rc = label_values(A, "instance", m, from - TL_PROM_LOOKBACK_MS, to,
	                  TL_MAX_GPUS, &v, &nv);
	if (!rc && nv > 0) {
		char a[200], b[200];
		tm_sort(v, nv, sizeof *v, cmp_str, NULL);
		tm_text(a, sizeof a, v[0]);
		tm_text(b, sizeof b, v[nv - 1]);
		tm_warn("%s: %zu instance(s) (%s%s%s) have series without a "
		        "Hostname label beside hosts that have one: they are not "
		        "read; select them alone with --selector "
		        "'{Hostname=\"\"}' (docs/profile.md, \"Prometheus\")",
		        A->base, nv, a, nv > 1 ? " to " : "", nv > 1 ? b : "");
	}
	for (size_t j = 0; j < nv; j++)
		free(v[j]);
	free(v);
	free(m);
	return rc;
}

static int hosts_present(const tl_sink *k, int ngpus, const tm_prom_query *q,
                         const char *url, const char *tfrom,
                         const char *tto, tm_error *err)
{
	strbuf miss;
	int nmiss = 0, rc = 0;
	const char **have = xmalloc(sizeof *have * (size_t)(ngpus ? ngpus : 1));
	/* the GPUs' hosts sorted once, each host asked for found by a
	 * binary search: a long --hosts list against a large fleet stays
	 * fast */
	for (int g = 0; g < ngpus; g++) {
		const char *u, *p;
		int x;
		tl_gpu_ident(k, g, &have[g], &u, &p, &x);
	}
	tm_sort(have, (size_t)ngpus, sizeof *have, cmp_str, NULL);
	sb_init(&miss);
	for (int i = 0; i < q->nhosts; i++) {
		int lo = 0, hi = ngpus;
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			if (strcmp(have[mid], q->hosts[i]) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if ((lo == ngpus || strcmp(have[lo], q->hosts[i])) && nmiss++ < 20)
			sb_addf(&miss, "%s%s", nmiss > 1 ? ", " : "", q->hosts[i]);
	}
	free(have);
	if (nmiss)
		rc = tm_fail(err, TM_EINPUT, "%s: no samples of host%s %s%s from %s "
		             "to %s; expected every host --hosts names", url,
		             nmiss > 1 ? "s" : "", miss.s,
		             nmiss > 20 ? " and more" : "", tfrom, tto);
	sb_free(&miss);
	return rc;
}

/* ---- the whole reading ------------------------------------------------------ */

int tl_read_prometheus(tl_sink *k, tl_src *src, const tm_prom_query *q,
                       tm_error *err)
{
	papi A = { 0 };
	long long from, to, step, np, per, nchunks;
	long hpb, budget = TL_PROM_BUDGET, nbatches;
	char **names = NULL, **found = NULL, *match = NULL, *url = NULL;
	char tfrom[40], tto[40], label[900];
	size_t nnames = 0, nfound = 0;
	const char *const *hosts;
	int nhosts, present[TL_PROM_NMETRICS], npresent = 0, rc;
	bool have_group[TL_PROM_NGROUPS] = { false };
	const char *knob = tm_knob(TM_KNOB_PROM_POINTS);

	if (knob) {
		char *end;
		long v = strtol(knob, &end, 10);
		if (*end || v < 1 || v > (1L << 24))
			return tm_fail(err, TM_EUSAGE, "THERMAP_PROM_POINTS=%s: "
			               "expected points from 1 to %ld", knob, 1L << 24);
		budget = v;
	}
	if (strncmp(q->url, "http://", 7) && strncmp(q->url, "https://", 8))
		return tm_fail(err, TM_EUSAGE, "--prometheus %s: expected an "
		               "http:// or https:// URL", q->url);
	/* the window in milliseconds, as Prometheus counts it */
	if (q->last > 0) {
		struct timespec ts;
		long long last = llround(q->last * 1000);
		clock_gettime(CLOCK_REALTIME, &ts);
		step = q->step > 0 ? llround(q->step * 1000) : tl_prom_step_ms(last);
		tl_prom_last((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
		             last, step, &from, &to);
	} else {
		from = llround(q->from * 1000);
		to = llround(q->to * 1000);
		step = q->step > 0 ? llround(q->step * 1000)
		                   : tl_prom_step_ms(to - from);
	}
	if (step < 1)
		step = 1;
	np = tl_prom_npoints(from, to, step);
	tl_iso_time(tfrom, sizeof tfrom, from / 1e3);
	tl_iso_time(tto, sizeof tto, to / 1e3);
	if (np < 1)
		return tm_fail(err, TM_EUSAGE, "--to is before --from");

	A.c = curl_easy_init();
	if (!A.c)
		return tm_fail(err, TM_EINTERNAL, "cannot start libcurl");
	A.base = xstrdup(q->url);
	for (size_t n = strlen(A.base); n > 0 && A.base[n - 1] == '/'; n--)
		A.base[n - 1] = '\0';
	A.timeout_s = q->timeout_s;
	A.progress = q->progress;
	A.err = err;
	A.t0 = A.said = tm_now_ms();
	sb_init(&A.body);
	curl_easy_setopt(A.c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(A.c, CURLOPT_WRITEDATA, &A);
	curl_easy_setopt(A.c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(A.c, CURLOPT_TIMEOUT_MS, (long)(q->timeout_s * 1000));
	curl_easy_setopt(A.c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(A.c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(A.c, CURLOPT_ACCEPT_ENCODING, "");   /* gzip */
	curl_easy_setopt(A.c, CURLOPT_USERAGENT, "thermap");

	/* which of the metrics the server has in the window: only those are
	 * asked for, and the profile's main inputs it lacks are named */
	match = tl_prom_selector(NULL, q->job, q->selector, q->hosts,
	                         q->hosts ? q->nhosts : 0);
	if ((rc = label_values(&A, "__name__", match, from - TL_PROM_LOOKBACK_MS,
	                       to, 4096, &names, &nnames)))
		goto out;
	for (int i = 0; i < TL_PROM_NMETRICS; i++)
		for (size_t j = 0; j < nnames; j++)
			if (!strcmp(names[j], tl_prom_metric(i))) {
				/* once, however often a server repeats it */
				present[npresent++] = i;
				if (tl_prom_metric_group(i) >= 0)
					have_group[tl_prom_metric_group(i)] = true;
				break;
			}
	if (npresent == 0) {
		char m[300];
		tm_text(m, sizeof m, match);
		rc = tm_fail(err, TM_EINPUT, "%s/api/v1/label/__name__/values: no "
		             "DCGM metric thermap reads matches %s from %s to %s; "
		             "expected series such as DCGM_FI_DEV_GPU_TEMP",
		             A.base, m, tfrom, tto);
		goto out;
	}
	{
		strbuf w;
		bool any = false;
		sb_init(&w);
		for (int i = 0; i < TL_PROM_NMETRICS; i++) {
			int g = tl_prom_metric_group(i);
			if (g < 0 || have_group[g])
				continue;
			sb_addf(&w, "%s%s", any ? ", " : "", tl_prom_metric(i));
			have_group[g] = true;   /* one name per input */
			any = true;
		}
		if (any)
			tm_warn("%s: no series of %s from %s to %s: the profile goes "
			        "without what they give (docs/profile.md, "
			        "\"Prometheus\")", A.base, w.s, tfrom, tto);
		sb_free(&w);
	}
	/* the hosts, to query them in batches: those --hosts names, else
	 * those the server has (of any DCGM metric; a host without the ones
	 * read just gives no points); none when the series have no Hostname
	 * label (then one batch of everything) */
	if (q->hosts) {
		hosts = q->hosts;
		nhosts = q->nhosts;
	} else {
		if ((rc = label_values(&A, "Hostname", match,
		                       from - TL_PROM_LOOKBACK_MS, to, TL_MAX_GPUS,
		                       &found, &nfound)))
			goto out;
		for (size_t j = 0; j < nfound; j++)
			if (!tm_valid_host(found[j])) {
				char h[200];
				tm_text(h, sizeof h, found[j]);
				rc = tm_fail(err, TM_EINPUT, "%s/api/v1/label/Hostname/"
				             "values: data[%zu]: \"%s\" is not a usable host "
				             "name; expected letters, digits, '.', '-' and "
				             "'_'", A.base, j, h);
				goto out;
			}
		tm_sort(found, nfound, sizeof *found, cmp_str, NULL);
		hosts = (const char *const *)found;
		nhosts = (int)nfound;
		/* batches select by Hostname: series without one, which
		 * would be named by their instance, are not read then; say
		 * so rather than leave their GPUs out unsaid */
		if (nfound > 0 && (rc = unbatched(&A, match, from, to)))
			goto out;
	}
	tl_prom_plan(np, budget, &per, &hpb);
	nchunks = (np + per - 1) / per;
	nbatches = nhosts ? (nhosts + hpb - 1) / hpb : 1;
	A.total = 3 - 2 * (q->hosts != NULL) - (!q->hosts && nfound == 0) +
	          nbatches * nchunks * npresent;
	url = xmalloc(strlen(A.base) + 32);
	sprintf(url, "%s/api/v1/query_range", A.base);

	for (long b = 0; b < nbatches; b++) {
		int h0 = (int)(b * hpb), hn = nhosts ? nhosts - h0 : 0;
		if (hn > hpb)
			hn = (int)hpb;
		for (long long c = 0; c < nchunks; c++) {
			long long s, e;
			tl_prom_chunk(from, step, np, per, c, &s, &e);
			for (int m = 0; m < npresent; m++) {
				char *sel = tl_prom_selector(tl_prom_metric(present[m]),
				                             q->job, q->selector,
				                             hosts + h0, hn);
				char ts[40], te[40], hs[300] = "";
				strbuf form;

				tl_iso_time(ts, sizeof ts, s / 1e3);
				tl_iso_time(te, sizeof te, e / 1e3);
				if (hn == 1)
					snprintf(hs, sizeof hs, ", host %s", hosts[h0]);
				else if (hn > 1)
					snprintf(hs, sizeof hs, ", hosts %s to %s",
					         hosts[h0], hosts[h0 + hn - 1]);
				snprintf(label, sizeof label, "%s query %ld of %ld (%s%s, "
				         "%s to %s)", url, A.done + 1, A.total,
				         tl_prom_metric(present[m]), hs, ts, te);
				sb_init(&form);
				add_param(&form, A.c, "query", sel);
				add_time(&form, A.c, "start", s);
				add_time(&form, A.c, "end", e);
				add_time(&form, A.c, "step", step);
				free(sel);
				rc = request(&A, url, form.s, label);
				sb_free(&form);
				if (rc)
					goto out;
				/* the file reader's own parser, on this answer */
				src->file = label;
				src->text = NULL;
				rc = tl_read_qrange(src, A.body.s, A.body.len);
				sb_free(&A.body);
				sb_init(&A.body);
				if (rc)
					goto out;
				progress(&A, src->ngpus);
			}
			if ((rc = tl_qrange_flush(k, err)))
				goto out;
		}
	}
	/* every GPU comes from this one source: its GPUs are the sink's */
	if (src->ngpus == 0) {
		char m[300];
		tm_text(m, sizeof m, match);
		rc = tm_fail(err, TM_EINPUT, "%s: no samples of %s from %s to %s; "
		             "expected points of the series it matches", url, m,
		             tfrom, tto);
		goto out;
	}
	/* a host asked for by name that the server does not have is not
	 * silently left out of the profile */
	if (q->hosts && (rc = hosts_present(k, src->ngpus, q, url, tfrom, tto,
	                                    err)))
		goto out;
	if (A.progress)
		fprintf(stderr, "thermap: --prometheus: %ld queries in %.1f s (step "
		        "%g s, %lld point(s) a series, %lld chunk(s) of time, %ld "
		        "batch(es) of hosts)\n", A.done, (tm_now_ms() - A.t0) / 1e3,
		        step / 1e3, np, nchunks, nbatches);
out:
	/* from now on the source names the server */
	src->file = q->url;
	for (size_t j = 0; j < nnames; j++)
		free(names[j]);
	for (size_t j = 0; j < nfound; j++)
		free(found[j]);
	free(names);
	free(found);
	free(match);
	free(url);
	free(A.base);
	sb_free(&A.body);
	curl_easy_cleanup(A.c);
	return rc;
}
