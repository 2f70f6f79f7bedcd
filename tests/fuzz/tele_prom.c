/*
 * tele_prom.c — fuzzes the telemetry reader of Prometheus text scrapes of
 * dcgm-exporter (tl_read_prom) and the profile it builds.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_telemetry("prom", data, size);
	return 0;
}
