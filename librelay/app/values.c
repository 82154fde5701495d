/*
 * values.c - the small value grammars of template.yaml: durations, memory
 * sizes, CPU counts, integers, names and handler identifiers.
 *
 * All parsers are strict: the whole string must match, no whitespace, no
 * signs unless stated, and overflow is an error rather than a wrap. They
 * return 0 or RELAY_EINVAL and leave the message to the caller, who knows
 * which key the value belongs to.
 */
#include <string.h>

#include "app.h"
#include "runtime/kind.h"

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_lower_alnum(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z');
}

static int is_ident_start(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_ident(char c)
{
	return is_ident_start(c) || is_digit(c);
}

/* Read decimal digits into *v; fails on none or on overflow past @max. */
static int read_uint(const char **sp, uint64_t max, uint64_t *v)
{
	const char *s = *sp;
	uint64_t x = 0;

	if (!is_digit(*s))
		return RELAY_EINVAL;
	for (; is_digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (max - d) / 10)
			return RELAY_EINVAL;
		x = x * 10 + d;
	}
	*sp = s;
	*v = x;
	return 0;
}

int relay__app_parse_int(const char *s, long long *v)
{
	uint64_t x;
	int neg = 0;

	if (*s == '-' || *s == '+') {
		neg = *s == '-';
		s++;
	}
	if (read_uint(&s, (uint64_t)INT64_MAX, &x) || *s)
		return RELAY_EINVAL;
	*v = neg ? -(long long)x : (long long)x;
	return 0;
}

int relay__app_parse_duration(const char *s, int64_t *ms)
{
	/* Bound each term so the sum cannot overflow: 10^12 ms is 31 years. */
	const uint64_t max = 1000000000000ULL;
	uint64_t total = 0;

	if (!*s)
		return RELAY_EINVAL;
	while (*s) {
		uint64_t n, scale;

		if (read_uint(&s, max, &n))
			return RELAY_EINVAL;
		if (s[0] == 'm' && s[1] == 's') {
			scale = 1;
			s += 2;
		} else if (*s == 'h') {
			scale = 3600000;
			s++;
		} else if (*s == 'm') {
			scale = 60000;
			s++;
		} else if (*s == 's') {
			scale = 1000;
			s++;
		} else {
			return RELAY_EINVAL;
		}
		if (n > max / scale || total + n * scale > max)
			return RELAY_EINVAL;
		total += n * scale;
	}
	*ms = (int64_t)total;
	return 0;
}

char *relay__app_format_duration(int64_t ms, char *buf, size_t size)
{
	size_t off = 0;
	int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60;
	int64_t r = ms % 1000;

	buf[0] = '\0';
	if (h)
		off += (size_t)snprintf(buf + off, size - off, "%lldh",
					(long long)h);
	if (m && off < size)
		off += (size_t)snprintf(buf + off, size - off, "%lldm",
					(long long)m);
	if (s && off < size)
		off += (size_t)snprintf(buf + off, size - off, "%llds",
					(long long)s);
	if ((r || !ms) && off < size)
		snprintf(buf + off, size - off, r ? "%lldms" : "0s",
			 (long long)r);
	return buf;
}

int relay__app_parse_memory(const char *s, uint64_t *bytes)
{
	static const struct {
		const char *suffix;
		uint64_t scale;
	} units[] = {
		{ "", 1 }, { "B", 1 },
		{ "k", 1000ULL }, { "K", 1000ULL }, { "KB", 1000ULL },
		{ "M", 1000000ULL }, { "MB", 1000000ULL },
		{ "G", 1000000000ULL }, { "GB", 1000000000ULL },
		{ "T", 1000000000000ULL }, { "TB", 1000000000000ULL },
		{ "Ki", 1ULL << 10 }, { "KiB", 1ULL << 10 },
		{ "Mi", 1ULL << 20 }, { "MiB", 1ULL << 20 },
		{ "Gi", 1ULL << 30 }, { "GiB", 1ULL << 30 },
		{ "Ti", 1ULL << 40 }, { "TiB", 1ULL << 40 },
	};
	uint64_t n;
	size_t i;

	if (read_uint(&s, UINT64_MAX, &n))
		return RELAY_EINVAL;
	for (i = 0; i < RELAY__ARRAY_SIZE(units); i++) {
		if (strcmp(s, units[i].suffix) != 0)
			continue;
		if (n > UINT64_MAX / units[i].scale)
			return RELAY_EINVAL;
		*bytes = n * units[i].scale;
		return 0;
	}
	return RELAY_EINVAL;
}

int relay__app_parse_cpus(const char *s, uint32_t *milli)
{
	uint64_t whole, frac = 0;
	int places = 0;

	if (read_uint(&s, 1000000, &whole))
		return RELAY_EINVAL;
	if (*s == '.') {
		s++;
		if (!is_digit(*s))
			return RELAY_EINVAL;
		for (; is_digit(*s); s++) {
			if (++places > 3)
				return RELAY_EINVAL;
			frac = frac * 10 + (uint64_t)(*s - '0');
		}
	}
	if (*s)
		return RELAY_EINVAL;
	for (; places < 3; places++)
		frac *= 10;
	*milli = (uint32_t)(whole * 1000 + frac);
	return 0;
}

bool relay_app_name_valid(const char *name)
{
	size_t i;

	if (!name || !is_lower_alnum(name[0]))
		return false;
	for (i = 1; name[i]; i++) {
		char c = name[i];

		if (i >= RELAY_APP_NAME_MAX)
			return false;
		if (!is_lower_alnum(c) && c != '.' && c != '_' && c != '-')
			return false;
	}
	return true;
}

bool relay__app_env_name_valid(const char *s)
{
	if (!is_ident_start(*s))
		return false;
	for (s++; *s; s++)
		if (!is_ident(*s))
			return false;
	return true;
}

bool relay__app_handler_valid(relay_app_runtime_kind rt, const char *h)
{
	const relay__kind *d = relay__kind_get(rt);

	return d && d->handler_valid(h);
}

/* Levenshtein distance, capped: short keys only (< 32 bytes). */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t row[33], prev, tmp;

	if (la > 32 || lb > 32)
		return 99;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

const char *relay__app_suggest(const char *s, const char *const *words)
{
	const char *best = NULL;
	size_t bd = 3;

	for (; *words; words++) {
		size_t d = distance(s, *words);

		if (d < bd) {
			bd = d;
			best = *words;
		}
	}
	return best;
}

const char *relay_app_format_duration(int64_t ms, char *buf, size_t size)
{
	if (!buf || !size || ms < 0)
		return "";
	return relay__app_format_duration(ms, buf, size);
}
