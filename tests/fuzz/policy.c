/*
 * policy.c — fuzzes the reader of the policy document (thermap.policy/1):
 * tm_policy_loadb.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tm_policy *x = NULL;
	tm_error err = { 0, "" };
	int rc;

	fuzz_init();
	rc = tm_policy_loadb("policy.json", (const char *)data, size, &x, &err);
	if (rc)
		fuzz_rejected("policy", rc, &err);
	tm_policy_free(x);
	return 0;
}
