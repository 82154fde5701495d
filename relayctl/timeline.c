/*
 * timeline.c - parse and print an invocation's attempt timeline (see
 * timeline.h). The stored entries are written by relayd; they are read
 * here as untrusted text all the same: every value shown is cleaned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmt.h"
#include "timeline.h"

/* A decimal of @s (up to a space or the end): 0 and *@v, or -1. */
static int num(const char **s, long long *v)
{
	char *end;

	if (**s < '0' || **s > '9')
		return -1;
	*v = strtoll(*s, &end, 10);
	if (*end != ' ' && *end != '\0')
		return -1;
	*s = end;
	return 0;
}

/* The next word of @s (after one space) into @w; 0 or -1. */
static int word(const char **s, char *w, size_t size)
{
	size_t n;

	if (**s != ' ')
		return -1;
	(*s)++;
	n = strcspn(*s, " ");
	if (n == 0 || n >= size)
		return -1;
	memcpy(w, *s, n);
	w[n] = '\0';
	*s += n;
	return 0;
}

/*
 * One entry: "ATTEMPT START_MS ELAPSED_MS DURATION_MS OUTCOME WARM
 * REPLICA TRACE [JSON]" as an object with attempt, start_ms, end_ms,
 * duration_ms, outcome, exit_code or signal, warm, replica, trace_id and
 * the members of JSON; NULL when it is not of that form.
 */
static json_t *entry(const char *line)
{
	long long at, start, elapsed, dur, code;
	char out[64], warm[16], rep[128], trace[64], *colon;
	const char *p = line;
	json_t *o, *extra;
	json_error_t jerr;

	if (num(&p, &at) || *p++ != ' ' || num(&p, &start) || *p++ != ' ' ||
	    num(&p, &elapsed) || *p++ != ' ' || num(&p, &dur) ||
	    word(&p, out, sizeof(out)) || word(&p, warm, sizeof(warm)) ||
	    word(&p, rep, sizeof(rep)) || word(&p, trace, sizeof(trace)))
		return NULL;
	o = json_pack("{s:I, s:I, s:I, s:I}", "attempt", (json_int_t)at,
		      "start_ms", (json_int_t)start, "end_ms",
		      (json_int_t)(start + elapsed), "duration_ms",
		      (json_int_t)dur);
	if (!o)
		return NULL;
	colon = strchr(out, ':');
	if (colon) {
		*colon++ = '\0';
		code = strtoll(strchr(colon, '=') ? strchr(colon, '=') + 1
						 : colon, NULL, 10);
		json_object_set_new(o, strncmp(colon, "signal", 6) == 0 ?
				    "signal" : "exit_code",
				    json_integer(code));
	}
	json_object_set_new(o, "outcome", json_string(out));
	if (strcmp(warm, "-") != 0)
		json_object_set_new(o, "warm", json_boolean(
					    strcmp(warm, "warm") == 0));
	json_object_set_new(o, "replica", json_string(
				    strcmp(rep, "-") ? rep : ""));
	if (strcmp(trace, "-") != 0)
		json_object_set_new(o, "trace_id", json_string(trace));
	if (*p == ' ') {
		extra = json_loads(p + 1, 0, &jerr);
		if (json_is_object(extra))
			json_object_update(o, extra);
		json_decref(extra);
	}
	return o;
}

json_t *relayctl_timeline_parse(const char *v, size_t len)
{
	json_t *a = json_array();
	size_t i = 0, j;

	if (!a)
		return NULL;
	while (v && i < len) {
		char *line;
		json_t *o;

		for (j = i; j < len && v[j] != '\n'; j++)
			;
		line = strndup(v + i, j - i);
		o = line ? entry(line) : NULL;
		if (!o)
			o = json_pack("{s:s%}", "unparsed", v + i, j - i);
		free(line);
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
		i = j + 1;
	}
	return a;
}

const relay_redis_reply *relayctl_entry_field(const relay_redis_reply *raw,
					      const char *name)
{
	const relay_redis_reply *l;
	size_t i;

	if (!raw || raw->type != RELAY_REDIS_REPLY_ARRAY ||
	    raw->elements != 2)
		return NULL;
	l = raw->element[1];
	for (i = 0; l && l->type == RELAY_REDIS_REPLY_ARRAY &&
		    i + 1 < l->elements; i += 2)
		if (l->element[i]->type == RELAY_REDIS_REPLY_STRING &&
		    strcmp(l->element[i]->str, name) == 0 &&
		    l->element[i + 1]->type == RELAY_REDIS_REPLY_STRING)
			return l->element[i + 1];
	return NULL;
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" of @ms into @buf. */
static const char *when(json_int_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char day[32];

	if (ms <= 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, size, "?");
		return buf;
	}
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03dZ", day, (int)(ms % 1000));
	return buf;
}

void relayctl_timeline_print(FILE *f, const json_t *tl, const char *indent)
{
	size_t i;
	json_t *o;

	json_array_foreach(tl, i, o) {
		const json_t *sig = json_object_get(o, "signal");
		const json_t *code = json_object_get(o, "exit_code");
		const json_t *warm = json_object_get(o, "warm");
		const char *out = str(o, "outcome"), *s;
		char detail[48] = "", t[48];

		if (json_object_get(o, "unparsed")) {
			fprintf(f, "%s? %s\n", indent,
				relayctl_c(str(o, "unparsed")));
			continue;
		}
		if (sig)
			snprintf(detail, sizeof(detail), " (signal %lld)",
				 (long long)json_integer_value(sig));
		else if (code && strcmp(out, "ok") != 0)
			snprintf(detail, sizeof(detail), " (exit %lld)",
				 (long long)json_integer_value(code));
		fprintf(f, "%s#%lld %s%s", indent,
			(long long)json_integer_value(
				json_object_get(o, "attempt")),
			relayctl_c(out), detail);
		fprintf(f, "  %lld ms  %s  %s", (long long)json_integer_value(
				json_object_get(o, "duration_ms")),
			when(json_integer_value(json_object_get(o, "start_ms")),
			     t, sizeof(t)), relayctl_c(str(o, "replica")));
		if (warm)
			fprintf(f, "  %s",
				json_is_true(warm) ? "warm" : "cold");
		if (*(s = str(o, "trace_id")))
			fprintf(f, "  trace %s", relayctl_c(s));
		fputc('\n', f);
		if (*(s = str(o, "why")) || *(s = str(o, "reason")))
			fprintf(f, "%s    %s\n", indent, relayctl_c(s));
		if (*(s = str(o, "stderr"))) {
			char *c = strdup(s), *save = NULL, *l;

			for (l = c ? strtok_r(c, "\n", &save) : NULL; l;
			     l = strtok_r(NULL, "\n", &save))
				fprintf(f, "%s    | %s\n", indent,
					relayctl_c(l));
			free(c);
		}
	}
}
