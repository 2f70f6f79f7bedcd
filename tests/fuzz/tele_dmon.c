/*
 * tele_dmon.c — fuzzes the telemetry reader of nvidia-smi dmon logs
 * (tl_read_dmon) and the profile it builds.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_telemetry("dmon", data, size);
	return 0;
}
