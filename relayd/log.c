/*
 * log.c - relayd's stderr logger (LOG_LEVEL, LOG_FORMAT=text|json).
 *
 * One line per message, written with a single write(2) so lines from the
 * loop thread and the HTTP thread never interleave.
 *
 *   text: 2026-12-02T17:30:00.123Z INFO RELAYD01 message key=value ...
 *   json: {"ts":"…","level":"INFO","msgid":"RELAYD01","msg":"…",
 *          "key":"value",…}
 *
 * Structured keys (app, handler, message_id, attempt, duration_ms,
 * exit_code) come either from relayd_logkv()'s key/value list or, for
 * librelay's messages, from their " key=value" / key="value" words, which
 * json mode also copies into JSON members. Values are never payloads,
 * tokens or environment values: callers pass only identifiers and numbers.
 *
 * Handler output lines are forwarded at every level (doc/behaviour.md
 * B-64: even with LOG_LEVEL=ERROR). Text mode writes them as they are
 * except for the bytes a terminal acts on or that would end the line:
 * C0 controls but TAB, DEL, the UTF-8 encodings of the C1 controls and
 * bytes that are not UTF-8 become \xNN (escape_output). json mode keeps
 * the bytes exact as the "msg" of an {"output":"stdout"|"stderr"}
 * object, which also carries the line's app, handler, message_id and
 * stream as members.
 *
 * When stderr is the journal (JOURNAL_STREAM names stderr's device and
 * inode, as systemd sets it), text lines start with their syslog priority
 * ("<3>" error, "<4>" warning, "<6>" info and handler output, "<7>"
 * debug) instead of a timestamp, which the journal adds itself. JSON
 * lines are unchanged.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "relayd.h"

static relay_log_level log_level = RELAY_LOG_INFO;
static bool log_json;
static bool log_journal;   /* stderr is the journal */

/* A decimal of digits only (no sign, no space) up to @end; 0 or -1. */
static int parse_u64(const char *s, const char *end, unsigned long long *v)
{
	unsigned long long x = 0;

	if (s == end)
		return -1;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9' || x > (~0ULL - 9) / 10)
			return -1;
		x = x * 10 + (unsigned long long)(*s - '0');
	}
	*v = x;
	return 0;
}

/* JOURNAL_STREAM is "<device>:<inode>" of the stream the journal gave
 * us; it only counts while stderr is still that stream (not redirected
 * by a wrapper that kept the variable). */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM"), *colon;
	unsigned long long dev, ino;
	struct stat st;

	if (!e || !(colon = strchr(e, ':')) ||
	    parse_u64(e, colon, &dev) ||
	    parse_u64(colon + 1, colon + 1 + strlen(colon + 1), &ino) ||
	    fstat(STDERR_FILENO, &st) != 0)
		return false;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

void relayd_log_init(relay_log_level level, bool json)
{
	log_level = level;
	log_json = json;
	log_journal = stderr_is_journal();
}

/* The syslog priority of @lvl, as the journal reads a "<N>" prefix. */
static int priority(relay_log_level lvl)
{
	switch (lvl) {
	case RELAY_LOG_DEBUG:
		return 7;
	case RELAY_LOG_INFO:
		return 6;
	case RELAY_LOG_WARN:
		return 4;
	default:
		return 3;
	}
}

bool relayd_log_enabled(relay_log_level lvl)
{
	return lvl >= log_level;
}

static void timestamp(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, size - n, ".%03uZ",
		 (unsigned int)(ts.tv_nsec / 1000000) % 1000u);
}

static void write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, p, n);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* @obj (consumed) as one line: malloc'd, its length in *@n; NULL on
 * ENOMEM. */
static char *json_record(json_t *obj, size_t *n)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER |
			     JSON_ENSURE_ASCII);

	json_decref(obj);
	if (!s)
		return NULL;
	*n = strlen(s);
	s[(*n)++] = '\n';   /* over the NUL: the string is not used as one */
	return s;
}

/* Write @obj (consumed) as one line; the bytes written. */
static size_t emit_json(json_t *obj)
{
	size_t n;
	char *s = json_record(obj, &n);

	if (!s)
		return 0;
	write_all(s, n);
	free(s);
	return n;
}

void *relayd_json_lossy(const char *text, size_t len)
{
	json_t *j = json_stringn(text, len);
	char *copy;
	size_t i;

	if (j)
		return j;
	copy = malloc(len + 1);
	if (!copy)
		return json_string("");
	for (i = 0; i < len; i++)
		copy[i] = (unsigned char)text[i] < 0x80 ? text[i] : '?';
	j = json_stringn(copy, len);
	free(copy);
	return j ? j : json_string("");
}

/* The structured keys relayd lifts out of library messages. */
static bool known_key(const char *k, size_t n)
{
	static const char *const keys[] = {
		"app", "handler", "message_id", "attempt", "duration_ms",
		"exit_code", "reason", "consumer", "stream", "group",
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i]) == n && memcmp(keys[i], k, n) == 0)
			return true;
	return false;
}

/*
 * json mode: copy every known ` key=value` or ` key="quoted value"` word
 * of a library message into @obj (the message itself stays whole). Keys
 * already set by the caller win; a value ends at a space, or at the
 * closing quote (\" inside quotes is an escaped quote).
 */
static void lift_kv(const char *msg, json_t *obj)
{
	const char *p = msg;

	while ((p = strchr(p, '=')) != NULL) {
		const char *k = p, *v = p + 1, *e;
		char key[32];
		size_t klen;

		while (k > msg && (k[-1] == '_' || (k[-1] >= 'a' &&
						     k[-1] <= 'z')))
			k--;
		klen = (size_t)(p - k);
		p++;
		if (klen == 0 || klen >= sizeof(key) || (k > msg &&
							 k[-1] != ' ') ||
		    !known_key(k, klen))
			continue;
		memcpy(key, k, klen);
		key[klen] = '\0';
		if (*v == '"') {
			json_t *val;
			char *buf;
			size_t n = 0;

			v++;
			for (e = v; *e && *e != '"'; e++)
				if (*e == '\\' && e[1])
					e++;
			buf = malloc((size_t)(e - v) + 1);
			if (!buf)
				return;
			for (const char *q = v; q < e; q++) {
				if (*q == '\\' && q + 1 < e)
					q++;
				buf[n++] = *q;
			}
			val = relayd_json_lossy(buf, n);
			free(buf);
			if (!json_object_get(obj, key))
				json_object_set_new(obj, key, val);
			else
				json_decref(val);
			p = *e ? e + 1 : e;
		} else {
			e = strchr(v, ' ');
			if (!e)
				e = v + strlen(v);
			p = e;
			/* "message_id=1-0: why": the sentence's punctuation
			 * is not part of the value. */
			while (e > v && (e[-1] == ':' || e[-1] == ',' ||
					 e[-1] == ';'))
				e--;
			if (!json_object_get(obj, key))
				json_object_set_new(obj, key,
						    relayd_json_lossy(v,
							(size_t)(e - v)));
		}
	}
}

char *relayd_escape_ctl(const char *src, char *dst, size_t size)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t n = 0;

	if (!size)
		return dst;
	for (; *s; s++) {
		bool c1 = s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f;

		if (*s < 0x20 || *s == 0x7f || c1) {
			if (n + (c1 ? 8 : 4) >= size)
				break;
			n += (size_t)snprintf(dst + n, size - n, "\\x%02x", *s);
			if (c1)
				n += (size_t)snprintf(dst + n, size - n,
						      "\\x%02x", *++s);
			continue;
		}
		if (n + 1 >= size)
			break;
		dst[n++] = (char)*s;
	}
	dst[n] = '\0';
	return dst;
}

/* The length of the UTF-8 sequence at @s (@n bytes left), 0 if none
 * starts there (RFC 3629: no overlong forms, no surrogates, at most
 * U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		need = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		need = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		need = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < need || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < need; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return need;
}

/* text mode: one message stays one line whatever a name or an error
 * text holds: a control character (C0, DEL, C1 in UTF-8) or a byte that
 * is not UTF-8 is written as '?'. */
static void put_clean(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), i = 0, seq;

	while (i < n) {
		seq = utf8_len(s + i, n - i);
		if (seq == 0 || (seq == 1 && (s[i] < 0x20 || s[i] == 0x7f)) ||
		    (seq == 2 && s[i] == 0xc2 && s[i + 1] <= 0x9f)) {
			fputc('?', f);
			i += seq ? seq : 1;
			continue;
		}
		fwrite(s + i, 1, seq, f);
		i += seq;
	}
}

/* The bytes written (0 on allocation failure). */
static size_t vlog(relay_log_level lvl, const char *msgid,
		   const char *const *kv, const char *msg)
{
	char ts[40];

	timestamp(ts, sizeof(ts));
	if (log_json) {
		json_t *obj = json_object(), *fields = json_object();

		json_object_set_new(obj, "ts", json_string(ts));
		json_object_set_new(obj, "level",
				    json_string(relay_log_level_name(lvl)));
		json_object_set_new(obj, "msgid", json_string(msgid));
		for (; kv && kv[0] && kv[1]; kv += 2)
			json_object_set_new(fields, kv[0], json_string(kv[1]));
		lift_kv(msg, fields);
		json_object_set_new(obj, "msg", relayd_json_lossy(msg,
							      strlen(msg)));
		json_object_update(obj, fields);
		json_decref(fields);
		return emit_json(obj);
	} else {
		char *line = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&line, &len);

		if (!f)
			return 0;
		if (log_journal)
			fprintf(f, "<%d>", priority(lvl));
		else
			fprintf(f, "%s ", ts);
		fprintf(f, "%s %s%s", relay_log_level_name(lvl),
			*msgid ? msgid : "", *msgid ? " " : "");
		put_clean(f, msg);
		for (; kv && kv[0] && kv[1]; kv += 2) {
			fprintf(f, " %s=", kv[0]);
			put_clean(f, kv[1]);
		}
		fputc('\n', f);
		if (fclose(f) != 0) {
			free(line);
			return 0;
		}
		write_all(line, len);
		free(line);
		return len;
	}
}

size_t relayd_logkv(relay_log_level lvl, const char *msgid,
		    const char *const *kv, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!relayd_log_enabled(lvl))
		return 0;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return vlog(lvl, msgid ? msgid : "", kv, buf);
}

/* @payload: NULL, or the stream name every line gets as stream=<name>
 * (unless the message names it already). */
static void lib_log(void *payload, relay_log_level lvl, const char *msgid,
		    const char *msg)
{
	const char *kv[] = { "stream", payload, NULL, NULL };

	if (!relayd_log_enabled(lvl))
		return;
	vlog(lvl, msgid ? msgid : "",
	     payload && !strstr(msg, " stream=") ? kv : NULL, msg);
}

relay_logger relayd_logger_stream(const char *stream)
{
	relay_logger lg = { lib_log, (void *)stream, log_level };

	return lg;
}

relay_logger relayd_logger(void)
{
	relay_logger lg = { lib_log, NULL, log_level };

	return lg;
}

/*
 * json mode: the app, handler and message_id of an output line's prefix
 * "[app/handler@message-id] stdout: " (relay/runtime.h) as members of
 * @obj. App names hold no '/' and message ids no '@', so the handler is
 * whatever lies between the first '/' and the last '@'. A prefix of
 * another shape adds nothing.
 */
static void output_names(json_t *obj, const char *text, size_t plen)
{
	const char *end = text + plen, *close, *slash, *at;

	if (plen < 2 || text[0] != '[')
		return;
	for (close = end - 1; close > text && *close != ']'; close--)
		;
	if (close == text)
		return;
	slash = memchr(text + 1, '/', (size_t)(close - text - 1));
	for (at = close - 1; at > text && *at != '@'; at--)
		;
	if (!slash || at <= slash)
		return;
	json_object_set_new(obj, "app", relayd_json_lossy(text + 1,
						     (size_t)(slash - text - 1)));
	json_object_set_new(obj, "handler",
			    relayd_json_lossy(slash + 1, (size_t)(at - slash - 1)));
	json_object_set_new(obj, "message_id",
			    relayd_json_lossy(at + 1, (size_t)(close - at - 1)));
}

/*
 * Text mode: @len bytes of handler output @s into @out (room for 4 *
 * @len bytes), each byte that could drive a terminal or end the line
 * as \xNN: C0 controls but TAB, DEL, both bytes of a C1 control's UTF-8
 * encoding (U+0080..U+009F) and every byte that does not belong to a
 * valid UTF-8 sequence. The rest, UTF-8 included, is copied. A
 * backslash stays one: the escape is for safety, not a reversible
 * encoding. Returns the bytes written.
 */
static size_t escape_output(const char *s, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, k, seq;

	while (i < len) {
		seq = utf8_len(p + i, len - i);
		if (seq == 1 && ((p[i] >= 0x20 && p[i] != 0x7f) ||
				 p[i] == '\t')) {
			out[o++] = (char)p[i++];
			continue;
		}
		if (seq > 1 && !(p[i] == 0xc2 && p[i + 1] <= 0x9f)) {
			memcpy(out + o, p + i, seq);
			o += seq;
			i += seq;
			continue;
		}
		/* a control (C1: both of its bytes) or a stray byte */
		for (k = 0; k < (seq ? seq : 1); k++, i++) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[p[i] >> 4];
			out[o++] = hex[p[i] & 15];
		}
	}
	return o;
}

char *relayd_log_output_record(const char *text, size_t len,
			       size_t prefix_len, bool is_stderr,
			       const char *stream, size_t *n)
{
	char *line;
	size_t at = 0;

	if (log_json) {
		json_t *obj = json_object();
		char ts[40];

		if (!obj)
			return NULL;
		timestamp(ts, sizeof(ts));
		json_object_set_new(obj, "ts", json_string(ts));
		json_object_set_new(obj, "level", json_string("INFO"));
		json_object_set_new(obj, "output",
				    json_string(is_stderr ? "stderr"
							  : "stdout"));
		json_object_set_new(obj, "msg", relayd_json_lossy(text, len));
		output_names(obj, text, prefix_len < len ? prefix_len : len);
		if (stream)
			json_object_set_new(obj, "stream",
					    relayd_json_lossy(stream,
							 strlen(stream)));
		return json_record(obj, n);
	}
	/* The journal: our priority first, so that a line beginning "<3>"
	 * stays the handler's text, not a priority. */
	if (len > (SIZE_MAX - 4) / 4)
		return NULL;
	line = malloc(4 * len + 4);
	if (!line)
		return NULL;
	if (log_journal) {
		memcpy(line, "<6>", 3);
		at = 3;
	}
	at += escape_output(text, len, line + at);
	line[at] = '\n';
	*n = at + 1;
	return line;
}

void relayd_log_write(const char *rec, size_t n)
{
	write_all(rec, n);
}
