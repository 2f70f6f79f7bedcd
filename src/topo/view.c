/*
 * view.c — what every topology reader builds on: a view's life (init,
 * GPUs, link matrix, notes, clear) and the checks every source's view must
 * pass (no UUID or PCI bus id twice, NVLink counts within NV1..NV64),
 * and hwloc's uncertain NVLink marked. Below the readers (smi.c, hwloc.c,
 * nccl.c, local.c) and the join (topo.c); it reads nothing and calls no
 * reader.
 */
#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

void tp_view_init(tp_view *v, const char *source, const char *file)
{
	memset(v, 0, sizeof *v);
	v->source = source;
	v->file = file ? xstrdup(file) : NULL;
}

void tp_view_clear(tp_view *v)
{
	for (int i = 0; i < v->ngpus; i++) {
		free(v->gpus[i].uuid);
		free(v->gpus[i].pci);
		free(v->gpus[i].model);
	}
	for (int i = 0; i < v->nnotes; i++)
		free(v->notes[i]);
	free(v->notes);
	free(v->gpus);
	free(v->link);
	free(v->nv);
	free(v->file);
	free(v->host);
	memset(v, 0, sizeof *v);
}

tp_gpu *tp_add_gpu(tp_view *v)
{
	tp_gpu *g;
	v->gpus = xrealloc(v->gpus, (size_t)(v->ngpus + 1) * sizeof *v->gpus);
	g = &v->gpus[v->ngpus++];
	memset(g, 0, sizeof *g);
	g->index = -1;
	g->memory_gib = NAN;
	g->numa = -1;
	return g;
}

void tp_alloc_links(tp_view *v)
{
	size_t n = (size_t)v->ngpus;
	free(v->link);
	free(v->nv);
	v->link = xmalloc(n ? n * n : 1);
	v->nv = xcalloc(n ? n * n : 1, 1);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			v->link[i * n + j] = i == j ? TM_LINK_X : TM_LINK_SYS;
}

void tp_note(tp_view *v, const char *fmt, ...)
{
	va_list ap;
	strbuf b;
	sb_init(&b);
	va_start(ap, fmt);
	{
		char tmp[512];
		vsnprintf(tmp, sizeof tmp, fmt, ap);
		sb_add(&b, tmp);
	}
	va_end(ap);
	v->notes = xrealloc(v->notes, (size_t)(v->nnotes + 1) * sizeof *v->notes);
	v->notes[v->nnotes++] = b.s;
}

/* What a source's GPU is called in messages: its index, else its place. */
static void gpu_name(const tp_view *v, int g, char *buf, size_t n)
{
	const tp_gpu *x = &v->gpus[g];
	if (x->index >= 0)
		snprintf(buf, n, "GPU %d", x->index);
	else if (x->pci)
		snprintf(buf, n, "GPU %s", x->pci);
	else
		snprintf(buf, n, "GPU #%d", g + 1);
}

/* One source naming two GPUs alike, or an NVLink count no cluster can
 * hold, would give a cluster that every later command rejects: refused
 * here, naming the source. */
int tp_check_view(const tp_view *v, tm_error *err)
{
	const char *f = v->file ? v->file : "this machine";
	char a[64], b[64];
	int n = v->ngpus;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++) {
			const tp_gpu *x = &v->gpus[j], *y = &v->gpus[i];
			gpu_name(v, j, a, sizeof a);
			gpu_name(v, i, b, sizeof b);
			if (x->uuid && y->uuid && !strcmp(x->uuid, y->uuid))
				return tm_fail(err, TM_EINPUT, "%s: %s and %s have the "
				               "same UUID %s; a UUID names one GPU",
				               f, a, b, y->uuid);
			if (x->pci && y->pci && !strcmp(x->pci, y->pci))
				return tm_fail(err, TM_EINPUT, "%s: %s and %s have the "
				               "same PCI bus id %s", f, a, b, y->pci);
		}
	if (!v->link)
		return 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			size_t k = (size_t)i * (size_t)n + (size_t)j;
			if (v->link[k] != TM_LINK_NV || v->nv[k] <= 64)
				continue;
			gpu_name(v, i, a, sizeof a);
			gpu_name(v, j, b, sizeof b);
			return tm_fail(err, TM_EINPUT, "%s: %s and %s are joined by "
			               "%s%d NVLinks; expected 1 to 64 (NV1 ... NV64)",
			               f, a, b, v->nv[k] == 255 ? "255 or more " : "",
			               v->nv[k] == 255 ? 255 : v->nv[k]);
		}
	return 0;
}

/* hwloc shows NVLink only through its NVLinkBandwidth distances; a
 * hwloc view without a single NVLink pair may just not have had them. */
void tp_mark_nv_unknown(tp_view *v)
{
	size_t n = (size_t)v->ngpus;
	if (!v->link)
		return;
	for (size_t k = 0; k < n * n; k++)
		if (v->link[k] == TM_LINK_NV)
			return;
	v->nv_unknown = true;
}
