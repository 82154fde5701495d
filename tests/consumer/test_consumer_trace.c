/*
 * test_consumer_trace.c - the engine's tracing (issue #25): the
 * producer's context read from stream entries, one span per handler
 * attempt through options.span, link and child modes, the link of a
 * retry to the attempt before, the DLQ `trace` lineage, hostile values
 * ignored and counted, manual runs as roots. Memory backend, fixed
 * clock, the scripted executor of harness.h (suite unit).
 */
#include <jansson.h>

#include "lib/engine_fixture.h"

#define APP_LINK \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    retries: 1\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

#define APP_CHILD \
	"runtime: exec\n" \
	"command: [/bin/true]\n" \
	"tracing: child\n" \
	"events:\n" \
	"  - handler: h\n" \
	"    retries: 1\n" \
	"    pattern:\n" \
	"      kind: [x]\n"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define TP_TRACE "4bf92f3577b34da6a3ce929d0e0e4736"
#define TP_SPAN "00f067aa0ba902b7"
#define MIN_IDLE 60000
#define BACKOFF1 60000

typedef struct spans {
	relay_span *s[16];
	int n;
} spans;

static void on_span(const relay_span *s, void *payload)
{
	spans *sp = payload;

	RT_ASSERT(sp->n < 16);
	RT_ASSERT(relay_span_dup(&sp->s[sp->n], s, NULL) == 0);
	sp->n++;
}

static void spans_free(spans *sp)
{
	int i;

	for (i = 0; i < sp->n; i++)
		relay_span_free(sp->s[i]);
	sp->n = 0;
}

static const char *hex(const uint8_t *id, size_t n)
{
	static char buf[4][33];
	static int k;

	k = (k + 1) % 4;
	return relay_trace_hex(id, n, buf[k]);
}

static const relay_trace_attr *attr(const relay_span *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->nattrs; i++)
		if (strcmp(s->attrs[i].key, key) == 0)
			return &s->attrs[i];
	return NULL;
}

static const char *attr_str(const relay_span *s, const char *key)
{
	const relay_trace_attr *a = attr(s, key);

	return a && a->type == RELAY_TRACE_ATTR_STRING ? a->s : "(none)";
}

static int64_t attr_int(const relay_span *s, const char *key)
{
	const relay_trace_attr *a = attr(s, key);

	return a && a->type == RELAY_TRACE_ATTR_INT ? a->i : -999;
}

/* The span's own traceparent, as the handler must have seen it. */
static const char *span_tp(const relay_span *s)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "00-%s-%s-%02x",
		 hex(s->trace_id, RELAY_TRACE_ID_SIZE),
		 hex(s->span_id, RELAY_SPAN_ID_SIZE), s->flags);
	return buf;
}

static void start_traced(h_ctx *h, spans *sp, const char *yaml)
{
	h_init(h, NULL);
	h_write_app(h, "a", yaml);
	if (sp) {
		h->o.span = on_span;
		h->o.span_payload = sp;
	}
	h_start(h);
}

/* Link mode (the default): the attempt is a root of its own trace that
 * links to the producer; the handler gets the attempt's own context and
 * the producer's baggage; the span has the messaging attributes. */
static void test_trace__link_mode_success(void)
{
	h_ctx h;
	spans sp = { { 0 }, 0 };
	h_script *s;
	relay_span *x;
	relay_redis_reply *r;
	char id[64];

	start_traced(&h, &sp, APP_LINK);
	s = h_script_get(&h.exec, "a", "h");
	r = H_CMD(&h, "XADD", "events", "*", "event", "{\"kind\":\"x\"}",
		  "traceparent", TP, "tracestate", "vendor=abc",
		  "baggage", "user=42");
	snprintf(id, sizeof(id), "%s", r->str);
	relay_redis_reply_free(r);
	H_UNTIL(&h, sp.n == 1 && h_metrics(&h).acks == 1, 5000);
	RT_EQ_INT(sp.n, 1);
	RT_EQ_INT(s->runs, 1);
	x = sp.s[0];
	RT_EQ_STR(x->name, "a/h");
	RT_EQ_INT(x->kind, RELAY_SPAN_KIND_CONSUMER);
	RT_EQ_STR(hex(x->parent_span_id, 8), "0000000000000000");
	RT_CHECK(strcmp(hex(x->trace_id, 16), TP_TRACE) != 0);
	RT_EQ_INT((int)x->nlinks, 1);
	RT_EQ_STR(hex(x->links[0].trace_id, 16), TP_TRACE);
	RT_EQ_STR(hex(x->links[0].span_id, 8), TP_SPAN);
	RT_EQ_STR(x->links[0].attrs[0].s, "producer");
	RT_EQ_STR(x->links[0].tracestate, "vendor=abc");
	RT_EQ_STR(attr_str(x, "messaging.destination.name"), "events");
	RT_EQ_STR(attr_str(x, "messaging.consumer.group.name"), "relay");
	RT_EQ_STR(attr_str(x, "messaging.message.id"), id);
	RT_EQ_STR(attr_str(x, "messaging.system"), "redis");
	RT_EQ_STR(attr_str(x, "messaging.operation.type"), "process");
	RT_EQ_STR(attr_str(x, "relay.outcome"), "succeeded");
	RT_EQ_INT((int)attr_int(x, "relay.attempt"), 1);
	RT_EQ_INT((int)attr_int(x, "process.exit.code"), 0);
	RT_EQ_INT(x->status, RELAY_SPAN_STATUS_UNSET);
	RT_CHECK(x->end_unix_ns >= x->start_unix_ns);
	RT_CHECK(x->start_unix_ns > 0);
	/* The handler joins the attempt's span. */
	RT_EQ_STR(s->last_tp, span_tp(x));
	RT_EQ_STR(s->last_ts, "");             /* a new trace: no state */
	RT_EQ_STR(s->last_bg, "user=42");
	RT_EQ_INT((int)h_metrics(&h).trace_context_invalid, 0);
	spans_free(&sp);
	h_cleanup(&h);
}

/* Child mode: the attempt is a child of the producer's span, in its
 * trace, with its tracestate. */
static void test_trace__child_mode(void)
{
	h_ctx h;
	spans sp = { { 0 }, 0 };
	h_script *s;
	relay_span *x;

	start_traced(&h, &sp, APP_CHILD);
	s = h_script_get(&h.exec, "a", "h");
	relay_redis_reply_free(H_CMD(&h, "XADD", "events", "*", "event",
				     "{\"kind\":\"x\"}", "traceparent", TP,
				     "tracestate", "vendor=abc"));
	H_UNTIL(&h, sp.n == 1 && h_metrics(&h).acks == 1, 5000);
	RT_EQ_INT(sp.n, 1);
	x = sp.s[0];
	RT_EQ_STR(hex(x->trace_id, 16), TP_TRACE);
	RT_EQ_STR(hex(x->parent_span_id, 8), TP_SPAN);
	RT_CHECK(strcmp(hex(x->span_id, 8), TP_SPAN) != 0);
	RT_EQ_INT((int)x->nlinks, 0);
	RT_EQ_STR(x->tracestate, "vendor=abc");
	RT_EQ_STR(s->last_tp, span_tp(x));
	RT_EQ_STR(s->last_ts, "vendor=abc");
	RT_EQ_STR(attr_str(x, "relay.tracing"), "child");
	spans_free(&sp);
	h_cleanup(&h);
}

/* A retry links to the attempt before; the exhausted invocation's DLQ
 * entry carries the producer's traceparent verbatim and the last
 * attempt's context. */
static void test_trace__retry_links_and_dlq_lineage(void)
{
	h_ctx h;
	spans sp = { { 0 }, 0 };
	h_script *s;
	relay_dlq_record *d;
	size_t n;
	json_t *j;

	start_traced(&h, &sp, APP_LINK);
	s = h_script_get(&h.exec, "a", "h");
	s->fail = 1;
	relay_redis_reply_free(H_CMD(&h, "XADD", "events", "*", "event",
				     "{\"kind\":\"x\"}", "traceparent", TP,
				     "baggage", "k=v"));
	H_UNTIL(&h, sp.n == 1 && h_metrics(&h).buffered_events == 0, 5000);
	RT_EQ_INT(sp.n, 1);
	RT_EQ_INT(sp.s[0]->status, RELAY_SPAN_STATUS_ERROR);
	RT_EQ_STR(attr_str(sp.s[0], "relay.outcome"), "failed");
	RT_EQ_STR(attr_str(sp.s[0], "error.type"), "exit_code");
	RT_EQ_INT((int)attr_int(sp.s[0], "process.exit.code"), 3);
	RT_EQ_STR(sp.s[0]->status_message, "exit status 3");
	h_retry_round(&h, MIN_IDLE + BACKOFF1 + 1);
	H_UNTIL(&h, sp.n == 2 && h_dlq_count(&h) == 1, 5000);
	RT_EQ_INT(sp.n, 2);
	RT_EQ_INT((int)attr_int(sp.s[1], "relay.attempt"), 2);
	RT_CHECK(attr(sp.s[1], "relay.exhausted") != NULL);
	RT_EQ_INT((int)sp.s[1]->nlinks, 2);
	RT_EQ_STR(sp.s[1]->links[0].attrs[0].s, "producer");
	RT_EQ_STR(sp.s[1]->links[1].attrs[0].s, "previous_attempt");
	RT_EQ_STR(hex(sp.s[1]->links[1].trace_id, 16),
		  hex(sp.s[0]->trace_id, 16));
	RT_EQ_STR(hex(sp.s[1]->links[1].span_id, 8),
		  hex(sp.s[0]->span_id, 8));
	d = h_dlq(&h, &n);
	RT_EQ_INT((int)n, 1);
	RT_ASSERT(d[0].e.trace != NULL);
	j = json_loads(d[0].e.trace, 0, NULL);
	RT_ASSERT(j != NULL);
	RT_EQ_STR(json_string_value(json_object_get(j, "traceparent")), TP);
	RT_EQ_STR(json_string_value(json_object_get(j, "baggage")), "k=v");
	RT_EQ_STR(json_string_value(json_object_get(j, "attempt")),
		  span_tp(sp.s[1]));
	RT_CHECK(json_object_get(j, "link") == NULL);
	json_decref(j);
	h_dlq_free(d, n);
	spans_free(&sp);
	h_cleanup(&h);
}

/* A timeout is an ERROR span with error.type timeout. */
static void test_trace__timeout(void)
{
	h_ctx h;
	spans sp = { { 0 }, 0 };
	h_script *s;

	start_traced(&h, &sp, APP_LINK);
	s = h_script_get(&h.exec, "a", "h");
	s->fail = 2;
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, sp.n == 1, 5000);
	RT_EQ_INT(sp.n, 1);
	RT_EQ_STR(attr_str(sp.s[0], "relay.outcome"), "timed_out");
	RT_EQ_STR(attr_str(sp.s[0], "error.type"), "timeout");
	RT_EQ_INT(sp.s[0]->status, RELAY_SPAN_STATUS_ERROR);
	RT_EQ_INT((int)sp.s[0]->nlinks, 0);   /* no producer: a root */
	spans_free(&sp);
	h_cleanup(&h);
}

/* Hostile values are ignored and counted; the message runs and is
 * acknowledged as if they were absent. relay_trace_link adds a link. */
static void test_trace__hostile_values_counted(void)
{
	h_ctx h;
	spans sp = { { 0 }, 0 };
	h_script *s;
	char *big = malloc(20000);
	const char *link = "00-0af7651916cd43dd8448eb211c80319c-"
			   "b7ad6b7169203331-01";

	RT_ASSERT(big != NULL);
	memset(big, 'a', 19999);
	big[0] = 'k';
	big[1] = '=';
	big[19999] = '\0';
	start_traced(&h, &sp, APP_LINK);
	s = h_script_get(&h.exec, "a", "h");
	/* uppercase hex, orphaned tracestate with a control byte, huge
	 * baggage */
	relay_redis_reply_free(H_CMD(&h, "XADD", "events", "*", "event",
		"{\"kind\":\"x\"}", "traceparent",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
		"tracestate", "a=\x01", "baggage", big,
		"relay_trace_link", link));
	H_UNTIL(&h, sp.n == 1 && h_metrics(&h).acks == 1, 5000);
	RT_EQ_INT(s->runs, 1);
	RT_EQ_INT((int)h_metrics(&h).acks, 1);
	RT_EQ_INT((int)h_pel(&h), 0);
	RT_EQ_INT((int)h_dlq_count(&h), 0);
	RT_EQ_INT((int)h_metrics(&h).trace_context_invalid, 3);
	RT_EQ_STR(s->last_bg, "");
	RT_EQ_INT((int)sp.s[0]->nlinks, 1);
	RT_EQ_STR(sp.s[0]->links[0].attrs[0].s, "redrive");
	RT_EQ_STR(hex(sp.s[0]->links[0].span_id, 8), "b7ad6b7169203331");
	/* A baggage of too many members, a traceparent with a bad
	 * version: counted too. */
	relay_redis_reply_free(H_CMD(&h, "XADD", "events", "*", "event",
		"{\"kind\":\"x\"}", "traceparent",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"baggage", "a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,"
		"l=12,m=13,n=14,o=15,p=16,q=17,r=18,s=19,t=20,u=21,v=22,w=23,"
		"x=24,y=25,z=26,aa=1,ab=2,ac=3,ad=4,ae=5,af=6,ag=7,ah=8,ai=9,"
		"aj=10,ak=11,al=12,am=13,an=14,ao=15,ap=16,aq=17,ar=18,as=19,"
		"at=20,au=21,av=22,aw=23,ax=24,ay=25,az=26,ba=1,bb=2,bc=3,"
		"bd=4,be=5,bf=6,bg=7,bh=8,bi=9,bj=10,bk=11,bl=12,bm=13"));
	H_UNTIL(&h, sp.n == 2 && h_metrics(&h).acks == 2, 5000);
	RT_EQ_INT(s->runs, 2);
	RT_EQ_INT((int)h_metrics(&h).trace_context_invalid, 5);
	free(big);
	spans_free(&sp);
	h_cleanup(&h);
}

/* Tracing off (no callback): no TRACEPARENT without a producer context;
 * with one, the handler still gets its attempt's context. */
static void test_trace__off(void)
{
	h_ctx h;
	h_script *s;

	start_traced(&h, NULL, APP_CHILD);
	s = h_script_get(&h.exec, "a", "h");
	h_xadd(&h, "{\"kind\":\"x\"}");
	H_UNTIL(&h, s->runs == 1 && h_metrics(&h).acks == 1, 5000);
	RT_EQ_STR(s->last_tp, "");
	relay_redis_reply_free(H_CMD(&h, "XADD", "events", "*", "event",
				     "{\"kind\":\"x\"}", "traceparent",
				     TP));
	H_UNTIL(&h, s->runs == 2 && h_metrics(&h).acks == 2, 5000);
	RT_EQ_INT((int)strlen(s->last_tp), 55);
	RT_CHECK(strncmp(s->last_tp, "00-" TP_TRACE "-", 36) == 0);
	RT_CHECK(strncmp(s->last_tp + 36, TP_SPAN, 16) != 0);
	h_cleanup(&h);
}

static int run_done;

static void run_cb(int status, const relay_consumer_result *r, size_t n,
		   void *payload)
{
	(void)r;
	(void)n;
	(void)payload;
	run_done = status == 0 ? 1 : -1;
}

/* app invoke: a new root; dlq replay: a root linking to the failed
 * attempt. */
static void test_trace__manual_runs(void)
{
	h_ctx h;
	spans sp = { { 0 }, 0 };
	const char *ev = "{\"kind\":\"x\"}";

	start_traced(&h, &sp, APP_LINK);
	run_done = 0;
	RT_EQ_INT(relay_consumer_invoke(h.c, "a", ev, strlen(ev), run_cb,
					NULL), 0);
	H_UNTIL(&h, run_done != 0 && sp.n == 1, 5000);
	RT_EQ_INT(sp.n, 1);
	RT_EQ_STR(attr_str(sp.s[0], "relay.manual"), "invoke");
	RT_EQ_STR(hex(sp.s[0]->parent_span_id, 8), "0000000000000000");
	RT_EQ_INT((int)sp.s[0]->nlinks, 0);
	run_done = 0;
	RT_EQ_INT(relay_consumer_replay_linked(h.c, "a", "h", ev, strlen(ev),
					       TP, NULL, NULL, run_cb, NULL),
		  0);
	H_UNTIL(&h, run_done != 0 && sp.n == 2, 5000);
	RT_EQ_INT(sp.n, 2);
	RT_EQ_STR(attr_str(sp.s[1], "relay.manual"), "dlq_replay");
	RT_EQ_INT((int)sp.s[1]->nlinks, 1);
	RT_EQ_STR(sp.s[1]->links[0].attrs[0].s, "dlq_attempt");
	RT_EQ_STR(hex(sp.s[1]->links[0].span_id, 8), TP_SPAN);
	RT_CHECK(strcmp(hex(sp.s[1]->trace_id, 16), TP_TRACE) != 0);
	spans_free(&sp);
	h_cleanup(&h);
}

/* always_off: no span, but the handler still gets a context (unsampled)
 * when the entry carried one. */
static void test_trace__sampler_off(void)
{
	h_ctx h;
	spans sp = { { 0 }, 0 };
	relay_trace_sampler smp;
	h_script *s;

	RT_EQ_INT(relay_trace_sampler_parse(&smp, "always_off", NULL), 0);
	h_init(&h, NULL);
	h_write_app(&h, "a", APP_LINK);
	h.o.span = on_span;
	h.o.span_payload = &sp;
	h.o.sampler = &smp;
	h_start(&h);
	s = h_script_get(&h.exec, "a", "h");
	relay_redis_reply_free(H_CMD(&h, "XADD", "events", "*", "event",
				     "{\"kind\":\"x\"}", "traceparent", TP));
	H_UNTIL(&h, s->runs == 1 && h_metrics(&h).acks == 1, 5000);
	RT_EQ_INT(sp.n, 0);
	RT_EQ_INT((int)strlen(s->last_tp), 55);
	RT_EQ_STR(s->last_tp + 53, "00");
	h_cleanup(&h);
}

int main(int argc, char **argv)
{
	static const rt_case cases[] = {
		RT_CASE(test_trace__link_mode_success),
		RT_CASE(test_trace__child_mode),
		RT_CASE(test_trace__retry_links_and_dlq_lineage),
		RT_CASE(test_trace__timeout),
		RT_CASE(test_trace__hostile_values_counted),
		RT_CASE(test_trace__off),
		RT_CASE(test_trace__manual_runs),
		RT_CASE(test_trace__sampler_off),
	};

	return rt_main(argc, argv, cases, RT_NCASES(cases));
}
