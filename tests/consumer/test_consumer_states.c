/*
 * test_consumer_states.c - the engine's two state machines, walked from
 * their transition tables (consumer_msg.c: one message; consumer_inv.c:
 * one invocation; doc/architecture.md, "the life of one message").
 *
 * Every (from, to) pair of each table is compared with the legal moves
 * listed here (written from the documented life, not read back from the
 * code), so an edit of a table is a visible edit of this list too; then
 * the tables are walked: every state is reachable from the first one,
 * every state can reach an end, the ends have no way out, and an
 * out-of-range state is refused. Last, the one transition function of
 * each machine is made to take an illegal move in a child process: a
 * debug or test build stops there (assert), so a path the table does not
 * allow cannot go unnoticed in the test suites. Suite unit.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "relaytest.h"
#include "../../librelay/consumer/consumer.h"
#include "../../librelay/consumer/consumer_inv.h"
#include "../../librelay/consumer/consumer_msg.h"

#define NMSG RELAY__MSG_STATE_COUNT_
#define NCINV RELAY__CINV_STATE_COUNT_

typedef struct move {
	int from, to;
} move;

/* The life of one message: doc/architecture.md. */
static const move msg_moves[] = {
	{ RELAY__MSG_NEW, RELAY__MSG_CLAIM },
	{ RELAY__MSG_NEW, RELAY__MSG_CLAIM_RUN },
	{ RELAY__MSG_NEW, RELAY__MSG_CLEAR },
	{ RELAY__MSG_NEW, RELAY__MSG_END },
	{ RELAY__MSG_CLAIM, RELAY__MSG_RUN },
	{ RELAY__MSG_CLAIM, RELAY__MSG_DLQ },
	{ RELAY__MSG_CLAIM, RELAY__MSG_ACK },
	{ RELAY__MSG_CLAIM, RELAY__MSG_END },
	{ RELAY__MSG_CLAIM_RUN, RELAY__MSG_CLAIM_WAIT },
	{ RELAY__MSG_CLAIM_RUN, RELAY__MSG_RUN },
	{ RELAY__MSG_CLAIM_RUN, RELAY__MSG_RUN_UNCOUNTED },
	{ RELAY__MSG_CLAIM_WAIT, RELAY__MSG_RUN },
	{ RELAY__MSG_CLAIM_WAIT, RELAY__MSG_RUN_UNCOUNTED },
	{ RELAY__MSG_RUN, RELAY__MSG_DLQ },
	{ RELAY__MSG_RUN, RELAY__MSG_CLEAR },
	{ RELAY__MSG_RUN, RELAY__MSG_END },
	{ RELAY__MSG_RUN_UNCOUNTED, RELAY__MSG_CLEAR },
	{ RELAY__MSG_RUN_UNCOUNTED, RELAY__MSG_END },
	{ RELAY__MSG_DLQ, RELAY__MSG_ACK },
	{ RELAY__MSG_DLQ, RELAY__MSG_END },
	{ RELAY__MSG_ACK, RELAY__MSG_END },
	{ RELAY__MSG_CLEAR, RELAY__MSG_END },
};

/* The life of one invocation: the diagram of consumer_inv.c. */
static const move cinv_moves[] = {
	{ RELAY__CINV_TODO, RELAY__CINV_WAIT },
	{ RELAY__CINV_TODO, RELAY__CINV_CLAIM },
	{ RELAY__CINV_TODO, RELAY__CINV_PENDING },
	{ RELAY__CINV_WAIT, RELAY__CINV_CLAIM },
	{ RELAY__CINV_WAIT, RELAY__CINV_PENDING },
	{ RELAY__CINV_CLAIM, RELAY__CINV_RUN },
	{ RELAY__CINV_CLAIM, RELAY__CINV_OK },
	{ RELAY__CINV_CLAIM, RELAY__CINV_EXHAUSTED },
	{ RELAY__CINV_CLAIM, RELAY__CINV_DLQ },
	{ RELAY__CINV_CLAIM, RELAY__CINV_PENDING },
	{ RELAY__CINV_RUN, RELAY__CINV_RECORD },
	{ RELAY__CINV_RUN, RELAY__CINV_PENDING },
	{ RELAY__CINV_RECORD, RELAY__CINV_OK },
	{ RELAY__CINV_RECORD, RELAY__CINV_EXHAUSTED },
	{ RELAY__CINV_RECORD, RELAY__CINV_PENDING },
	{ RELAY__CINV_RECORD, RELAY__CINV_RECORD_WAIT },  /* reply lost */
	{ RELAY__CINV_RECORD_WAIT, RELAY__CINV_RECORD },  /* resent */
	{ RELAY__CINV_RECORD_WAIT, RELAY__CINV_PENDING }, /* given up */
	{ RELAY__CINV_EXHAUSTED, RELAY__CINV_DLQ },
};

static int listed(const move *mv, size_t n, int from, int to)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (mv[i].from == from && mv[i].to == to)
			return 1;
	return 0;
}

static int msg_ok(int a, int b)
{
	return relay__msg_state_allowed((relay__msg_state)a,
					(relay__msg_state)b);
}

static int cinv_ok(int a, int b)
{
	return relay__cinv_state_allowed((relay__cinv_state)a,
					 (relay__cinv_state)b);
}

/* Closure of @allowed from @start into reach[] (n <= 32). */
static void walk(int (*allowed)(int, int), int n, int start, int *reach)
{
	int changed = 1, a, b;

	memset(reach, 0, sizeof(int) * (size_t)n);
	reach[start] = 1;
	while (changed) {
		changed = 0;
		for (a = 0; a < n; a++) {
			if (!reach[a])
				continue;
			for (b = 0; b < n; b++)
				if (!reach[b] && allowed(a, b)) {
					reach[b] = 1;
					changed = 1;
				}
		}
	}
}

/* Compare a table with its list, then walk it. */
static void check_table(const char *what, int (*allowed)(int, int),
			const char *(*name)(int), int n, const move *mv,
			size_t nmv, int first, const int *final)
{
	int reach[32], a, b, legal = 0;

	RT_ASSERT(n <= 32);
	for (a = 0; a < n; a++) {
		RT_CHECK(strcmp(name(a), "?") != 0);
		for (b = 0; b < n; b++) {
			int want = listed(mv, nmv, a, b);

			legal += want;
			if (allowed(a, b) != want)
				RT_FAILF("%s %s -> %s: the table says %s", what,
					 name(a), name(b),
					 want ? "illegal" : "legal");
		}
		/* Out of range, either side: refused. */
		RT_CHECK(!allowed(a, n) && !allowed(n, a) && !allowed(a, -1));
	}
	RT_EQ_INT(legal, (long long)nmv);
	/* Every state is reachable from the first one. */
	walk(allowed, n, first, reach);
	for (a = 0; a < n; a++)
		if (!reach[a])
			RT_FAILF("%s %s is unreachable from %s", what, name(a),
				 name(first));
	/* Final states have no way out; every other state reaches one. */
	for (a = 0; a < n; a++) {
		int ends = 0;

		walk(allowed, n, a, reach);
		for (b = 0; b < n; b++) {
			if (final[a] && allowed(a, b))
				RT_FAILF("%s %s is final but -> %s is legal",
					 what, name(a), name(b));
			ends += reach[b] && final[b];
		}
		if (!ends)
			RT_FAILF("%s %s never ends", what, name(a));
	}
}

static const char *msg_name(int s)
{
	return relay__msg_state_name((relay__msg_state)s);
}

static const char *cinv_name(int s)
{
	return relay__cinv_state_name((relay__cinv_state)s);
}

static void test_states__message_table(void)
{
	int final[NMSG] = { 0 };

	final[RELAY__MSG_END] = 1;
	check_table("message", msg_ok, msg_name, NMSG, msg_moves,
		    RT_NCASES(msg_moves), RELAY__MSG_NEW, final);
	/* A few moves a careless edit could make legal. */
	RT_CHECK(!msg_ok(RELAY__MSG_CLAIM_RUN, RELAY__MSG_END));
	RT_CHECK(!msg_ok(RELAY__MSG_RUN_UNCOUNTED, RELAY__MSG_DLQ));
	RT_CHECK(!msg_ok(RELAY__MSG_RUN_UNCOUNTED, RELAY__MSG_ACK));
	RT_CHECK(!msg_ok(RELAY__MSG_CLAIM_WAIT, RELAY__MSG_END));
	RT_CHECK(!msg_ok(RELAY__MSG_ACK, RELAY__MSG_RUN));
	RT_EQ_STR(msg_name(RELAY__MSG_CLAIM_RUN), "claim_run");
	RT_EQ_STR(msg_name(NMSG), "?");
}

static void test_states__invocation_table(void)
{
	int final[NCINV] = { 0 };

	final[RELAY__CINV_OK] = 1;
	final[RELAY__CINV_DLQ] = 1;
	final[RELAY__CINV_PENDING] = 1;
	check_table("invocation", cinv_ok, cinv_name, NCINV, cinv_moves,
		    RT_NCASES(cinv_moves), RELAY__CINV_TODO, final);
	/* Never run without a claim; never terminal from a slot wait. */
	RT_CHECK(!cinv_ok(RELAY__CINV_TODO, RELAY__CINV_RUN));
	RT_CHECK(!cinv_ok(RELAY__CINV_WAIT, RELAY__CINV_RUN));
	RT_CHECK(!cinv_ok(RELAY__CINV_WAIT, RELAY__CINV_OK));
	RT_CHECK(!cinv_ok(RELAY__CINV_RUN, RELAY__CINV_OK));
	RT_CHECK(!cinv_ok(RELAY__CINV_PENDING, RELAY__CINV_TODO));
	/* a resend is recorded through record, never straight to ok */
	RT_CHECK(!cinv_ok(RELAY__CINV_RECORD_WAIT, RELAY__CINV_OK));
	RT_EQ_STR(cinv_name(RELAY__CINV_RECORD_WAIT), "record_wait");
	RT_EQ_STR(cinv_name(RELAY__CINV_EXHAUSTED), "exhausted");
	RT_EQ_STR(cinv_name(NCINV), "?");
}

#ifndef NDEBUG
/* Run @fn in a child with stderr closed: 1 when it died of SIGABRT. */
static int aborts(void (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	RT_ASSERT(pid >= 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0)
			dup2(fd, 2);
		fn();
		_exit(0);
	}
	RT_ASSERT(waitpid(pid, &st, 0) == pid);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

static void illegal_msg(void)
{
	relay__msg m;

	memset(&m, 0, sizeof(m));
	relay__msg_to(&m, RELAY__MSG_RUN);  /* new -> run: no claim sent */
}

static void illegal_cinv(void)
{
	relay__cinv inv;

	memset(&inv, 0, sizeof(inv));
	relay__cinv_to(&inv, RELAY__CINV_RUN);  /* todo -> run: unclaimed */
}
#endif

static void test_states__transition_function(void)
{
	relay__msg m;
	relay__cinv inv;

	/* Legal moves go through and are the only writers. */
	memset(&m, 0, sizeof(m));
	relay__msg_to(&m, RELAY__MSG_CLAIM);
	relay__msg_to(&m, RELAY__MSG_RUN);
	relay__msg_to(&m, RELAY__MSG_DLQ);
	relay__msg_to(&m, RELAY__MSG_ACK);
	relay__msg_to(&m, RELAY__MSG_END);
	RT_EQ_INT(m.state, RELAY__MSG_END);
	memset(&inv, 0, sizeof(inv));
	relay__cinv_to(&inv, RELAY__CINV_WAIT);
	relay__cinv_to(&inv, RELAY__CINV_CLAIM);
	relay__cinv_to(&inv, RELAY__CINV_RUN);
	relay__cinv_to(&inv, RELAY__CINV_RECORD);
	relay__cinv_to(&inv, RELAY__CINV_EXHAUSTED);
	relay__cinv_to(&inv, RELAY__CINV_DLQ);
	RT_EQ_INT(inv.state, RELAY__CINV_DLQ);
#ifdef NDEBUG
	RT_SKIP("a release build does not assert transitions");
#else
	RT_CHECK(aborts(illegal_msg));
	RT_CHECK(aborts(illegal_cinv));
#endif
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_states__message_table),
		RT_CASE(test_states__invocation_table),
		RT_CASE(test_states__transition_function),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
