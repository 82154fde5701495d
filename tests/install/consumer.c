/*
 * consumer.c - an out-of-tree librelay user, built by check-install.sh
 * from the installed package with `pkg-config --cflags --libs librelay`
 * and nothing else. It proves the installed headers are found as
 * <relay/...>, that jansson comes along through Requires:, and that the
 * installed shared library links and runs. Prints TAP.
 *
 * Usage: consumer EXPECTED_VERSION
 */
#include <stdio.h>
#include <string.h>

#include <relay/relay.h>
#include <relay/sys/runtime.h>

static int n, failed;

static void check(int cond, const char *what)
{
	n++;
	printf("%sok %d - %s\n", cond ? "" : "not ", n, what);
	if (!cond)
		failed = 1;
}

int main(int argc, char **argv)
{
	static const char event[] =
		"{\"type\":\"invoice.paid\",\"amount\":12}";
	relay_pattern *p = NULL;
	relay_ruleset *rs = NULL;
	relay_matcher *m = NULL;
	relay_runtime_backend rb;
	const uint32_t *ids = NULL;
	size_t count = 0;
	json_error_t jerr;
	json_t *spec;
	uint32_t id = 99;

	printf("TAP version 13\n1..8\n");
	check(argc == 2 && strcmp(relay_version(), argv[1]) == 0,
	      "relay_version() is the meson project version");
	check(strcmp(relay_strerror(RELAY_ENOTFOUND), "") != 0,
	      "relay_strerror() describes RELAY_ENOTFOUND");

	spec = json_loads("{\"type\":[\"invoice.paid\"],"
			  "\"amount\":[{\"gt\":10}]}", 0, &jerr);
	check(spec && relay_pattern_compile(&p, spec, NULL) == 0,
	      "relay_pattern_compile() of a JSON pattern");
	check(relay_ruleset_new(&rs) == 0 && relay_ruleset_add(rs, p, &id) == 0
	      && id == 0 && relay_ruleset_build(rs) == 0,
	      "a one-rule ruleset builds");
	check(relay_matcher_new(&m, rs) == 0 &&
	      relay_matcher_match(m, event, sizeof(event) - 1, 0, &ids,
				  &count) == 0 && count == 1 && ids[0] == 0,
	      "the matcher matches raw JSON bytes");
	check(relay_matcher_match(m, "[1]", 3, 0, &ids, &count) ==
	      RELAY_ETYPE && count == 0,
	      "a JSON array is RELAY_ETYPE");
	check(relay_runtime_backend_init(&rb, RELAY_RUNTIME_BACKEND_VERSION)
	      == 0 && rb.version == RELAY_RUNTIME_BACKEND_VERSION &&
	      rb.proc_size == sizeof(relay_proc),
	      "relay/sys/runtime.h: relay_runtime_backend_init()");
	check(relay_runtime_backend_init(&rb, RELAY_RUNTIME_BACKEND_VERSION + 1)
	      == RELAY_EINVAL, "a future backend version is refused");

	relay_matcher_free(m);
	relay_ruleset_free(rs);
	relay_pattern_free(p);
	json_decref(spec);
	return failed;
}
