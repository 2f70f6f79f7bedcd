/*
 * layout.c — fuzzes the Megatron-Core layout parser (src/format/layout.c): a
 * string that parses must write back as a canonical string that parses to
 * the same stages, and the checks against a model must answer without
 * harm; one that does not parse gets "column N: ...".
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ops/ops.h"

static void same(const tm_layout *a, const tm_layout *b, const char *s,
                 const char *f)
{
	if (a->nstages != b->nstages)
		fuzz_fail("layout \"%s\" wrote \"%s\": %d stages, then %d", s, f,
		          a->nstages, b->nstages);
	for (int i = 0; i < a->nstages; i++)
		if (memcmp(&a->st[i], &b->st[i], sizeof a->st[i]) != 0)
			fuzz_fail("layout \"%s\" wrote \"%s\": stage %d differs",
			          s, f, i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_text(data, size), e[256] = "", *f;
	tm_layout l, m;
	int layers = 0, mtp = 0, first, last;

	fuzz_init();
	if (tm_layout_parse(s, &l, e, sizeof e) != 0) {
		if (strncmp(e, "column ", 7) != 0 || strchr(e, '\n'))
			fuzz_fail("layout \"%s\": message \"%s\"", s, e);
		free(s);
		return 0;
	}
	f = tm_layout_format(&l);
	if (!f)
		fuzz_fail("layout \"%s\" parsed but cannot be written", s);
	if (tm_layout_parse(f, &m, e, sizeof e) != 0)
		fuzz_fail("layout \"%s\" wrote \"%s\", which does not parse: %s",
		          s, f, e);
	same(&l, &m, s, f);
	for (int i = 0; i < l.nstages; i++) {
		layers += l.st[i].dec;
		mtp += l.st[i].mtp;
	}
	/* as one pipeline rank per stage, and as two virtual chunks */
	tm_layout_check(&l, l.nstages, 1, layers, mtp, e, sizeof e);
	if (l.nstages % 2 == 0)
		tm_layout_check(&l, l.nstages / 2, 2, layers, mtp, e, sizeof e);
	if (l.nstages <= 4096) {
		int *per = malloc(sizeof *per * (size_t)l.nstages);
		for (int i = 0; i < l.nstages; i++)
			per[i] = l.st[i].dec;
		tm_layout_uneven_flags(l.nstages, 1, per, &first, &last);
		free(per);
	}
	tm_layout_clear(&m);
	tm_layout_clear(&l);
	free(f);
	free(s);
	return 0;
}
