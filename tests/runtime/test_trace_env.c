/*
 * test_trace_env.c - the attempt's W3C trace context reaches the handler
 * as TRACEPARENT, TRACESTATE and BAGGAGE (relay_exec_spec version 3),
 * cold and warm, for exec, python3 and node; never anything else:
 *
 *  - exactly the three values, and none when the spec has none (or is
 *    of a version without them);
 *  - a hostile value (control bytes, huge, too many members, invalid) is
 *    left out and the run still happens;
 *  - a template's env cannot set or override the three names;
 *  - warm: the context travels in each request, never in a warm parent's
 *    environment or key (one parent serves attempts of any context, and
 *    an invocation without one sees none after one with one); two
 *    invocations running at once each see their own;
 *  - a python3 handler (by hand) and a node handler using the real
 *    OpenTelemetry JS SDK (npm, installed on first use into the build
 *    tree; the case skips, saying why, when npm cannot install) make a
 *    child span whose trace id and parent span id are TRACEPARENT's.
 *
 * The process-backend cases always run; the bwrap and warm ones skip when
 * the sandbox or warm parents cannot run here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ev.h>

#include "relay/relay_libev.h"
#include "lib/rt_fixture.h"
#include "relaytest.h"
#include "rt_helpers.h"
#include "rt_job.h"

#define TID "4bf92f3577b34da6a3ce929d0e0e4736"
#define SID "00f067aa0ba902b7"
#define TP1 "00-" TID "-" SID "-01"
#define TS1 "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
#define BG1 "tenant=acme,k=v;p=1"
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* npm packages of the OpenTelemetry JS API and SDK, pinned. */
#define OTEL_PKGS "@opentelemetry/api@1.9.0 " \
	"@opentelemetry/sdk-trace-base@1.25.1 @opentelemetry/core@1.25.1"

static rtf_suite S;   /* loop, app dir (lib/rt_fixture.h) */
static relay_runtime *rt_proc, *rt_bwrap;
static const char *bwrap_skip, *warm_skip;

#define PY_HANDLERS                                                      \
	"import os, time\n"                                              \
	"def show(event):\n"                                             \
	"    for k in ('TRACEPARENT', 'TRACESTATE', 'BAGGAGE', 'EVIL'):\n" \
	"        print('%s=%s' % (k, os.environ.get(k, 'unset')))\n"    \
	"def slow(event):\n"                                             \
	"    print('t0 %.3f' % time.time())\n"                          \
	"    time.sleep(0.6)\n"                                          \
	"    show(event)\n"                                              \
	"    print('t1 %.3f' % time.time())\n"                          \
	"def child(event):\n"                                            \
	"    # the W3C traceparent by hand: version-traceid-parentid-flags\n" \
	"    v, trace_id, parent_id, flags = "                           \
	"os.environ['TRACEPARENT'].split('-')\n"                         \
	"    span_id = os.urandom(8).hex()\n"                            \
	"    print('child trace', trace_id)\n"                           \
	"    print('child parent', parent_id)\n"                         \
	"    print('child traceparent', '-'.join(('00', trace_id, span_id," \
	" flags)))\n"

#define NODE_HANDLERS                                                    \
	"'use strict';\n"                                                \
	"exports.show = function () {\n"                                \
	"\tfor (const k of ['TRACEPARENT', 'TRACESTATE', 'BAGGAGE',\n"       \
	"\t\t'EVIL'])\n"                                                \
	"\t\tconsole.log(k + '=' + (k in process.env ? process.env[k] : "  \
	"'unset'));\n"                                                   \
	"};\n"                                                           \
	"exports.slow = async function () {\n"                           \
	"\tconsole.log('t0 ' + (Date.now() / 1000).toFixed(3));\n"      \
	"\tawait new Promise((r) => setTimeout(r, 600));\n"             \
	"\texports.show();\n"                                            \
	"\tconsole.log('t1 ' + (Date.now() / 1000).toFixed(3));\n"      \
	"};\n"

/* Joins the trace with the OpenTelemetry JS SDK only: the standard W3C
 * propagators read the environment carrier. */
#define NODE_OTEL                                                        \
	"'use strict';\n"                                                \
	"const api = require('@opentelemetry/api');\n"                  \
	"const core = require('@opentelemetry/core');\n"                \
	"const sdk = require('@opentelemetry/sdk-trace-base');\n"       \
	"exports.run = async function () {\n"                            \
	"\tconst exporter = new sdk.InMemorySpanExporter();\n"           \
	"\tconst provider = new sdk.BasicTracerProvider();\n"            \
	"\tprovider.addSpanProcessor(\n"                                  \
	"\t\tnew sdk.SimpleSpanProcessor(exporter));\n"                  \
	"\tconst prop = new core.CompositePropagator({ propagators: [\n" \
	"\t\tnew core.W3CTraceContextPropagator(),\n"                    \
	"\t\tnew core.W3CBaggagePropagator()] });\n"                     \
	"\tconst carrier = {};\n"                                        \
	"\tfor (const k of ['TRACEPARENT', 'TRACESTATE', 'BAGGAGE'])\n"  \
	"\t\tif (k in process.env)\n"                                    \
	"\t\t\tcarrier[k.toLowerCase()] = process.env[k];\n"            \
	"\tconst ctx = prop.extract(api.ROOT_CONTEXT, carrier,\n"        \
	"\t\tapi.defaultTextMapGetter);\n"                               \
	"\tconst span = provider.getTracer('handler').startSpan('work', {},"\
	" ctx);\n"                                                       \
	"\tspan.end();\n"                                                \
	"\tconst s = exporter.getFinishedSpans()[0];\n"                  \
	"\tconst bag = api.propagation.getBaggage(ctx);\n"               \
	"\tconst e = bag && bag.getEntry('tenant');\n"                   \
	"\tconsole.log('otel trace ' + s.spanContext().traceId);\n"      \
	"\tconsole.log('otel parent ' + s.parentSpanId);\n"              \
	"\tconst ts = s.spanContext().traceState;\n"                     \
	"\tconsole.log('otel state ' + (ts ? ts.serialize() : '-'));\n"  \
	"\tconsole.log('otel baggage ' + (e ? e.value : '-'));\n"        \
	"\tconsole.log('otel sampled ' + (s.spanContext().traceFlags & 1));\n" \
	"\tawait provider.shutdown();\n"                                 \
	"};\n"

static const char *const sh_show[] = {
	"/bin/sh", "-c",
	"echo \"TRACEPARENT=${TRACEPARENT-unset}\"; "
	"echo \"TRACESTATE=${TRACESTATE-unset}\"; "
	"echo \"BAGGAGE=${BAGGAGE-unset}\"; echo \"EVIL=${EVIL-unset}\"",
	NULL,
};

static const char *const sh_slow[] = {
	"/bin/sh", "-c",
	"echo \"TRACEPARENT=${TRACEPARENT-unset}\"; sleep 0.6; "
	"echo \"TRACEPARENT=${TRACEPARENT-unset}\"",
	NULL,
};

static relay_runtime *new_rt(const char *backend, int warm)
{
	rtf_rt_opts o = { .backend = backend, .warm = warm,
			  .say_error = true };

	return rtf_runtime_new(S.loop, &o);
}

/* A spec of @kind in the test app; @handler for python3/node. */
static relay_exec_spec spec_of(relay_runtime_kind kind, const char *handler,
			       relay_warm_mode warm)
{
	relay_exec_spec s = rtf_spec(&S, "traceapp", kind,
				     kind == RELAY_RUNTIME_EXEC ? "h" : handler);

	s.message_id = "9-0";
	s.argv = kind == RELAY_RUNTIME_EXEC ? sh_show : NULL;
	s.timeout_ms = 30000;
	s.event = "{}";
	s.event_len = 2;
	s.warm = warm;
	return s;
}

static void set_ctx(relay_exec_spec *s, const char *tp, const char *ts,
		    const char *bg)
{
	s->traceparent = tp;
	s->tracestate = ts;
	s->baggage = bg;
}

/* Run @s on @r to completion; 0 when it ran. */
static int run1(relay_runtime *r, const relay_exec_spec *s, struct job *j)
{
	return job_run(r, S.loop, s, j);
}

/* The value printed as "NAME=value" by a show handler, or "(none)". */
static const char *shown(const cap *c, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < c->n; i++) {
		const char *l = cap_line(c, i);

		if (strncmp(l, name, n) == 0 && l[n] == '=')
			return l + n + 1;
	}
	return "(none)";
}

/* @j ran OK and showed exactly @tp, @ts, @bg ("unset": absent). */
#define SAW(j, tp, ts, bg)                                              \
	do {                                                            \
		RT_EQ_INT((j)->o.status, RELAY_RUN_OK);                 \
		if ((j)->o.status != RELAY_RUN_OK)                      \
			printf("# reason: %s; first line: %s\n",        \
			       (j)->o.reason, cap_text(&(j)->c, 0));    \
		RT_EQ_STR(shown(&(j)->c, "TRACEPARENT"), tp);           \
		RT_EQ_STR(shown(&(j)->c, "TRACESTATE"), ts);            \
		RT_EQ_STR(shown(&(j)->c, "BAGGAGE"), bg);               \
		RT_EQ_STR(shown(&(j)->c, "EVIL"), "unset");             \
	} while (0)

static const char *kind_handler(relay_runtime_kind k)
{
	return k == RELAY_RUNTIME_PYTHON3 ? "handlers.show" : "nodeh.show";
}

static bool kind_missing(relay_runtime_kind k)
{
	return (k == RELAY_RUNTIME_PYTHON3 && !have_prog("/usr/bin/python3")) ||
	       (k == RELAY_RUNTIME_NODE && !have_prog("/usr/bin/node"));
}

/* The three values and their absence, on runtime @r, every kind. */
static void exact_and_absent(relay_runtime *r, relay_warm_mode warm)
{
	static const relay_runtime_kind kinds[] = {
		RELAY_RUNTIME_EXEC, RELAY_RUNTIME_PYTHON3, RELAY_RUNTIME_NODE,
	};
	size_t i;

	for (i = 0; i < NELEM(kinds); i++) {
		relay_exec_spec s = spec_of(kinds[i], kind_handler(kinds[i]),
					    warm);
		struct job j;

		if (kind_missing(kinds[i]))
			continue;
		printf("# kind %s\n", relay_runtime_kind_name(kinds[i]));
		set_ctx(&s, TP1, TS1, BG1);
		RT_CHECK(run1(r, &s, &j) == 0);
		SAW(&j, TP1, TS1, BG1);
		RT_EQ_INT(j.o.warm, warm == RELAY_WARM_REQUIRE);
		job_free(&j);
		/* Only the ones that are set. */
		set_ctx(&s, TP1, NULL, "");
		RT_CHECK(run1(r, &s, &j) == 0);
		SAW(&j, TP1, "unset", "unset");
		job_free(&j);
		/* None: none, also after a run that had them (warm: the
		 * same parent served both). */
		set_ctx(&s, NULL, NULL, NULL);
		RT_CHECK(run1(r, &s, &j) == 0);
		SAW(&j, "unset", "unset", "unset");
		job_free(&j);
	}
}

static void test_trace__process_cold(void)
{
	relay_exec_spec s = spec_of(RELAY_RUNTIME_EXEC, NULL, RELAY_WARM_OFF);
	struct job j;

	exact_and_absent(rt_proc, RELAY_WARM_OFF);
	/* A caller built against a version-2 header has no such fields:
	 * whatever lies past its struct is never read. */
	set_ctx(&s, TP1, TS1, BG1);
	s.version = 2;
	RT_CHECK(run1(rt_proc, &s, &j) == 0);
	SAW(&j, "unset", "unset", "unset");
	job_free(&j);
}

static void test_trace__bwrap_cold(void)
{
	if (bwrap_skip)
		RT_SKIP("%s", bwrap_skip);
	exact_and_absent(rt_bwrap, RELAY_WARM_OFF);
}

static void test_trace__warm(void)
{
	relay_runtime_warm_stats st;
	relay_exec_spec s = spec_of(RELAY_RUNTIME_PYTHON3, "handlers.show",
				    RELAY_WARM_REQUIRE);
	uint64_t before;
	struct job j;

	if (warm_skip)
		RT_SKIP("%s", warm_skip);
	memset(&st, 0, sizeof(st));
	st.version = RELAY_RUNTIME_WARM_STATS_VERSION;
	exact_and_absent(rt_bwrap, RELAY_WARM_REQUIRE);
	/* Attempts of any context share one parent: the context is not
	 * part of its key. */
	RT_EQ_INT(relay_runtime_warm_stats_get(rt_bwrap, &st), 0);
	before = st.parents_started;
	set_ctx(&s, "00-" TID "-1111111111111111-00", NULL, "a=1");
	RT_CHECK(run1(rt_bwrap, &s, &j) == 0);
	SAW(&j, "00-" TID "-1111111111111111-00", "unset", "a=1");
	RT_CHECK(j.o.warm);
	job_free(&j);
	RT_EQ_INT(relay_runtime_warm_stats_get(rt_bwrap, &st), 0);
	RT_EQ_INT(st.parents_started, before);
}

/* One hostile (or merely invalid) value and what the handler gets. */
struct hostile {
	const char *what, *tp, *ts, *bg;
	const char *want_tp, *want_ts, *want_bg;
};

/* @n members "k<i>=v" joined by @sep. */
static char *repeat(const char *sep, int n)
{
	char *s = malloc((16 + strlen(sep)) * (size_t)n + 1), *p = s;
	int i;

	for (i = 0; i < n; i++)
		p += sprintf(p, "%sk%d=v", i ? sep : "", i);
	*p = '\0';
	return s;
}

static void hostile_cases(relay_runtime *r, relay_warm_mode warm,
			  relay_runtime_kind kind)
{
	char *huge_tp = malloc(100001);
	char *huge_ts = repeat(",", 3000);
	char *many_ts = repeat(",", 40);
	char *huge_bg = malloc(10010);
	char *many_bg = repeat(",", 70);
	char *long_tp = malloc(700);
	const struct hostile cases[] = {
		{ "control byte in traceparent",
		  "00-" TID "-" SID "-0\001", TS1, BG1,
		  "unset", "unset", "unset" },
		{ "newline in traceparent", TP1 "\nEVIL=1", NULL, NULL,
		  "unset", "unset", "unset" },
		{ "upper-case hex", "00-4BF92F3577B34DA6A3CE929D0E0E4736-"
		  SID "-01", NULL, NULL, "unset", "unset", "unset" },
		{ "zero trace id", "00-00000000000000000000000000000000-"
		  SID "-01", NULL, NULL, "unset", "unset", "unset" },
		{ "version ff", "ff-" TID "-" SID "-01", NULL, NULL,
		  "unset", "unset", "unset" },
		{ "huge traceparent", huge_tp, TS1, BG1,
		  "unset", "unset", "unset" },
		{ "long future version", long_tp, NULL, NULL,
		  "unset", "unset", "unset" },
		{ "no traceparent: no state or baggage", NULL, TS1, BG1,
		  "unset", "unset", "unset" },
		{ "newline in tracestate", TP1, "a=b\nEVIL=1", BG1,
		  TP1, "unset", BG1 },
		{ "control byte in tracestate", TP1, "a=b\001", BG1,
		  TP1, "unset", BG1 },
		{ "huge tracestate", TP1, huge_ts, BG1, TP1, "unset", BG1 },
		{ "40 tracestate members", TP1, many_ts, NULL,
		  TP1, "unset", "unset" },
		{ "newline in baggage", TP1, TS1, "a=b\nEVIL=1",
		  TP1, TS1, "unset" },
		{ "tab in baggage", TP1, NULL, "a=b,\tc=d",
		  TP1, "unset", "unset" },
		{ "huge baggage", TP1, NULL, huge_bg, TP1, "unset", "unset" },
		{ "70 baggage members", TP1, NULL, many_bg,
		  TP1, "unset", "unset" },
		{ "invalid baggage", TP1, NULL, "a b=c", TP1, "unset",
		  "unset" },
		{ "future version kept verbatim", "cc-" TID "-" SID "-01-x",
		  NULL, NULL, "cc-" TID "-" SID "-01-x", "unset", "unset" },
	};
	size_t i;

	memset(huge_tp, 'a', 100000);
	huge_tp[100000] = '\0';
	snprintf(long_tp, 700, "cc-" TID "-" SID "-01-%0600d", 7);
	/* Two members, 10000 bytes: over the W3C limit of 8192. */
	memset(huge_bg, 'v', 10009);
	memcpy(huge_bg, "a=", 2);
	memcpy(huge_bg + 5000, ",b=", 3);
	huge_bg[10009] = '\0';
	for (i = 0; i < NELEM(cases); i++) {
		relay_exec_spec s = spec_of(kind, kind_handler(kind), warm);
		struct job j;

		printf("# %s\n", cases[i].what);
		set_ctx(&s, cases[i].tp, cases[i].ts, cases[i].bg);
		RT_CHECK(run1(r, &s, &j) == 0);
		SAW(&j, cases[i].want_tp, cases[i].want_ts, cases[i].want_bg);
		job_free(&j);
	}
	free(huge_tp);
	free(huge_ts);
	free(many_ts);
	free(huge_bg);
	free(many_bg);
	free(long_tp);
}

static void test_trace__hostile_not_passed(void)
{
	hostile_cases(rt_proc, RELAY_WARM_OFF, RELAY_RUNTIME_EXEC);
}

static void test_trace__hostile_not_passed_warm(void)
{
	if (warm_skip)
		RT_SKIP("%s", warm_skip);
	hostile_cases(rt_bwrap, RELAY_WARM_REQUIRE, RELAY_RUNTIME_PYTHON3);
}

/* A template's env: cannot set or override the three. */
static void template_env(relay_runtime *r, relay_runtime_kind kind,
			 relay_warm_mode warm)
{
	static const char *const env[] = {
		"TRACEPARENT=00-11111111111111111111111111111111-"
		"2222222222222222-01",
		"TRACESTATE=evil=1", "BAGGAGE=evil=1", "FOO=bar", NULL,
	};
	relay_exec_spec s = spec_of(kind, kind_handler(kind), warm);
	struct job j;

	s.env = env;
	set_ctx(&s, TP1, TS1, BG1);
	RT_CHECK(run1(r, &s, &j) == 0);
	SAW(&j, TP1, TS1, BG1);
	job_free(&j);
	set_ctx(&s, NULL, NULL, NULL);
	RT_CHECK(run1(r, &s, &j) == 0);
	SAW(&j, "unset", "unset", "unset");
	job_free(&j);
}

static void test_trace__template_env_cannot_set(void)
{
	template_env(rt_proc, RELAY_RUNTIME_EXEC, RELAY_WARM_OFF);
	if (warm_skip)
		RT_SKIP("%s", warm_skip);
	template_env(rt_bwrap, RELAY_RUNTIME_PYTHON3, RELAY_WARM_REQUIRE);
	if (have_prog("/usr/bin/node"))
		template_env(rt_bwrap, RELAY_RUNTIME_NODE, RELAY_WARM_REQUIRE);
}

/* The time printed as "@name T" by a slow handler, or -1. */
static double shown_time(const cap *c, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < c->n; i++) {
		const char *l = cap_line(c, i);

		if (strncmp(l, name, n) == 0 && l[n] == ' ')
			return strtod(l + n + 1, NULL);
	}
	return -1;
}

#define NCONC 4

/*
 * NCONC invocations at once, each with its own TRACEPARENT (a span id
 * of its own, every second one sampled): each sees its own, before and
 * after a pause during which the others run. For python3 and node the
 * handlers also print when they ran: the first two must overlap (a
 * node app keeps WARM_POOL_SIZE pre-started processes, so later ones
 * may start cold or after a refill).
 */
static void concurrent(relay_runtime_kind kind)
{
	char tp[NCONC][64];
	struct job j[NCONC];
	int i, k;

	for (i = 0; i < NCONC; i++) {
		relay_exec_spec s = spec_of(kind, kind == RELAY_RUNTIME_PYTHON3
					    ? "handlers.slow" : "nodeh.slow",
					    RELAY_WARM_REQUIRE);

		if (kind == RELAY_RUNTIME_EXEC)
			s.argv = sh_slow;
		snprintf(tp[i], sizeof(tp[i]), "00-" TID "-%016x-%02d",
			 0xa0000 + i, i % 2);
		set_ctx(&s, tp[i], NULL, NULL);
		RT_CHECK(job_start(rt_bwrap, &s, &j[i]) == 0);
	}
	for (i = 0; i < NCONC; i++)
		job_wait(S.loop, &j[i]);
	for (i = 0; i < NCONC; i++) {
		size_t l, seen = 0;

		RT_EQ_INT(j[i].o.status, RELAY_RUN_OK);
		RT_CHECK(j[i].o.warm);
		for (l = 0; l < j[i].c.n; l++) {
			const char *line = cap_line(&j[i].c, l);

			if (strncmp(line, "TRACEPARENT=", 12) != 0)
				continue;
			RT_EQ_STR(line + 12, tp[i]);
			seen++;
		}
		RT_CHECK(seen >= 1);
	}
	for (i = 0; kind != RELAY_RUNTIME_EXEC && i < 1; i++) {
		for (k = i + 1; k < 2; k++) {
			double a0 = shown_time(&j[i].c, "t0"),
			       a1 = shown_time(&j[i].c, "t1"),
			       b0 = shown_time(&j[k].c, "t0"),
			       b1 = shown_time(&j[k].c, "t1");

			RT_CHECK(a0 > 0 && b0 > 0);
			if (!(a0 < b1 && b0 < a1))
				printf("# %d [%.3f, %.3f] and %d [%.3f, "
				       "%.3f] did not overlap\n", i, a0, a1,
				       k, b0, b1);
			RT_CHECK(a0 < b1 && b0 < a1);
		}
	}
	for (i = 0; i < NCONC; i++)
		job_free(&j[i]);
}

static void test_trace__concurrent_warm_isolated(void)
{
	if (warm_skip)
		RT_SKIP("%s", warm_skip);
	concurrent(RELAY_RUNTIME_PYTHON3);
	concurrent(RELAY_RUNTIME_EXEC);
	if (have_prog("/usr/bin/node"))
		concurrent(RELAY_RUNTIME_NODE);
}

/* A python3 handler reading TRACEPARENT by hand makes a child span of
 * the attempt's: same trace id, parent = the attempt's span id. */
static void py_child(relay_runtime *r, relay_warm_mode warm)
{
	relay_exec_spec s = spec_of(RELAY_RUNTIME_PYTHON3, "handlers.child",
				    warm);
	struct job j;

	set_ctx(&s, TP1, TS1, NULL);
	RT_CHECK(run1(r, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&j.c, "child trace " TID));
	RT_CHECK(cap_has(&j.c, "child parent " SID));
	RT_CHECK(cap_contains(&j.c, "child traceparent 00-" TID "-"));
	RT_CHECK(!cap_contains(&j.c, "child traceparent 00-" TID "-" SID));
	job_free(&j);
}

static void test_trace__python_child_span(void)
{
	if (!have_prog("/usr/bin/python3"))
		RT_SKIP("python3 missing");
	py_child(rt_proc, RELAY_WARM_OFF);
	if (warm_skip)
		RT_SKIP("%s", warm_skip);
	py_child(rt_bwrap, RELAY_WARM_REQUIRE);
}

/*
 * The OpenTelemetry JS API, SDK and core, installed once into the build
 * tree and copied into the app directory (the sandbox sees only that).
 * NULL when ready, else why not.
 */
static const char *otel_install(void)
{
	static char why[900];
	const char *b = getenv("RELAY_BUILD_ROOT");
	char dir[600], cmd[4000], marker[700];

	if (!have_prog("/usr/bin/node"))
		return "node missing";
	snprintf(dir, sizeof(dir), "%s/tests/runtime/otel-npm",
		 b && *b ? b : "/tmp");
	snprintf(marker, sizeof(marker), "%s/node_modules/@opentelemetry/"
		 "sdk-trace-base/package.json", dir);
	if (access(marker, R_OK) != 0) {
		snprintf(cmd, sizeof(cmd),
			 "mkdir -p '%s' && timeout 300 npm install --no-save "
			 "--no-package-lock --no-audit --no-fund "
			 "--ignore-scripts --prefix '%s' " OTEL_PKGS
			 " >'%s/install.log' 2>&1", dir, dir, dir);
		if (system(cmd) != 0 || access(marker, R_OK) != 0) {
			snprintf(why, sizeof(why), "npm cannot install the "
				 "OpenTelemetry JS SDK (see %s/install.log)",
				 dir);
			return why;
		}
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/node_modules' && "
		 "cp -r '%s/node_modules' '%s/' && chmod -R a+rX '%s'",
		 S.app_dir, dir, S.app_dir, S.app_dir);
	if (system(cmd) != 0)
		return "cannot copy node_modules into the app";
	return NULL;
}

static void node_otel(relay_runtime *r, relay_warm_mode warm)
{
	relay_exec_spec s = spec_of(RELAY_RUNTIME_NODE, "otel.run", warm);
	struct job j;

	set_ctx(&s, TP1, TS1, BG1);
	RT_CHECK(run1(r, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	if (j.o.status != RELAY_RUN_OK)
		printf("# %s\n", j.o.reason);
	RT_EQ_INT(j.o.warm, warm == RELAY_WARM_REQUIRE);
	RT_CHECK(cap_has(&j.c, "otel trace " TID));
	RT_CHECK(cap_has(&j.c, "otel parent " SID));
	RT_CHECK(cap_has(&j.c, "otel state " TS1));
	RT_CHECK(cap_has(&j.c, "otel baggage acme"));
	RT_CHECK(cap_has(&j.c, "otel sampled 1"));
	job_free(&j);
	/* Without a context the SDK starts a new trace: a root span. */
	set_ctx(&s, NULL, NULL, NULL);
	RT_CHECK(run1(r, &s, &j) == 0);
	RT_EQ_INT(j.o.status, RELAY_RUN_OK);
	RT_CHECK(cap_has(&j.c, "otel parent undefined"));
	RT_CHECK(!cap_has(&j.c, "otel trace " TID));
	job_free(&j);
}

static void test_trace__node_otel_sdk_child_span(void)
{
	const char *why = otel_install();

	if (why)
		RT_SKIP("%s", why);
	rtf_write(S.app_dir, "otel.js", NODE_OTEL);
	node_otel(rt_proc, RELAY_WARM_OFF);
	if (bwrap_skip)
		RT_SKIP("%s", bwrap_skip);
	node_otel(rt_bwrap, RELAY_WARM_OFF);
	if (warm_skip)
		RT_SKIP("%s", warm_skip);
	node_otel(rt_bwrap, RELAY_WARM_REQUIRE);
}

static void setup(void)
{
	relay_exec_spec s;
	struct job j;

	rtf_setup(&S, "trace");
	/* One app runs every kind here, and an app has one warm parent:
	 * node on pre-started processes (no parent) keeps python3's
	 * (test_trace__warm counts parents; the node fork server, the
	 * default where built, would replace it). */
	setenv("RELAY_WARM_NODE", "prestart", 1);
	rtf_write(S.app_dir, "handlers.py", PY_HANDLERS);
	rtf_write(S.app_dir, "nodeh.js", NODE_HANDLERS);
	rt_proc = new_rt("process", 0);
	if (!have_prog("/usr/bin/bwrap") || !have_prog("/usr/bin/python3")) {
		bwrap_skip = warm_skip = "bwrap or python3 missing";
		return;
	}
	rt_bwrap = new_rt("bwrap", 1);
	if (!rt_bwrap) {
		bwrap_skip = warm_skip = "bwrap cannot run here";
		return;
	}
	s = spec_of(RELAY_RUNTIME_PYTHON3, "handlers.show",
		    RELAY_WARM_REQUIRE);
	if (run1(rt_bwrap, &s, &j) != 0) {
		warm_skip = "warm start refused";
		return;
	}
	if (j.o.status != RELAY_RUN_OK) {
		static char why[200];

		snprintf(why, sizeof(why), "warm parents unavailable here: %s",
			 j.o.reason);
		warm_skip = why;
	}
	job_free(&j);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_trace__process_cold),
		RT_CASE(test_trace__bwrap_cold),
		RT_CASE(test_trace__warm),
		RT_CASE(test_trace__hostile_not_passed),
		RT_CASE(test_trace__hostile_not_passed_warm),
		RT_CASE(test_trace__template_env_cannot_set),
		RT_CASE(test_trace__concurrent_warm_isolated),
		RT_CASE(test_trace__python_child_span),
		RT_CASE(test_trace__node_otel_sdk_child_span),
	};
	int rc;

	setup();
	if (!rt_proc) {
		printf("1..0 # SKIP the process backend cannot start\n");
		return 1;
	}
	rc = rt_main(argc, argv, cases, RT_NCASES(cases));
	relay_runtime_free(rt_bwrap);
	relay_runtime_free(rt_proc);
	if (rtf_teardown(&S, false) != 0)
		rc = 1;
	return rc;
}
