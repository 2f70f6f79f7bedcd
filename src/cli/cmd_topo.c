/*
 * cmd_topo.c — `thermap topo`: what machines report about their topology
 * (nvidia-smi topo -m, GPU lists, hwloc XML, NCCL topology files, the live
 * machine) to a thermap.cluster/1 document. Its rows, its --help, the
 * sources as the library's registry names them, and the call into the library (tm_topo_build), which
 * reads the sources and joins them.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "topo/topo.h"

typedef struct topo_args {
	const char *prefer, *out;
	tm_topo_input *in;  /* the sources, each with its --host (argc) */
	int n;
	const char *host;   /* in force for the next source */
} topo_args;

#define AT(field) offsetof(topo_args, field)

static const cli_opt rows[] = {
	{ "--host", NULL, "NAME", CLI_EACH, 0,
	  "the host of the sources that follow (without it:\n"
	  "the name hwloc reports, or this machine's for --local)", NULL },
	{ "--smi-topo", NULL, "FILE", CLI_EACH, 0,
	  "'nvidia-smi topo -m' output: the link matrix", NULL },
	{ "--gpus", NULL, "FILE", CLI_EACH, 0,
	  "a GPU list: 'nvidia-smi -L', 'nvidia-smi -q', or\n"
	  "--query-gpu=index,uuid,pci.bus_id,name,memory.total\n"
	  "--format=csv (UUIDs, bus ids, models, memory)", NULL },
	{ "--hwloc", NULL, "FILE", CLI_EACH, 0,
	  "hwloc XML (lstopo-no-graphics -of xml): GPUs, PCI,\n"
	  "NUMA, NVLink when hwloc saw it", NULL },
	{ "--nccl", NULL, "FILE", CLI_EACH, 0,
	  "an NCCL topology file (NCCL_TOPO_FILE)", NULL },
	{ "--local", NULL, NULL, CLI_EACH, 0,
	  "this machine: hwloc, and nvidia-smi when it runs", NULL },
	{ "--prefer", NULL, "SOURCE", 0, AT(prefer),
	  "when sources disagree, keep this one's word\n"
	  "(smi-topo, gpus, hwloc, nccl, local) instead of\n"
	  "failing", NULL },
	{ "--out", "-o", "FILE", 0, AT(out),
	  "write the cluster here (atomically); default stdout", NULL },
	CLI_END
};

static int run(int argc, char **argv);

const cli_cmd cli_topo = {
	"topo", "topology reports (topo -m, GPU list, hwloc, NCCL) -> cluster",
	"thermap topo [--host NAME] [--smi-topo FILE] [--gpus FILE]\n"
	"[--hwloc FILE] [--nccl FILE] [--local] ...\n"
	"[--prefer SOURCE] [-o FILE]",
	"Writes a thermap.cluster/1 document from what machines report, one set of\n"
	"sources per host; each --host starts the next host's set.\n",
	rows, NULL, run,
};

/* The source of that name in the library's registry (tp_sources, whose
 * names are the options --NAME and --prefer's values), or NULL. */
static const char *source(const char *name)
{
	const tp_source *t = tp_source_find(name);
	return t ? t->name : NULL;
}

/* each --host, and each source with the --host given before it */
static int source_arg(void *args, const cli_opt *o, const char *v)
{
	topo_args *a = args;
	if (!o)
		return cli_usage(&cli_topo, "unexpected argument '%s'", v);
	if (!strcmp(o->name, "--host")) {
		if (!tm_valid_host(v))
			return cli_usage(&cli_topo, "--host '%s': expected a host "
			                 "name", v);
		a->host = v;
		return 0;
	}
	a->in[a->n++] = (tm_topo_input){ a->host, source(o->name + 2), v };
	return 0;
}

/* 0, or TM_EUSAGE once printed */
static int validate(const topo_args *a)
{
	strbuf b;
	int rc = 0;
	sb_init(&b);
	if (a->prefer && !source(a->prefer)) {
		tp_source_names(&b, "", 0);
		rc = cli_usage(&cli_topo, "--prefer '%s': expected %s", a->prefer,
		               b.s);
	} else if (a->n == 0) {
		tp_source_names(&b, "--", 0);
		rc = cli_usage(&cli_topo, "topo needs a source: %s", b.s);
	}
	sb_free(&b);
	return rc;
}

static int run(int argc, char **argv)
{
	topo_args a = { 0 };
	char *cl = NULL;
	tm_error err = { 0, "" };
	int rc;

	a.in = xcalloc((size_t)argc, sizeof *a.in);
	if (!cli_parse(&cli_topo, argc, argv, &a, source_arg, &rc) ||
	    (rc = validate(&a)))
		goto out;
	if (a.out && (rc = tm_check_file_target(a.out, &err))) {
		rc = cli_report(&err);
		goto out;
	}
	rc = tm_topo_build(a.in, a.n, a.prefer, &cl, &err);
	if (rc)
		rc = err.code == TM_EUSAGE ? cli_usage(&cli_topo, "%s", err.msg)
		                           : cli_report(&err);
	else if (a.out && (rc = tm_write_file_atomic(a.out, cl, strlen(cl),
	                                             &err)))
		rc = cli_report(&err);
	else if (!a.out)
		fputs(cl, stdout);
out:
	free(cl);
	free(a.in);
	return rc;
}
