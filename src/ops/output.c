/*
 * output.c — the one registry of the formats a command's report comes in
 * (enum tm_format: text, markdown, csv, json) and their names. compare,
 * diff and check look their --format up here; each command's renderers
 * (compare.c, diff.c, check.c) are indexed by the enum.
 *
 * It renders nothing itself and knows no command's table: a new format is
 * a row here, a bit in the sets of thermap.h, and a renderer in each
 * command that offers it.
 *
 * Layer: ops (the library half of the commands).
 */
#include <stdio.h>
#include <string.h>

#include "ops/ops.h"

static const char *const format_names[TM_NFORMATS] = {
	[TM_FORMAT_TEXT] = "text",
	[TM_FORMAT_MARKDOWN] = "markdown",
	[TM_FORMAT_CSV] = "csv",
	[TM_FORMAT_JSON] = "json",
};

int tm_format_lookup(const char *name, unsigned accepted)
{
	for (int f = 0; name && f < TM_NFORMATS; f++)
		if ((accepted & TM_FORMAT_BIT(f)) && !strcmp(name, format_names[f]))
			return f;
	return -1;
}

const char *tm_format_name(int fmt)
{
	return fmt >= 0 && fmt < TM_NFORMATS ? format_names[fmt] : NULL;
}

void tm_format_list(unsigned accepted, const char *sep, const char *last,
                    char *buf, size_t len)
{
	int n = 0, k = 0;
	size_t at = 0;

	for (int f = 0; f < TM_NFORMATS; f++)
		n += (accepted & TM_FORMAT_BIT(f)) != 0;
	if (len)
		buf[0] = '\0';
	for (int f = 0; f < TM_NFORMATS && len; f++) {
		int w;
		if (!(accepted & TM_FORMAT_BIT(f)))
			continue;
		k++;
		w = snprintf(buf + at, len - at, "%s%s", k == 1 ? "" :
		             k == n ? last : sep, format_names[f]);
		if (w < 0 || (size_t)w >= len - at)
			break;  /* cut short: buf holds what fits */
		at += (size_t)w;
	}
}
