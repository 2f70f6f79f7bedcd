/*
 * cmd_profile.c — `thermap profile`: telemetry logs to a per-GPU thermal
 * profile (thermap.profile/1). Its rows, its --help, and the calls into
 * the library (tm_profile_from_telemetry, tm_profile_fill), which reads
 * the logs and fits the profile.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "telemetry/telemetry.h"

typedef struct profile_args {
	const char *out, *from, *to, *baseline, *live, *interval, *samples;
	const char *phases;
	const char *prom, *last, *step, *job, *hosts, *selector, *timeout;
	bool summary, quiet;
	cli_tele tele;  /* the files, each with its --host and --fields */
} profile_args;

#define AT(field) offsetof(profile_args, field)

static const cli_opt rows[] = {
	{ NULL, NULL, "FILE...", 0, 0,
	  "telemetry files; '-' reads stdin", NULL },
	{ "--host", NULL, "NAME", CLI_EACH, 0,
	  "host of the GPUs in the files that follow (else the\n"
	  "Hostname label, else the file name: HOST.csv)", NULL },
	{ "--fields", NULL, "LIST", CLI_EACH, 0,
	  "columns of the CSV files that follow when they have\n"
	  "no header: the --query-gpu list", NULL },
	{ "--out", "-o", "FILE", 0, AT(out),
	  "write the profile here (atomically); default stdout", NULL },
	{ "--from", NULL, "T", 0, AT(from),
	  "only samples in this window: a time as in the logs\n"
	  "(2026/11/21 12:15:28, ISO 8601, seconds since\n"
	  "1970) or +SECONDS after each file's first sample", NULL },
	{ "--to", NULL, "T", 0, AT(to), NULL, NULL },
	{ "--baseline", NULL, "PROFILE", 0, AT(baseline),
	  "take what the window cannot measure from an earlier\n"
	  "profile of the same GPUs: the idle level, and for\n"
	  "a GPU never at full load in the window its load\n"
	  "level, headroom, clocks, derate and fit; listed per\n"
	  "GPU in \"from_baseline\" (docs/profile.md)", NULL },
	{ "--phases", NULL, "PHASES", 0, AT(phases),
	  "the load phases of the run (lines START END LABEL):\n"
	  "fit each GPU jointly with the other GPUs of its host\n"
	  "on the phase means, and write how they heat it\n"
	  "(\"coupling\"; docs/profile.md, \"Neighbours\")", NULL },
	{ "--live", NULL, "SECONDS", 0, AT(live),
	  "sample this machine's GPUs through NVML for SECONDS\n"
	  "(1 to 86400) instead of reading files; the samples\n"
	  "are kept as nvidia-smi CSV (--samples)", NULL },
	{ "--interval", NULL, "MS", 0, AT(interval),
	  "milliseconds between samples: --live takes one every\n"
	  "MS (10 to 60000; default 500); dcgmi dmon logs, which\n"
	  "carry no times, were logged every MS, their -d (1 to\n"
	  "3600000; default 1000)", NULL },
	{ "--samples", NULL, "FILE", 0, AT(samples),
	  "--live: write the samples here (atomically); default\n"
	  "the profile's name with .samples.csv, or\n"
	  "live-samples.csv when the profile goes to stdout", NULL },
	{ "--prometheus", NULL, "URL", 0, AT(prom),
	  "read the DCGM series from this Prometheus server's\n"
	  "HTTP API (http://HOST:9090) instead of files, over\n"
	  "--from T --to T (times, not +SECONDS) or --last;\n"
	  "the same profile as from query_range files of the\n"
	  "same points (docs/profile.md, \"Prometheus\")", NULL },
	{ "--last", NULL, "DURATION", 0, AT(last),
	  "--prometheus: the window up to now (2h, 30m, 900s)", NULL },
	{ "--step", NULL, "DURATION", 0, AT(step),
	  "--prometheus: time between points; default 15s (longer\n"
	  "for windows over 11,000 steps of 15 s)", NULL },
	{ "--job", NULL, "NAME", 0, AT(job),
	  "--prometheus: only series of this job label", NULL },
	{ "--hosts", NULL, "LIST", 0, AT(hosts),
	  "--prometheus: only these Hostname labels (h1,h2,...);\n"
	  "each must have samples", NULL },
	{ "--selector", NULL, "SEL", 0, AT(selector),
	  "--prometheus: more label matchers, as PromQL writes\n"
	  "them in braces: '{cluster=\"a\",rack=~\"r1.*\"}'", NULL },
	{ "--timeout", NULL, "SECONDS", 0, AT(timeout),
	  "--prometheus: the longest one request may take\n"
	  "(0.1 to 3600; default 30)", NULL },
	{ "--json-summary", NULL, NULL, 0, AT(summary),
	  "print what was read (rows, skipped rows and why,\n"
	  "GPUs, time span) as JSON on stdout; needs -o", NULL },
	{ "--quiet", NULL, NULL, 0, AT(quiet),
	  "print nothing on stdout, and no progress on stderr", NULL },
	CLI_END
};

static int run(int argc, char **argv);

const cli_cmd cli_profile = {
	"profile", "telemetry logs -> per-GPU thermal profile",
	"thermap profile [--host NAME] [--fields LIST] FILE... [-o FILE]\n"
	"[--from T] [--to T] [--interval MS] [--baseline PROFILE]\n"
	"[--phases PHASES] [--json-summary] [--quiet]\n"
	"thermap profile --live SECONDS [--interval MS] [--samples FILE]\n"
	"[--host NAME] [-o FILE] [--baseline PROFILE]\n"
	"[--phases PHASES] [--quiet]\n"
	"thermap profile --prometheus URL (--from T --to T | --last DURATION)\n"
	"[--step DURATION] [--job NAME] [--hosts LIST] [--selector SEL]\n"
	"[--timeout SECONDS] [--host NAME] [-o FILE] [--baseline PROFILE]\n"
	"[--json-summary] [--quiet]",
	"Reads telemetry and writes a thermap.profile/1 document: nvidia-smi\n"
	"--query-gpu CSV logs, nvidia-smi dmon and dcgmi dmon logs, dcgm-exporter\n"
	"Prometheus scrapes and Prometheus query_range JSON (found from each\n"
	"file's content), or, with --live, this machine's GPUs sampled through\n"
	"NVML, or, with --prometheus, the DCGM series of a Prometheus server.\n",
	rows, NULL, run,
};

static int tele_arg(void *args, const cli_opt *o, const char *v)
{
	return cli_tele_add(&cli_profile, &((profile_args *)args)->tele, o, v);
}

/* The profile a.baseline names, as text, once it has loaded as a valid
 * profile: it lends fields only then. */
static int read_baseline(const char *file, char **text, tm_error *err)
{
	tm_profile *bp = NULL;
	size_t len;
	int rc = tm_profile_load(file, &bp, err);
	tm_profile_free(bp);
	return rc ? rc : tm_read_file(file, 64 << 20, text, &len, err);
}

/* --live, --interval and --samples, and the files they exclude: the
 * seconds, the interval and the samples' file name (allocated) into the
 * last three. Without --live, --interval is that of dcgmi dmon logs, into
 * w. */
static int live_args(const profile_args *a, double *s, int *ms,
                     char **samples, tm_tele_opts *w)
{
	char *end;
	*s = 0;
	*ms = 500;
	if (!a->live) {
		if (a->samples)
			return cli_usage(&cli_profile, "%s", "--samples goes "
			                 "with --live");
		if (a->interval) {
			long v = strtol(a->interval, &end, 10);
			if (end == a->interval || *end || v < 1 || v > 3600000)
				return cli_usage(&cli_profile, "--interval %s: "
				                 "expected milliseconds from 1 to "
				                 "3600000", a->interval);
			w->interval_ms = (int)v;
		}
		if (a->tele.n == 0)
			return cli_usage(&cli_profile, "%s", "profile needs at "
			                 "least one telemetry FILE, or --live SECONDS, or "
			                 "--prometheus URL");
		return 0;
	}
	if (a->tele.n > 0)
		return cli_usage(&cli_profile, "%s", "--live samples this machine; "
		                 "it takes no telemetry FILE");
	if (a->from || a->to || a->summary)
		return cli_usage(&cli_profile, "%s", "--from, --to and "
		                 "--json-summary go with telemetry files, not "
		                 "--live");
	*s = strtod(a->live, &end);
	if (end == a->live || *end || !(*s >= 1 && *s <= 86400))
		return cli_usage(&cli_profile, "--live %s: expected seconds from "
		                 "1 to 86400", a->live);
	if (a->interval) {
		long v = strtol(a->interval, &end, 10);
		if (end == a->interval || *end || v < 10 || v > 60000)
			return cli_usage(&cli_profile, "--interval %s: expected "
			                 "milliseconds from 10 to 60000", a->interval);
		*ms = (int)v;
	}
	if (a->samples) {
		*samples = xstrdup(a->samples);
	} else if (a->out) {
		*samples = xmalloc(strlen(a->out) + 16);
		sprintf(*samples, "%s.samples.csv", a->out);
	} else {
		*samples = xstrdup("live-samples.csv");
	}
	return 0;
}

/* Positions into a list of names (ctx), by name. */
static int cmp_host_at(const void *a, const void *b, void *ctx)
{
	char *const *h = ctx;
	return strcmp(h[*(const int *)a], h[*(const int *)b]);
}

/* --prometheus and its options into q (hosts: the split --hosts list,
 * allocated, with its copy of the text in *hbuf); a usage error when
 * they do not go together. */
static int prom_args(const profile_args *a, const tm_tele_opts *w,
                     tm_prom_query *q, char ***hosts, char **hbuf,
                     char **sel)
{
	char *end;
	if (!a->prom) {
		if (a->last || a->step || a->job || a->hosts || a->selector ||
		    a->timeout)
			return cli_usage(&cli_profile, "%s", "--last, --step, --job, "
			                 "--hosts, --selector and --timeout go with "
			                 "--prometheus");
		return 0;
	}
	if (a->tele.n > 0 || a->live || a->tele.fields || a->interval ||
	    a->samples)
		return cli_usage(&cli_profile, "%s", "--prometheus reads a server; "
		                 "it takes no telemetry FILE, --fields, --interval "
		                 "or --live");
	*q = (tm_prom_query){ 0 };
	q->url = a->prom;
	q->host = a->tele.host;
	q->timeout_s = 30;
	q->progress = !a->quiet;
	q->job = a->job;
	if (strncmp(a->prom, "http://", 7) && strncmp(a->prom, "https://", 8))
		return cli_usage(&cli_profile, "--prometheus %s: expected an "
		                 "http:// or https:// URL", a->prom);
	if (a->last) {
		if (a->from || a->to)
			return cli_usage(&cli_profile, "%s", "--last is a window of "
			                 "its own; give it or --from and --to");
		if (!tl_parse_duration(a->last, &q->last))
			return cli_usage(&cli_profile, "--last %s: expected a "
			                 "duration such as 2h, 30m or 900s (at most "
			                 "10 years)", a->last);
	} else {
		if (!a->from || !a->to)
			return cli_usage(&cli_profile, "%s", "--prometheus needs a "
			                 "window: --from T --to T, or --last DURATION");
		if (w->from_rel || w->to_rel)
			return cli_usage(&cli_profile, "%s", "--prometheus: --from and "
			                 "--to take times, not +SECONDS");
		q->from = w->from;
		q->to = w->to;
	}
	if (a->step && (!tl_parse_duration(a->step, &q->step) ||
	                q->step < 0.001))
		return cli_usage(&cli_profile, "--step %s: expected a duration "
		                 "such as 15s or 1m", a->step);
	if (a->timeout) {
		q->timeout_s = strtod(a->timeout, &end);
		if (end == a->timeout || *end ||
		    !(q->timeout_s >= 0.1 && q->timeout_s <= 3600))
			return cli_usage(&cli_profile, "--timeout %s: expected "
			                 "seconds from 0.1 to 3600", a->timeout);
	}
	if (a->selector) {
		size_t n = strlen(a->selector);
		if (n < 2 || a->selector[0] != '{' || a->selector[n - 1] != '}' ||
		    n > 4096 || strchr(a->selector, '\n'))
			return cli_usage(&cli_profile, "--selector %s: expected label "
			                 "matchers in braces, such as "
			                 "'{cluster=\"a\",rack=~\"r1.*\"}'", a->selector);
		*sel = xstrdup(a->selector + 1);
		(*sel)[n - 2] = '\0';
		q->selector = *sel;
	}
	if (a->hosts) {
		int n = 1, m = 0, *ord;
		*hbuf = xstrdup(a->hosts);
		for (const char *p = a->hosts; *p; p++)
			n += *p == ',';
		*hosts = xcalloc((size_t)n, sizeof **hosts);
		n = 0;
		for (char *h = *hbuf, *nx; h; h = nx) {
			nx = strchr(h, ',');
			if (nx)
				*nx++ = '\0';
			if (!tm_valid_host(h))
				return cli_usage(&cli_profile, "--hosts %s: '%s' is not a "
				                 "host name", a->hosts, h);
			(*hosts)[n++] = h;
		}
		/* each host once, where it first comes: a stable sort of the
		 * positions by name puts repeats after their first, and a long
		 * list stays fast */
		ord = xmalloc(sizeof *ord * (size_t)n);
		for (int i = 0; i < n; i++)
			ord[i] = i;
		tm_sort(ord, (size_t)n, sizeof *ord, cmp_host_at, *hosts);
		for (int i = 1, keep = ord[0]; i < n; i++)
			if (!strcmp((*hosts)[ord[i]], (*hosts)[keep]))
				(*hosts)[ord[i]] = NULL;
			else
				keep = ord[i];
		free(ord);
		for (int i = 0; i < n; i++)
			if ((*hosts)[i])
				(*hosts)[m++] = (*hosts)[i];
		n = m;
		if (n > TL_MAX_GPUS)
			return cli_usage(&cli_profile, "--hosts: more than %d hosts",
			                 TL_MAX_GPUS);
		q->hosts = (const char *const *)*hosts;
		q->nhosts = n;
	}
	return 0;
}

static int run(int argc, char **argv)
{
	profile_args a = { 0 };
	double live_s = 0;
	int interval_ms = 500;
	char *samples = NULL, *host = NULL;
	tm_tele_opts w;
	tm_error err = { 0, "" };
	char *base = NULL, *prof = NULL, *summ = NULL;
	tm_prom_query q = { 0 };
	char **hosts = NULL, *hbuf = NULL, *sel = NULL;
	int nfilled = 0, rc;

	a.tele.in = xcalloc((size_t)argc, sizeof *a.tele.in);
	if (!cli_parse(&cli_profile, argc, argv, &a, tele_arg, &rc))
		goto out;
	if ((rc = cli_window(&cli_profile, a.from, a.to, &w)))
		goto out;
	if (a.summary && !a.out) {
		rc = cli_usage(&cli_profile, "%s", "--json-summary prints on "
		               "stdout, so the profile needs -o FILE");
		goto out;
	}
	if (a.phases && a.prom) {
		/* the phases are fitted on samples read as files; a server's
		 * series saved as query_range files take them */
		rc = cli_usage(&cli_profile, "%s", "--phases goes with telemetry "
		               "files or --live, not --prometheus (save the "
		               "series as query_range files for it)");
		goto out;
	}
	if ((rc = prom_args(&a, &w, &q, &hosts, &hbuf, &sel)))
		goto out;
	if (!a.prom && (rc = live_args(&a, &live_s, &interval_ms, &samples,
	                               &w)))
		goto out;
	if (a.live) {
		char name[256] = "";
		/* the GPUs' host: --host, else this machine's name, with what a
		 * host name may not hold made '-' */
		if (a.tele.host) {
			host = xstrdup(a.tele.host);
		} else {
			if (gethostname(name, sizeof name - 1) != 0 || !name[0])
				snprintf(name, sizeof name, "localhost");
			for (char *c = name; *c; c++)
				if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
					*c = '-';
			host = xstrdup(name);
		}
		/* the samples file is the one telemetry file */
		a.tele.in[0].file = samples;
		a.tele.in[0].host = host;
		a.tele.in[0].fields = NULL;
		a.tele.n = 1;
	}
	if ((a.out && (rc = tm_check_file_target(a.out, &err))) ||
	    (a.live && (rc = tm_check_file_target(samples, &err))) ||
	    (a.baseline && (rc = read_baseline(a.baseline, &base, &err))) ||
	    (a.live && (rc = tm_nvml_record(samples, live_s, interval_ms,
	                                    !a.quiet, &err))) ||
	    (a.prom && (rc = tm_profile_from_prometheus(&q, &prof, &summ,
	                                                &err))) ||
	    (!a.prom && (rc = tm_profile_from_telemetry_ex(a.tele.in, a.tele.n,
	                                                   &w, a.phases, &prof,
	                                                   &summ, &err))))
		goto fail;
	if (base) {
		char *filled = tm_profile_fill(prof, base, false, &nfilled);
		free(prof);
		prof = filled;
	}
	if (a.out && (rc = tm_write_file_atomic(a.out, prof, strlen(prof),
	                                        &err)))
		goto fail;
	if (!a.out)
		fputs(prof, stdout);
	else if (a.summary)
		fputs(summ, stdout);
	else if (!a.quiet && a.baseline)
		cli_say(stdout, "", "wrote %s (%d field(s) from %s)", a.out,
		        nfilled, a.baseline);
	else if (!a.quiet && a.live)
		cli_say(stdout, "", "wrote %s (and the samples, %s)", a.out,
		        samples);
	else if (!a.quiet)
		cli_say(stdout, "", "wrote %s", a.out);
	goto out;
fail:
	rc = cli_report(&err);
out:
	free(base);
	free(prof);
	free(summ);
	free(a.tele.in);
	free(samples);
	free(host);
	free(hosts);
	free(hbuf);
	free(sel);
	return rc;
}
