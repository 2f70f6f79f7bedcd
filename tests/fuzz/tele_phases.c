/*
 * tele_phases.c — fuzzes the phases file of `profile --phases`
 * (tl_phases_parse). What it accepts must be what the rest relies on:
 * 1 to 4096 phases in time order, none overlapping another, each ending
 * after it starts, with a label of 1 to 64 printable bytes and its
 * counted span from 20 s after the start to 1 s before the end. Those
 * phases then drive a synthetic host of three GPUs through the sink, the
 * phase means and the joint fit: the profile written must load.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "telemetry/telemetry.h"

#define NGPU 3
#define PUSHED 16   /* phases given samples: enough for a fit of three */

static void check_phases(const tl_phases *ph)
{
	if (ph->n < 1 || ph->n > TL_PHASES_MAX)
		fuzz_fail("phases: %d phases accepted", ph->n);
	for (int i = 0; i < ph->n; i++) {
		const tl_phase *p = &ph->p[i];
		size_t n = strlen(p->label);
		if (!(p->end > p->start) || !isfinite(p->start) ||
		    !isfinite(p->end))
			fuzz_fail("phases: phase %d from %g to %g", i, p->start,
			          p->end);
		if (p->lo != p->start + TL_PHASE_SETTLE_S ||
		    p->hi != p->end - TL_PHASE_GUARD_S)
			fuzz_fail("phases: phase %d counts %g to %g", i, p->lo, p->hi);
		if (n < 1 || n > TL_PHASE_LABEL_MAX || p->line < 1)
			fuzz_fail("phases: phase %d: label of %zu bytes, line %ld", i,
			          n, p->line);
		for (size_t k = 0; k < n; k++)
			if (p->label[k] < 0x21 || p->label[k] > 0x7e)
				fuzz_fail("phases: phase %d: label byte 0x%02x", i,
				          (unsigned char)p->label[k]);
		if (i > 0 && p->start < ph->p[i - 1].end)
			fuzz_fail("phases: phases %d and %d overlap", i - 1, i);
	}
}

/* Six samples of each GPU in the counted span of each of the first
 * PUSHED phases, GPU (phase mod 4) loaded (none at mod 3), each GPU
 * warmed by the one before it: the profile with couplings must load. */
static void drive(const tl_phases *ph)
{
	tl_opts o = { NAN, NAN, false, false, 0 };
	tl_sink *k = tl_sink_new(&o);
	tm_error err = { 0, "" };
	tl_src src;
	strbuf out;
	long n = 0;
	int id[NGPU], rc = 0;

	tl_sink_phases(k, ph);
	memset(&src, 0, sizeof src);
	src.sink = k;
	src.file = "fuzz.csv";
	src.err = &err;
	src.t_first = src.t_last = NAN;
	for (int g = 0; g < NGPU; g++)
		if ((id[g] = tl_gpu(&src, "fuzz-host", NULL, NULL, g)) < 0)
			fuzz_fail("phases: GPU %d: %s", g, err.msg);
	for (int i = 0; i < ph->n && i < PUSHED && !rc; i++) {
		const tl_phase *p = &ph->p[i];
		if (!(p->lo <= p->hi))
			continue;
		for (int j = 0; j < 6 && !rc; j++)
			for (int g = 0; g < NGPU && !rc; g++) {
				tl_sample s;
				double pw = i % 4 == g ? 690 : 75 + g;
				double before = (i % 4 == (g + NGPU - 1) % NGPU) ? 615 : 0;
				tl_sample_clear(&s);
				s.t = p->lo + (p->hi - p->lo) * j / 5;
				s.v[TL_POWER] = pw;
				s.v[TL_POWER_LIMIT] = 700;
				s.v[TL_UTIL] = pw > 600 ? 100 : 0;
				s.v[TL_TEMP] = 30 + 0.04 * pw + 0.008 * before + 0.1 * j;
				rc = tl_push(&src, id[g], &s);
			}
	}
	if (rc) {
		/* a time the sink refuses (backwards by rounding: none) */
		fuzz_rejected("phases", rc, &err);
	} else {
		sb_init(&out);
		if ((rc = tl_sink_finish(k, &out, &n, &err)))
			fuzz_rejected("phases", rc, &err);
		else if (n > 0)   /* no span held a sample: no entry */
			fuzz_profile_loads("phases", out.s);
		sb_free(&out);
	}
	tl_sink_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tl_phases *ph = NULL;
	tm_error err = { 0, "" };
	int rc;

	fuzz_init();
	rc = tl_phases_parse("phases.txt", (const char *)data, size, &ph, &err);
	if (rc) {
		fuzz_rejected("phases", rc, &err);
		if (ph)
			fuzz_fail("phases: rejected, yet phases given");
		return 0;
	}
	check_phases(ph);
	drive(ph);
	tl_phases_free(ph);
	return 0;
}
