/*
 * topo_nccl.c — fuzzes the topology reader of NCCL topology XML
 * (tp_read_nccl), and the cluster that `thermap topo` would write from it.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_topology("nccl", data, size);
	return 0;
}
