/*
 * smap.c - the string -> uint32 hash maps of the match index (field names,
 * literals, affixes, equals-ignore-case keys); see ruleset_int.h.
 */
#include <string.h>

#include "ruleset_int.h"

uint32_t relay__hash(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ len, w;

	while (len >= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 31;
		s += 8;
		len -= 8;
	}
	if (len) {
		w = 0;
		memcpy(&w, s, len);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 31;
	}
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 29;
	return (uint32_t)h;
}

uint32_t relay__smap_find_h(const relay__smap *m, const char *s, size_t len,
			    uint32_t hash)
{
	uint32_t i;

	if (m->n <= 8) {
		for (i = 0; i < m->n; i++)
			if (m->ents[i].len == len &&
			    relay__bytes_eq(m->ents[i].s, s, len))
				return m->ents[i].val;
		return RELAY__NONE;
	}
	for (i = hash & m->mask;; i = (i + 1) & m->mask) {
		const relay__sent *e = &m->slot[i];

		if (e->idx == RELAY__NONE)
			return RELAY__NONE;
		if (e->hash == hash && e->len == len &&
		    relay__bytes_eq(e->s, s, len))
			return e->val;
	}
}

uint32_t relay__ihash(const char *s, size_t len)
{
	uint64_t h = RELAY__AFFIX_SEED;
	size_t i;

	for (i = 0; i < len; i++)
		h = relay__affix_step(h, relay__lc((unsigned char)s[i]));
	return relay__affix_fin(h);
}

uint32_t relay__smap_find_ci(const relay__smap *m, const char *s, size_t len)
{
	uint32_t i, hash;

	if (m->n <= 8) {
		for (i = 0; i < m->n; i++)
			if (m->ents[i].len == len &&
			    relay__ieq(s, m->ents[i].s, len))
				return m->ents[i].val;
		return RELAY__NONE;
	}
	hash = relay__ihash(s, len);
	for (i = hash & m->mask;; i = (i + 1) & m->mask) {
		const relay__sent *e = &m->slot[i];

		if (e->idx == RELAY__NONE)
			return RELAY__NONE;
		if (e->hash == hash && e->len == len &&
		    relay__ieq(s, e->s, len))
			return e->val;
	}
}

/* Place entry @e in the table of @m (a free slot is certain). */
static void smap_place(relay__sent *slot, uint32_t mask, const relay__sent *e)
{
	uint32_t i;

	for (i = e->hash & mask; slot[i].idx != RELAY__NONE;
	     i = (i + 1) & mask)
		;
	slot[i] = *e;
}

static int smap_rehash(relay__smap *m, uint32_t size)
{
	relay__sent *slot = relay__malloc(size * sizeof(*slot));
	uint32_t i;

	if (!slot)
		return RELAY_ENOMEM;
	for (i = 0; i < size; i++)
		slot[i].idx = RELAY__NONE;
	for (i = 0; i < m->n; i++)
		smap_place(slot, size - 1, &m->ents[i]);
	relay__free(m->slot);
	m->slot = slot;
	m->mask = size - 1;
	return 0;
}

/* Add s -> val with its @hash; the caller checked that s is not present
 * yet. */
int relay__smap_put_h(relay__smap *m, const char *s, size_t len, uint32_t val,
		      uint32_t hash)
{
	if (len > UINT32_MAX)
		return RELAY_EINVAL;
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : 4;
		relay__sent *e = relay__realloc(m->ents, cap * sizeof(*e));

		if (!e)
			return RELAY_ENOMEM;
		m->ents = e;
		m->cap = cap;
	}
	relay__key_words(s, len, &m->ents[m->n].w0, &m->ents[m->n].w1);
	m->ents[m->n].s = s;
	m->ents[m->n].len = (uint32_t)len;
	m->ents[m->n].hash = hash;
	m->ents[m->n].val = val;
	m->ents[m->n].idx = m->n;
	m->n++;
	m->lenmask |= 1ULL << (len < 63 ? len : 63);
	/* keep the load factor at most 1/2 */
	if (!m->slot || m->n * 2 > m->mask + 1)
		return smap_rehash(m, m->slot ? (m->mask + 1) * 2 : 16);
	smap_place(m->slot, m->mask, &m->ents[m->n - 1]);
	return 0;
}

int relay__smap_put(relay__smap *m, const char *s, size_t len, uint32_t val)
{
	uint64_t w0, w1;

	relay__key_words(s, len, &w0, &w1);
	return relay__smap_put_h(m, s, len, val,
				 relay__key_hash(s, len, w0, w1));
}

void relay__smap_fini(relay__smap *m)
{
	relay__free(m->ents);
	relay__free(m->slot);
}

