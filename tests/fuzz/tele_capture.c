/*
 * tele_capture.c — fuzzes the telemetry reader of nvidia_gpu_exporter
 * captures (tl_read_capture) and the profile it builds.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_telemetry("capture", data, size);
	return 0;
}
