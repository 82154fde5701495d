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

json_t *relayctl_timeline_parse(const char *v, size_t len)
{
	json_t *a = json_array();
	size_t i = 0, j;

	if (!a)
		return NULL;
	while (v && i < len) {
		json_error_t jerr;
		json_t *o;

		for (j = i; j < len && v[j] != '\n'; j++)
			;
		o = json_loadb(v + i, j - i, 0, &jerr);
		if (!o || !json_is_object(o)) {
			json_decref(o);
			o = json_pack("{s:s%}", "unparsed", v + i, j - i);
		}
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
