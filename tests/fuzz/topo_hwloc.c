/*
 * topo_hwloc.c — fuzzes the topology reader of hwloc XML (tp_read_hwloc: the
 * probe in a child process, then libhwloc here), and the cluster that
 * `thermap topo` would write from it.
 */
#include "fuzz.h"

/* libhwloc 2.9 leaks the objects it had built when it rejects a malformed
 * file (hwloc_alloc_setup_object, hwloc_bitmap_alloc under
 * hwloc_topology_load), although thermap destroys the topology: its leak,
 * not thermap's, and one per refused file. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libhwloc.so\n";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_topology("hwloc", data, size);
	return 0;
}
