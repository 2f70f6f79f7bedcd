/*
 * profile.c — fuzzes the reader of the profile document (thermap.profile/1):
 * tm_profile_loadb.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tm_profile *x = NULL;
	tm_error err = { 0, "" };
	int rc;

	fuzz_init();
	rc = tm_profile_loadb("profile.json", (const char *)data, size, &x, &err);
	if (rc)
		fuzz_rejected("profile", rc, &err);
	tm_profile_free(x);
	return 0;
}
