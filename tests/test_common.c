/*
 * test_common.c - error detail, buffers, clock, log-level parsing.
 */
#include <string.h>

#include "common.h"
#include "relay_config.h"
#include "relay/clock.h"
#include "relay/version.h"
#include "relaytest.h"

static void test_common__error_format(void)
{
	relay_error err;
	char buf[512];

	relay__error_set(&err, RELAY_EPARSE, "apps/a/template.yaml", 3, 7,
			 "status: bad %s", "thing");
	RT_EQ_INT(err.code, RELAY_EPARSE);
	RT_EQ_STR(relay_error_format(&err, buf, sizeof(buf)),
		  "apps/a/template.yaml:3:7: status: bad thing");
	relay__error_set(&err, RELAY_EPARSE, NULL, 0, 0, "plain");
	RT_EQ_STR(relay_error_format(&err, buf, sizeof(buf)), "plain");
	RT_EQ_INT(relay__error_set(NULL, RELAY_EINVAL, NULL, 0, 0, "x"),
		  RELAY_EINVAL);
}

static void test_common__buf(void)
{
	relay__buf b = { 0 };
	int i;

	for (i = 0; i < 1000; i++)
		RT_EQ_INT(relay__buf_printf(&b, "%d,", i % 10), 0);
	RT_EQ_INT(b.len, 2000);
	RT_CHECK(strncmp(b.data, "0,1,2,", 6) == 0);
	relay__buf_free(&b);
	RT_CHECK(b.data == NULL);
}

static void test_common__clock_fixed(void)
{
	relay_clock_fixed fc;
	relay_clock *c = relay_clock_fixed_init(&fc, 1767268800000);

	RT_EQ_INT(relay_clock_wall_ms(c), 1767268800000);
	fc.wall += 5;
	RT_EQ_INT(relay_clock_wall_ms(c), 1767268800005);
	RT_CHECK(relay_clock_wall_ms(NULL) > 1700000000000);
	RT_CHECK(relay_clock_mono_us(NULL) > 0);
}

static void test_common__log_level(void)
{
	relay_log_level l;

	RT_EQ_INT(relay_log_level_parse("debug", &l), 0);
	RT_EQ_INT(l, RELAY_LOG_DEBUG);
	RT_EQ_INT(relay_log_level_parse("WARNING", &l), 0);
	RT_EQ_INT(l, RELAY_LOG_WARN);
	RT_EQ_INT(relay_log_level_parse("loud", &l), RELAY_EINVAL);
	RT_EQ_STR(relay_strerror(RELAY_ENOTFOUND), "not found");
	RT_EQ_STR(relay_version(), RELAY_VERSION);
}

static const rt_case cases[] = {
	RT_CASE(test_common__error_format),
	RT_CASE(test_common__buf),
	RT_CASE(test_common__clock_fixed),
	RT_CASE(test_common__log_level),
};

int main(int argc, char **argv)
{
	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
