/*
 * topo_smi.c — fuzzes the topology reader of `nvidia-smi topo -m` text
 * (tp_read_smi_topo), and the cluster that `thermap topo` would write from
 * it.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_topology("smi-topo", data, size);
	return 0;
}
