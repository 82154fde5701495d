/*
 * relaytest.h - a tiny TAP harness for the unit and integration suites.
 *
 *	static void test_pattern__prefix(void) {
 *		RT_CHECK(x == 1);
 *		RT_EQ_INT(rc, 0);
 *		RT_EQ_STR(s, "abc");
 *	}
 *	static const rt_case cases[] = { RT_CASE(test_pattern__prefix), };
 *	int main(int argc, char **argv) { return rt_main(argc, argv, cases,
 *					  RT_NCASES(cases)); }
 *
 * Output is TAP 13 ("1..N", "ok 3 - name", "# file:line: detail"). A failed
 * check marks the case failed and the case goes on. RT_SKIP(reason) ends a
 * case as skipped. `prog NAME…` runs only the named cases. Exit 0 when
 * nothing failed, 1 otherwise.
 */
#ifndef RELAYTEST_H
#define RELAYTEST_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rt_case {
	const char *name;
	void (*fn)(void);
} rt_case;

#define RT_CASE(fn) { #fn, fn }
#define RT_NCASES(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The running case's state: one copy per program. The definitions are
 * weak, so every file including this header may define them and a test
 * library compiled once (tests/lib/) shares them with the program's
 * rt_main().
 */
extern int rt_failed_checks;
extern int rt_skipped;
extern char rt_skip_reason[256];
extern jmp_buf rt_skip_jmp;
__attribute__((weak)) int rt_failed_checks;
__attribute__((weak)) int rt_skipped;
__attribute__((weak)) char rt_skip_reason[256];
__attribute__((weak)) jmp_buf rt_skip_jmp;

#define RT_FAILF(...)                                                   \
	do {                                                            \
		printf("# %s:%d: ", __FILE__, __LINE__);                \
		printf(__VA_ARGS__);                                    \
		printf("\n");                                           \
		fflush(stdout);                                         \
		rt_failed_checks++;                                     \
	} while (0)

#define RT_CHECK(cond)                                                  \
	do {                                                            \
		if (!(cond))                                            \
			RT_FAILF("check failed: %s", #cond);            \
	} while (0)

#define RT_EQ_INT(a, b)                                                 \
	do {                                                            \
		long long rt_a_ = (long long)(a), rt_b_ = (long long)(b); \
		if (rt_a_ != rt_b_)                                     \
			RT_FAILF("%s == %s: got %lld, want %lld", #a,  \
				 #b, rt_a_, rt_b_);                     \
	} while (0)

#define RT_EQ_STR(a, b)                                                 \
	do {                                                            \
		const char *rt_a_ = (a), *rt_b_ = (b);                  \
		if (!rt_a_ || !rt_b_ || strcmp(rt_a_, rt_b_) != 0)      \
			RT_FAILF("%s == %s: got \"%s\", want \"%s\"", #a, \
				 #b, rt_a_ ? rt_a_ : "(null)",          \
				 rt_b_ ? rt_b_ : "(null)");             \
	} while (0)

/* Abort the current case (after a failure that makes going on useless). */
#define RT_ASSERT(cond)                                                 \
	do {                                                            \
		if (!(cond)) {                                          \
			RT_FAILF("assertion failed: %s", #cond);        \
			longjmp(rt_skip_jmp, 2);                        \
		}                                                       \
	} while (0)

#define RT_SKIP(...)                                                    \
	do {                                                            \
		snprintf(rt_skip_reason, sizeof(rt_skip_reason),        \
			 __VA_ARGS__);                                  \
		rt_skipped = 1;                                         \
		longjmp(rt_skip_jmp, 1);                                \
	} while (0)

/*
 * rt_slurp() - read a whole file into a NUL-terminated malloc'ed buffer
 * (free with free()); *len gets its size when @len is not NULL.
 * Returns NULL when the file cannot be read.
 */
static inline char *rt_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf) {
		buf[n] = '\0';
		if (len)
			*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static inline int rt_selected(int argc, char **argv, const char *name)
{
	int i;

	if (argc < 2)
		return 1;
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

static inline int rt_main(int argc, char **argv, const rt_case *cases,
			  size_t n)
{
	volatile size_t i, ran = 0, failed = 0, skipped = 0;

	printf("TAP version 13\n");
	for (i = 0; i < n; i++)
		ran += rt_selected(argc, argv, cases[i].name);
	printf("1..%zu\n", (size_t)ran);
	fflush(stdout);
	ran = 0;
	for (i = 0; i < n; i++) {
		if (!rt_selected(argc, argv, cases[i].name))
			continue;
		ran++;
		rt_failed_checks = 0;
		rt_skipped = 0;
		if (setjmp(rt_skip_jmp) == 0)
			cases[i].fn();
		if (rt_skipped && !rt_failed_checks) {
			skipped++;
			printf("ok %zu - %s # SKIP %s\n", (size_t)ran, cases[i].name,
			       rt_skip_reason);
		} else if (rt_failed_checks) {
			failed++;
			printf("not ok %zu - %s\n", (size_t)ran, cases[i].name);
		} else {
			printf("ok %zu - %s\n", (size_t)ran, cases[i].name);
		}
		fflush(stdout);
	}
	/* meson reads the TAP stream: an all-skipped run shows as SKIP. */
	return failed ? 1 : 0;
}

#endif /* RELAYTEST_H */
