/*
 * tele_csv.c — fuzzes the telemetry reader of nvidia-smi --query-gpu CSV
 * logs (tl_read_csv) and the profile it builds.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_telemetry("csv", data, size);
	return 0;
}
