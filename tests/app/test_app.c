/*
 * test_app.c - the app module: defaults and accessors, value grammars,
 * YAML typing of pnodes, syntax-error positions, loading from a directory,
 * and the app set (ordering, invalid entries, dispatch-order matching).
 * The schema's error cases are data in tests/app/cases (test_app_cases.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "relaytest.h"
#include "rt_oom.h"

/* ---- helpers ---- */

typedef struct diag_log {
	int n;
	char text[8][600];
	char app[8][64];
} diag_log;

static void log_diag(const char *app, const relay_error *err, void *payload)
{
	diag_log *l = payload;

	if (l->n < 8) {
		snprintf(l->text[l->n], sizeof(l->text[0]), "%s:%d:%d: %s",
			 err->path, err->line, err->column, err->text);
		snprintf(l->app[l->n], sizeof(l->app[0]), "%s",
			 app ? app : "(null)");
	}
	l->n++;
}

static relay_app *load_str(const char *yaml, diag_log *l)
{
	relay_app *app = NULL;

	relay_app_load_buffer(&app, "t", NULL, "t.yaml", yaml, strlen(yaml),
			      log_diag, l);
	return app;
}

static char tmp_root[256];

static void write_file(const char *rel, const char *text)
{
	char path[512], dir[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp_root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	mkdir(dir, 0700);
	f = fopen(path, "w");
	RT_ASSERT(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void make_tmp(void)
{
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/relay-test-app-XXXXXX");
	RT_ASSERT(mkdtemp(tmp_root) != NULL);
}

static void rm_tmp(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
	RT_CHECK(system(cmd) == 0);
}

#define RULE(h, p) "  - handler: " h "\n    pattern: " p "\n"

/* ---- defaults and accessors ---- */

static void test_app__defaults(void)
{
	diag_log l = { 0 };
	relay_app *app = load_str("runtime: python3\nevents:\n"
				  RULE("events.created.handler",
				       "{event_name: [INSERT]}"), &l);
	const relay_app_rule *r;
	size_t argc = 99;

	RT_ASSERT(app != NULL);
	RT_EQ_INT(l.n, 0);
	RT_EQ_STR(relay_app_name(app), "t");
	RT_EQ_STR(relay_app_template_path(app), "t.yaml");
	RT_CHECK(relay_app_dir(app)[0] == '/');
	RT_EQ_INT(relay_app_runtime(app), RELAY_APP_RUNTIME_PYTHON3);
	RT_CHECK(relay_app_command(app, &argc) == NULL);
	RT_EQ_INT(argc, 0);
	RT_EQ_INT(relay_app_command_line(app), 0);
	RT_EQ_INT(relay_app_network(app), 0);
	RT_EQ_INT(relay_app_concurrency(app), 2);
	RT_EQ_INT(relay_app_memory(app), 0);
	RT_EQ_INT(relay_app_cpus_milli(app), 0);
	RT_EQ_INT(relay_app_pids(app), 0);
	RT_EQ_INT(relay_app_tmp(app), 0);
	RT_EQ_INT(relay_app_env_count(app), 0);
	RT_CHECK(relay_app_envp(app) != NULL && relay_app_envp(app)[0] == NULL);
	RT_EQ_INT(relay_app_schedule_count(app), 0);
	RT_EQ_INT(relay_app_rule_count(app), 1);
	r = relay_app_rule_at(app, 0);
	RT_ASSERT(r != NULL);
	RT_EQ_STR(relay_app_rule_handler(r), "events.created.handler");
	RT_EQ_INT(relay_app_rule_timeout_ms(r), 6000);
	RT_EQ_INT(relay_app_rule_retries(r), 4);
	RT_EQ_INT(relay_app_rule_index(r), 0);
	RT_EQ_INT(relay_app_rule_line(r), 3);
	RT_CHECK(relay_app_rule_pattern(r) != NULL);
	RT_CHECK(relay_app_rule_at(app, 1) == NULL);
	RT_CHECK(relay_app_rule_find(app, "events.created.handler") == r);
	RT_CHECK(relay_app_rule_find(app, "nope.x") == NULL);
	relay_app_free(app);
	relay_app_free(NULL);
}

static void test_app__all_keys(void)
{
	diag_log l = { 0 };
	relay_app *app = load_str(
		"runtime: exec\n"
		"command: [./run.sh, -v, 3]\n"
		"network: true\n"
		"concurrency: 16\n"
		"resources: {memory: 256MiB, cpus: 1.25, pids: 32, tmp: 16Mi}\n"
		"env:\n  B: two\n  A: 1\n  C: false\n  D: \"\"\n"
		"events:\n"
		RULE("first", "{x: [1]}") "    timeout: 1m30s\n    retries: 0\n"
		RULE("second", "{x: [2]}") "    timeout: 500ms\n"
		"schedules:\n"
		"  - {name: nightly, handler: first, cron: '0 3 * * *',"
		" timezone: Europe/Paris, retries: 7}\n"
		"  - {name: hourly, handler: second, cron: '@hourly'}\n", &l);
	const char *const *argv;
	const relay_app_schedule *s;
	const char *name, *value;
	int64_t next;
	size_t argc;

	RT_ASSERT(app != NULL);
	RT_EQ_INT(l.n, 0);
	argv = relay_app_command(app, &argc);
	RT_ASSERT(argv != NULL);
	RT_EQ_INT(argc, 3);
	RT_EQ_STR(argv[0], "./run.sh");
	RT_EQ_STR(argv[2], "3");
	RT_CHECK(argv[3] == NULL);
	RT_EQ_INT(relay_app_command_line(app), 2);
	RT_EQ_INT(relay_app_network(app), 1);
	RT_EQ_INT(relay_app_concurrency(app), 16);
	RT_EQ_INT(relay_app_memory(app), 256ULL << 20);
	RT_EQ_INT(relay_app_cpus_milli(app), 1250);
	RT_EQ_INT(relay_app_pids(app), 32);
	RT_EQ_INT(relay_app_tmp(app), 16ULL << 20);
	/* env keeps declaration order, stringifies scalars */
	RT_EQ_INT(relay_app_env_count(app), 4);
	RT_EQ_INT(relay_app_env_at(app, 0, &name, &value), 0);
	RT_EQ_STR(name, "B");
	RT_EQ_STR(value, "two");
	RT_EQ_INT(relay_app_env_at(app, 1, &name, &value), 0);
	RT_EQ_STR(value, "1");
	RT_EQ_INT(relay_app_env_at(app, 2, NULL, &value), 0);
	RT_EQ_STR(value, "false");
	RT_EQ_INT(relay_app_env_at(app, 4, &name, &value), RELAY_ENOTFOUND);
	RT_EQ_STR(relay_app_envp(app)[0], "B=two");
	RT_EQ_STR(relay_app_envp(app)[3], "D=");
	RT_CHECK(relay_app_envp(app)[4] == NULL);
	RT_EQ_INT(relay_app_rule_timeout_ms(relay_app_rule_at(app, 0)), 90000);
	RT_EQ_INT(relay_app_rule_retries(relay_app_rule_at(app, 0)), 0);
	RT_EQ_INT(relay_app_rule_timeout_ms(relay_app_rule_at(app, 1)), 500);
	RT_EQ_INT(relay_app_schedule_count(app), 2);
	s = relay_app_schedule_find(app, "nightly");
	RT_ASSERT(s != NULL);
	RT_CHECK(relay_app_schedule_at(app, 0) == s);
	RT_EQ_STR(relay_app_schedule_handler(s), "first");
	RT_EQ_STR(relay_app_schedule_cron(s), "0 3 * * *");
	RT_EQ_STR(relay_app_schedule_timezone(s), "Europe/Paris");
	RT_EQ_INT(relay_app_schedule_retries(s), 7);
	RT_EQ_INT(relay_app_schedule_timeout_ms(s), 6000);
	RT_EQ_INT(relay_app_schedule_line(s), 20);
	/* compiled once, in the schedule's zone: 03:00 CET = 02:00Z */
	RT_ASSERT(relay_app_schedule_cron_compiled(s) != NULL);
	RT_EQ_STR(relay_cron_timezone(relay_app_schedule_cron_compiled(s)),
		  "Europe/Paris");
	RT_EQ_INT(relay_cron_next(relay_app_schedule_cron_compiled(s),
				  1767225600 /* 2026-01-01Z */, &next), 0);
	RT_EQ_INT(next, 1767225600 + 2 * 3600);
	s = relay_app_schedule_at(app, 1);
	RT_EQ_STR(relay_app_schedule_name(s), "hourly");
	RT_EQ_STR(relay_app_schedule_timezone(s), "UTC");
	RT_EQ_INT(relay_cron_next(relay_app_schedule_cron_compiled(s),
				  1767225600, &next), 0);
	RT_EQ_INT(next, 1767225600 + 3600);
	RT_EQ_INT(relay_app_schedule_retries(s), 4);
	RT_EQ_INT(relay_app_schedule_line(s), 21);
	RT_CHECK(relay_app_schedule_find(app, "nope") == NULL);
	RT_CHECK(relay_app_schedule_at(app, 2) == NULL);
	relay_app_free(app);
}

static void test_app__bounds_accepted(void)
{
	diag_log l = { 0 };
	relay_app *app = load_str(
		"runtime: node\nconcurrency: 1024\n"
		"resources: {memory: 1Mi, cpus: 0.001, pids: 4194304}\n"
		"events:\n"
		RULE("a.b", "{x: [1]}") "    timeout: 5m\n    retries: 100\n"
		RULE("a.c", "{x: [1]}") "    timeout: 1ms\n", &l);

	RT_ASSERT(app != NULL);
	RT_EQ_INT(l.n, 0);
	RT_EQ_INT(relay_app_rule_timeout_ms(relay_app_rule_at(app, 0)),
		  300000);
	RT_EQ_INT(relay_app_rule_retries(relay_app_rule_at(app, 0)), 100);
	RT_EQ_INT(relay_app_rule_timeout_ms(relay_app_rule_at(app, 1)), 1);
	RT_EQ_INT(relay_app_memory(app), 1 << 20);
	RT_EQ_INT(relay_app_cpus_milli(app), 1);
	relay_app_free(app);
}

static void test_app__every_problem_reported(void)
{
	diag_log l = { 0 };
	relay_app *app = load_str("runtime: python3\nevents:\n"
				  RULE("nodot", "{x: [1]}")
				  "    timeout: 0s\n    retries: -1\n"
				  RULE("nodot", "{x: [1]}")
				  "bogus: 1\n", &l);

	RT_CHECK(app == NULL);
	/* the second "nodot" is invalid again, not a duplicate */
	RT_EQ_INT(l.n, 5);
	RT_EQ_STR(l.text[0], "t.yaml:3:14: events[0].handler: invalid "
		  "handler \"nodot\" (write module.function, e.g. "
		  "events.created.handler)");
	RT_EQ_STR(l.text[1], "t.yaml:5:14: events[0].timeout: must be "
		  "greater than 0");
	RT_EQ_STR(l.text[3], "t.yaml:7:14: events[1].handler: invalid "
		  "handler \"nodot\" (write module.function, e.g. "
		  "events.created.handler)");
	RT_EQ_STR(l.text[4], "t.yaml:9:1: unknown key \"bogus\"");
	RT_EQ_STR(l.app[0], "t");
}

static void test_app__bad_names(void)
{
	static const char *const bad[] = { "", "Billing", "-x", ".x", "_x",
		"a b", "a/b", "é",
		"a2345678901234567890123456789012"
		"34567890123456789012345678901234", /* 64 */
		NULL };
	static const char *const good[] = { "a", "0", "billing", "a.b-c_d",
		"a2345678901234567890123456789012"
		"3456789012345678901234567890123", /* 63 */
		NULL };
	diag_log l = { 0 };
	relay_app *app = NULL;
	size_t i;

	for (i = 0; bad[i]; i++)
		RT_CHECK(!relay_app_name_valid(bad[i]));
	for (i = 0; good[i]; i++)
		RT_CHECK(relay_app_name_valid(good[i]));
	RT_CHECK(!relay_app_name_valid(NULL));
	RT_EQ_INT(relay_app_load_buffer(&app, "Bad", NULL, "t.yaml",
					"runtime: exec\ncommand: [x]\n", 27,
					log_diag, &l), RELAY_EPARSE);
	RT_CHECK(app == NULL);
	RT_EQ_INT(l.n, 1);
	RT_CHECK(strstr(l.text[0], "t.yaml:1:1: invalid app name \"Bad\"") ==
		 l.text[0]);
}

/* ---- value grammars ---- */

static void test_app__durations(void)
{
	static const struct { const char *s; int64_t ms; } ok[] = {
		{ "20s", 20000 }, { "1m30s", 90000 }, { "500ms", 500 },
		{ "1h", 3600000 }, { "1h1m1s1ms", 3661001 }, { "0s", 0 },
		{ "5m", 300000 }, { "90s", 90000 },
	};
	static const char *const bad[] = { "", "20", "s", "1.5s", "-1s",
		"20 s", "1d", "1m30", "ms", "99999999999999999999s", NULL };
	char buf[32];
	int64_t ms;
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(ok); i++) {
		RT_EQ_INT(relay__app_parse_duration(ok[i].s, &ms), 0);
		RT_EQ_INT(ms, ok[i].ms);
	}
	for (i = 0; bad[i]; i++)
		RT_EQ_INT(relay__app_parse_duration(bad[i], &ms), RELAY_EINVAL);
	RT_EQ_STR(relay__app_format_duration(301000, buf, sizeof(buf)),
		  "5m1s");
	RT_EQ_STR(relay__app_format_duration(0, buf, sizeof(buf)), "0s");
	RT_EQ_STR(relay__app_format_duration(3600500, buf, sizeof(buf)),
		  "1h500ms");
}

static void test_app__memory_and_cpus(void)
{
	static const struct { const char *s; uint64_t b; } ok[] = {
		{ "512Mi", 512ULL << 20 }, { "1Gi", 1ULL << 30 },
		{ "256MiB", 256ULL << 20 }, { "64M", 64000000ULL },
		{ "64MB", 64000000ULL }, { "1048576", 1048576 },
		{ "10B", 10 }, { "2k", 2000 }, { "3Ki", 3072 },
		{ "1Ti", 1ULL << 40 }, { "1T", 1000000000000ULL },
	};
	static const char *const bad[] = { "", "Mi", "1.5Gi", "512mb",
		"512 Mi", "-1", "1Pi", "99999999999Ti", NULL };
	uint64_t b;
	uint32_t m;
	size_t i;

	for (i = 0; i < RELAY__ARRAY_SIZE(ok); i++) {
		RT_EQ_INT(relay__app_parse_memory(ok[i].s, &b), 0);
		RT_EQ_INT(b, ok[i].b);
	}
	for (i = 0; bad[i]; i++)
		RT_EQ_INT(relay__app_parse_memory(bad[i], &b), RELAY_EINVAL);
	RT_EQ_INT(relay__app_parse_cpus("0.5", &m), 0);
	RT_EQ_INT(m, 500);
	RT_EQ_INT(relay__app_parse_cpus("2", &m), 0);
	RT_EQ_INT(m, 2000);
	RT_EQ_INT(relay__app_parse_cpus("0.125", &m), 0);
	RT_EQ_INT(m, 125);
	RT_EQ_INT(relay__app_parse_cpus("0.0001", &m), RELAY_EINVAL);
	RT_EQ_INT(relay__app_parse_cpus(".5", &m), RELAY_EINVAL);
	RT_EQ_INT(relay__app_parse_cpus("1.", &m), RELAY_EINVAL);
	RT_EQ_INT(relay__app_parse_cpus("-1", &m), RELAY_EINVAL);
}

static void test_app__handler_syntax(void)
{
	RT_CHECK(relay__app_handler_valid(RELAY_APP_RUNTIME_PYTHON3,
					  "events.created.handler"));
	RT_CHECK(relay__app_handler_valid(RELAY_APP_RUNTIME_NODE, "m.f"));
	RT_CHECK(relay__app_handler_valid(RELAY_APP_RUNTIME_PYTHON3,
					  "_m1.f_2"));
	RT_CHECK(!relay__app_handler_valid(RELAY_APP_RUNTIME_PYTHON3, "m"));
	RT_CHECK(!relay__app_handler_valid(RELAY_APP_RUNTIME_PYTHON3, "m."));
	RT_CHECK(!relay__app_handler_valid(RELAY_APP_RUNTIME_PYTHON3, ".f"));
	RT_CHECK(!relay__app_handler_valid(RELAY_APP_RUNTIME_NODE, "m-x.f"));
	RT_CHECK(relay__app_handler_valid(RELAY_APP_RUNTIME_EXEC, "a-b.c_1"));
	RT_CHECK(relay__app_handler_valid(RELAY_APP_RUNTIME_EXEC, "run"));
	RT_CHECK(!relay__app_handler_valid(RELAY_APP_RUNTIME_EXEC, ""));
	RT_CHECK(!relay__app_handler_valid(RELAY_APP_RUNTIME_EXEC, "a b"));
	RT_CHECK(!relay__app_handler_valid(RELAY_APP_RUNTIME_EXEC, "a/b"));
	RT_CHECK(relay__app_env_name_valid("_A1"));
	RT_CHECK(!relay__app_env_name_valid("1A"));
	RT_CHECK(!relay__app_env_name_valid("A-B"));
	RT_CHECK(!relay__app_env_name_valid(""));
}

/* ---- YAML → pnode ---- */

static const relay__pnode *field(const relay__pnode *map, const char *k)
{
	size_t i;

	for (i = 0; i < map->nchildren; i++)
		if (strcmp(map->children[i].key, k) == 0)
			return &map->children[i];
	return NULL;
}

static void test_app__pnode_typing(void)
{
	static const char yaml[] =
		"q: \"70\"\n"          /* quoted: string */
		"n: 70\n"              /* plain: number, literal kept */
		"f: 7.5e1\n"
		"h: 0x1F\n"
		"o: 0o17\n"
		"inf: -.inf\n"
		"nan: .NaN\n"
		"t: true\n"
		"T: TRUE\n"
		"F: False\n"
		"yes: yes\n"           /* YAML 1.1 bool, a string in 1.2 */
		"tilde: ~\n"
		"null: Null\n"
		"empty:\n"
		"sq: 'true'\n"
		"lit: |\n  12\n"
		"s: 12abc\n"
		"dot: .\n"
		"v: 1.2.3\n"
		"list: [a, 1]\n";
	relay__diags d = { 0 };
	relay__pnode *root = NULL;
	const relay__pnode *n;

	RT_EQ_INT(relay__yaml_parse(&root, yaml, sizeof(yaml) - 1, "t.yaml",
				    &d), 0);
	RT_EQ_INT(d.n, 0);
	RT_ASSERT(root && root->kind == RELAY__PNODE_MAP);
	RT_EQ_INT(root->line, 1);
	n = field(root, "q");
	RT_CHECK(n->kind == RELAY__PNODE_STRING && !strcmp(n->text, "70"));
	RT_EQ_INT(n->line, 1);
	RT_EQ_INT(n->column, 4);
	RT_EQ_INT(n->key_line, 1);
	RT_EQ_INT(n->key_column, 1);
	n = field(root, "n");
	RT_CHECK(n->kind == RELAY__PNODE_NUMBER && !strcmp(n->text, "70"));
	RT_EQ_INT(n->line, 2);
	RT_EQ_INT(n->column, 4);
	n = field(root, "f");
	RT_CHECK(n->kind == RELAY__PNODE_NUMBER && !strcmp(n->text, "7.5e1"));
	RT_EQ_INT(field(root, "h")->kind, RELAY__PNODE_NUMBER);
	RT_EQ_INT(field(root, "o")->kind, RELAY__PNODE_NUMBER);
	RT_EQ_INT(field(root, "inf")->kind, RELAY__PNODE_NUMBER);
	RT_EQ_INT(field(root, "nan")->kind, RELAY__PNODE_NUMBER);
	n = field(root, "t");
	RT_CHECK(n->kind == RELAY__PNODE_BOOL && n->boolean == 1);
	RT_CHECK(field(root, "T")->boolean == 1);
	n = field(root, "F");
	RT_CHECK(n->kind == RELAY__PNODE_BOOL && n->boolean == 0);
	RT_EQ_INT(field(root, "yes")->kind, RELAY__PNODE_STRING);
	RT_EQ_INT(field(root, "tilde")->kind, RELAY__PNODE_NULL);
	RT_EQ_INT(field(root, "null")->kind, RELAY__PNODE_NULL);
	n = field(root, "empty");
	RT_EQ_INT(n->kind, RELAY__PNODE_NULL);
	RT_EQ_INT(n->line, 14); /* no mark of its own: the key's */
	RT_EQ_INT(field(root, "sq")->kind, RELAY__PNODE_STRING);
	n = field(root, "lit");
	RT_CHECK(n->kind == RELAY__PNODE_STRING && !strcmp(n->text, "12\n"));
	RT_EQ_INT(field(root, "s")->kind, RELAY__PNODE_STRING);
	RT_EQ_INT(field(root, "dot")->kind, RELAY__PNODE_STRING);
	RT_EQ_INT(field(root, "v")->kind, RELAY__PNODE_STRING);
	n = field(root, "list");
	RT_CHECK(n->kind == RELAY__PNODE_SEQ && n->nchildren == 2);
	RT_EQ_INT(n->children[1].kind, RELAY__PNODE_NUMBER);
	RT_EQ_INT(n->children[1].line, 21);
	RT_EQ_INT(n->children[1].column, 11);
	relay__pnode_free(root);
	relay__diags_free(&d);
}

static void test_app__plain_kind(void)
{
	static const char *const numbers[] = { "0", "-1", "+1", "1.", ".5",
		"1e3", "1E-3", "-0.5e+2", "0x0", "0o7", ".inf", "+.INF",
		".NAN", NULL };
	static const char *const strings[] = { "e3", "1e", "0x", "0o8",
		"0b1", "1_000", "inf", "nan", "-", "+", ".", "1..2", "0xg",
		"yes", "on", NULL };
	size_t i;

	for (i = 0; numbers[i]; i++)
		RT_EQ_INT(relay__yaml_plain_kind(numbers[i],
						 strlen(numbers[i])),
			  RELAY__PNODE_NUMBER);
	for (i = 0; strings[i]; i++)
		RT_EQ_INT(relay__yaml_plain_kind(strings[i],
						 strlen(strings[i])),
			  RELAY__PNODE_STRING);
	RT_EQ_INT(relay__yaml_plain_kind("", 0), RELAY__PNODE_NULL);
}

static void test_app__syntax_error_position(void)
{
	diag_log l = { 0 };
	relay_app *app = load_str("runtime: python3\nenv:\n  X: \"\\q\"\n", &l);

	RT_CHECK(app == NULL);
	RT_EQ_INT(l.n, 1);
	RT_EQ_STR(l.text[0], "t.yaml:3:7: YAML syntax error: invalid escape "
		  "'q' in double-quoted string");
}

static void test_app__deep_nesting(void)
{
	relay__buf b = { 0 };
	diag_log l = { 0 };
	relay_app *app;
	int i;

	relay__buf_printf(&b, "runtime: python3\nevents:\n  - handler: a.b\n"
			  "    pattern: ");
	for (i = 0; i < 200; i++)
		relay__buf_printf(&b, "{a: ");
	relay__buf_printf(&b, "[1]");
	for (i = 0; i < 200; i++)
		relay__buf_printf(&b, "}");
	relay__buf_printf(&b, "\n");
	app = load_str(b.data, &l);
	RT_CHECK(app == NULL);
	/* one problem, at the first level too deep, however deep it goes */
	RT_EQ_INT(l.n, 1);
	RT_EQ_STR(l.text[0], "t.yaml:4:258: nesting is too deep (at most 64 "
		  "levels)");
	relay__buf_free(&b);
}

/* ---- loading from directories; the app set ---- */

static void test_app__load_dir(void)
{
	char dir[512];
	diag_log l = { 0 };
	relay_app *app = NULL;

	make_tmp();
	write_file("billing/template.yaml", "runtime: exec\ncommand: [x]\n");
	snprintf(dir, sizeof(dir), "%s/billing", tmp_root);
	RT_EQ_INT(relay_app_load(&app, dir, log_diag, &l), 0);
	RT_ASSERT(app != NULL);
	RT_EQ_STR(relay_app_name(app), "billing");
	RT_CHECK(strstr(relay_app_template_path(app),
			"/billing/template.yaml") != NULL);
	relay_app_free(app);
	/* trailing slash: same name, no double slash in the path */
	snprintf(dir, sizeof(dir), "%s/billing/", tmp_root);
	RT_EQ_INT(relay_app_load(&app, dir, log_diag, &l), 0);
	RT_ASSERT(app != NULL);
	RT_EQ_STR(relay_app_name(app), "billing");
	RT_CHECK(strstr(relay_app_template_path(app), "//") == NULL);
	relay_app_free(app);
	snprintf(dir, sizeof(dir), "%s/missing", tmp_root);
	RT_EQ_INT(relay_app_load(&app, dir, log_diag, &l), RELAY_ENOTFOUND);
	RT_CHECK(app == NULL);
	RT_EQ_INT(l.n, 1);
	RT_CHECK(strstr(l.text[0], "cannot open") != NULL);
	rm_tmp();
}

static const char rule_yaml[] =
	"runtime: python3\nevents:\n"
	RULE("m.first", "{kind: [order]}")
	RULE("m.second", "{amount: [{gt: 10}]}")
	RULE("m.never", "{kind: [never]}");

static void test_appset__order_and_invalid(void)
{
	relay_appset *set = NULL;
	diag_log l = { 0 };
	const relay_app *app;
	const relay_app_rule *rule;

	make_tmp();
	/* created out of order; "B" sorts before "a" bytewise, and is
	 * not a valid app name (upper case): skipped, with a mention (no
	 * app) that escapes its name; "c" has a bad template; "empty" has
	 * none */
	write_file("zeta/template.yaml", rule_yaml);
	write_file("alpha/template.yaml", rule_yaml);
	write_file("beta.2/template.yaml", rule_yaml);
	write_file("B/template.yaml", rule_yaml);
	write_file("c/template.yaml", "runtime: cobol\n");
	write_file("empty/README", "no template here\n");
	write_file("file.yaml", "not a dir\n");
	write_file("x\ny/template.yaml", rule_yaml);
	RT_EQ_INT(relay_appset_load(&set, tmp_root, log_diag, &l), 0);
	RT_ASSERT(set != NULL);
	RT_EQ_INT(relay_appset_entry_count(set), 4);
	RT_EQ_INT(relay_appset_invalid_count(set), 1);
	RT_EQ_STR(relay_appset_entry_name(set, 0), "alpha");
	RT_EQ_STR(relay_appset_entry_name(set, 1), "beta.2");
	RT_EQ_STR(relay_appset_entry_name(set, 2), "c");
	RT_EQ_STR(relay_appset_entry_name(set, 3), "zeta");
	RT_CHECK(relay_appset_entry_name(set, 4) == NULL);
	RT_EQ_INT(relay_appset_entry_status(set, 0), 0);
	RT_EQ_INT(relay_appset_entry_status(set, 2), RELAY_EPARSE);
	RT_EQ_INT(relay_appset_entry_status(set, 9), RELAY_ENOTFOUND);
	RT_EQ_INT(relay_appset_entry_error_count(set, 2), 1);
	RT_CHECK(strstr(relay_appset_entry_error(set, 2, 0)->text,
			"runtime: must be one of") != NULL);
	RT_CHECK(relay_appset_entry_error(set, 2, 1) == NULL);
	/* the skipped names first (directory order), then entry order */
	RT_EQ_INT(l.n, 3);
	RT_EQ_STR(l.app[2], "c");
	RT_EQ_STR(l.app[0], "(null)");
	RT_EQ_STR(l.app[1], "(null)");
	RT_CHECK(strstr(l.text[0], "skipping \"B\": not a valid app name") ||
		 strstr(l.text[1], "skipping \"B\": not a valid app name"));
	RT_CHECK(strstr(l.text[0], "skipping \"x\\x0ay\"") ||
		 strstr(l.text[1], "skipping \"x\\x0ay\""));
	RT_CHECK(!strchr(l.text[0], '\n') && !strchr(l.text[1], '\n'));
	RT_CHECK(relay_appset_find(set, "alpha") ==
		 relay_appset_entry_app(set, 0));
	RT_CHECK(relay_appset_find(set, "c") == NULL);
	RT_CHECK(relay_appset_find(set, "nope") == NULL);
	/* ruleset: 3 valid apps x 3 rules, in dispatch order */
	RT_EQ_INT(relay_ruleset_count(relay_appset_ruleset(set)), 9);
	RT_EQ_INT(relay_appset_rule(set, 4, &app, &rule), 0);
	RT_EQ_STR(relay_app_name(app), "beta.2");
	RT_EQ_STR(relay_app_rule_handler(rule), "m.second");
	RT_EQ_INT(relay_appset_rule(set, 9, &app, &rule), RELAY_ENOTFOUND);
	relay_appset_free(set);
	rm_tmp();
}

static void test_appset__match_dispatch_order(void)
{
	static const char ev[] = "{\"kind\":\"order\",\"amount\":11}";
	relay_appset *set = NULL;
	relay_matcher *m = NULL;
	relay_app_match *v = NULL;
	size_t n = 0;
	int pass;

	make_tmp();
	write_file("b/template.yaml", rule_yaml);
	write_file("a/template.yaml", rule_yaml);
	RT_EQ_INT(relay_appset_load(&set, tmp_root, NULL, NULL), 0);
	RT_ASSERT(set != NULL);
	RT_EQ_INT(relay_matcher_new(&m, relay_appset_ruleset(set)), 0);
	for (pass = 0; pass < 2; pass++) {
		/* once with a caller's matcher, once with a temporary one */
		RT_EQ_INT(relay_appset_match(set, pass ? NULL : m, ev,
					     sizeof(ev) - 1, 0, &v, &n), 0);
		RT_ASSERT(n == 4 && v != NULL);
		RT_EQ_STR(relay_app_name(v[0].app), "a");
		RT_EQ_STR(relay_app_rule_handler(v[0].rule), "m.first");
		RT_EQ_STR(relay_app_name(v[1].app), "a");
		RT_EQ_STR(relay_app_rule_handler(v[1].rule), "m.second");
		RT_EQ_STR(relay_app_name(v[2].app), "b");
		RT_EQ_STR(relay_app_rule_handler(v[3].rule), "m.second");
		RT_EQ_INT(v[0].id, 0);
		RT_EQ_INT(v[3].id, 4);
		relay_free(v);
	}
	RT_EQ_INT(relay_appset_match(set, m, "{\"kind\":1}", 10, 0, &v, &n), 0);
	RT_EQ_INT(n, 0);
	RT_CHECK(v == NULL);
	RT_EQ_INT(relay_appset_match(set, m, "[1]", 3, 0, &v, &n),
		  RELAY_ETYPE);
	RT_EQ_INT(relay_appset_match(set, m, "{", 1, 0, &v, &n), RELAY_EPARSE);
	RT_CHECK(relay_matcher_errstr(m)[0] != '\0');
	RT_CHECK(v == NULL && n == 0);
	relay_matcher_free(m);
	relay_appset_free(set);
	rm_tmp();
}

static void test_appset__missing_dir(void)
{
	relay_appset *set = (relay_appset *)1;
	diag_log l = { 0 };

	RT_EQ_INT(relay_appset_load(&set, "/nonexistent/relay/apps", log_diag,
				    &l), RELAY_ENOTFOUND);
	RT_CHECK(set == NULL);
	RT_EQ_INT(l.n, 1);
	RT_EQ_STR(l.app[0], "(null)");
	RT_CHECK(strstr(l.text[0], "cannot open apps directory") != NULL);
}

static void test_appset__empty_dir(void)
{
	relay_appset *set = NULL;
	relay_app_match *v = NULL;
	size_t n = 7;

	make_tmp();
	RT_EQ_INT(relay_appset_load(&set, tmp_root, NULL, NULL), 0);
	RT_ASSERT(set != NULL);
	RT_EQ_INT(relay_appset_entry_count(set), 0);
	RT_EQ_INT(relay_ruleset_count(relay_appset_ruleset(set)), 0);
	RT_EQ_INT(relay_appset_match(set, NULL, "{}", 2, 0, &v, &n), 0);
	RT_EQ_INT(n, 0);
	relay_appset_free(set);
	rm_tmp();
}

static void test_appset__reload(void)
{
	relay_appset *s1 = NULL, *s2 = NULL, *s3 = NULL, *s4 = NULL;
	relay_app *kept;
	diag_log l = { 0 };
	char path[600];

	make_tmp();
	write_file("b/template.yaml", rule_yaml);
	write_file("d/template.yaml", rule_yaml);
	RT_EQ_INT(relay_appset_load(&s1, tmp_root, NULL, NULL), 0);
	RT_ASSERT(s1 != NULL);
	/* b gains a rule */
	write_file("b/template.yaml", "runtime: exec\ncommand: [x]\nevents:\n"
		   RULE("h1", "{k: [1]}") RULE("h2", "{k: [1]}")
		   RULE("h3", "{k: [1]}") RULE("h4", "{k: [1]}"));
	RT_EQ_INT(relay_appset_reload(&s2, s1, "b", log_diag, &l), 0);
	RT_ASSERT(s2 != NULL);
	RT_EQ_INT(l.n, 0);
	RT_EQ_INT(relay_ruleset_count(relay_appset_ruleset(s1)), 6);
	RT_EQ_INT(relay_ruleset_count(relay_appset_ruleset(s2)), 7);
	RT_CHECK(relay_appset_find(s2, "d") == relay_appset_find(s1, "d"));
	RT_CHECK(relay_appset_find(s2, "b") != relay_appset_find(s1, "b"));
	/* a new app "c" is inserted in name order; an invalid one listed */
	write_file("c/template.yaml", "runtime: nope\n");
	RT_EQ_INT(relay_appset_reload(&s3, s2, "c", log_diag, &l), 0);
	RT_ASSERT(s3 != NULL);
	RT_EQ_INT(l.n, 1);
	RT_EQ_STR(l.app[0], "c");
	RT_EQ_INT(relay_appset_entry_count(s3), 3);
	RT_EQ_STR(relay_appset_entry_name(s3, 1), "c");
	RT_EQ_INT(relay_appset_invalid_count(s3), 1);
	RT_EQ_INT(relay_appset_entry_error_count(s3, 1), 1);
	/* b removed from disk: dropped; other entries keep their errors */
	snprintf(path, sizeof(path), "%s/b/template.yaml", tmp_root);
	RT_EQ_INT(unlink(path), 0);
	RT_EQ_INT(relay_appset_reload(&s4, s3, "b", NULL, NULL), 0);
	RT_ASSERT(s4 != NULL);
	RT_EQ_INT(relay_appset_entry_count(s4), 2);
	RT_EQ_STR(relay_appset_entry_name(s4, 0), "c");
	RT_EQ_INT(relay_appset_entry_error_count(s4, 0), 1);
	RT_EQ_INT(relay_ruleset_count(relay_appset_ruleset(s4)), 3);
	relay_appset_free(s4);
	RT_EQ_INT(relay_appset_reload(&s4, s3, "../x", NULL, NULL),
		  RELAY_EINVAL);
	RT_CHECK(s4 == NULL);
	RT_EQ_INT(relay_appset_reload(&s4, s3, "", NULL, NULL), RELAY_EINVAL);
	/* an app outlives the sets it came from */
	kept = relay_app_ref(relay_appset_find(s3, "d"));
	relay_appset_free(s1);
	relay_appset_free(s3);
	relay_appset_free(s2);
	RT_EQ_STR(relay_app_name(kept), "d");
	RT_EQ_INT(relay_app_rule_count(kept), 3);
	relay_app_free(kept);
	rm_tmp();
}

static void collect_name(const char *name, void *payload)
{
	relay__buf *b = payload;

	relay__buf_printf(b, "%s,", name);
}

static void test_appset__scan(void)
{
	relay_appset *set = NULL, *next;
	relay__buf b = { 0 };
	char path[600];
	const char *changed[] = { "b", "c", "d" };
	size_t i;

	make_tmp();
	write_file("a/template.yaml", rule_yaml);
	write_file("b/template.yaml", rule_yaml);
	write_file("c/template.yaml", "runtime: nope\n");
	RT_EQ_INT(relay_appset_load(&set, tmp_root, NULL, NULL), 0);
	RT_ASSERT(set != NULL);
	RT_EQ_INT(relay_appset_scan(set, collect_name, &b), 0);
	RT_CHECK(b.len == 0);
	/* b edited (size changes), c removed, d added, a untouched */
	write_file("b/template.yaml", "runtime: exec\ncommand: [x]\n");
	snprintf(path, sizeof(path), "%s/c/template.yaml", tmp_root);
	RT_EQ_INT(unlink(path), 0);
	write_file("d/template.yaml", rule_yaml);
	RT_EQ_INT(relay_appset_scan(set, collect_name, &b), 0);
	RT_EQ_STR(b.data, "b,c,d,");
	/* reloading each change leaves nothing to report */
	for (i = 0; i < RELAY__ARRAY_SIZE(changed); i++) {
		RT_EQ_INT(relay_appset_reload(&next, set, changed[i], NULL,
					      NULL), 0);
		relay_appset_free(set);
		set = next;
	}
	b.len = 0;
	RT_EQ_INT(relay_appset_scan(set, collect_name, &b), 0);
	RT_CHECK(b.len == 0);
	RT_EQ_INT(relay_appset_entry_count(set), 3);
	RT_EQ_INT(relay_appset_invalid_count(set), 0);
	relay__buf_free(&b);
	rm_tmp();
	/* the apps directory itself is gone */
	RT_EQ_INT(relay_appset_scan(set, collect_name, &b), RELAY_ENOTFOUND);
	relay_appset_free(set);
}

/* ---- allocation failure (tests/rt_oom.h: each allocation fails once) ---- */

static const char oom_yaml[] =
	"runtime: exec\ncommand: [./run, -v]\nnetwork: true\n"
	"resources: {memory: 1Gi, cpus: 0.5, pids: 9}\n"
	"env: {A: 1, B: two, C: true}\n"
	"events:\n"
	RULE("h1", "{a: [1, x], b: {c: [{prefix: p}], d: [{exists: false}]}}")
	"    timeout: 20s\n"
	RULE("h2", "{t: [{gt: \"now()-5m\"}], r: [{s: [OK]}, {s: [BAD]}]}")
	"schedules:\n  - {name: s1, handler: h1, cron: '* * * * *'}\n";

/*
 * Fail the 1st, 2nd, … allocation of a load until one succeeds: every
 * failure must come back as RELAY_ENOMEM (or, where an allocation failure
 * only loses a diagnostic, RELAY_EPARSE) with nothing leaked or crashed.
 */
static void test_app__oom(void)
{
	long n, failures = 0;
	int rc = RELAY_ENOMEM;

	for (n = 1; n < 100000 && rc != 0; n++) {
		relay_app *app = NULL;

		rt_oom_arm(n, 0);
		rt_oom_install();
		rc = relay_app_load_buffer(&app, "oom", "/", "t.yaml", oom_yaml,
					   sizeof(oom_yaml) - 1, NULL, NULL);
		rt_oom_uninstall();
		if (rc) {
			RT_CHECK(app == NULL);
			RT_CHECK(rc == RELAY_ENOMEM);
			failures++;
		} else {
			RT_CHECK(app != NULL);
			RT_EQ_INT(relay_app_rule_count(app), 2);
			relay_app_free(app);
		}
	}
	RT_EQ_INT(rc, 0);
	RT_CHECK(failures > 20);
}

static void test_appset__oom(void)
{
	relay_appset *base = NULL;
	long n;
	int rc = RELAY_ENOMEM;

	make_tmp();
	write_file("a/template.yaml", oom_yaml);
	write_file("b/template.yaml", rule_yaml);
	write_file("c/template.yaml", "runtime: bad\n");
	for (n = 1; n < 100000 && rc != 0; n++) {
		relay_appset *set = NULL;

		rt_oom_arm(n, 0);
		rt_oom_install();
		rc = relay_appset_load(&set, tmp_root, NULL, NULL);
		rt_oom_uninstall();
		RT_CHECK(rc == 0 || rc == RELAY_ENOMEM);
		RT_CHECK((rc == 0) == (set != NULL));
		if (set)
			RT_EQ_INT(relay_appset_invalid_count(set), 1);
		relay_appset_free(set);
	}
	RT_EQ_INT(rc, 0);
	RT_CHECK(n > 20);
	/* and inside a reload, with the old set left intact */
	RT_EQ_INT(relay_appset_load(&base, tmp_root, NULL, NULL), 0);
	RT_ASSERT(base != NULL);
	rc = RELAY_ENOMEM;
	for (n = 1; n < 100000 && rc != 0; n++) {
		relay_appset *re = NULL;

		rt_oom_arm(n, 0);
		rt_oom_install();
		rc = relay_appset_reload(&re, base, "a", NULL, NULL);
		rt_oom_uninstall();
		RT_CHECK(rc == 0 || rc == RELAY_ENOMEM);
		RT_CHECK((rc == 0) == (re != NULL));
		relay_appset_free(re);
	}
	RT_EQ_INT(relay_ruleset_count(relay_appset_ruleset(base)), 5);
	relay_appset_free(base);
	RT_EQ_INT(rc, 0);
	rm_tmp();
}

static const rt_case cases[] = {
	RT_CASE(test_app__defaults),
	RT_CASE(test_app__all_keys),
	RT_CASE(test_app__bounds_accepted),
	RT_CASE(test_app__every_problem_reported),
	RT_CASE(test_app__bad_names),
	RT_CASE(test_app__durations),
	RT_CASE(test_app__memory_and_cpus),
	RT_CASE(test_app__handler_syntax),
	RT_CASE(test_app__pnode_typing),
	RT_CASE(test_app__plain_kind),
	RT_CASE(test_app__syntax_error_position),
	RT_CASE(test_app__deep_nesting),
	RT_CASE(test_app__load_dir),
	RT_CASE(test_appset__order_and_invalid),
	RT_CASE(test_appset__match_dispatch_order),
	RT_CASE(test_appset__missing_dir),
	RT_CASE(test_appset__empty_dir),
	RT_CASE(test_appset__reload),
	RT_CASE(test_appset__scan),
	RT_CASE(test_app__oom),
	RT_CASE(test_appset__oom),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
