/*
 * test_app_cases.c - data-driven template schema cases.
 *
 * Each tests/app/cases/<name>/ holds a template.yaml and, for an invalid
 * one, an `expected` file with the exact diagnostics, one per line, as
 * "line:col: message" (the file name is left out so the cases can move).
 * No `expected` file means the template must load. Every case is one TAP
 * test point named after its directory.
 *
 * RELAY_UPDATE_CASES=1 rewrites the expected files from the current
 * output; review the diff before committing it.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "relay_config.h"
#include "relaytest.h"

static const char *cases_dir(void)
{
	static char buf[4096];
	const char *root = getenv("RELAY_SOURCE_ROOT");

	snprintf(buf, sizeof(buf), "%s/tests/app/cases",
		 root ? root : RELAY_SOURCE_ROOT);
	return buf;
}

static void collect(const char *app, const relay_error *err, void *payload)
{
	relay__buf *b = payload;

	(void)app;
	relay__buf_printf(b, "%d:%d: %s\n", err->line, err->column,
			  err->text);
}

/* Run one case; returns 1 when it passed. */
static int run_case(const char *name)
{
	char path[4200];
	relay__buf got = { 0 };
	relay_app *app = NULL;
	char *yaml, *want;
	size_t len;
	int rc, ok;

	snprintf(path, sizeof(path), "%s/%s/template.yaml", cases_dir(), name);
	yaml = rt_slurp(path, &len);
	if (!yaml) {
		printf("# %s: cannot read %s\n", name, path);
		return 0;
	}
	rc = relay_app_load_buffer(&app, name, NULL, "template.yaml", yaml, len,
				   collect, &got);
	snprintf(path, sizeof(path), "%s/%s/expected", cases_dir(), name);
	want = rt_slurp(path, NULL);
	if (getenv("RELAY_UPDATE_CASES") && got.len) {
		FILE *f = fopen(path, "w");

		if (f) {
			fputs(got.data, f);
			fclose(f);
		}
	}
	if (!want) {
		ok = rc == 0 && app && got.len == 0;
		if (!ok)
			printf("# %s: expected to load, got rc %d:\n# %s", name,
			       rc, got.data ? got.data : "\n");
	} else {
		ok = rc == RELAY_EPARSE && !app && got.data &&
		     strcmp(got.data, want) == 0;
		if (!ok)
			printf("# %s: rc %d\n# want:\n%s# got:\n%s", name, rc,
			       want, got.data ? got.data : "(nothing)\n");
	}
	relay_app_free(app);
	relay__buf_free(&got);
	free(want);
	free(yaml);
	return ok;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	DIR *d = opendir(cases_dir());
	struct dirent *de;
	char *names[512];
	size_t n = 0, i, failed = 0;

	(void)argc;
	(void)argv;
	printf("TAP version 13\n");
	if (!d) {
		printf("1..0 # SKIP no cases directory %s\n", cases_dir());
		return 1;
	}
	while ((de = readdir(d)) != NULL && n < RELAY__ARRAY_SIZE(names))
		if (de->d_name[0] != '.')
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(*names), cmp);
	printf("1..%zu\n", n);
	for (i = 0; i < n; i++) {
		int ok = run_case(names[i]);

		failed += !ok;
		printf("%s %zu - %s\n", ok ? "ok" : "not ok", i + 1, names[i]);
		free(names[i]);
	}
	return failed ? 1 : 0;
}
