/*
 * tele_dmon.c — fuzzes the telemetry readers of nvidia-smi dmon logs
 * (tl_read_dmon) and of dcgmi dmon logs (tl_read_dcgmi, for inputs that
 * start "#Entity") and the profile they build.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_telemetry("dmon", data, size);
	return 0;
}
