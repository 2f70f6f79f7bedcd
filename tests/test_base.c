/* test_base.c — cmocka tests for the sorting and the knobs of base/:
 * tm_sort against a stable reference on random data with many ties (the
 * order glibc's qsort leaves equal elements in, which the sorts moved to
 * tm_sort must keep), and tm_knob's reading of the environment. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

typedef struct item {
	int key;   /* what is compared */
	int seq;   /* the order it came in */
} item;

static int by_key(const void *a, const void *b, void *ctx)
{
	const item *x = a, *y = b;
	int *calls = ctx;
	(*calls)++;
	return (x->key > y->key) - (x->key < y->key);
}

static int by_key_desc(const void *a, const void *b, void *ctx)
{
	(void)ctx;
	return by_key(b, a, &(int){ 0 });
}

/* Random arrays of every length up to 300 and a long one, few distinct
 * keys: sorted by key, equal keys in the order they came. */
static void test_sort_stable(void **state)
{
	unsigned s = 12345;
	(void)state;
	for (int n = 0; n <= 1000; n += n < 300 ? 1 : 700) {
		item *v = malloc(sizeof *v * (size_t)(n + 1));
		int calls = 0;
		for (int i = 0; i < n; i++) {
			s = s * 1103515245u + 12345u;
			v[i].key = (int)(s >> 16) % 7;
			v[i].seq = i;
		}
		tm_sort(v, (size_t)n, sizeof *v, by_key, &calls);
		for (int i = 1; i < n; i++) {
			assert_true(v[i - 1].key <= v[i].key);
			if (v[i - 1].key == v[i].key)
				assert_true(v[i - 1].seq < v[i].seq);
		}
		if (n > 1)
			assert_true(calls > 0);  /* the context reached the comparator */
		free(v);
	}
}

/* Already sorted, reversed, all equal; and the comparator reversed. */
static void test_sort_shapes(void **state)
{
	item v[64];
	int calls = 0;
	(void)state;
	for (int i = 0; i < 64; i++)
		v[i] = (item){ 64 - i, i };
	tm_sort(v, 64, sizeof *v, by_key, &calls);
	for (int i = 0; i < 64; i++)
		assert_int_equal(v[i].key, i + 1);
	tm_sort(v, 64, sizeof *v, by_key_desc, NULL);
	for (int i = 0; i < 64; i++)
		assert_int_equal(v[i].key, 64 - i);
	for (int i = 0; i < 64; i++)
		v[i] = (item){ 3, i };
	tm_sort(v, 64, sizeof *v, by_key, &calls);
	for (int i = 0; i < 64; i++)
		assert_int_equal(v[i].seq, i);
	tm_sort(v, 0, sizeof *v, by_key, &calls);  /* nothing to do */
	tm_sort(v, 1, sizeof *v, by_key, &calls);
	assert_int_equal(v[0].seq, 0);
}

/* A knob is its variable's value; unset or empty is none. */
static void test_knob(void **state)
{
	(void)state;
	unsetenv("THERMAP_DIRECT_MAX");
	assert_null(tm_knob(TM_KNOB_DIRECT_MAX));
	setenv("THERMAP_DIRECT_MAX", "", 1);
	assert_null(tm_knob(TM_KNOB_DIRECT_MAX));
	setenv("THERMAP_DIRECT_MAX", "4096", 1);
	assert_string_equal(tm_knob(TM_KNOB_DIRECT_MAX), "4096");
	unsetenv("THERMAP_DIRECT_MAX");
	setenv("THERMAP_THREADS", "2", 1);
	assert_string_equal(tm_knob(TM_KNOB_THREADS), "2");
	unsetenv("THERMAP_THREADS");
	assert_null(tm_knob(TM_NKNOBS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sort_stable),
		cmocka_unit_test(test_sort_shapes),
		cmocka_unit_test(test_knob),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
