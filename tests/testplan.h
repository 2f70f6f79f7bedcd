/*
 * testplan.h — plan directories on disk for the tests that read and edit
 * them (test_calibrate, test_diff, test_replan): load plan.json, write it
 * back whole or cut short. Include after cmocka.h.
 */
#ifndef THERMAP_TESTPLAN_H
#define THERMAP_TESTPLAN_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "testutil.h"

/* dir/plan.json, parsed; the test fails when it does not parse. */
static inline json_t *tt_plan_load(const char *dir)
{
	char path[512];
	json_error_t je;
	json_t *r;
	snprintf(path, sizeof path, "%s/plan.json", dir);
	r = json_load_file(path, 0, &je);
	if (!r)
		fail_msg("%s: %s", path, je.text);
	return r;
}

/* dir/plan.json holding len bytes of text (dir made if needed). */
static inline void tt_plan_save_text(const char *dir, const char *text,
                                     size_t len)
{
	char path[512];
	FILE *f;
	mkdir(dir, 0755);
	snprintf(path, sizeof path, "%s/plan.json", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* root as dir/plan.json (the reference stays the caller's). */
static inline void tt_plan_save_json(const char *dir, json_t *root)
{
	char *s = json_dumps(root, JSON_INDENT(2));
	assert_non_null(s);
	tt_plan_save_text(dir, s, strlen(s));
	free(s);
}

#endif
