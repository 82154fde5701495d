/*
 * tzif.c - a reader for TZif files (RFC 8536), versions 1 to 4.
 *
 * Version 2+ files carry a second, 64-bit data block and a POSIX TZ
 * footer; only those are read when present. Files with leap-second
 * records ("right/" zones) are refused: their timestamps are not Unix
 * time. Every count and index is checked against the file size.
 */
#include <string.h>

#include "sched.h"

#define TZIF_MAX_TIMES 100000
#define TZIF_MAX_OFF (26 * 3600)

typedef struct hdr {
	char version;
	uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
} hdr;

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static bool read_hdr(hdr *h, const unsigned char *p, size_t len)
{
	if (len < 44 || memcmp(p, "TZif", 4) != 0)
		return false;
	h->version = (char)p[4];
	h->isutcnt = be32(p + 20);
	h->isstdcnt = be32(p + 24);
	h->leapcnt = be32(p + 28);
	h->timecnt = be32(p + 32);
	h->typecnt = be32(p + 36);
	h->charcnt = be32(p + 40);
	return true;
}

/* Size of a data block with @tsize-byte times, or 0 when absurd. */
static size_t block_size(const hdr *h, size_t tsize)
{
	if (h->timecnt > TZIF_MAX_TIMES || h->typecnt > 256 ||
	    h->charcnt > 65536 || h->leapcnt > 65536 ||
	    h->isstdcnt > 256 || h->isutcnt > 256)
		return 0;
	return (size_t)h->timecnt * (tsize + 1) + (size_t)h->typecnt * 6 +
	       h->charcnt + (size_t)h->leapcnt * (tsize + 4) + h->isstdcnt +
	       h->isutcnt;
}

void relay__zone_clear(relay__zone *z)
{
	relay__free(z->at);
	relay__free(z->off);
	memset(z, 0, sizeof(*z));
}

static int fail(const char **why, const char *text)
{
	*why = text;
	return RELAY_EPARSE;
}

int relay__tzif_parse(relay__zone *z, const unsigned char *buf, size_t len,
		      const char **why)
{
	const unsigned char *p = buf, *times, *idx, *types, *end = buf + len;
	size_t tsize = 4, size, i;
	int32_t offs[256];
	hdr h;

	memset(z, 0, sizeof(*z));
	if (!read_hdr(&h, p, len))
		return fail(why, "not a TZif file");
	if (h.version != 0 && (h.version < '2' || h.version > '9'))
		return fail(why, "unknown TZif version");
	size = block_size(&h, 4);
	if (h.typecnt == 0 || size == 0 || size > len - 44)
		return fail(why, "truncated or oversized TZif data");
	p += 44;
	if (h.version >= '2') {
		p += size;
		if (!read_hdr(&h, p, (size_t)(end - p)))
			return fail(why, "missing 64-bit TZif header");
		tsize = 8;
		size = block_size(&h, 8);
		if (h.typecnt == 0 || size == 0 ||
		    size > (size_t)(end - p) - 44)
			return fail(why, "truncated 64-bit TZif data");
		p += 44;
	}
	if (h.leapcnt != 0) {
		*why = "leap-second zones are not supported";
		return RELAY_EINVAL;
	}
	if ((h.isstdcnt && h.isstdcnt != h.typecnt) ||
	    (h.isutcnt && h.isutcnt != h.typecnt))
		return fail(why, "inconsistent TZif counts");
	times = p;
	idx = times + (size_t)h.timecnt * tsize;
	types = idx + h.timecnt;
	for (i = 0; i < h.typecnt; i++) {
		int32_t off = (int32_t)be32(types + i * 6);

		if (off <= -TZIF_MAX_OFF || off >= TZIF_MAX_OFF)
			return fail(why, "UTC offset out of range");
		if (types[i * 6 + 5] >= h.charcnt)
			return fail(why, "bad abbreviation index");
		offs[i] = off;
	}
	z->off0 = offs[0];
	if (h.timecnt) {
		z->at = relay__malloc(h.timecnt * sizeof(*z->at));
		z->off = relay__malloc(h.timecnt * sizeof(*z->off));
		if (!z->at || !z->off) {
			relay__zone_clear(z);
			*why = "out of memory";
			return RELAY_ENOMEM;
		}
	}
	for (i = 0; i < h.timecnt; i++) {
		int64_t t = tsize == 8 ? be64(times + i * 8)
				       : (int32_t)be32(times + i * 4);

		if ((i && t <= z->at[i - 1]) || idx[i] >= h.typecnt) {
			relay__zone_clear(z);
			return fail(why, "bad TZif transition");
		}
		z->at[i] = t;
		z->off[i] = offs[idx[i]];
	}
	z->n = h.timecnt;
	p += size;
	if (tsize == 8 && p < end) {
		const unsigned char *nl;

		if (*p != '\n')
			goto bad_footer;
		nl = memchr(p + 1, '\n', (size_t)(end - p - 1));
		if (!nl)
			goto bad_footer;
		if (nl > p + 1) {
			if (relay__tzrule_parse(&z->rule, (const char *)p + 1,
						(size_t)(nl - p - 1)) != 0)
				goto bad_footer;
			if (z->rule.std_off <= -TZIF_MAX_OFF ||
			    z->rule.std_off >= TZIF_MAX_OFF ||
			    z->rule.dst_off <= -TZIF_MAX_OFF ||
			    z->rule.dst_off >= TZIF_MAX_OFF)
				goto bad_footer;
			z->has_rule = true;
		}
	}
	return 0;
bad_footer:
	relay__zone_clear(z);
	return fail(why, "bad TZ string footer");
}
