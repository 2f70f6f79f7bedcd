/*
 * cluster.c — loads and validates a thermap.cluster/1 document: hosts, their
 * GPUs and the nvidia-smi topo -m link matrix, and resolves every GPU pair's
 * bandwidth from the link code (docs/topology.md) or the file's override.
 * It does not read topology reports; `thermap topo` writes these files.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format/format.h"

/* Per-link NVLink bandwidth, GB/s one direction, by GPU generation. */
static const struct { const char *tag; double gbps; } nv_per_link[] = {
	{ "B200", 50.0 }, { "B100", 50.0 }, { "GB200", 50.0 },
	{ "H200", 26.562 }, { "H100", 26.562 }, { "H800", 26.562 },
	{ "H20", 26.562 }, { "A100", 25.0 }, { "A800", 25.0 },
	{ "V100", 25.0 }, { "P100", 20.0 },
};
#define NV_DEFAULT_GBPS 25.0

double tm_link_default_gb_per_s(int link, int nv, const char *model)
{
	double per = NV_DEFAULT_GBPS;
	switch (link) {
	case TM_LINK_NV:
		for (size_t i = 0; model && i < sizeof nv_per_link /
		     sizeof nv_per_link[0]; i++)
			if (strstr(model, nv_per_link[i].tag)) {
				per = nv_per_link[i].gbps;
				break;
			}
		return per * nv;
	case TM_LINK_PIX: return 24.0;
	case TM_LINK_PXB: return 20.0;
	case TM_LINK_PHB: return 16.0;
	case TM_LINK_NODE: return 12.0;
	case TM_LINK_SYS: return 8.0;
	default: return INFINITY;
	}
}

const char *tm_link_name(int link, int nv, char buf[16])
{
	static const char *names[] = { "X", "NV", "PIX", "PXB", "PHB",
	                               "NODE", "SYS" };
	if (link == TM_LINK_NV)
		snprintf(buf, 16, "NV%d", nv);
	else
		snprintf(buf, 16, "%s", names[link]);
	return buf;
}

/* Parses a topo -m cell ("NV18", " SYS "); -1 when it is not a link code.
 * SOC, the older name of SYS, is SYS. Shared with the topo -m reader. */
int tm_parse_link(const char *s, int *nv)
{
	char t[16];
	size_t n = 0;
	while (*s == ' ')
		s++;
	while (*s && *s != ' ' && n < sizeof t - 1)
		t[n++] = *s++;
	t[n] = '\0';
	while (*s == ' ')
		s++;
	if (*s)
		return -1;
	*nv = 0;
	if (!strcmp(t, "X"))
		return TM_LINK_X;
	if (!strncmp(t, "NV", 2) && t[2]) {
		long k = 0;
		for (const char *d = t + 2; *d; d++) {
			if (*d < '0' || *d > '9' || k > 64)
				return -1;
			k = k * 10 + (*d - '0');
		}
		if (k < 1 || k > 64)
			return -1;
		*nv = (int)k;
		return TM_LINK_NV;
	}
	if (!strcmp(t, "PIX"))
		return TM_LINK_PIX;
	if (!strcmp(t, "PXB"))
		return TM_LINK_PXB;
	if (!strcmp(t, "PHB"))
		return TM_LINK_PHB;
	if (!strcmp(t, "NODE"))
		return TM_LINK_NODE;
	if (!strcmp(t, "SYS") || !strcmp(t, "SOC"))
		return TM_LINK_SYS;
	return -1;
}

void tm_cluster_free(tm_cluster *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nnodes; i++) {
		tm_node *n = &c->nodes[i];
		for (int g = 0; g < n->ngpus; g++) {
			free(n->gpus[g].uuid);
			free(n->gpus[g].pci_bus_id);
			free(n->gpus[g].model);
		}
		free(n->host);
		free(n->gpus);
		free(n->link);
		free(n->nv);
		free(n->bw);
		free(n->net_group);
	}
	free(c->nodes);
	free(c->file);
	free(c);
}

static int load_gpu(const jin *J, json_t *o, const char *path, tm_gpu *g)
{
	static const char *const known[] = { "index", "uuid", "pci_bus_id",
		"model", "memory_gib", "numa_node", NULL };
	char *pci = NULL;
	int rc;

	g->memory_gib = NAN;
	g->numa_node = -1;
	if (!json_is_object(o))
		return jin_fail(J, path, NULL, "expected a GPU object");
	jin_unknown(J, o, path, known);
	if ((rc = jin_int(J, o, path, "index", JF_REQ, 0, 65535, &g->index)) ||
	    (rc = jin_str(J, o, path, "uuid", JF_NULL, &g->uuid)) ||
	    (rc = jin_str(J, o, path, "pci_bus_id", JF_NULL, &pci)) ||
	    (rc = jin_str(J, o, path, "model", JF_NULL, &g->model)) ||
	    (rc = jin_num(J, o, path, "memory_gib", JF_NULL, 0, 1e6,
	                  &g->memory_gib)) ||
	    (rc = jin_int(J, o, path, "numa_node", JF_NULL, 0, 65535,
	                  &g->numa_node)))
		goto fail;
	g->has_numa = g->numa_node >= 0;
	if (g->uuid && !tm_valid_uuid(g->uuid)) {
		rc = jin_fail(J, path, "uuid", "\"%.100s\" is not a GPU UUID; "
		              "expected \"GPU-\" or \"MIG-\" and hex digits",
		              g->uuid);
		goto fail;
	}
	if (pci) {
		g->pci_bus_id = tm_normalise_pci(pci);
		if (!g->pci_bus_id) {
			rc = jin_fail(J, path, "pci_bus_id", "\"%.100s\" is not a PCI "
			              "bus id; expected like \"00000000:00:06.0\"", pci);
			goto fail;
		}
	}
	free(pci);
	return 0;
fail:
	free(pci);
	return rc;
}

static int load_links(const jin *J, json_t *o, const char *path, tm_node *n)
{
	json_t *links, *row, *cell;
	char p[256];
	int rc, ng = n->ngpus;

	if ((rc = jin_arr(J, o, path, "links", JF_REQ, &links)))
		return rc;
	snprintf(p, sizeof p, "%s.links", path);
	if ((int)json_array_size(links) != ng)
		return jin_fail(J, p, NULL, "has %zu rows; expected %d (one per GPU)",
		                json_array_size(links), ng);
	n->link = xcalloc((size_t)ng * ng, 1);
	n->nv = xcalloc((size_t)ng * ng, 1);
	/* the JSON path of a cell is made only for its message: a cluster
	 * has GPUs² cells per host */
	for (int i = 0; i < ng; i++) {
		row = json_array_get(links, (size_t)i);
		if (!json_is_array(row) || (int)json_array_size(row) != ng) {
			snprintf(p, sizeof p, "%s.links[%d]", path, i);
			return jin_fail(J, p, NULL, "expected an array of %d link codes",
			                ng);
		}
		for (int k = 0; k < ng; k++) {
			int nv = 0, l = -1;
			cell = json_array_get(row, (size_t)k);
			if (json_is_string(cell))
				l = tm_parse_link(json_string_value(cell), &nv);
			if (l < 0 || (l == TM_LINK_X) != (i == k)) {
				snprintf(p, sizeof p, "%s.links[%d][%d]", path, i, k);
				if (!json_is_string(cell))
					return jin_fail(J, p, NULL, "expected a link code "
					                "string (X, NV#, PIX, PXB, PHB, NODE, "
					                "SYS)");
				if (l < 0)
					return jin_fail(J, p, NULL, "\"%.40s\" is not a link "
					                "code; expected X, NV#, PIX, PXB, PHB, "
					                "NODE or SYS", json_string_value(cell));
				return jin_fail(J, p, NULL, i == k ? "expected \"X\" on "
				                "the diagonal" : "\"X\" is only for a GPU "
				                "with itself");
			}
			n->link[i * ng + k] = (unsigned char)l;
			n->nv[i * ng + k] = (unsigned char)nv;
		}
	}
	for (int i = 0; i < ng; i++)
		for (int k = 0; k < i; k++)
			if (n->link[i * ng + k] != n->link[k * ng + i] ||
			    n->nv[i * ng + k] != n->nv[k * ng + i]) {
				char a[16], b[16];
				snprintf(p, sizeof p, "%s.links[%d][%d]", path, i, k);
				return jin_fail(J, p, NULL, "is %s but links[%d][%d] is %s; "
				                "expected a symmetric matrix",
				                tm_link_name(n->link[i * ng + k],
				                             n->nv[i * ng + k], a), k, i,
				                tm_link_name(n->link[k * ng + i],
				                             n->nv[k * ng + i], b));
			}
	return 0;
}

static int load_bw(const jin *J, json_t *o, const char *path, tm_node *n)
{
	json_t *ov = json_object_get(o, "link_gb_per_s");
	int ng = n->ngpus;
	char p[256];

	n->bw = xcalloc((size_t)ng * ng, sizeof(double));
	for (int i = 0; i < ng; i++)
		for (int k = 0; k < ng; k++)
			n->bw[i * ng + k] = tm_link_default_gb_per_s(
				n->link[i * ng + k], n->nv[i * ng + k], n->gpus[i].model);
	if (!ov || json_is_null(ov))
		return 0;
	snprintf(p, sizeof p, "%s.link_gb_per_s", path);
	if (json_is_number(ov)) {
		double v = json_number_value(ov);
		if (!(v > 0 && v <= 1e5))
			return jin_fail(J, p, NULL, "expected a bandwidth above 0 "
			                "and at most 100000 GB/s");
		for (int i = 0; i < ng; i++)
			for (int k = 0; k < ng; k++)
				if (i != k)
					n->bw[i * ng + k] = v;
		return 0;
	}
	if (!json_is_array(ov) || (int)json_array_size(ov) != ng)
		return jin_fail(J, p, NULL, "expected null, a number, or a %dx%d "
		                "matrix of numbers", ng, ng);
	for (int i = 0; i < ng; i++) {
		json_t *row = json_array_get(ov, (size_t)i);
		if (!json_is_array(row) || (int)json_array_size(row) != ng)
			return jin_fail(J, p, NULL, "row %d: expected %d entries", i, ng);
		for (int k = 0; k < ng; k++) {
			json_t *cell = json_array_get(row, (size_t)k);
			double v;
			if (i == k || json_is_null(cell))
				continue;
			v = json_number_value(cell);
			if (!json_is_number(cell) || !(v > 0 && v <= 1e5))
				return jin_fail(J, p, NULL, "[%d][%d]: expected null or a "
				                "bandwidth above 0 GB/s", i, k);
			n->bw[i * ng + k] = v;
		}
	}
	return 0;
}

static int load_node(const jin *J, json_t *o, const char *path, tm_node *n)
{
	static const char *const known[] = { "host", "gpus", "links",
		"link_gb_per_s", "net_gb_per_s", "net_group", NULL };
	json_t *gpus;
	char p[256];
	int rc;

	n->net_gb_per_s = NAN;
	if (!json_is_object(o))
		return jin_fail(J, path, NULL, "expected a node object");
	jin_unknown(J, o, path, known);
	if ((rc = jin_str(J, o, path, "host", JF_REQ, &n->host)))
		return rc;
	if (!tm_valid_host(n->host))
		return jin_fail(J, path, "host", "\"%.100s\" is not a usable host "
		                "name; expected letters, digits, '.', '-' and '_'",
		                n->host);
	if ((rc = jin_arr(J, o, path, "gpus", JF_REQ, &gpus)))
		return rc;
	if (json_array_size(gpus) == 0 ||
	    json_array_size(gpus) > TM_MAX_GPUS_PER_NODE)
		return jin_fail(J, path, "gpus", "expected 1 to %d GPUs",
		                TM_MAX_GPUS_PER_NODE);
	n->ngpus = (int)json_array_size(gpus);
	n->gpus = xcalloc((size_t)n->ngpus, sizeof *n->gpus);
	for (int g = 0; g < n->ngpus; g++) {
		snprintf(p, sizeof p, "%s.gpus[%d]", path, g);
		if ((rc = load_gpu(J, json_array_get(gpus, (size_t)g), p,
		                   &n->gpus[g])))
			return rc;
		for (int h = 0; h < g; h++) {
			const tm_gpu *a = &n->gpus[h], *b = &n->gpus[g];
			if (a->index == b->index)
				return jin_fail(J, p, "index", "%d repeats gpus[%d]",
				                b->index, h);
			if (a->uuid && b->uuid && !strcmp(a->uuid, b->uuid))
				return jin_fail(J, p, "uuid", "%s repeats gpus[%d]",
				                b->uuid, h);
			if (a->pci_bus_id && b->pci_bus_id &&
			    !strcmp(a->pci_bus_id, b->pci_bus_id))
				return jin_fail(J, p, "pci_bus_id", "%s repeats gpus[%d]",
				                b->pci_bus_id, h);
		}
	}
	if ((rc = load_links(J, o, path, n)) || (rc = load_bw(J, o, path, n)))
		return rc;
	if ((rc = jin_num(J, o, path, "net_gb_per_s", JF_NULL, 1e-3, 1e5,
	                  &n->net_gb_per_s)) ||
	    (rc = jin_str(J, o, path, "net_group", JF_NULL, &n->net_group)))
		return rc;
	return 0;
}

/* A node's host name, where it is a string, and its position. */
typedef struct hostref {
	const char *host;
	int i;
} hostref;

static int cmp_hostref(const void *a, const void *b, void *ctx)
{
	(void)ctx;
	return strcmp(((const hostref *)a)->host, ((const hostref *)b)->host);
}

/* For each of the n nodes, the first node before it with the same host
 * string, or -1: the nodes sorted by name (a stable sort keeps equal
 * names in file order), n log n comparisons where comparing each node
 * with every earlier one took n² (65,536 hosts: 2·10⁹). The repeat is
 * reported once its node has passed its own checks, and every node before
 * it has: the same node and message as comparing the loaded names. */
static int *first_of_host(json_t *nodes, int n)
{
	hostref *v = xmalloc(sizeof *v * (size_t)n);
	int *first = xmalloc(sizeof *first * (size_t)n);
	int m = 0;

	for (int i = 0; i < n; i++) {
		const char *h = json_string_value(
			json_object_get(json_array_get(nodes, (size_t)i), "host"));
		first[i] = -1;
		if (h)
			v[m++] = (hostref){ h, i };
	}
	tm_sort(v, (size_t)m, sizeof *v, cmp_hostref, NULL);
	for (int a = 0, b; a < m; a = b)
		for (b = a + 1; b < m && !strcmp(v[b].host, v[a].host); b++)
			first[v[b].i] = v[a].i;
	free(v);
	return first;
}

/* From the file, or from len bytes of text (text non-NULL) standing for
 * it: the fuzz harnesses and tests read documents held in memory. */
static int cluster_load(const char *file, const char *text, size_t len,
                        tm_cluster **out, tm_error *err)
{
	static const char *const known[] = { "format", "nodes", "network", NULL };
	static const char *const known_net[] = { "same_group_gb_per_s",
		"cross_group_gb_per_s", NULL };
	tm_cluster *c = xcalloc(1, sizeof *c);
	json_t *root = NULL, *nodes, *net;
	jin J = { file, err };
	char p[64];
	int *first = NULL;
	int rc;

	c->file = xstrdup(file);
	c->same_group_gb_per_s = c->cross_group_gb_per_s = NAN;
	if (text) {
		char hex[65];
		tm_sha256_hex(text, len, hex);
		snprintf(c->sha256, sizeof c->sha256, "sha256:%s", hex);
		rc = jin_loadb(file, text, len, "thermap.cluster", &root, err);
	} else {
		rc = jin_load(file, "thermap.cluster", &root, c->sha256, err);
	}
	if (rc)
		goto fail;
	jin_unknown(&J, root, "", known);
	if ((rc = jin_arr(&J, root, "", "nodes", JF_REQ, &nodes)))
		goto fail;
	if (json_array_size(nodes) == 0 ||
	    json_array_size(nodes) > TM_MAX_NODES) {
		rc = jin_fail(&J, "", "nodes", "expected 1 to %d nodes",
		              TM_MAX_NODES);
		goto fail;
	}
	c->nnodes = (int)json_array_size(nodes);
	c->nodes = xcalloc((size_t)c->nnodes, sizeof *c->nodes);
	first = first_of_host(nodes, c->nnodes);
	for (int i = 0; i < c->nnodes; i++) {
		snprintf(p, sizeof p, "nodes[%d]", i);
		if ((rc = load_node(&J, json_array_get(nodes, (size_t)i), p,
		                    &c->nodes[i])))
			goto fail;
		if (first[i] >= 0) {
			rc = jin_fail(&J, p, "host", "\"%s\" repeats nodes[%d]",
			              c->nodes[i].host, first[i]);
			goto fail;
		}
	}
	if ((rc = jin_obj(&J, root, "", "network", JF_NULL, &net)))
		goto fail;
	if (net) {
		jin_unknown(&J, net, "network", known_net);
		if ((rc = jin_num(&J, net, "network", "same_group_gb_per_s",
		                  JF_NULL, 1e-3, 1e5, &c->same_group_gb_per_s)) ||
		    (rc = jin_num(&J, net, "network", "cross_group_gb_per_s",
		                  JF_NULL, 1e-3, 1e5, &c->cross_group_gb_per_s)))
			goto fail;
	}
	free(first);
	json_decref(root);
	*out = c;
	return 0;
fail:
	free(first);
	json_decref(root);
	tm_cluster_free(c);
	*out = NULL;
	return rc;
}

int tm_cluster_load(const char *file, tm_cluster **out, tm_error *err)
{
	return cluster_load(file, NULL, 0, out, err);
}

int tm_cluster_loadb(const char *name, const char *text, size_t len,
                     tm_cluster **out, tm_error *err)
{
	return cluster_load(name, text, len, out, err);
}
