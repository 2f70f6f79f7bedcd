/*
 * tele_labels.c — fuzzes the readers of the Prometheus API's other
 * answers, which profile --prometheus takes from a server: label values
 * (tl_read_label_values) and error answers (tl_prom_error_text). Its
 * query_range answers go to tl_read_qrange (tele_qrange).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "telemetry/telemetry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tm_error err = { 0, "" };
	char **v, buf[600];
	size_t n;
	int rc;

	fuzz_init();
	rc = tl_read_label_values("answer", (const char *)data, size, 64, &v, &n,
	                          &err);
	if (rc) {
		fuzz_rejected("labels", rc, &err);
		if (v || n)
			fuzz_fail("labels: rejected, yet %zu values", n);
	} else {
		if (n > 64)
			fuzz_fail("labels: %zu values past the limit", n);
		for (size_t i = 0; i < n; i++) {
			if (!v[i] || strlen(v[i]) > size)
				fuzz_fail("labels: value %zu is not one of the input", i);
			free(v[i]);
		}
		free(v);
	}
	/* a server's error, shown on one line */
	if (tl_prom_error_text((const char *)data, size, buf, sizeof buf) &&
	    (strchr(buf, '\n') || strlen(buf) >= sizeof buf))
		fuzz_fail("error text: not one line");
	return 0;
}
