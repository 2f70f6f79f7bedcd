/*
 * topo_hwloc.c — fuzzes the topology reader of hwloc XML (tp_read_hwloc: the
 * probe in a child process, then libhwloc here), and the cluster that
 * `thermap topo` would write from it.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_topology("hwloc", data, size);
	return 0;
}
