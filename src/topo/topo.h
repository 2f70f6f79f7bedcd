/*
 * topo.h — what each topology source says about one host (a "view"), and
 * the readers that build views: `nvidia-smi topo -m` text and GPU lists
 * (smi.c), hwloc XML or the live machine (hwloc.c), NCCL topology XML
 * (nccl.c), and this machine through them (local.c). The helpers every
 * reader builds a view with are view.c's; topo.c, above the readers, joins
 * the views of a host, checks them against each other and writes
 * thermap.cluster/1.
 *
 * Readers never print or exit: they fill a view or return an exit code
 * with err set to one line naming the file and the place.
 *
 * Layer: above format and base, beside telemetry. Only hwloc.c includes
 * <hwloc.h>.
 */
#ifndef THERMAP_TOPO_H
#define THERMAP_TOPO_H

#include <stdbool.h>

#include "format/format.h"

typedef struct tp_gpu {
	int index;          /* nvidia-smi index; -1 when the source has none */
	char *uuid;         /* "GPU-...", NULL when unknown */
	char *pci;          /* normalised by tm_normalise_pci, NULL when unknown */
	char *model;        /* "NVIDIA H200", NULL when unknown */
	double memory_gib;  /* NAN when unknown */
	int numa;           /* NUMA node, -1 when unknown */
} tp_gpu;

typedef struct tp_view {
	const char *source;  /* "smi-topo", "gpu-list", "hwloc", "nccl", "local" */
	char *file;          /* for messages (NULL for the live machine) */
	char *host;          /* host named by the source itself, or NULL */
	int ngpus;
	tp_gpu *gpus;        /* in the source's order; index order if it has one */
	/* GPU x GPU link matrix, row-major, in the order of gpus; NULL when
	 * the source says nothing about links. link: enum tm_link; nv: the
	 * NVLink count for TM_LINK_NV cells. */
	unsigned char *link;
	unsigned char *nv;
	/* NVLink only (hwloc's NVLinkBandwidth, NCCL <nvlink>): the source
	 * knows which pairs are NVLink-joined, and how many links, but for
	 * the other pairs only a PCIe/SMP code derived from locality, which
	 * may be coarser than topo -m's. true: compare NV cells only. */
	bool nv_only;
	/* The source cannot tell "no NVLink" from "NVLink not seen" (hwloc
	 * without an NVLinkBandwidth matrix): its NV cells are not compared,
	 * and its matrix is used only when no other source has links. */
	bool nv_unknown;
	/* Things the source could not tell, one line each, for the user. */
	char **notes;
	int nnotes;
	/* Non-NVIDIA GPUs the source lists, reported and ignored. */
	int ignored;
} tp_view;

/* view.c: a view's life. tp_view_clear releases what v holds (v itself is
 * the caller's) and leaves it empty. */
void tp_view_init(tp_view *v, const char *source, const char *file);
void tp_view_clear(tp_view *v);
/* Appends a GPU (all fields unknown) and returns it. */
tp_gpu *tp_add_gpu(tp_view *v);
/* Allocates the link matrices for v->ngpus GPUs, all SYS, diagonal X. */
void tp_alloc_links(tp_view *v);
void tp_note(tp_view *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Reads `nvidia-smi topo -m` text (any variant: tabs or spaces, ANSI
 * escapes, NIC rows/columns, legend or not, affinity columns). GPUs get
 * index = row number (GPU0 -> 0) and numa from "NUMA Affinity" when
 * present. A matrix with missing rows or columns is an error naming them. */
int tp_read_smi_topo(const char *file, tp_view *v, tm_error *err);
int tp_read_smi_topo_text(const char *file, const char *data, size_t len,
                          tp_view *v, tm_error *err);

/* Reads a GPU list: `nvidia-smi -L`, `nvidia-smi -q`, or
 * `--query-gpu=index,uuid,pci.bus_id,name,memory.total --format=csv`
 * (header needed; any order; units or not). No links. */
int tp_read_gpu_list(const char *file, tp_view *v, tm_error *err);
int tp_read_gpu_list_text(const char *file, const char *data, size_t len,
                          tp_view *v, tm_error *err);
/* Device memory of the GPU list, MiB, as its GiB (smi.c: the rounding
 * every source of the same GPUs uses, NVML's included). */
double tp_mib_to_gib(double mib);

/* Reads hwloc XML (file), or the live machine (file NULL), through
 * libhwloc: NVIDIA GPUs (CUDA/NVML OS devices, else NVIDIA PCI display
 * devices), their PCI bus ids and NUMA nodes, PCIe/SMP codes from the
 * PCI tree, and NVLink from the NVLinkBandwidth distances when present
 * (GPU-to-GPU, or GPU-to-NVSwitch: GPUs on one switch fabric are joined).
 * Non-NVIDIA GPUs are counted in v->ignored and noted. */
int tp_read_hwloc(const char *file, tp_view *v, tm_error *err);
int tp_read_hwloc_text(const char *file, const char *data, size_t len,
                       tp_view *v, tm_error *err);

/* Reads an NCCL topology file (NCCL_TOPO_FILE): <gpu dev= ...> under
 * <pci busid=...>, <nvlink target= count=>, NVSwitch targets. A graph file,
 * a file without GPUs, or XML that is not well formed is an error. */
int tp_read_nccl(const char *file, tp_view *v, tm_error *err);
int tp_read_nccl_text(const char *file, const char *data, size_t len,
                      tp_view *v, tm_error *err);

/* The *_text readers read len bytes at data instead of the file, which
 * then only names them in messages (tests and fuzz harnesses). */

/* Reads this machine (local.c): hwloc's live view, and, when nvidia-smi
 * runs here, its `topo -m` matrix and GPU list, each checked with
 * tp_check_view and named "local"; appends them to *views (*nv of them,
 * reallocated). Nothing is appended on an error. */
int tp_read_local(tp_view **views, int *nv, tm_error *err);

/* ---- the topology sources ---------------------------------------------------
 * One row per source `thermap topo` reads (topo.c): its name, as the
 * option --NAME, --prefer NAME and tm_topo_input.kind say it; its reader;
 * what it can tell, and whose word counts most where sources differ.
 * Adding a source is a reader and a row. */
enum tp_tells {
	TP_TELLS_LINKS = 1 << 0,   /* a link matrix between its GPUs */
	TP_NVLINK_UNSURE = 1 << 1  /* a matrix without NVLink may only not have
	                              seen it (hwloc): tp_mark_nv_unknown */
};

typedef struct tp_source {
	const char *name;      /* "smi-topo", "gpus", "hwloc", "nccl", "local" */
	/* reads FILE into one view; NULL for the live machine */
	int (*read)(const char *file, tp_view *v, tm_error *err);
	/* reads this machine, appending views (tp_read_local); NULL for the
	 * sources read from a FILE */
	int (*read_live)(tp_view **views, int *nv, tm_error *err);
	unsigned tells;        /* enum tp_tells */
	int id_rank;           /* the GPU facts of the source of least rank
	                          are the base the others are checked against */
	int nvlink_rank;       /* among matrices that know NVLink pairs only
	                          (nv_only), the one of least rank is used */
} tp_source;

/* The sources, in the order the command line lists them. */
extern const tp_source tp_sources[];
extern const int tp_nsources;
/* The source named name, or NULL. */
const tp_source *tp_source_find(const char *name);
/* Appends the names of the sources that tell all of tells (0: every
 * source) to b, each after prefix: "--smi-topo, --hwloc, --nccl or
 * --local" for ("--", TP_TELLS_LINKS). */
void tp_source_names(strbuf *b, const char *prefix, unsigned tells);

/* view.c: checks a view as every source's must hold (no UUID or PCI bus
 * id twice, NVLink counts within NV1..NV64). */
int tp_check_view(const tp_view *v, tm_error *err);
/* view.c: hwloc shows NVLink only through its NVLinkBandwidth distances,
 * so a view without a single NVLink pair may just not have had them: its
 * NVLink is marked unknown (nv_unknown). */
void tp_mark_nv_unknown(tp_view *v);

/* topo.c: joins the views of one host into a thermap.cluster/1 document
 * of that host alone, as `thermap topo` does; *cluster is new text. */
int tp_join_views(const char *host, tp_view *v, int nv, const char *prefer,
                  char **cluster, tm_error *err);

#endif
