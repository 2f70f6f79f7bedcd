/*
 * plan.c — fuzzes the plan document reader of diff and replan
 * (src/format/planread.c): tm_plan_doc_loadb over plan.json text.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tm_plan_doc P;
	tm_error err = { 0, "" };
	int rc;

	fuzz_init();
	rc = tm_plan_doc_loadb("plan/plan.json", (const char *)data, size, &P,
	                       &err);
	if (rc)
		fuzz_rejected("plan", rc, &err);
	tm_plan_doc_clear(&P);
	return 0;
}
