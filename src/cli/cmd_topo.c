/*
 * cmd_topo.c — `thermap topo`: topology reports to a thermap.cluster/1 document.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage_topo[] =
"usage: thermap topo [--host NAME] [--smi-topo FILE] [--gpus FILE]\n"
"                    [--hwloc FILE] [--nccl FILE] [--local] ...\n"
"                    [--prefer SOURCE] [-o FILE]\n"
"\n"
"Writes a thermap.cluster/1 document from what machines report, one set of\n"
"sources per host; each --host starts the next host's set.\n"
"\n"
"  --host NAME          the host of the sources that follow (without it:\n"
"                       the name hwloc reports, or this machine's for --local)\n"
"  --smi-topo FILE      'nvidia-smi topo -m' output: the link matrix\n"
"  --gpus FILE          a GPU list: 'nvidia-smi -L', 'nvidia-smi -q', or\n"
"                       --query-gpu=index,uuid,pci.bus_id,name,memory.total\n"
"                       --format=csv (UUIDs, bus ids, models, memory)\n"
"  --hwloc FILE         hwloc XML (lstopo-no-graphics -of xml): GPUs, PCI,\n"
"                       NUMA, NVLink when hwloc saw it\n"
"  --nccl FILE          an NCCL topology file (NCCL_TOPO_FILE)\n"
"  --local              this machine: hwloc, and nvidia-smi when it runs\n"
"  --prefer SOURCE      when sources disagree, keep this one's word\n"
"                       (smi-topo, gpus, hwloc, nccl, local) instead of\n"
"                       failing\n"
"  -o, --out FILE       write the cluster here (atomically); default stdout\n"
"  --help               this text\n";


/* topo's sources, each with the --host given before it */
typedef struct topo_args {
	tm_topo_input *in;
	int n;
	const char *host;
} topo_args;

static int topo_arg(void *ud, const opt *o, const char *v)
{
	static const char *const kinds[] = { "smi-topo", "gpus", "hwloc",
	                                     "nccl" };
	topo_args *A = ud;
	if (!o)
		return usage_error("topo ", "unexpected argument '%s'", v);
	if (!strcmp(o->name, "--host")) {
		if (!tm_valid_host(v))
			return usage_error("topo ", "--host '%s': expected a host "
			                   "name", v);
		A->host = v;
		return 0;
	}
	A->in[A->n].host = A->host;
	A->in[A->n].kind = "local";
	for (size_t j = 0; j < 4; j++)
		if (!strcmp(o->name + 2, kinds[j]))
			A->in[A->n].kind = kinds[j];
	A->in[A->n++].file = v;
	return 0;
}

int cmd_topo(int argc, char **argv)
{
	static const char *const kinds[] = { "smi-topo", "gpus", "hwloc",
	                                     "nccl", "local" };
	tm_topo_input *in = xcalloc((size_t)argc, sizeof *in);
	const char *prefer = NULL, *out = NULL;
	bool help = false;
	opt opts[] = {
		{ "--host", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--smi-topo", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--gpus", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--hwloc", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--nccl", NULL, OPT_EACH, NULL, NULL, 0 },
		{ "--local", NULL, OPT_EACH_FLAG, NULL, NULL, 0 },
		{ "--prefer", NULL, OPT_ONE, &prefer, NULL, 0 },
		{ "--out", "-o", OPT_ONE, &out, NULL, 0 },
		OPT_END,
	};
	topo_args A = { in, 0, NULL };
	char *cl = NULL;
	tm_error err = { 0, "" };
	int n, rc;

	rc = parse(argc, argv, opts, "topo", topo_arg, &A, &help);
	n = A.n;
	if (!rc && help) {
		fputs(usage_topo, stdout);
		free(in);
		return 0;
	}
	if (!rc && prefer) {
		bool ok = false;
		for (size_t j = 0; j < 5; j++)
			ok |= !strcmp(prefer, kinds[j]);
		if (!ok)
			rc = usage_error("topo ", "--prefer '%s': expected smi-topo, "
			                 "gpus, hwloc, nccl or local", prefer);
	}
	if (!rc && n == 0)
		rc = usage_error("topo ", "%s", "topo needs a source: --smi-topo, "
		                 "--gpus, --hwloc, --nccl or --local");
	if (rc) {
		free(in);
		return rc;
	}
	if (out && (rc = tm_check_file_target(out, &err))) {
		free(in);
		return report(&err);
	}
	rc = tm_topo_build(in, n, prefer, &cl, &err);
	if (rc)
		rc = err.code == TM_EUSAGE ? (fprintf(stderr, "thermap: %s\n"
		     "Try 'thermap topo --help'.\n", err.msg), TM_EUSAGE)
		                          : report(&err);
	else if (out && (rc = tm_write_file_atomic(out, cl, strlen(cl), &err)))
		rc = report(&err);
	else if (!out)
		fputs(cl, stdout);
	free(cl);
	free(in);
	return rc;
}

