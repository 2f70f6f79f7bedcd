/*
 * fuzz.c — the helpers every harness shares (fuzz.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "telemetry/telemetry.h"
#include "topo/topo.h"

void fuzz_init(void)
{
	tm_set_warn(NULL, NULL);
}

char *fuzz_text(const uint8_t *data, size_t size)
{
	char *s = xmalloc(size + 1);
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

void fuzz_fail(const char *fmt, ...)
{
	va_list ap;
	fputs("fuzz: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void fuzz_rejected(const char *who, int rc, const tm_error *err)
{
	if (rc != TM_EINPUT)
		fuzz_fail("%s: exit code %d for an input; expected %d (invalid "
		          "input): %s", who, rc, TM_EINPUT, err->msg);
	if (err->code != rc || !err->msg[0])
		fuzz_fail("%s: exit code %d without its message (code %d, "
		          "\"%s\")", who, rc, err->code, err->msg);
	if (strchr(err->msg, '\n'))
		fuzz_fail("%s: a message of more than one line: %s", who,
		          err->msg);
}

void fuzz_cluster_loads(const char *who, const char *text)
{
	tm_cluster *c = NULL;
	tm_error err = { 0, "" };
	if (tm_cluster_loadb("cluster.json", text, strlen(text), &c, &err))
		fuzz_fail("%s wrote a cluster the loader rejects: %s\n%s", who,
		          err.msg, text);
	tm_cluster_free(c);
}

void fuzz_profile_loads(const char *who, const char *text)
{
	tm_profile *p = NULL;
	tm_error err = { 0, "" };
	if (tm_profile_loadb("profile.json", text, strlen(text), &p, &err))
		fuzz_fail("%s wrote a profile the loader rejects: %s\n%s", who,
		          err.msg, text);
	tm_profile_free(p);
}

/* The columns of a CSV log without a header: nvidia-smi's --query-gpu
 * list as people log it. */
static const char FIELDS[] = "timestamp,index,uuid,pci.bus_id,name,"
	"temperature.gpu,power.draw,enforced.power.limit,clocks.sm,"
	"clocks.max.sm,utilization.gpu,temperature.gpu.tlimit,"
	"clocks_event_reasons.active";

void fuzz_telemetry(const char *kind, const uint8_t *data, size_t size)
{
	tl_opts o = { NAN, NAN, false, false, 0 };
	tl_sink *k = tl_sink_new(&o);
	tl_src src;
	tl_lines L;
	tm_error err = { 0, "" };
	bool q = !strcmp(kind, "qrange");
	strbuf out;
	long n = 0;
	int rc;

	fuzz_init();
	memset(&src, 0, sizeof src);
	src.sink = k;
	/* Prometheus names hosts by label, else by the file's name; the
	 * others by --host */
	src.file = "fuzz-host.log";
	src.host = !strcmp(kind, "prom") || q ? NULL : "fuzz-host";
	src.fields = FIELDS;
	src.err = &err;
	src.t_first = src.t_last = NAN;
	if (q) {
		rc = tl_read_qrange(&src, (const char *)data, size);
		if (!rc)
			rc = tl_qrange_flush(k, &err);
	} else {
		tl_lines_openb(&L, src.file, (const char *)data, size, &err);
		rc = !strcmp(kind, "csv") ? tl_read_csv(&src, &L) :
		     /* dmon: nvidia-smi's, or dcgmi's as read.c tells them */
		     !strcmp(kind, "dmon") ? (size >= 7 && !memcmp(data,
		                              "#Entity", 7) ?
		                              tl_read_dcgmi(&src, &L) :
		                              tl_read_dmon(&src, &L)) :
		     !strcmp(kind, "capture") ? tl_read_capture(&src, &L) :
		     tl_read_prom(&src, &L);
		tl_lines_close(&L);
	}
	if (rc) {
		fuzz_rejected(kind, rc, &err);   /* pending points go with k */
	} else {
		sb_init(&out);
		rc = tl_sink_finish(k, &out, &n, &err);
		if (rc)
			fuzz_rejected(kind, rc, &err);
		else if (n > 0)
			fuzz_profile_loads(kind, out.s);
		sb_free(&out);
	}
	tl_sink_free(k);
}

void fuzz_topology(const char *kind, const uint8_t *data, size_t size)
{
	const char *d = (const char *)data;
	tp_view v;
	tm_error err = { 0, "" };
	char *cl = NULL;
	int rc;

	fuzz_init();
	rc = !strcmp(kind, "smi-topo") ? tp_read_smi_topo_text("topo-m.txt",
	                                     d, size, &v, &err) :
	     !strcmp(kind, "gpus") ? tp_read_gpu_list_text("gpus.txt", d, size,
	                                                  &v, &err) :
	     !strcmp(kind, "hwloc") ? tp_read_hwloc_text("hwloc.xml", d, size,
	                                                &v, &err) :
	     tp_read_nccl_text("nccl.xml", d, size, &v, &err);
	if (rc) {
		fuzz_rejected(kind, rc, &err);
		return;
	}
	v.source = kind;
	if (!v.link)
		tp_alloc_links(&v);
	rc = tp_join_views("fuzz-host", &v, 1, NULL, &cl, &err);
	if (rc)
		fuzz_rejected(kind, rc, &err);
	else
		fuzz_cluster_loads(kind, cl);
	free(cl);
	tp_view_clear(&v);
}
