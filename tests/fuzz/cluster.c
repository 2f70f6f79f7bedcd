/*
 * cluster.c — fuzzes the reader of the cluster document (thermap.cluster/1):
 * tm_cluster_loadb.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tm_cluster *x = NULL;
	tm_error err = { 0, "" };
	int rc;

	fuzz_init();
	rc = tm_cluster_loadb("cluster.json", (const char *)data, size, &x, &err);
	if (rc)
		fuzz_rejected("cluster", rc, &err);
	tm_cluster_free(x);
	return 0;
}
