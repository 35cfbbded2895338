/* Aggregation from column vectors (late materialization): the key and the
 * counters of each row are read from the vectors of the fields the
 * aggregator needs (ba_query_agg_fields), a batch of rows at a time: keys
 * and hashes first, the hash slots prefetched, then the lookups. Records
 * (ba_query_agg_add) are turned into the same vectors first. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/common.h"
#include "query/agg_int.h"
#include "query/format_int.h"

#define NO_FIELD 0xFF /* a counter not read (i_flags after ba_query_agg_drop_flags) */
#define BATCH 64 /* rows whose keys are made and slots prefetched before their lookups */

static int need_ix(ba_query_agg_t *a, size_t off) {
  for (size_t i = 0; i < a->nneed; i++)
    if (a->need[i] == off) return (int)i;
  if (a->nneed == AGG_NEED_MAX || !ba_record_field_ok(off)) return -1;
  a->need[a->nneed] = (uint16_t)off;
  return (int)a->nneed++;
}

/* The record field a bidirectional lookup reads instead of off (source and
 * destination address and port swapped). */
static size_t swapped(size_t off) {
  static const size_t sw[4][2] = {{offsetof(ba_record_t, src), offsetof(ba_record_t, dst)},
                                  {offsetof(ba_record_t, dst), offsetof(ba_record_t, src)},
                                  {offsetof(ba_record_t, src_port), offsetof(ba_record_t, dst_port)},
                                  {offsetof(ba_record_t, dst_port), offsetof(ba_record_t, src_port)}};
  for (int j = 0; j < 4; j++)
    if (sw[j][0] == off) return sw[j][1];
  return off;
}

int agg_plan_fields(ba_query_agg_t *a) {
  static const size_t cnt[] = {offsetof(ba_record_t, first_ns),    offsetof(ba_record_t, last_ns),
                               offsetof(ba_record_t, packets),     offsetof(ba_record_t, bytes),
                               offsetof(ba_record_t, out_packets), offsetof(ba_record_t, out_bytes),
                               offsetof(ba_record_t, tcp_flags),   offsetof(ba_record_t, aggr_flows),
                               offsetof(ba_record_t, kind),        offsetof(ba_record_t, ipver)};
  uint8_t *dst[] = {&a->i_first, &a->i_last, &a->i_pk, &a->i_by, &a->i_opk, &a->i_oby, &a->i_flags, &a->i_aggr,
                    &a->i_kind, &a->i_ipver};
  a->nneed = 0;
  for (size_t k = 0; k < BA_ARRAY_LEN(cnt); k++) {
    if (dst[k] == &a->i_flags && a->no_flags) {
      a->i_flags = NO_FIELD;
      continue;
    }
    int x = need_ix(a, cnt[k]);
    if (x < 0) return BA_ERR_INVALID;
    *dst[k] = (uint8_t)x;
  }
  if (a->spec.bidir == 2) { /* from_server */
    int p = need_ix(a, offsetof(ba_record_t, proto)), s = need_ix(a, offsetof(ba_record_t, src_port));
    int d = need_ix(a, offsetof(ba_record_t, dst_port));
    if (p < 0 || s < 0 || d < 0) return BA_ERR_INVALID;
    a->i_proto = (uint8_t)p, a->i_sport = (uint8_t)s, a->i_dport = (uint8_t)d;
  }
  for (size_t f = 0; f < a->nf; f++) {
    const afield_t *fl = a->fl[f];
    for (int side = 0; side < 2; side++)
      for (int rev = 0; rev < 2; rev++) {
        size_t off = side && fl->off2 != fl->off ? fl->off2 : fl->off;
        if (rev && a->spec.bidir) off = swapped(off);
        for (int w = 0; w < (fl->kind == 1 ? 4 : 1); w++) {
          int x = need_ix(a, off + 4 * (size_t)w);
          if (x < 0) return BA_ERR_INVALID;
          a->ix[f][side][rev][w] = (uint8_t)x;
        }
      }
  }
  return BA_OK;
}

int ba_query_agg_drop_flags(ba_query_agg_t *a) {
  BA_RETURN_IF(!a || a->n, BA_ERR_INVALID);
  a->no_flags = 1;
  return agg_plan_fields(a);
}

const uint16_t *ba_query_agg_fields(const ba_query_agg_t *a, size_t *n) {
  if (!a || !n) return NULL;
  *n = a->nneed;
  return a->need;
}

static void mask_addr(uint8_t a[16], unsigned bits) {
  for (unsigned i = 0; i < 16; i++) {
    int nb = (int)bits - (int)(8 * i);
    a[i] &= nb >= 8 ? 0xFF : nb <= 0 ? 0 : (uint8_t)(0xFF00u >> nb);
  }
}

/* The serialized key of row i: the grouped fields' bytes in fl order (an
 * address as its 16 bytes, a number little-endian in its record width),
 * then ipver. `side` 1: the destination side of a pair element; `rev`: a
 * bidirectional lookup with source and destination swapped. */
static void make_key(const ba_query_agg_t *a, const uint64_t *const *v, size_t i, int side, int rev, uint8_t *kb) {
  size_t o = 0;
  int ipver = (int)v[a->i_ipver][i];
  for (size_t f = 0; f < a->nf; f++) {
    const afield_t *fl = a->fl[f];
    const uint8_t *ix = a->ix[f][side][rev];
    uint8_t *d = kb + o;
    if (fl->kind == 1) {
      for (int w = 0; w < 4; w++) {
        uint32_t x = (uint32_t)v[ix[w]][i];
        d[4 * w] = (uint8_t)(x >> 24), d[4 * w + 1] = (uint8_t)(x >> 16);
        d[4 * w + 2] = (uint8_t)(x >> 8), d[4 * w + 3] = (uint8_t)x;
      }
      if (fl->bit & (BA_AGG_SRCIP | BA_AGG_DSTIP | BA_AGG_IP)) {
        int v4 = fmt_addr_is_v4(d, ipver);
        int dside = a->spec.split_bits && ((fl->bit & BA_AGG_DSTIP) || (side && (fl->bit & BA_AGG_IP)));
        unsigned bits = dside ? (v4 ? a->spec.dst_v4bits : a->spec.dst_v6bits) : (v4 ? a->spec.v4bits : a->spec.v6bits);
        if (bits) mask_addr(d, v4 ? 96 + bits : bits);
      }
    } else {
      uint64_t x = v[ix[0]][i];
      memcpy(d, &x, fl->size); /* little-endian hosts: the low bytes */
    }
    o += fl->size;
  }
  kb[o] = a->keyver ? (uint8_t)ipver : 0;
}

/* 8 key bytes per multiply, then the murmur3 finalizer, whose low bits (the
 * slot) depend on every input bit. Only the table uses it: group order is
 * insertion order. */
static uint64_t hash_bytes(const uint8_t *p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n, x;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&x, p + i, 8);
    h = (h ^ x) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  if (i < n) {
    x = 0;
    memcpy(&x, p + i, n - i);
    h = (h ^ x) * 0xc4ceb9fe1a85ec53ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

/* Arrays that grow to tens of MB (the groups, their keys and hashes, the
 * slots) are marked for transparent huge pages where the kernel offers them
 * on request: faulted in 4 KiB at a time, a broad -s over 267 k groups took
 * 14 k page faults, a fifth of its CPU on a VM. The hint covers the whole
 * 2 MiB pages inside the buffer, before anything is written to it. */
#define HUGE_MIN ((size_t)4 << 20)

void *agg_alloc_big(size_t bytes) {
  void *p = ba_malloc(bytes);
#ifdef MADV_HUGEPAGE
  const uintptr_t hp = (uintptr_t)2 << 20;
  if (p && bytes >= HUGE_MIN) {
    uintptr_t lo = ((uintptr_t)p + hp - 1) & ~(hp - 1), hi = ((uintptr_t)p + bytes) & ~(hp - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
  }
#endif
  return p;
}

/* ba_grow for those arrays: *cap (elements) doubles until need fits; from
 * HUGE_MIN bytes on into a fresh hinted buffer (the used bytes copied), below
 * it with realloc. */
static int grow_big(void **buf, size_t *cap, size_t need, size_t elem, size_t used) {
  if (need <= *cap) return BA_OK;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need) {
    BA_RETURN_IF(ncap > SIZE_MAX / 4, BA_ERR_NOMEM);
    ncap *= 2;
  }
  BA_RETURN_IF(ncap > SIZE_MAX / elem, BA_ERR_NOMEM);
  if (ncap * elem < HUGE_MIN) return ba_grow(buf, cap, need, elem);
  void *p = agg_alloc_big(ncap * elem);
  BA_RETURN_IF(!p, BA_ERR_NOMEM);
  if (used) memcpy(p, *buf, used);
  ba_free(*buf);
  *buf = p;
  *cap = ncap;
  return BA_OK;
}

/* A slot: group index + 1, the hash's high half as a tag. */
static inline uint64_t slot_of(size_t g, uint64_t h) { return (h & 0xFFFFFFFF00000000ull) | (uint64_t)(g + 1); }

/* The slots rebuilt with ns entries from the groups' hashes (`fresh`: the
 * hashes made again from the keys, after the groups moved). */
static int rehash(ba_query_agg_t *a, size_t ns, int fresh) {
  BA_RETURN_IF(ns > SIZE_MAX / sizeof(uint64_t), BA_ERR_NOMEM);
  uint64_t *s = agg_alloc_big(ns * sizeof *s);
  BA_RETURN_IF(!s, BA_ERR_NOMEM);
  memset(s, 0, ns * sizeof *s);
  for (size_t i = 0; i < a->n; i++) {
    if (fresh) a->ghash[i] = hash_bytes(a->keys + i * a->klen, a->klen);
    size_t h = (size_t)a->ghash[i] & (ns - 1);
    while (s[h]) h = (h + 1) & (ns - 1);
    s[h] = slot_of(i, a->ghash[i]);
  }
  ba_free(a->slots);
  a->slots = s;
  a->nslots = ns;
  return 0;
}

/* The group of key kb (hash h), or -1 (with *slot set where it would go).
 * A slot's tag differing from the hash's settles it without the key. */
static long lookup(const ba_query_agg_t *a, const uint8_t *kb, uint64_t h64, size_t *slot) {
  size_t h = (size_t)h64 & (a->nslots - 1);
  uint64_t tag = h64 & 0xFFFFFFFF00000000ull;
  for (uint64_t s; (s = a->slots[h]) != 0; h = (h + 1) & (a->nslots - 1)) {
    if ((s & 0xFFFFFFFF00000000ull) != tag) continue;
    size_t g = (size_t)(uint32_t)s - 1;
    if (!memcmp(a->keys + g * a->klen, kb, a->klen)) return (long)g;
  }
  *slot = h;
  return -1;
}

static void add_to(grp_t *g, const ba_query_agg_t *a, const uint64_t *const *v, size_t i, int rev) {
  uint64_t fl = v[a->i_aggr][i];
  g->flows += fl ? fl : 1;
  uint64_t pk = v[a->i_pk][i], by = v[a->i_by][i], opk = v[a->i_opk][i], oby = v[a->i_oby][i];
  if (rev) { /* the reverse flow: its in counters are the group's out ones and its out the in */
    g->out_packets += pk;
    g->out_bytes += by;
    g->packets += opk;
    g->bytes += oby;
  } else {
    g->packets += pk;
    g->bytes += by;
    g->out_packets += opk;
    g->out_bytes += oby;
  }
  uint64_t f = v[a->i_first][i], l = v[a->i_last][i];
  if (f < g->first_ns) g->first_ns = f;
  if (l > g->last_ns) g->last_ns = l;
  if (a->i_flags != NO_FIELD) g->tcp_flags |= (uint8_t)v[a->i_flags][i];
}

/* -B: as nfdump 1.7.1, a TCP or UDP flow whose ports lie on either side of
 * 1024, 32768 or 49152 (the lower port below it, the higher one at or above
 * it) and whose source port is the lower comes from the server: it is looked
 * up reversed first. Other flows (ICMP, ports in one band) keep their direction. */
static int from_server(const ba_query_agg_t *a, const uint64_t *const *v, size_t i) {
  static const uint16_t lim[3] = {1024, 32768, 49152};
  uint64_t p = v[a->i_proto][i], sp = v[a->i_sport][i], dp = v[a->i_dport][i];
  if (p != 6 && p != 17) return 0;
  for (int k = 0; k < 3; k++)
    if (sp < lim[k] && dp >= lim[k]) return 1;
  return 0;
}

/* Row i, side `side`, whose key kb (hash h) was made with first_rev. */
static int add_one(ba_query_agg_t *a, const uint64_t *const *v, size_t i, int side, int first_rev,
                   const uint8_t *kb, uint64_t h) {
  size_t slot = 0, slot2;
  long g = lookup(a, kb, h, &slot);
  int rev = first_rev;
  if (g < 0 && a->spec.bidir) {
    uint8_t kr[KEY_MAX + 1];
    make_key(a, v, i, side, !first_rev, kr);
    long g2 = lookup(a, kr, hash_bytes(kr, a->klen), &slot2);
    if (g2 >= 0) {
      g = g2;
      rev = !first_rev;
    }
  }
  if (g >= 0) {
    add_to(&a->g[g], a, v, i, rev);
    return 0;
  }
  BA_RETURN_IF(a->n >= UINT32_MAX - 1, BA_ERR_OVERFLOW);
  BA_FORWARD(grow_big((void **)&a->g, &a->cap, a->n + 1, sizeof(grp_t), a->n * sizeof(grp_t)));
  BA_FORWARD(grow_big((void **)&a->keys, &a->kcap, (a->n + 1) * a->klen, 1, a->n * a->klen));
  BA_FORWARD(grow_big((void **)&a->ghash, &a->hcap, a->n + 1, sizeof *a->ghash, a->n * sizeof *a->ghash));
  grp_t *n = &a->g[a->n];
  memset(n, 0, sizeof(*n));
  n->kind = (uint8_t)v[a->i_kind][i];
  n->first_ns = v[a->i_first][i];
  n->last_ns = v[a->i_last][i];
  memcpy(a->keys + a->n * a->klen, kb, a->klen);
  add_to(n, a, v, i, rev);
  a->ghash[a->n] = h;
  a->slots[slot] = slot_of(a->n, h);
  a->n++;
  if (a->n * 2 > a->nslots) BA_FORWARD(rehash(a, a->nslots * 2, 0));
  return 0;
}

int ba_query_agg_add_fields(ba_query_agg_t *a, const uint64_t *const *vals, size_t n) {
  BA_RETURN_IF(!a || (n && !vals), BA_ERR_INVALID);
  if (a->sorted_by >= 0) {
    BA_FORWARD(rehash(a, a->nslots, 1));
    a->sorted_by = -1;
  }
  int sides = (a->spec.fields & PAIRS) ? 2 : 1;
  if (!a->kbuf) {
    a->kbuf = ba_malloc((size_t)BATCH * 2 * (KEY_MAX + 1));
    a->hbuf = ba_malloc((size_t)BATCH * 2 * sizeof *a->hbuf);
    BA_RETURN_IF(!a->kbuf || !a->hbuf, BA_ERR_NOMEM);
  }
  uint8_t revs[BATCH * 2];
  for (size_t i0 = 0; i0 < n; i0 += BATCH) {
    size_t m = BA_MIN((size_t)BATCH, n - i0);
    /* keys and hashes of the batch, the slots they start at fetched ahead */
    for (size_t j = 0; j < m * (size_t)sides; j++) {
      size_t i = i0 + j / (size_t)sides;
      int side = (int)(j % (size_t)sides);
      int first_rev = a->spec.bidir == 2 && from_server(a, vals, i);
      uint8_t *kb = a->kbuf + j * a->klen;
      make_key(a, vals, i, side, first_rev, kb);
      revs[j] = (uint8_t)first_rev;
      a->hbuf[j] = hash_bytes(kb, a->klen);
      __builtin_prefetch(&a->slots[a->hbuf[j] & (a->nslots - 1)]);
    }
    /* the group and key of each first slot whose tag matches, fetched ahead
     * too (a hint only: the lookups below decide) */
    for (size_t j = 0; j < m * (size_t)sides; j++) {
      uint64_t s = a->slots[a->hbuf[j] & (a->nslots - 1)];
      if (s && (s & 0xFFFFFFFF00000000ull) == (a->hbuf[j] & 0xFFFFFFFF00000000ull)) {
        size_t g = (size_t)(uint32_t)s - 1;
        __builtin_prefetch(&a->g[g]);
        __builtin_prefetch(a->keys + g * a->klen);
      }
    }
    for (size_t j = 0; j < m * (size_t)sides; j++)
      BA_FORWARD(add_one(a, vals, i0 + j / (size_t)sides, (int)(j % (size_t)sides), revs[j],
                         a->kbuf + j * a->klen, a->hbuf[j]));
  }
  return 0;
}

int ba_query_agg_add(ba_query_agg_t *a, const ba_record_t *recs, size_t n) {
  BA_RETURN_IF(!a || (n && !recs), BA_ERR_INVALID);
  enum { CHUNK = 256 };
  uint64_t *buf = ba_malloc(a->nneed * CHUNK * sizeof *buf);
  BA_RETURN_IF(!buf, BA_ERR_NOMEM);
  const uint64_t *vals[AGG_NEED_MAX];
  unsigned w[AGG_NEED_MAX];
  int word[AGG_NEED_MAX];
  for (size_t f = 0; f < a->nneed; f++) {
    vals[f] = buf + f * CHUNK;
    if (ba_record_field_info(a->need[f], &w[f], &word[f]) < 0) w[f] = 0, word[f] = 0;
  }
  int rc = 0;
  for (size_t i0 = 0; i0 < n && rc == 0; i0 += CHUNK) {
    size_t m = BA_MIN((size_t)CHUNK, n - i0);
    for (size_t i = 0; i < m; i++) /* a record at a time: its fields are in one or two cache lines */
      for (size_t f = 0; f < a->nneed; f++) buf[f * CHUNK + i] = ba_record_field_value(&recs[i0 + i], a->need[f], w[f], word[f]);
    rc = ba_query_agg_add_fields(a, vals, m);
  }
  ba_free(buf);
  return rc;
}
