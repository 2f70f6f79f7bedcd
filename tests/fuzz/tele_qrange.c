/*
 * tele_qrange.c — fuzzes the telemetry reader of Prometheus query_range JSON
 * (tl_read_qrange, tl_qrange_flush) and the profile it builds.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_telemetry("qrange", data, size);
	return 0;
}
