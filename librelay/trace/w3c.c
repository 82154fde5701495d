/*
 * w3c.c - W3C Trace Context level 1 (traceparent, tracestate) and W3C
 * Baggage, parsed strictly; ids from the kernel's CSPRNG.
 *
 * Every parser reads at most its limit of bytes and allocates nothing,
 * so a hostile header (huge, control bytes, thousands of members) costs
 * one bounded pass and an error code.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "relay/trace.h"
#include "common.h"

/* A traceparent longer than this is not looked at (future versions may
 * append fields, but not kilobytes of them). */
#define TRACEPARENT_INPUT_MAX 512

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;              /* uppercase is invalid too */
}

/* @n bytes from 2*@n lowercase hex digits; -1 on any other character. */
static int unhex(const char *s, uint8_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

char *relay_trace_hex(const uint8_t *id, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * n] = '\0';
	return out;
}

/*
 * A future version's fields after the first four: '-' then lowercase
 * letters, digits and '-' only (the characters of the fields a version
 * 00 value is made of, letters beyond a-f included so that the W3C test
 * suite's "-what-the-future-will-be-like" passes). Control bytes,
 * spaces, upper case and other punctuation are refused: relayd keeps a
 * valid value verbatim (the DLQ's trace lineage), so all of it must be
 * checked, not the first 55 bytes.
 */
static bool future_tail(const char *s, size_t len)
{
	size_t i;

	if (len == 0)
		return true;
	if (s[0] != '-')
		return false;
	for (i = 1; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/*
 * "vv-<32 hex trace id>-<16 hex parent id>-<2 hex flags>". The version
 * decides the length rule: 00 is exactly 55 characters; ff is invalid;
 * any other (future) version must start with the 00 layout and may go on
 * after a '-' (level 1, "Versioning of traceparent") with more fields
 * (future_tail). The flags of a future version are not understood, so
 * only the sampled bit is kept.
 */
int relay_trace_parent_parse(relay_trace_context *out, const char *s,
			     size_t len)
{
	uint8_t version, flags;

	memset(out, 0, sizeof(*out));
	if (len > TRACEPARENT_INPUT_MAX)
		return RELAY_EINVAL;
	if (len < RELAY_TRACEPARENT_LEN)
		return RELAY_EPARSE;
	if (unhex(s, &version, 1) || version == 0xff)
		return RELAY_EPARSE;
	if (version == 0 && len != RELAY_TRACEPARENT_LEN)
		return RELAY_EPARSE;
	if (version != 0 && !future_tail(s + RELAY_TRACEPARENT_LEN,
					 len - RELAY_TRACEPARENT_LEN))
		return RELAY_EPARSE;
	if (s[2] != '-' || s[35] != '-' || s[52] != '-')
		return RELAY_EPARSE;
	if (unhex(s + 3, out->trace_id, RELAY_TRACE_ID_SIZE) ||
	    unhex(s + 36, out->span_id, RELAY_SPAN_ID_SIZE) ||
	    unhex(s + 53, &flags, 1))
		goto bad;
	if (all_zero(out->trace_id, RELAY_TRACE_ID_SIZE) ||
	    all_zero(out->span_id, RELAY_SPAN_ID_SIZE))
		goto bad;
	out->flags = version == 0 ? flags : flags & RELAY_TRACE_FLAG_SAMPLED;
	out->remote = true;
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return RELAY_EPARSE;
}

int relay_trace_parent_format(const relay_trace_context *c,
			      char out[RELAY_TRACEPARENT_LEN + 1])
{
	out[0] = '\0';
	if (all_zero(c->trace_id, RELAY_TRACE_ID_SIZE) ||
	    all_zero(c->span_id, RELAY_SPAN_ID_SIZE))
		return RELAY_EINVAL;
	memcpy(out, "00-", 3);
	relay_trace_hex(c->trace_id, RELAY_TRACE_ID_SIZE, out + 3);
	out[35] = '-';
	relay_trace_hex(c->span_id, RELAY_SPAN_ID_SIZE, out + 36);
	out[52] = '-';
	relay_trace_hex(&c->flags, 1, out + 53);
	return 0;
}

/* ---- tracestate ------------------------------------------------------- */

static bool lcalpha(char c)
{
	return c >= 'a' && c <= 'z';
}

static bool keychar(char c)
{
	return lcalpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
	       c == '*' || c == '/';
}

/* nblk-chr: %x21-2B / %x2D-3C / %x3E-7E (no ',', no '='). */
static bool nblk(char c)
{
	return c >= 0x21 && c <= 0x7e && c != ',' && c != '=';
}

/*
 * key = simple-key / multi-tenant-key
 * simple-key = lcalpha 0*255( keychar )
 * multi-tenant-key = tenant-id "@" system-id
 * tenant-id = ( lcalpha / DIGIT ) 0*240( keychar )
 * system-id = lcalpha 0*13( keychar )
 */
static bool ts_key(const char *k, size_t n)
{
	const char *at = memchr(k, '@', n);
	size_t i;

	if (!at) {
		if (n < 1 || n > 256 || !lcalpha(k[0]))
			return false;
		for (i = 1; i < n; i++)
			if (!keychar(k[i]))
				return false;
		return true;
	}
	{
		size_t tn = (size_t)(at - k), sn = n - tn - 1;

		if (tn < 1 || tn > 241 || sn < 1 || sn > 14)
			return false;
		if (!lcalpha(k[0]) && !(k[0] >= '0' && k[0] <= '9'))
			return false;
		for (i = 1; i < tn; i++)
			if (!keychar(k[i]))
				return false;
		if (!lcalpha(at[1]))
			return false;
		for (i = 2; i <= sn; i++)
			if (!keychar(at[i]))
				return false;
	}
	return true;
}

/* value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr */
static bool ts_value(const char *v, size_t n)
{
	size_t i;

	if (n < 1 || n > 256 || !nblk(v[n - 1]))
		return false;
	for (i = 0; i < n; i++)
		if (v[i] != ' ' && !nblk(v[i]))
			return false;
	return true;
}

typedef struct ts_member {
	const char *p;          /* "key=value" */
	size_t n;
	size_t keylen;
	bool keep;
} ts_member;

static bool ows(char c)
{
	return c == ' ' || c == '\t';
}

/* The length of the kept members joined by ','. */
static size_t kept_len(const ts_member *m, size_t nm)
{
	size_t i, n = 0, k = 0;

	for (i = 0; i < nm; i++)
		if (m[i].keep) {
			n += m[i].n + (k > 0);
			k++;
		}
	return n;
}

int relay_trace_state_parse(relay_trace_context *c, const char *s,
			    size_t len)
{
	ts_member m[RELAY_TRACESTATE_MAX_MEMBERS];
	size_t nm = 0, i, j, total = 0, at = 0;

	c->tracestate[0] = '\0';
	if (len > RELAY_TRACESTATE_INPUT_MAX)
		return RELAY_EINVAL;
	while (at <= len) {
		const char *comma = memchr(s + at, ',', len - at);
		size_t end = comma ? (size_t)(comma - s) : len, b = at, e = end;
		const char *eq;

		while (b < e && ows(s[b]))
			b++;
		while (e > b && ows(s[e - 1]))
			e--;
		at = end + 1;
		if (b == e)
			continue;       /* empty members are allowed */
		if (nm == RELAY_TRACESTATE_MAX_MEMBERS)
			return RELAY_EPARSE;
		eq = memchr(s + b, '=', e - b);
		if (!eq || !ts_key(s + b, (size_t)(eq - (s + b))) ||
		    !ts_value(eq + 1, (size_t)(s + e - eq - 1)))
			return RELAY_EPARSE;
		m[nm].p = s + b;
		m[nm].n = e - b;
		m[nm].keylen = (size_t)(eq - (s + b));
		m[nm].keep = true;
		for (j = 0; j < nm; j++)
			if (m[j].keylen == m[nm].keylen &&
			    memcmp(m[j].p, m[nm].p, m[nm].keylen) == 0)
				return RELAY_EPARSE;
		nm++;
	}
	/* Too long to propagate: members over 128 characters go first,
	 * then members from the end. */
	for (i = 0; i < nm && kept_len(m, nm) > RELAY_TRACESTATE_MAX; i++)
		if (m[i].n > 128)
			m[i].keep = false;
	for (i = nm; i-- > 0 && kept_len(m, nm) > RELAY_TRACESTATE_MAX;)
		m[i].keep = false;
	total = 0;
	for (i = 0; i < nm; i++) {
		if (!m[i].keep)
			continue;
		if (total)
			c->tracestate[total++] = ',';
		memcpy(c->tracestate + total, m[i].p, m[i].n);
		total += m[i].n;
	}
	c->tracestate[total] = '\0';
	return 0;
}

/* ---- baggage ---------------------------------------------------------- */

/* RFC 7230 tchar */
static bool tchar(char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* baggage-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E */
static bool boctet(char c)
{
	return c >= 0x21 && c <= 0x7e && c != '"' && c != ',' && c != ';' &&
	       c != '\\';
}

/*
 * One member or property "key OWS [= OWS value]" in s[b..e) (already
 * trimmed); @need_value for a member (a property may be a bare key).
 */
static bool bg_pair(const char *s, size_t b, size_t e, bool need_value)
{
	size_t k = b, v;

	while (k < e && tchar(s[k]))
		k++;
	if (k == b)
		return false;
	v = k;
	while (v < e && ows(s[v]))
		v++;
	if (v == e)
		return !need_value;
	if (s[v] != '=')
		return false;
	v++;
	while (v < e && ows(s[v]))
		v++;
	for (; v < e; v++)
		if (!boctet(s[v]))
			return false;
	return true;
}

int relay_trace_baggage_check(const char *s, size_t len, size_t *members)
{
	size_t n = 0, at = 0;

	if (members)
		*members = 0;
	if (len > RELAY_BAGGAGE_MAX_BYTES)
		return RELAY_EINVAL;
	while (at <= len) {
		const char *comma = memchr(s + at, ',', len - at);
		size_t end = comma ? (size_t)(comma - s) : len, b = at;
		bool first = true;

		at = end + 1;
		if (++n > RELAY_BAGGAGE_MAX_MEMBERS)
			return RELAY_EINVAL;
		/* member = pair *( OWS ";" OWS property ) */
		while (b <= end) {
			const char *semi = memchr(s + b, ';', end - b);
			size_t pe = semi ? (size_t)(semi - s) : end, e = pe;

			while (b < e && ows(s[b]))
				b++;
			while (e > b && ows(s[e - 1]))
				e--;
			if (!bg_pair(s, b, e, first))
				return RELAY_EPARSE;
			first = false;
			b = pe + 1;
		}
	}
	if (members)
		*members = n;
	return 0;
}

/* ---- ids -------------------------------------------------------------- */

static int fill_random(uint8_t *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

			if (fd < 0)
				return RELAY_ERROR;
			r = read(fd, p + got, n - got);
			close(fd);
			if (r <= 0)
				return RELAY_ERROR;
		}
		got += (size_t)r;
	}
	return 0;
}

int relay_trace_random_ids(uint8_t *trace_id, uint8_t *span_id)
{
	do {
		if (trace_id && fill_random(trace_id, RELAY_TRACE_ID_SIZE))
			return RELAY_ERROR;
	} while (trace_id && all_zero(trace_id, RELAY_TRACE_ID_SIZE));
	do {
		if (span_id && fill_random(span_id, RELAY_SPAN_ID_SIZE))
			return RELAY_ERROR;
	} while (span_id && all_zero(span_id, RELAY_SPAN_ID_SIZE));
	return 0;
}

int relay_trace_context_child(relay_trace_context *out,
			      const relay_trace_context *parent, bool sampled)
{
	relay_trace_context c;

	memset(&c, 0, sizeof(c));
	if (parent) {
		memcpy(c.trace_id, parent->trace_id, RELAY_TRACE_ID_SIZE);
		memcpy(c.tracestate, parent->tracestate,
		       sizeof(c.tracestate));
		c.tracestate[RELAY_TRACESTATE_MAX] = '\0';
		c.flags = parent->flags;
	}
	if (relay_trace_random_ids(parent ? NULL : c.trace_id, c.span_id))
		return RELAY_ERROR;
	c.flags = (uint8_t)((c.flags & ~RELAY_TRACE_FLAG_SAMPLED) |
			    (sampled ? RELAY_TRACE_FLAG_SAMPLED : 0));
	*out = c;
	return 0;
}
