/*
 * procs.c — fuzzes the process list of `calibrate --processes`
 * (tm_procs_loadb: nvidia-smi --query-compute-apps CSV). What it accepts
 * must be what calibrate relies on: a row's GPU is a valid UUID or
 * unknown, its pid 1 to 2147483647 or unknown (-1), its memory 0 to 10^9
 * MiB or unknown, and its name, when known, non-empty.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tm_procs P;
	tm_error err = { 0, "" };
	int rc;

	fuzz_init();
	rc = tm_procs_loadb("processes.csv", (const char *)data, size, &P, &err);
	if (rc) {
		fuzz_rejected("processes", rc, &err);
		return 0;
	}
	for (int i = 0; i < P.n; i++) {
		const tm_proc *x = &P.p[i];
		if (x->uuid && !tm_valid_uuid(x->uuid))
			fuzz_fail("processes: row %d: uuid \"%s\"", i, x->uuid);
		if (x->pid != -1 && !(x->pid >= 1 && x->pid <= 2147483647L))
			fuzz_fail("processes: row %d: pid %ld", i, x->pid);
		if (!isnan(x->mem_mib) && !(x->mem_mib >= 0 && x->mem_mib <= 1e9))
			fuzz_fail("processes: row %d: %g MiB", i, x->mem_mib);
		if (x->name && !*x->name)
			fuzz_fail("processes: row %d: an empty name", i);
	}
	tm_procs_clear(&P);
	return 0;
}
