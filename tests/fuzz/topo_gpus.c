/*
 * topo_gpus.c — fuzzes the topology reader of GPU lists: nvidia-smi -L, -q
 * and --query-gpu CSV (tp_read_gpu_list), and the cluster that `thermap
 * topo` would write from it.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_topology("gpus", data, size);
	return 0;
}
