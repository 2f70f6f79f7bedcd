/*
 * topo.c — `thermap topo`: the registry of topology sources (tp_sources),
 * reading each input through its source's reader, joining the views of one
 * host (by PCI bus id) step by step, checking them against each other, and
 * writing thermap.cluster/1. It sits above the readers (smi.c, hwloc.c,
 * nccl.c, local.c) and the view helpers they share (view.c); nothing below
 * calls back into it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo.h"

/* ---- the sources --------------------------------------------------------- */

const tp_source tp_sources[] = {
	/* `nvidia-smi topo -m`: every link code as the driver sees it, NVLink
	 * counts, GPU indices and NUMA affinity */
	{ "smi-topo", tp_read_smi_topo, NULL, TP_TELLS_LINKS, 4, 1 },
	/* a GPU list: index, UUID, PCI bus id, model and memory; no links */
	{ "gpus", tp_read_gpu_list, NULL, 0, 0, 1 },
	/* hwloc XML: GPUs, PCI bus ids, NUMA nodes, PCIe/SMP codes from the
	 * PCI tree, NVLink only where hwloc saw it */
	{ "hwloc", tp_read_hwloc, NULL, TP_TELLS_LINKS | TP_NVLINK_UNSURE, 2,
	  1 },
	/* an NCCL topology file: PCI bus ids, NVLink counts, NVSwitches */
	{ "nccl", tp_read_nccl, NULL, TP_TELLS_LINKS, 3, 2 },
	/* this machine: hwloc, and nvidia-smi when it runs */
	{ "local", NULL, tp_read_local, TP_TELLS_LINKS, 1, 1 },
};
const int tp_nsources = (int)(sizeof tp_sources / sizeof tp_sources[0]);

const tp_source *tp_source_find(const char *name)
{
	for (int i = 0; i < tp_nsources; i++)
		if (!strcmp(tp_sources[i].name, name))
			return &tp_sources[i];
	return NULL;
}

void tp_source_names(strbuf *b, const char *prefix, unsigned tells)
{
	int n = 0, k = 0;
	for (int i = 0; i < tp_nsources; i++)
		n += (tp_sources[i].tells & tells) == tells;
	for (int i = 0; i < tp_nsources; i++)
		if ((tp_sources[i].tells & tells) == tells)
			sb_addf(b, "%s%s%s", k++ == 0 ? "" : k == n ? " or " : ", ",
			        prefix, tp_sources[i].name);
}

/* ---- joining the views of one host ---------------------------------------- */

/* Which source's word counts most, per kind of fact: the links ... */
static int rank_links(const tp_view *v)
{
	const tp_source *s = tp_source_find(v->source);
	if (!v->link)
		return 99;
	if (v->nv_unknown)
		return 9;
	if (!v->nv_only)
		return 0;        /* topo -m: every code as the driver sees it */
	return s ? s->nvlink_rank : 1;
}

/* ... and the GPUs' identities. */
static int rank_ids(const tp_view *v)
{
	const tp_source *s = tp_source_find(v->source);
	return s ? s->id_rank : 9;
}

/* The GPU of view w that is GPU g of the base view b: by PCI bus id when
 * both know it, else by index; -1 when none. */
static int match(const tp_view *b, int g, const tp_view *w)
{
	const tp_gpu *x = &b->gpus[g];
	for (int i = 0; i < w->ngpus; i++)
		if (x->pci && w->gpus[i].pci && !strcmp(x->pci, w->gpus[i].pci))
			return i;
	for (int i = 0; i < w->ngpus; i++)
		if ((!x->pci || !w->gpus[i].pci) && x->index >= 0 &&
		    w->gpus[i].index == x->index)
			return i;
	return -1;
}

static const char *vname(const tp_view *v, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s%s", v->source, v->file ? " (" : "",
	         v->file ? v->file : "", v->file ? ")" : "");
	return buf;
}

/* A disagreement: an error unless the user said which source to believe;
 * then a warning. */
static int disagree(const char *prefer, tm_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int disagree(const char *prefer, tm_error *err, const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (prefer) {
		tm_warn("%s; keeping %s's", msg, prefer);
		return 0;
	}
	return tm_fail(err, TM_EINPUT, "%s; fix the inputs or pass --prefer "
	               "SOURCE", msg);
}

static bool str_differs(const char *a, const char *b)
{
	return a && b && strcmp(a, b) != 0;
}

/* Does view i have a GPU for each of the n GPUs? */
static bool map_complete(const int *map, int i, int n)
{
	for (int g = 0; g < n; g++)
		if (map[i * n + g] < 0)
			return false;
	return true;
}

/* The views of one host on their way to one "nodes" entry. */
typedef struct join {
	const char *host;
	tp_view *v;          /* the views, nv of them */
	int nv;
	const char *prefer;  /* the source believed where views differ, or NULL */
	int base;            /* the view whose GPUs are the host's */
	int n;               /* its GPUs */
	int *map;            /* map[view * n + g]: that view's GPU g, or -1 */
	int lsrc;            /* the view whose link matrix is used */
} join;

/* The base view: the preferred source's, else the one whose GPU facts
 * count most, among the views that list GPUs. */
static int pick_base(join *J, tm_error *err)
{
	const tp_view *v = J->v;
	for (int i = 0; i < J->nv; i++) {
		if (J->prefer && strcmp(v[i].source, J->prefer) == 0 &&
		    v[i].ngpus) {
			J->base = i;
			break;
		}
		if (v[i].ngpus && (J->base < 0 ||
		                   rank_ids(&v[i]) < rank_ids(&v[J->base])))
			J->base = i;
	}
	if (J->base < 0)
		return tm_fail(err, TM_EINPUT, "host %s: no source lists any GPU",
		               J->host);
	J->n = v[J->base].ngpus;
	return 0;
}

/* Each view's GPU for each GPU of the base; a view listing another number
 * of GPUs is a disagreement, and its word is not used. */
static int map_gpus(join *J, tm_error *err)
{
	const tp_view *v = J->v;
	int n = J->n, rc;
	char b1[600], b2[600];

	J->map = xmalloc((size_t)(J->nv * n) * sizeof *J->map);
	for (int i = 0; i < J->nv; i++) {
		bool drop = false;
		if (v[i].ngpus && v[i].ngpus != n) {
			rc = disagree(J->prefer, err, "host %s: %s lists %d GPUs, %s "
			              "lists %d", J->host,
			              vname(&v[J->base], b1, sizeof b1), n,
			              vname(&v[i], b2, sizeof b2), v[i].ngpus);
			if (rc)
				return rc;
			drop = true;   /* another machine's word: not used */
		}
		for (int g = 0; g < n; g++)
			J->map[i * n + g] = i == J->base ? g : drop ? -1
			                    : match(&v[J->base], g, &v[i]);
	}
	return 0;
}

/* The GPU facts, from the first source that has each, checked against the
 * others: into the base view's GPUs. */
static int join_facts(join *J, tm_error *err)
{
	tp_view *v = J->v;
	int n = J->n, rc = 0;
	char b1[600], b2[600];

	for (int g = 0; g < n && !rc; g++) {
		tp_gpu *x = &v[J->base].gpus[g];
		for (int i = 0; i < J->nv && !rc; i++) {
			const tp_gpu *y;
			if (i == J->base || J->map[i * n + g] < 0)
				continue;
			y = &v[i].gpus[J->map[i * n + g]];
			if (str_differs(x->uuid, y->uuid) ||
			    str_differs(x->pci, y->pci) ||
			    (x->index >= 0 && y->index >= 0 && x->index != y->index))
				rc = disagree(J->prefer, err, "host %s: GPU %d is %s %s "
				              "in %s but %s %s in %s", J->host, g,
				              x->pci ? x->pci : "?",
				              x->uuid ? x->uuid : "",
				              vname(&v[J->base], b1, sizeof b1),
				              y->pci ? y->pci : "?",
				              y->uuid ? y->uuid : "",
				              vname(&v[i], b2, sizeof b2));
			if (!x->uuid && y->uuid)
				x->uuid = xstrdup(y->uuid);
			if (!x->pci && y->pci)
				x->pci = xstrdup(y->pci);
			if (!x->model && y->model)
				x->model = xstrdup(y->model);
			if (isnan(x->memory_gib))
				x->memory_gib = y->memory_gib;
			if (x->index < 0)
				x->index = y->index;
			if (x->numa < 0)
				x->numa = y->numa;
		}
	}
	return rc;
}

/* The links: the preferred source's, else the most complete, among the
 * views that have a GPU for every GPU. */
static int pick_links(join *J, tm_error *err)
{
	const tp_view *v = J->v;
	const char *prefer = J->prefer;
	int rc;
	strbuf names;

	for (int i = 0; i < J->nv; i++)
		if (v[i].link && map_complete(J->map, i, J->n) &&
		    (J->lsrc < 0 || (prefer && !strcmp(v[i].source, prefer)) ||
		     (!(prefer && !strcmp(v[J->lsrc].source, prefer)) &&
		      rank_links(&v[i]) < rank_links(&v[J->lsrc]))))
			J->lsrc = i;
	if (J->lsrc >= 0)
		return 0;
	sb_init(&names);
	tp_source_names(&names, "--", TP_TELLS_LINKS);
	rc = tm_fail(err, TM_EINPUT, "host %s: no source gives the links "
	             "between its GPUs (add %s)", J->host, names.s);
	sb_free(&names);
	return rc;
}

/* The NVLink counts of the chosen links, checked against every other
 * complete matrix that can tell NVLink. */
static int check_nvlink(const join *J, tm_error *err)
{
	const tp_view *v = J->v, *L = &v[J->lsrc];
	const int *map = J->map;
	int n = J->n, lsrc = J->lsrc, rc = 0;
	char b1[600], b2[600];

	for (int i = 0; i < J->nv && !rc; i++) {
		if (i == lsrc || !v[i].link || v[i].nv_unknown ||
		    !map_complete(map, i, n))
			continue;
		for (int a = 0; a < n && !rc; a++)
			for (int c = a + 1; c < n && !rc; c++) {
				int la = map[lsrc * n + a], lc = map[lsrc * n + c];
				int ia = map[i * n + a], ic = map[i * n + c];
				int n1 = L->link[la * L->ngpus + lc] == TM_LINK_NV
				         ? L->nv[la * L->ngpus + lc] : 0;
				int n2 = v[i].link[ia * v[i].ngpus + ic] == TM_LINK_NV
				         ? v[i].nv[ia * v[i].ngpus + ic] : 0;
				if (n1 != n2)
					rc = disagree(J->prefer, err, "host %s: GPUs %d and "
					              "%d: %d NVLinks in %s, %d in %s",
					              J->host, a, c, n1,
					              vname(L, b1, sizeof b1), n2,
					              vname(&v[i], b2, sizeof b2));
			}
	}
	return rc;
}

/* The host's "nodes" entry: the base view's GPUs, the chosen links. */
static void write_node(const join *J, jw *w)
{
	const tp_view *L = &J->v[J->lsrc];
	int n = J->n;

	jw_obj(w, NULL, false);
	jw_str(w, "host", J->host);
	jw_arr(w, "gpus", false);
	for (int g = 0; g < n; g++) {
		const tp_gpu *x = &J->v[J->base].gpus[g];
		jw_obj(w, NULL, true);
		jw_int(w, "index", x->index >= 0 ? x->index : g);
		if (x->uuid)
			jw_str(w, "uuid", x->uuid);
		else
			jw_null(w, "uuid");
		if (x->pci)
			jw_str(w, "pci_bus_id", x->pci);
		else
			jw_null(w, "pci_bus_id");
		if (x->model)  /* jw_str writes any bytes as valid JSON */
			jw_str(w, "model", x->model);
		else
			jw_null(w, "model");
		jw_num(w, "memory_gib", x->memory_gib, 0);
		if (x->numa >= 0)
			jw_int(w, "numa_node", x->numa);
		else
			jw_null(w, "numa_node");
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_arr(w, "links", false);
	for (int a = 0; a < n; a++) {
		jw_arr(w, NULL, true);
		for (int c = 0; c < n; c++) {
			char nb[16];
			int la = J->map[J->lsrc * n + a], lc = J->map[J->lsrc * n + c];
			size_t k = (size_t)la * (size_t)L->ngpus + (size_t)lc;
			jw_str(w, NULL, tm_link_name(L->link[k], L->nv[k], nb));
		}
		jw_end_arr(w);
	}
	jw_end_arr(w);
	jw_null(w, "link_gb_per_s");
	jw_null(w, "net_gb_per_s");
	jw_null(w, "net_group");
	jw_end_obj(w);
}

/* Joins the views of one host into cluster JSON (one "nodes" entry), and
 * passes on what the sources could not tell. */
static int join_host(jw *w, const char *host, tp_view *v, int nv,
                     const char *prefer, tm_error *err)
{
	join J = { host, v, nv, prefer, -1, 0, NULL, -1 };
	int rc;

	if (!(rc = pick_base(&J, err)) && !(rc = map_gpus(&J, err)) &&
	    !(rc = join_facts(&J, err)) && !(rc = pick_links(&J, err)) &&
	    !(rc = check_nvlink(&J, err))) {
		write_node(&J, w);
		for (int i = 0; i < nv; i++)
			for (int k = 0; k < v[i].nnotes; k++)
				tm_warn("host %s: %s", host, v[i].notes[k]);
	}
	free(J.map);
	return rc;
}

/* ---- the command --------------------------------------------------------- */

static int read_one(const tm_topo_input *in, tp_view **views, int *nv,
                    tm_error *err)
{
	const tp_source *src = tp_source_find(in->kind);
	tp_view v;
	int rc;
	if (!src)
		return tm_fail(err, TM_EUSAGE, "unknown source kind %s", in->kind);
	if (src->read_live)
		return src->read_live(views, nv, err);
	rc = src->read(in->file, &v, err);
	if (!rc && (rc = tp_check_view(&v, err)))
		tp_view_clear(&v);
	if (rc)
		return rc;
	v.source = src->name;   /* name sources as the options do */
	if (src->tells & TP_NVLINK_UNSURE)
		tp_mark_nv_unknown(&v);
	*views = xrealloc(*views, (size_t)(*nv + 1) * sizeof **views);
	(*views)[(*nv)++] = v;
	return 0;
}

int tp_join_views(const char *host, tp_view *v, int nv, const char *prefer,
                  char **cluster, tm_error *err)
{
	strbuf b;
	jw w;
	int rc = 0;

	*cluster = NULL;
	for (int i = 0; i < nv && !rc; i++)
		rc = tp_check_view(&v[i], err);
	if (rc)
		return rc;
	sb_init(&b);
	jw_init(&w, &b);
	jw_obj(&w, NULL, false);
	jw_str(&w, "format", "thermap.cluster/1");
	jw_arr(&w, "nodes", false);
	rc = join_host(&w, host, v, nv, prefer, err);
	jw_end_arr(&w);
	jw_null(&w, "network");
	jw_end_obj(&w);
	sb_add(&b, "\n");
	if (rc) {
		sb_free(&b);
		return rc;
	}
	*cluster = b.s;
	return 0;
}

int tm_topo_build(const tm_topo_input *in, int n, const char *prefer,
                  char **cluster, tm_error *err)
{
	strbuf b;
	jw w;
	int rc = 0, nhosts = 0;
	char **hosts = xcalloc((size_t)(n ? n : 1), sizeof *hosts);

	*cluster = NULL;
	sb_init(&b);
	jw_init(&w, &b);
	jw_obj(&w, NULL, false);
	jw_str(&w, "format", "thermap.cluster/1");
	jw_arr(&w, "nodes", false);
	for (int i = 0; i < n && !rc;) {
		tp_view *views = NULL;
		int nv = 0, j = i;
		char *host = NULL;
		/* one set: the inputs up to the next --host */
		for (; j < n && (j == i || in[j].host == in[i].host); j++)
			if (!rc)
				rc = read_one(&in[j], &views, &nv, err);
		if (!rc) {
			if (in[i].host) {
				host = xstrdup(in[i].host);
			} else {
				/* the host a source names, else this machine's */
				const tp_source *src = tp_source_find(in[i].kind);
				for (int k = 0; k < nv && !host; k++)
					if (views[k].host)
						host = xstrdup(views[k].host);
				if (!host && src && src->read_live) {
					char hn[256] = "";
					if (gethostname(hn, sizeof hn - 1) == 0 &&
					    tm_valid_host(hn))
						host = xstrdup(hn);
				}
				if (!host)
					rc = tm_fail(err, TM_EUSAGE, "name the host of "
					             "these inputs with --host NAME "
					             "before them");
			}
		}
		for (int k = 0; k < nhosts && !rc; k++)
			if (!strcmp(hosts[k], host))
				rc = tm_fail(err, TM_EUSAGE, "host %s is given "
				             "twice; give each host's inputs after "
				             "one --host", host);
		if (!rc) {
			hosts[nhosts++] = host;
			host = NULL;
			rc = join_host(&w, hosts[nhosts - 1], views, nv, prefer,
			               err);
		}
		free(host);
		for (int k = 0; k < nv; k++)
			tp_view_clear(&views[k]);
		free(views);
		i = j;
	}
	jw_end_arr(&w);
	jw_null(&w, "network");
	jw_end_obj(&w);
	sb_add(&b, "\n");
	for (int k = 0; k < nhosts; k++)
		free(hosts[k]);
	free(hosts);
	if (!rc && n == 0)
		rc = tm_fail(err, TM_EUSAGE, "no topology source given");
	if (rc) {
		sb_free(&b);
		return rc;
	}
	*cluster = b.s;
	return 0;
}
