/*
 * test_inv_pure.c - the inv part on its own: linked with common and
 * nothing else (tests/redis/meson.build), so this program does not build
 * if the pure decisions or the DLQ entry format ever call into a Redis
 * backend (librelay/meson.build, doc/architecture.md: inv is below
 * redis, whose memory backend runs these decisions). The cases check
 * what the memory backend relies on: a decision's outcome and next state,
 * the script result names both ways, the DLQ entry check with a raw
 * event. Suite unit.
 */
#include <string.h>

#include "relaytest.h"
#include "inv.h"

#define TOK_A "0123456789abcdef0123456789abcdef"
#define TOK_B "fedcba9876543210fedcba9876543210"

static void test_inv_pure__decisions(void)
{
	relay_inv_state cur, next;
	relay_inv_outcome o;
	relay_dlq_persist_result res;
	char buf[96];

	/* Absent: claim attempt 1 with the given token and deadline. */
	RT_EQ_INT(relay_inv_state_parse(&cur, NULL, 0), 0);
	RT_EQ_INT(relay__inv_decide_try_start(&cur, 1000, 5000, TOK_A, &o,
					      &next), 1);
	RT_EQ_INT(o.result, RELAY_INV_R_CLAIMED);
	RT_EQ_INT(o.attempt, 1);
	RT_CHECK(relay_inv_state_format(&next, buf, sizeof(buf)) > 0);
	RT_EQ_STR(buf, "running:6000:1:" TOK_A);
	/* A failure of another claim is stale and writes nothing. */
	cur = next;
	RT_EQ_INT(relay__inv_decide_failure(&cur, 1, TOK_B, 2000, 60000, &o,
					    &next), 0);
	RT_EQ_INT(o.result, RELAY_INV_R_STALE);
	/* Exhausted, then its DLQ entry once. */
	RT_EQ_INT(relay__inv_decide_exhausted(&cur, 1, TOK_A, &o, &next), 1);
	cur = next;
	RT_EQ_INT(relay__inv_decide_dlq(&cur, 1, TOK_A, &res, &next), 1);
	RT_EQ_INT(res, RELAY_DLQ_WRITTEN);
	cur = next;
	RT_EQ_INT(relay__inv_decide_dlq(&cur, 1, TOK_A, &res, &next), 0);
	RT_EQ_INT(res, RELAY_DLQ_ALREADY);
}

static void test_inv_pure__result_names(void)
{
	relay_inv_result r, back;

	for (r = RELAY_INV_R_CLAIMED; r <= RELAY_INV_R_ABSENT; r++) {
		RT_EQ_INT(relay__inv_result_parse(relay__inv_result_wire(r),
						  &back), 0);
		RT_EQ_INT(back, r);
	}
	RT_EQ_INT(relay__inv_result_parse("exhausted_dlq", &back),
		  RELAY_EPARSE);
	RT_EQ_STR(relay__inv_result_wire((relay_inv_result)99), "?");
}

static void test_inv_pure__dlq_entry(void)
{
	static const char raw[] = "a\0b";
	relay_dlq_entry e;

	memset(&e, 0, sizeof(e));
	e.original_stream = "events";
	e.original_id = "1-0";
	e.group = "g";
	e.consumer = "c";
	e.event = raw;
	e.reason = "'event' field is not a string";
	e.app = "-";
	e.handler = "-";
	e.deliveries = 1;
	e.timestamp = "2026-01-01T00:00:00.000Z";
	RT_EQ_INT(relay__dlq_entry_check(&e, sizeof(raw) - 1, NULL), 0);
	e.handler_attempts = 1;  /* a placeholder has 0 attempts */
	RT_EQ_INT(relay__dlq_entry_check(&e, sizeof(raw) - 1, NULL),
		  RELAY_EINVAL);
	RT_EQ_STR(relay__dlq_field_names[RELAY__DLQ_F_EVENT], "event");
	RT_EQ_STR(relay__dlq_field_names[RELAY__DLQ_NFIELDS - 1], "trace");
	RT_EQ_STR(relay__dlq_field_names[RELAY__DLQ_NFIELDS - 2],
		  "stderr_tail");
	e.handler_attempts = 0;
	e.stderr_tail = "Traceback";  /* no handler ran: no tail */
	RT_EQ_INT(relay__dlq_entry_check(&e, sizeof(raw) - 1, NULL),
		  RELAY_EINVAL);
	e.app = e.handler = "a";
	e.handler_attempts = 1;
	RT_EQ_INT(relay__dlq_entry_check(&e, sizeof(raw) - 1, NULL), 0);
	e.stderr_tail = "";
	RT_EQ_INT(relay__dlq_entry_check(&e, sizeof(raw) - 1, NULL),
		  RELAY_EINVAL);
}

/* Feed @s as one complete line. */
static void tail_line(relay__tail *t, const char *s)
{
	RT_EQ_INT(relay__tail_add(t, s, strlen(s), 0), 0);
}

static void test_inv_pure__stderr_tail(void)
{
	relay__tail t;
	char *s, big[3000];
	size_t i;

	memset(&t, 0, sizeof(t));
	RT_ASSERT(relay__tail_text(&t) == NULL);
	tail_line(&t, "");
	RT_ASSERT(relay__tail_text(&t) == NULL);  /* only line ends */
	relay__tail_reset(&t);
	/* Lines joined by \n, a partial line continued, controls escaped,
	 * tabs kept, valid UTF-8 kept, a stray byte escaped. */
	tail_line(&t, "Traceback (most recent call last):");
	RT_EQ_INT(relay__tail_add(&t, "  x = 1\t", 8, 1), 0);
	tail_line(&t, "/ 0 \x1b[31m\r");
	tail_line(&t, "ZeroDivisionError: caf\xc3\xa9 \xff");
	s = relay__tail_text(&t);
	RT_EQ_STR(s, "Traceback (most recent call last):\n  x = 1\t/ 0 "
		  "\\x1b[31m\\x0d\nZeroDivisionError: caf\xc3\xa9 \\xff");
	relay_free(s);
	relay__tail_reset(&t);
	RT_ASSERT(t.buf == NULL && t.len == 0);

	/* 1 MB of output: the stored text is the end, within the bound,
	 * starting at a line. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (i = 0; i < 350; i++)
		tail_line(&t, big);
	tail_line(&t, "last line");
	s = relay__tail_text(&t);
	RT_ASSERT(s && strlen(s) <= RELAY_DLQ_STDERR_TAIL_MAX);
	RT_ASSERT(strlen(s) > 2000);
	RT_EQ_STR(s + strlen(s) - 10, "\nlast line");
	RT_ASSERT(s[0] == 'a');
	relay_free(s);
	relay__tail_reset(&t);

	/* Escaping grows the text past the bound: still bounded, and cut
	 * at a whole escape. */
	memset(big, 0x01, sizeof(big) - 1);
	tail_line(&t, big);
	s = relay__tail_text(&t);
	RT_ASSERT(s && strlen(s) <= RELAY_DLQ_STDERR_TAIL_MAX);
	RT_EQ_INT((int)(strlen(s) % 4), 0);
	RT_ASSERT(strncmp(s, "\\x01", 4) == 0);
	relay_free(s);
	relay__tail_reset(&t);

	/* One line longer than the window keeps its end. */
	memset(big, 'b', sizeof(big) - 1);
	RT_EQ_INT(relay__tail_add(&t, big, sizeof(big) - 1, 1), 0);
	RT_EQ_INT(relay__tail_add(&t, big, sizeof(big) - 1, 1), 0);
	RT_EQ_INT(relay__tail_add(&t, "END", 3, 0), 0);
	s = relay__tail_text(&t);
	RT_EQ_INT((int)strlen(s), RELAY_DLQ_STDERR_TAIL_MAX);
	RT_EQ_STR(s + strlen(s) - 4, "bEND");
	relay_free(s);
	relay__tail_reset(&t);
}

/* relay_dlq_stderr_tail(): the engine's tail for a text given whole
 * (relayctl app run --attempts shows the entry before one is written). */
static void test_inv_pure__stderr_tail_public(void)
{
	char big[6000], *s;

	RT_ASSERT(relay_dlq_stderr_tail("", 0) == NULL);
	RT_ASSERT(relay_dlq_stderr_tail("\n\n", 2) == NULL);
	RT_ASSERT(relay_dlq_stderr_tail(NULL, 0) == NULL);
	s = relay_dlq_stderr_tail("Traceback:\n  \x1b[1mboom\n\n", 22);
	RT_EQ_STR(s, "Traceback:\n  \\x1b[1mboom");
	relay_free(s);
	/* more than the bound: its end, from a line start */
	memset(big, 'a', sizeof(big));
	big[100] = '\n';
	big[5000] = '\n';
	memcpy(big + sizeof(big) - 4, "\nEND", 4);
	s = relay_dlq_stderr_tail(big, sizeof(big));
	RT_ASSERT(s && strlen(s) <= RELAY_DLQ_STDERR_TAIL_MAX);
	RT_EQ_INT((int)strlen(s), (int)(sizeof(big) - 5001));
	RT_EQ_STR(s + strlen(s) - 4, "\nEND");
	relay_free(s);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_inv_pure__decisions),
		RT_CASE(test_inv_pure__result_names),
		RT_CASE(test_inv_pure__dlq_entry),
		RT_CASE(test_inv_pure__stderr_tail),
		RT_CASE(test_inv_pure__stderr_tail_public),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
