/*
 * test_embedder_api.c - the public API relayd and relayctl are built on,
 * exercised the way an embedder would: public headers only, linked
 * against the shared librelay (tests/meson.build). REDIS_URI checking
 * and redaction, schedule occurrences (time format, classification, the
 * envelope check, publication on the memory backend) and the template
 * helpers (pattern rendering, duration format, interpreter check); and
 * the Redis backend table's INIT macro and init function.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relay/relay.h"
#include "relay/sys/redis.h"
#include "relaytest.h"

/* ---- REDIS_URI ----------------------------------------------------------- */

static void test_api__uri_check_kinds(void)
{
	static const struct {
		const char *uri;
		int kind;
	} ok[] = {
		{ "127.0.0.1:6379", RELAY_REDIS_URI_TCP },
		{ "redis://h:1/3", RELAY_REDIS_URI_TCP },
		{ "redis://u:p@h:6379", RELAY_REDIS_URI_TCP },
		{ "[::1]:6379", RELAY_REDIS_URI_TCP },
		{ "unix:///run/redis.sock", RELAY_REDIS_URI_UNIX },
		{ "memory://", RELAY_REDIS_URI_MEMORY },
		{ "redis+sentinel://h:26379/mymaster", RELAY_REDIS_URI_SENTINEL },
		{ "redis+sentinel://u:p@h:1,[::1]:2,g:3/my_master-1.a/15",
		  RELAY_REDIS_URI_SENTINEL },
		{ "redis+sentinel://p@h:1/m/", RELAY_REDIS_URI_SENTINEL },
	};
	static const char *const bad[] = {
		"", "h", "h:0", "h:65536", "redis://h:1/256", "unix://rel",
		"http://h:1", "u:p@h:1", "h h:1",
		/* a sentinel URI needs a master name of letters, digits and
		 * "._-", at most 64 bytes, and a valid db */
		"redis+sentinel://h:1", "redis+sentinel://h:1/",
		"redis+sentinel://h:1//3", "redis+sentinel://h:1/m x",
		"redis+sentinel://h:1/m/256", "redis+sentinel://h/m",
		/* 65 bytes of name */
		("redis+sentinel://h:1/"
		 "m1234567890123456789012345678901234567890123456789012345678901234"),
	};
	relay_redis_uri_kind kind;
	relay_error err;
	size_t i;

	for (i = 0; i < RT_NCASES(ok); i++) {
		kind = 0;
		RT_EQ_INT(relay_redis_uri_check(ok[i].uri, &kind, NULL), 0);
		RT_EQ_INT(kind, ok[i].kind);
	}
	for (i = 0; i < RT_NCASES(bad); i++)
		RT_EQ_INT(relay_redis_uri_check(bad[i], NULL, NULL),
			  RELAY_EINVAL);
	RT_EQ_INT(relay_redis_uri_check(NULL, &kind, NULL), RELAY_EINVAL);
	/* The error names the URI without its password. */
	RT_EQ_INT(relay_redis_uri_check("redis://u:hunter2@h:99999", NULL,
					&err), RELAY_EINVAL);
	RT_CHECK(strstr(err.text, "u:***@h:99999") != NULL);
	RT_CHECK(strstr(err.text, "hunter2") == NULL);
	RT_EQ_INT(relay_redis_uri_check("redis+sentinel://u:hunter2@h:1,"
					"g:2/bad name", NULL, &err),
		  RELAY_EINVAL);
	RT_CHECK(strstr(err.text, "u:***@h:1,g:2/bad name") != NULL);
	RT_CHECK(strstr(err.text, "hunter2") == NULL);
}

static void test_api__uri_redact(void)
{
	char buf[64];

	RT_EQ_STR(relay_redis_uri_redact("redis://u:pw@h:1", buf, sizeof(buf)),
		  "redis://u:***@h:1");
	RT_EQ_STR(relay_redis_uri_redact("redis://pw@h:1", buf, sizeof(buf)),
		  "redis://***@h:1");
	RT_EQ_STR(relay_redis_uri_redact("u:p@w@h:1", buf, sizeof(buf)),
		  "u:***@h:1");
	RT_EQ_STR(relay_redis_uri_redact("redis+sentinel://u:pw@h:1,g:2/m/1",
					 buf, sizeof(buf)),
		  "redis+sentinel://u:***@h:1,g:2/m/1");
	RT_EQ_STR(relay_redis_uri_redact("redis+sentinel://pw@h:1/m", buf,
					 sizeof(buf)),
		  "redis+sentinel://***@h:1/m");
	RT_EQ_STR(relay_redis_uri_redact("h:1\n", buf, sizeof(buf)), "h:1?");
	RT_EQ_STR(relay_redis_uri_redact(NULL, buf, sizeof(buf)), "");
	/* strlen + 4 always fits: "x@h" grows by two bytes. */
	RT_EQ_STR(relay_redis_uri_redact("x@h", buf, 3 + 4), "***@h");
	/* Cut to fit, terminated. */
	RT_EQ_STR(relay_redis_uri_redact("redis://u:pw@h:1", buf, 8),
		  "redis:/");
}

/* ---- backend tables (relay/sys/redis.h) ---------------------------------- */

static int nop_command(relay_redis_backend *b, int argc,
		       const char *const *argv, const size_t *argvlen,
		       relay_redis_reply_cb cb, void *payload)
{
	return RELAY_EBACKEND;
}

static int nop_script_calls;

static int nop_script(relay_redis_backend *b, relay_redis_script op,
		      int numkeys, int argc, const char *const *argv,
		      const size_t *argvlen, relay_redis_reply_cb cb,
		      void *payload)
{
	nop_script_calls++;
	return RELAY_EUSER;
}

static void never(relay_redis_backend *b, int status, const char *id,
		  const char *detail, void *payload)
{
	RT_FAILF("the publish callback ran");
}

static const char *nop_errstr(const relay_redis_backend *b)
{
	return "";
}

static void nop_free(relay_redis_backend *b)
{
}

static void test_api__redis_backend_init(void)
{
	relay_redis_backend m = RELAY_REDIS_BACKEND_INIT, b;

	RT_EQ_INT(m.version, RELAY_REDIS_BACKEND_VERSION);
	RT_CHECK(!m.name && !m.command && !m.script && !m.wait &&
		 !m.errstr && !m.free);
	memset(&b, 0x5a, sizeof(b));
	RT_EQ_INT(relay_redis_backend_init(&b, 0), RELAY_EINVAL);
	RT_EQ_INT(relay_redis_backend_init(&b, RELAY_REDIS_BACKEND_VERSION + 1),
		  RELAY_EINVAL);
	RT_EQ_INT(b.version, 0x5a5a5a5a);  /* untouched */
	RT_EQ_INT(relay_redis_backend_init(NULL, 1), RELAY_EINVAL);
	RT_EQ_INT(relay_redis_backend_init(&b, 2), 0);
	RT_EQ_INT(b.version, 2);
	RT_CHECK(!b.name && !b.command && !b.script && !b.wait &&
		 !b.errstr && !b.free);
	/* Zeroed slots: not a usable backend until they are filled. */
	RT_EQ_INT(relay_redis_backend_check(&b), RELAY_EINVAL);
	b.name = "nop";
	b.command = nop_command;
	b.script = nop_script;
	b.errstr = nop_errstr;
	b.free = nop_free;
	RT_EQ_INT(relay_redis_backend_check(&b), 0);
	/* Publication (a version 2 op) reaches the script slot of a
	 * version 2 table, never that of a version 1 table. */
	nop_script_calls = 0;
	RT_EQ_INT(relay_schedule_publish(&b, "s", "a", "b", "h", 60, never,
					 NULL), RELAY_EUSER);
	RT_EQ_INT(nop_script_calls, 1);
	m = b;
	RT_EQ_INT(relay_redis_backend_init(&m, 1), 0);
	m.name = b.name;
	m.command = b.command;
	m.script = b.script;
	m.errstr = b.errstr;
	m.free = b.free;
	RT_EQ_INT(relay_redis_backend_check(&m), 0);
	RT_EQ_INT(relay_schedule_publish(&m, "s", "a", "b", "h", 60, never,
					 NULL), RELAY_EBACKEND);
	RT_EQ_INT(nop_script_calls, 1);
}

/* ---- schedule occurrences ------------------------------------------------ */

static void test_api__schedule_time_format(void)
{
	char buf[RELAY_SCHEDULE_TIME_LEN + 1];

	RT_EQ_INT(relay_schedule_time_format(0, buf, sizeof(buf)), 0);
	RT_EQ_STR(buf, "1970-01-01T00:00:00Z");
	RT_EQ_INT(relay_schedule_time_format(1767247200, buf, sizeof(buf)), 0);
	RT_EQ_STR(buf, "2026-01-01T06:00:00Z");
	RT_EQ_INT(relay_schedule_time_format(253402300799LL, buf,
					     sizeof(buf)), 0);
	RT_EQ_STR(buf, "9999-12-31T23:59:59Z");
	strcpy(buf, "untouched");
	RT_EQ_INT(relay_schedule_time_format(-1, buf, sizeof(buf)),
		  RELAY_EINVAL);
	RT_EQ_INT(relay_schedule_time_format(253402300800LL, buf, sizeof(buf)),
		  RELAY_EINVAL);
	RT_EQ_INT(relay_schedule_time_format(0, buf, RELAY_SCHEDULE_TIME_LEN),
		  RELAY_EINVAL);
	RT_EQ_STR(buf, "untouched");
}

#define ENV_OK "{\"source\":\"relay.schedule\",\"app\":\"billing\"," \
	"\"schedule\":\"daily\",\"handler\":\"reports.run\"," \
	"\"scheduled_at\":\"2026-01-01T06:00:00Z\"," \
	"\"occurrence_id\":\"schedule:billing:daily:2026-01-01T06:00:00Z\"}"

static void test_api__occurrence_classify_and_parse(void)
{
	static const struct {
		const char *json, *why;
	} bad[] = {
		{ "{\"source\":\"relay.schedule\",\"app\":\"billing\"}",
		  "missing \"schedule\"" },
		{ "{\"source\":\"relay.schedule\",\"app\":\"Billing!\","
		  "\"schedule\":\"d\",\"handler\":\"h\",\"scheduled_at\":"
		  "\"2026-01-01T06:00:00Z\",\"occurrence_id\":\"x\"}",
		  "\"app\" is not a valid app name" },
		{ "{\"source\":\"relay.schedule\",\"app\":\"a\","
		  "\"schedule\":\"d\",\"handler\":\"h\",\"scheduled_at\":"
		  "\"2026-02-30T06:00:00Z\",\"occurrence_id\":\"x\"}",
		  "\"scheduled_at\" is not an RFC 3339 UTC time in seconds "
		  "(YYYY-MM-DDTHH:MM:SSZ)" },
		{ "{\"source\":\"relay.schedule\",\"app\":\"a\","
		  "\"schedule\":\"d\",\"handler\":\"h\",\"scheduled_at\":"
		  "\"2026-01-01T06:00:00Z\",\"occurrence_id\":"
		  "\"schedule:a:e:2026-01-01T06:00:00Z\"}",
		  "\"occurrence_id\" is not "
		  "schedule:<app>:<schedule>:<scheduled_at>" },
	};
	relay_schedule_occurrence *o = NULL;
	relay_error err;
	size_t i;

	RT_EQ_INT(relay_schedule_is_occurrence(ENV_OK, strlen(ENV_OK)), 1);
	RT_EQ_INT(relay_schedule_is_occurrence("{\"source\":\"relay.sched\"}",
					       24), 0);
	RT_EQ_INT(relay_schedule_is_occurrence("{\"x\":{\"source\":"
					       "\"relay.schedule\"}}", 32), 0);
	RT_EQ_INT(relay_schedule_is_occurrence("[\"relay.schedule\"]", 18),
		  0);
	RT_EQ_INT(relay_schedule_is_occurrence("relay.schedule", 14), 0);

	RT_EQ_INT(relay_schedule_occurrence_parse(&o, ENV_OK, strlen(ENV_OK),
						  &err), 0);
	RT_ASSERT(o != NULL);
	RT_EQ_STR(o->app, "billing");
	RT_EQ_STR(o->schedule, "daily");
	RT_EQ_STR(o->handler, "reports.run");
	RT_EQ_STR(o->scheduled_at, "2026-01-01T06:00:00Z");
	RT_EQ_STR(o->occurrence_id,
		  "schedule:billing:daily:2026-01-01T06:00:00Z");
	RT_EQ_INT(o->at, 1767247200);
	relay_schedule_occurrence_free(o);
	relay_schedule_occurrence_free(NULL);

	for (i = 0; i < RT_NCASES(bad); i++) {
		o = (relay_schedule_occurrence *)&err;  /* reset to NULL */
		RT_EQ_INT(relay_schedule_occurrence_parse(
			&o, bad[i].json, strlen(bad[i].json), &err),
			RELAY_EPARSE);
		RT_CHECK(o == NULL);
		RT_EQ_STR(err.text, bad[i].why);
	}
	RT_EQ_INT(relay_schedule_occurrence_parse(&o, "{\"a\":1}", 7, &err),
		  RELAY_EPARSE);
	RT_CHECK(strstr(err.text, "not a schedule occurrence") != NULL);
	RT_EQ_INT(relay_schedule_occurrence_parse(&o, "{nope", 5, NULL),
		  RELAY_EPARSE);
	RT_EQ_INT(relay_schedule_occurrence_parse(NULL, ENV_OK, 10, NULL),
		  RELAY_EINVAL);
}

typedef struct pub {
	int calls, status;
	char id[64], detail[200];
	int had_id;
} pub;

static void on_publish(relay_redis_backend *b, int status,
		       const char *message_id, const char *detail,
		       void *payload)
{
	pub *p = payload;

	(void)b;
	p->calls++;
	p->status = status;
	p->had_id = message_id != NULL;
	snprintf(p->id, sizeof(p->id), "%s", message_id ? message_id : "");
	snprintf(p->detail, sizeof(p->detail), "%s", detail ? detail : "");
}

static relay_redis_reply *sync_cmd(relay_redis_backend *b, int argc,
				   const char *const *argv)
{
	relay_redis_reply *r = NULL;

	RT_EQ_INT(relay_redis_sync_command(b, &r, argc, argv, NULL), 0);
	return r;
}

static void test_api__schedule_publish_once(void)
{
	static const char *const xrange[] = { "XRANGE", "src", "-", "+" };
	static const char *const pttl[] = {
		"PTTL", "relay:schedule:schedule:billing:daily:"
			"2026-01-01T06:00:00Z" };
	relay_redis_backend *b = NULL;
	relay_redis_reply *r;
	relay_stream_entry *e = NULL;
	relay_schedule_occurrence *o = NULL;
	const char *ev;
	size_t n = 0, len = 0;
	pub p;

	RT_ASSERT(relay_redis_memory_new(&b, NULL) == 0);
	memset(&p, 0, sizeof(p));
	RT_EQ_INT(relay_schedule_publish(b, "src", "billing", "daily",
					 "reports.run", 1767247200,
					 on_publish, &p), 0);
	RT_EQ_INT(p.calls, 1);
	RT_EQ_INT(p.status, 0);
	RT_EQ_INT(p.had_id, 1);
	RT_EQ_STR(p.detail, "");

	/* One entry, its id the one reported, its event the envelope. */
	r = sync_cmd(b, 4, xrange);
	RT_ASSERT(r && relay_stream_entries_parse(r, &e, &n) == 0);
	RT_EQ_INT(n, 1);
	RT_EQ_STR(e[0].id, p.id);
	ev = relay_stream_entry_get(&e[0], "event", &len);
	RT_EQ_STR(ev, ENV_OK);
	RT_EQ_INT(relay_schedule_is_occurrence(ev, len), 1);
	RT_EQ_INT(relay_schedule_occurrence_parse(&o, ev, len, NULL), 0);
	RT_CHECK(o && o->at == 1767247200);
	relay_schedule_occurrence_free(o);
	relay_stream_entries_free(e, n);
	relay_redis_reply_free(r);

	/* The marker lives seven days. */
	r = sync_cmd(b, 2, pttl);
	RT_ASSERT(r && r->type == RELAY_REDIS_REPLY_INTEGER);
	RT_CHECK(r->integer > 7LL * 24 * 3600 * 1000 - 60000 &&
		 r->integer <= 7LL * 24 * 3600 * 1000);
	relay_redis_reply_free(r);

	/* Again: already published, nothing added. */
	memset(&p, 0, sizeof(p));
	RT_EQ_INT(relay_schedule_publish(b, "src", "billing", "daily",
					 "reports.run", 1767247200,
					 on_publish, &p), 0);
	RT_EQ_INT(p.calls, 1);
	RT_EQ_INT(p.status, 0);
	RT_EQ_INT(p.had_id, 0);
	r = sync_cmd(b, 4, xrange);
	RT_ASSERT(r && relay_stream_entries_parse(r, &e, &n) == 0);
	RT_EQ_INT(n, 1);
	relay_stream_entries_free(e, n);
	relay_redis_reply_free(r);
	relay_redis_free(b);
}

static void test_api__schedule_publish_failures(void)
{
	static const char *const set[] = { "SET", "notastream", "x" };
	static const char *const exists[] = {
		"EXISTS", "relay:schedule:schedule:a:s:1970-01-01T00:01:00Z" };
	relay_redis_backend *b = NULL;
	relay_redis_reply *r;
	pub p;

	RT_ASSERT(relay_redis_memory_new(&b, NULL) == 0);
	memset(&p, 0, sizeof(p));
	/* Refused arguments: the callback never runs. */
	RT_EQ_INT(relay_schedule_publish(b, "src", "Bad!", "s", "h", 60,
					 on_publish, &p), RELAY_EINVAL);
	RT_EQ_INT(relay_schedule_publish(b, "src", "a", "s", "", 60,
					 on_publish, &p), RELAY_EINVAL);
	RT_EQ_INT(relay_schedule_publish(b, "src", "a", "s", "h", -1,
					 on_publish, &p), RELAY_EINVAL);
	RT_EQ_INT(relay_schedule_publish(b, "", "a", "s", "h", 60,
					 on_publish, &p), RELAY_EINVAL);
	RT_EQ_INT(relay_schedule_publish(b, "src", "a", "s", "h", 60, NULL,
					 &p), RELAY_EINVAL);
	RT_EQ_INT(p.calls, 0);

	/* The stream key holds a string: an ERROR reply, the server's text,
	 * and no marker (a retry can still publish). */
	relay_redis_reply_free(sync_cmd(b, 3, set));
	RT_EQ_INT(relay_schedule_publish(b, "notastream", "a", "s", "h", 60,
					 on_publish, &p), 0);
	RT_EQ_INT(p.calls, 1);
	RT_CHECK(p.status == RELAY_ETYPE || p.status == RELAY_EBACKEND);
	RT_EQ_INT(p.had_id, 0);
	RT_CHECK(strstr(p.detail, "WRONGTYPE") != NULL);
	r = sync_cmd(b, 2, exists);
	RT_CHECK(r && r->type == RELAY_REDIS_REPLY_INTEGER && r->integer == 0);
	relay_redis_reply_free(r);

	/* A backend that is down: the transport status and its text. */
	memset(&p, 0, sizeof(p));
	RT_EQ_INT(relay_redis_memory_set_down(b, 1), 0);
	RT_EQ_INT(relay_schedule_publish(b, "src", "a", "s", "h", 60,
					 on_publish, &p), 0);
	RT_EQ_INT(p.calls, 1);
	RT_EQ_INT(p.status, RELAY_ECLOSED);
	RT_EQ_STR(p.detail, relay_strerror(RELAY_ECLOSED));
	relay_redis_free(b);
}

/* ---- templates ----------------------------------------------------------- */

static char tmpdir[256];

static void diag(const char *app, const relay_error *err, void *payload)
{
	char buf[600];

	(void)payload;
	relay_error_format(err, buf, sizeof(buf));
	printf("# %s: %s\n", app, buf);
}

static relay_app *load_app(const char *name, const char *yaml)
{
	char dir[512], path[600];
	relay_app *app = NULL;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/template.yaml", dir);
	f = fopen(path, "w");
	if (!f)
		return NULL;
	fputs(yaml, f);
	fclose(f);
	if (relay_app_load(&app, dir, diag, NULL))
		return NULL;
	return app;
}

static const char pattern_tmpl[] =
	"runtime: exec\n"
	"command: [./run]\n"
	"events:\n"
	"  - handler: a\n"
	"    pattern:\n"
	"      kind: [x, \"y z\", \"#c\"]\n"
	"      n: [{gt: 5}, 7.50, 0x1F]\n"
	"      user:\n"
	"        id: [{prefix: u_}]\n"
	"        ok: [true, null]\n"
	"  - handler: b\n"
	"    pattern: {\"a b#\": [1]}\n";

static void test_api__pattern_yaml_and_json(void)
{
	relay_app *app;
	char *s = NULL;

	RT_ASSERT((app = load_app("pat", pattern_tmpl)) != NULL);
	RT_EQ_INT(relay_app_rule_pattern_yaml(app, 0, 2, &s), 0);
	RT_EQ_STR(s, "  kind: [x, y z, \"#c\"]\n"
		     "  n: [{gt: 5}, 7.50, 0x1F]\n"
		     "  user:\n"
		     "    id: [{prefix: u_}]\n"
		     "    ok: [true, null]\n");
	relay_free(s);
	RT_EQ_INT(relay_app_rule_pattern_yaml(app, 1, 4, &s), 0);
	RT_EQ_STR(s, "    \"a b#\": [1]\n");
	relay_free(s);
	RT_EQ_INT(relay_app_rule_pattern_json(app, 0, &s), 0);
	RT_EQ_STR(s, "{\"kind\":[\"x\",\"y z\",\"#c\"],"
		     "\"n\":[{\"gt\":5},7.5,\"0x1F\"],"
		     "\"user\":{\"id\":[{\"prefix\":\"u_\"}],"
		     "\"ok\":[true,null]}}");
	relay_free(s);
	s = (char *)"x";
	RT_EQ_INT(relay_app_rule_pattern_yaml(app, 2, 0, &s), RELAY_ENOTFOUND);
	RT_CHECK(s == NULL);
	RT_EQ_INT(relay_app_rule_pattern_json(app, 2, &s), RELAY_ENOTFOUND);
	RT_EQ_INT(relay_app_rule_pattern_yaml(app, 0, -1, &s), RELAY_EINVAL);
	RT_EQ_INT(relay_app_rule_pattern_yaml(NULL, 0, 0, &s), RELAY_EINVAL);
	relay_app_free(app);
}

static void test_api__format_duration(void)
{
	char buf[32];

	RT_EQ_STR(relay_app_format_duration(0, buf, sizeof(buf)), "0s");
	RT_EQ_STR(relay_app_format_duration(500, buf, sizeof(buf)), "500ms");
	RT_EQ_STR(relay_app_format_duration(90000, buf, sizeof(buf)), "1m30s");
	RT_EQ_STR(relay_app_format_duration(7200000, buf, sizeof(buf)), "2h");
	RT_EQ_STR(relay_app_format_duration(3661001, buf, sizeof(buf)),
		  "1h1m1s1ms");
	RT_EQ_STR(relay_app_format_duration(INT64_MAX, buf, sizeof(buf)),
		  "2562047788015h12m55s807ms");
	RT_EQ_STR(relay_app_format_duration(-1, buf, sizeof(buf)), "");
	RT_EQ_STR(relay_app_format_duration(1, buf, 0), "");
}

static void test_api__runtime_available(void)
{
	char bin[512], prog[600], *old = getenv("PATH"), *saved;
	relay_app *py, *ex;
	FILE *f;

	RT_ASSERT((py = load_app("py", "runtime: python3\nevents:\n"
				 "  - handler: m.h\n    pattern: {a: [1]}\n")));
	RT_ASSERT((ex = load_app("ex", "runtime: exec\ncommand: [./r]\n"
				 "events:\n  - handler: h\n"
				 "    pattern: {a: [1]}\n")));
	saved = old ? strdup(old) : NULL;
	snprintf(bin, sizeof(bin), "%s/bin", tmpdir);
	mkdir(bin, 0755);
	setenv("PATH", bin, 1);
	RT_CHECK(!relay_app_runtime_available(py));
	RT_CHECK(relay_app_runtime_available(ex));
	snprintf(prog, sizeof(prog), "%s/python3", bin);
	f = fopen(prog, "w");
	RT_ASSERT(f != NULL);
	fclose(f);
	RT_CHECK(!relay_app_runtime_available(py));  /* not executable */
	chmod(prog, 0755);
	RT_CHECK(relay_app_runtime_available(py));
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	relay_app_free(py);
	relay_app_free(ex);
}

/* ---- several streams (relay_stream_list_parse, relay_slots) ------------ */

static void test_api__stream_list_forms(void)
{
	static const struct {
		const char *spec;
		const char *want;  /* names joined by '|' */
	} ok[] = {
		{ "events", "events" },
		{ "{orders}", "{orders}" },
		{ "orders:{p3}", "orders:{p3}" },
		{ "a b", "a b" },              /* one name: verbatim */
		{ "a,b", "a|b" },
		{ " a , b\t,c", "a|b|c" },
		{ "orders{0..3}", "orders:{p0}|orders:{p1}|orders:{p2}|"
				  "orders:{p3}" },
		{ "o{2..2}", "o:{p2}" },
		{ "o{0..1},audit", "o:{p0}|o:{p1}|audit" },
		{ "x{ab}", "x{ab}" },           /* not the shorthand */
		{ "{0..1}", "{0..1}" },         /* no prefix: a name */
	};
	static const char *const bad[] = {
		"a,,b", ",", "a,", "a,b c", "o{3..1}", "o{0..64}",
		"a,a", "o{0..1},o:{p1}", "o{00000..1},b", "x{a..b}",
		"o{1..}", "o{..2}",
	};
	relay_error err;
	size_t i, j, n;

	for (i = 0; i < RT_NCASES(ok); i++) {
		char **v = NULL, buf[256] = "";

		RT_EQ_INT(relay_stream_list_parse(ok[i].spec, &v, &n, &err),
			  0);
		for (j = 0; j < n; j++) {
			if (j)
				strcat(buf, "|");
			strcat(buf, v[j]);
		}
		RT_CHECK(v[n] == NULL);
		RT_EQ_STR(buf, ok[i].want);
		relay_stream_list_free(v);
	}
	for (i = 0; i < RT_NCASES(bad); i++) {
		char **v = (char **)1;

		err.text[0] = '\0';
		RT_EQ_INT(relay_stream_list_parse(bad[i], &v, &n, &err),
			  RELAY_EINVAL);
		RT_CHECK(v == NULL && err.text[0] != '\0');
	}
	{
		char **v0;

		RT_EQ_INT(relay_stream_list_parse("", &v0, NULL, NULL),
			  RELAY_EINVAL);
	}
}

/* The documented hash: FNV-1a-32 (its published test vectors). */
static void test_api__stream_partition(void)
{
	RT_CHECK(relay_stream_hash("", 0) == 0x811c9dc5u);
	RT_CHECK(relay_stream_hash("a", 1) == 0xe40c292cu);
	RT_CHECK(relay_stream_hash("foobar", 6) == 0xbf9cf968u);
	RT_EQ_INT((int)relay_stream_partition("a", 1, 4),
		  (int)(0xe40c292cu % 4));
	RT_EQ_INT((int)relay_stream_partition("a", 1, 0), 0);
}

static void test_api__slots(void)
{
	relay_slots *s = NULL;

	RT_EQ_INT(relay_slots_new(NULL, 3), RELAY_EINVAL);
	RT_EQ_INT(relay_slots_new(&s, 0), 0);
	RT_EQ_INT((int)relay_slots_max(s), 8);
	relay_slots_free(s);
	RT_EQ_INT(relay_slots_new(&s, 3), 0);
	RT_EQ_INT((int)relay_slots_max(s), 3);
	RT_EQ_INT((int)relay_slots_running(s), 0);
	RT_EQ_INT((int)relay_slots_app_running(s, "nope"), 0);
	relay_slots_free(s);
	relay_slots_free(NULL);
}

static const rt_case cases[] = {
	RT_CASE(test_api__uri_check_kinds),
	RT_CASE(test_api__uri_redact),
	RT_CASE(test_api__redis_backend_init),
	RT_CASE(test_api__schedule_time_format),
	RT_CASE(test_api__occurrence_classify_and_parse),
	RT_CASE(test_api__schedule_publish_once),
	RT_CASE(test_api__schedule_publish_failures),
	RT_CASE(test_api__pattern_yaml_and_json),
	RT_CASE(test_api__format_duration),
	RT_CASE(test_api__runtime_available),
	RT_CASE(test_api__stream_list_forms),
	RT_CASE(test_api__stream_partition),
	RT_CASE(test_api__slots),
};

int main(int argc, char **argv)
{
	char cmd[300];
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/relay-api-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	rc = rt_main(argc, argv, cases, RT_NCASES(cases));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return rc;
}
