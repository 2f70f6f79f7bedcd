/*
 * job.c — fuzzes the reader of the job document (thermap.job/1), its
 * measured section included: tm_job_loadb.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tm_job *x = NULL;
	tm_error err = { 0, "" };
	int rc;

	fuzz_init();
	rc = tm_job_loadb("job.json", (const char *)data, size, &x, &err);
	if (rc)
		fuzz_rejected("job", rc, &err);
	tm_job_free(x);
	return 0;
}
