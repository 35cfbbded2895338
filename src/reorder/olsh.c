/* oLSH reordering buffer: Program 1 of netfli-archive-and-index.txt §4.4.
 *
 * Layout. Buffered records live in a slot array (grown on demand, never past
 * MMax + 1 slots); each of the P chains lists its slots in arrival order in
 * chunks of OLSH_CHUNK entries (see olsh_chunk); packet frames live
 * in one byte arena (grown on demand, never past frame_bytes) that is
 * compacted in allocation order when full. Chains are also threaded into
 * per-length lists so the longest chain is found in O(1) amortized time.
 *
 * Insertion sort, done lazily. Program 1 keeps each chain insertion-sorted by
 * H2. A stable insertion sort of a sequence gives exactly the stable sort of
 * that sequence, so chains are kept in arrival order and stably sorted by H2
 * (or by the tuple, BA_OLSH_ORDER_TUPLE / _DST) when emitted: same output,
 * O(n log n) instead of O(n^2) per chain. */
#include "reorder/olsh.h"

#include <math.h>
#include <string.h>

#include "common/common.h"

#define OLSH_DIM 11
#define OLSH_NIL UINT32_MAX
#define OLSH_MAX_FUNCS 64

typedef struct olsh_slot {
  ba_record_t rec;       /* rec.frame is NULL while buffered; the frame is at foff */
  uint64_t foff;         /* arena offset of the frame (flen > 0) */
  uint32_t flen;         /* frame bytes held in the arena */
  uint32_t aprev, anext; /* arena allocation order (slots holding a frame) */
} olsh_slot;

/* Chains live apart from the records, as lists of chunks of OLSH_CHUNK
 * entries (slot and sort keys): emitting a chain reads its entries nearly
 * sequentially. A list of one link per record made emission a dependent
 * pointer chase through 2.4 MB of links, 3/4 of the emission time (perf,
 * bench_olsh --store). Every chunk of a chain is full except its last, so
 * at most (MMax + 1) / OLSH_CHUNK + P chunks are ever in use. */
#define OLSH_CHUNK 40
typedef struct olsh_entry {
  uint32_t slot;
  uint32_t h2;
  uint32_t sub;  /* BA_OLSH_ORDER_TUPLE: (dst port, protocol); _DST: (dst port, src port) */
  uint32_t pad_;
  uint64_t pair; /* BA_OLSH_ORDER_TUPLE: address pair (src, dst); _DST: (dst, src) */
} olsh_entry;
typedef struct olsh_chunk {
  uint32_t next; /* next chunk of the chain, or of the free list */
  uint32_t n;
  olsh_entry e[OLSH_CHUNK];
} olsh_chunk;

/* A 128-bit sort key: (a, b), b ending in the arrival index. */
typedef struct olsh_key2 {
  uint64_t a, b;
} olsh_key2;

typedef struct olsh_chain {
  uint32_t head, tail, len; /* first and last chunk, records */
  uint32_t lprev, lnext; /* list of chains with the same length */
} olsh_chain;

struct ba_olsh {
  ba_olsh_opts_t o;
  double *a1, *a2;       /* nfuncs x OLSH_DIM projections for H1 and H2 */
  double *b1, *b2;       /* offsets in [0, W) */
  olsh_chain *chains;    /* P */
  uint32_t *len_head;    /* [1..maxlen]: chains of that length, most recent first */
  uint32_t maxlen;       /* lengths a chain can have while buffered */
  uint32_t top;          /* no chain is longer than this */
  olsh_slot *slots;
  uint32_t *free_slots;  /* stack of free slots (same capacity as slots) */
  size_t slot_cap, slot_limit, nfree;
  uint32_t slot_used;
  olsh_chunk *chunks;
  size_t chunk_cap, chunk_limit;
  uint32_t chunk_free, chunk_used;
  size_t count;          /* buffered records */
  uint8_t *arena;
  size_t arena_cap;      /* allocated bytes, <= frame_bytes */
  uint64_t arena_end;    /* next free offset */
  uint64_t arena_live;   /* frame bytes of buffered records */
  uint32_t ahead, atail;
  ba_record_t *batch;    /* one sink call's records (bcap) */
  uint32_t *idx;
  uint64_t *keys, *tmp;
  olsh_key2 *keys2, *tmp2; /* BA_OLSH_ORDER_TUPLE, _DST (same memory as keys, tmp) */
  size_t bmax;           /* longest chain ever emitted */
  size_t bcap;           /* records per sink call: batch's capacity */
  size_t scap;           /* capacity of idx, keys, tmp: grown on demand up to olsh_scap */
  ba_olsh_stats_t st;
};

/* Defaults, measured with bench/reorder (see bench/RESULTS.md). The paper
 * gives neither n, P, W nor a scale for the vector; fed raw, the ports
 * (0..65535) swamp the address bytes (0..255), so ephemeral client ports
 * decide the chain and similar host pairs scatter. Scaling ports by 1/4096
 * and the protocol by 1/16 keeps all eleven dimensions but lets addresses
 * lead; W = 8 then gives chains of near-identical address pairs. The sum of
 * four functions spans fewer than P = 1024 values, so P rarely folds
 * unrelated sums together. MMax = 100000 records (~19 MB of slots and
 * links) with MMin = MMax / 2 emits half the buffer per memory purge.
 * Chains come out in tuple order, not Program 1's H2 order: an LSH chain
 * holds several near-identical host pairs, and H2 (another LSH sum, which
 * the scaled ports still move) interleaves them; ordering the chain by the
 * exact (address pair, dst port, protocol), ties in arrival order, makes
 * runs of one pair in time order. On 1 M generated flows that took the
 * archive from 0.94 to 0.88 and the WAH32 index from 0.66 to 0.62 of
 * arrival order (bench_olsh --chain-order).
 * Purges emit the whole buffer merged in key order (BA_OLSH_PURGE_SORTED),
 * not the longest chain down to MMin, the key puts the destination first
 * (BA_OLSH_ORDER_DST) and MMax = maxBlockSize = 300000. On CTU-13 (558,696
 * real flows; an hour slice holds up to 266,590 of them) the whole store
 * went from 0.94x of arrival order (Program 1's purge, tuple order, MMax
 * 100000) to 0.80x with the sorted purge and MMax 300000, and 0.755x with
 * the destination first as well (0.79x with MMax 100000); maxBlockSize 4000
 * cost 0.04x (bench/RESULTS.md, "oLSH reordering"). The LSH chains then
 * only decide which near-identical records leave early together (a chain
 * longer than maxBlockSize). */
void ba_olsh_opts_init(ba_olsh_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->nfuncs = 4;
  o->nchains = 1024;
  o->max_block = 300000;
  o->mmax = 300000;
  o->mmin = 150000;
  o->purge = BA_OLSH_PURGE_SORTED;
  o->width = 8.0;
  o->seed = 0x6F4C5348u; /* "oLSH" */
  o->q = 1u << 30;
  o->frame_bytes = 32u << 20;
  for (int k = 0; k < 8; k++) o->weight[k] = 1.0;
  o->weight[8] = o->weight[9] = 1.0 / 4096;
  o->weight[10] = 1.0 / 16;
  o->chain_order = BA_OLSH_ORDER_DST;
}

static int olsh_weights_valid(const ba_olsh_opts_t *o) {
  for (int k = 0; k < OLSH_DIM; k++)
    if (!isfinite(o->weight[k]) || o->weight[k] < 0.0) return 0;
  return 1;
}

static int olsh_opts_valid(const ba_olsh_opts_t *o) {
  return o && o->nfuncs >= 1 && o->nfuncs <= OLSH_MAX_FUNCS && o->nchains >= 1 && o->max_block >= 1 &&
         o->mmax >= 1 && o->mmax < (1u << 31) && o->mmin < o->mmax && o->q >= 1 && isfinite(o->width) &&
         o->width > 0.0 && o->frame_bytes <= (uint64_t)SIZE_MAX / 2 && olsh_weights_valid(o) &&
         (o->chain_order == BA_OLSH_ORDER_H2 || o->chain_order == BA_OLSH_ORDER_TUPLE ||
          o->chain_order == BA_OLSH_ORDER_DST) &&
         (o->purge == BA_OLSH_PURGE_LONGEST ||
          (o->purge == BA_OLSH_PURGE_SORTED && o->chain_order != BA_OLSH_ORDER_H2));
}

/* Sizes derived from the options (shared by create and mem_bound). */
/* Longest chain that can sit in the buffer: longer than maxBlockSize is
 * emitted at once, and no chain exceeds MMax + 1 records. */
static size_t olsh_maxlen(const ba_olsh_opts_t *o) { return BA_MIN((size_t)o->max_block, (size_t)o->mmax + 1); }
static size_t olsh_bmax(const ba_olsh_opts_t *o) { return BA_MIN((size_t)o->max_block, (size_t)o->mmax) + 1; }
/* Records per sink call: a longer chain (or buffer) goes in several. */
#define OLSH_BATCH_MAX 16384
static size_t olsh_bcap(const ba_olsh_opts_t *o) { return BA_MIN(olsh_bmax(o), (size_t)OLSH_BATCH_MAX); }
/* Entries sorted at once: one chain, or the whole buffer (BA_OLSH_PURGE_SORTED). */
#define OLSH_SORT_BYTES (sizeof(uint32_t) + 2 * sizeof(olsh_key2)) /* idx, keys and tmp */
#define OLSH_SORT_START 4096u                                      /* entries at first */
static size_t olsh_scap(const ba_olsh_opts_t *o) {
  return o->purge == BA_OLSH_PURGE_SORTED ? BA_MAX(olsh_bmax(o), (size_t)o->mmax + 1) : olsh_bmax(o);
}

static size_t olsh_fixed_bytes(const ba_olsh_opts_t *o) {
  return sizeof(struct ba_olsh) + 2 * (size_t)o->nfuncs * (OLSH_DIM + 1) * sizeof(double) +
         (size_t)o->nchains * sizeof(olsh_chain) + (olsh_maxlen(o) + 1) * sizeof(uint32_t) +
         olsh_bcap(o) * sizeof(ba_record_t);
}

static size_t olsh_chunk_limit(const ba_olsh_opts_t *o) {
  return ((size_t)o->mmax + 1) / OLSH_CHUNK + 1 + (size_t)o->nchains;
}

size_t ba_olsh_mem_bound(const ba_olsh_opts_t *o) {
  if (!olsh_opts_valid(o)) return 0;
  /* While the sort arrays grow (olsh_sort_reserve), old and new are both held. */
  return olsh_fixed_bytes(o) + 2 * olsh_scap(o) * OLSH_SORT_BYTES +
         ((size_t)o->mmax + 1) * (sizeof(olsh_slot) + sizeof(uint32_t)) +
         olsh_chunk_limit(o) * sizeof(olsh_chunk) + (size_t)o->frame_bytes;
}

size_t ba_olsh_mem_bytes(const ba_olsh_t *h) {
  return olsh_fixed_bytes(&h->o) + h->scap * OLSH_SORT_BYTES +
         h->slot_cap * (sizeof(olsh_slot) + sizeof(uint32_t)) +
         h->chunk_cap * sizeof(olsh_chunk) + h->arena_cap;
}

/* splitmix64: the seeded stream the projections are drawn from. */
static uint64_t olsh_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* Uniform in (0, 1). */
static double olsh_unif(uint64_t *s) { return ((double)(olsh_rand(s) >> 11) + 0.5) / 9007199254740992.0; }
/* Standard normal (Marsaglia's polar method: only log and sqrt, both exact
 * or correctly rounded in glibc, so projections are the same everywhere). */
static double olsh_gauss(uint64_t *s) {
  for (;;) {
    double u = 2.0 * olsh_unif(s) - 1.0, v = 2.0 * olsh_unif(s) - 1.0, q = u * u + v * v;
    if (q > 0.0 && q < 1.0) return u * sqrt(-2.0 * log(q) / q);
  }
}

int ba_olsh_create(const ba_olsh_opts_t *o, ba_olsh_t **out) {
  BA_RETURN_IF(!out, BA_ERR_INVALID);
  *out = NULL;
  BA_RETURN_IF(!olsh_opts_valid(o), BA_ERR_INVALID);
  ba_olsh_t *h = ba_calloc(1, sizeof *h);
  BA_RETURN_IF(!h, BA_ERR_NOMEM);
  h->o = *o;
  size_t nf = (size_t)o->nfuncs * OLSH_DIM;
  h->maxlen = (uint32_t)olsh_maxlen(o);
  h->bmax = olsh_bmax(o);
  h->scap = BA_MIN(h->bmax, (size_t)OLSH_SORT_START); /* grown by olsh_sort_reserve */
  h->bcap = olsh_bcap(o);
  h->slot_limit = (size_t)o->mmax + 1;
  h->chunk_limit = olsh_chunk_limit(o);
  h->a1 = ba_malloc(2 * nf * sizeof(double));
  h->b1 = ba_malloc(2 * (size_t)o->nfuncs * sizeof(double));
  h->chains = ba_malloc((size_t)o->nchains * sizeof(olsh_chain));
  h->len_head = ba_malloc(((size_t)h->maxlen + 1) * sizeof(uint32_t));
  h->batch = ba_malloc(h->bcap * sizeof(ba_record_t));
  h->idx = ba_malloc(h->scap * sizeof(uint32_t));
  h->keys = ba_malloc(2 * h->scap * sizeof(olsh_key2));
  if (!h->a1 || !h->b1 || !h->chains || !h->len_head || !h->batch || !h->idx || !h->keys) {
    ba_olsh_free(h);
    return BA_ERR_NOMEM;
  }
  h->a2 = h->a1 + nf;
  h->b2 = h->b1 + o->nfuncs;
  h->tmp = h->keys + h->scap;
  h->keys2 = (olsh_key2 *)h->keys;
  h->tmp2 = h->keys2 + h->scap;
  uint64_t s = o->seed;
  /* The weights scale the vector; folding them into the projections costs nothing per record. */
  for (size_t i = 0; i < 2 * nf; i++) h->a1[i] = olsh_gauss(&s) * o->weight[i % OLSH_DIM];
  for (size_t i = 0; i < 2 * (size_t)o->nfuncs; i++) h->b1[i] = olsh_unif(&s) * o->width;
  for (uint32_t c = 0; c < o->nchains; c++)
    h->chains[c] = (olsh_chain){OLSH_NIL, OLSH_NIL, 0, OLSH_NIL, OLSH_NIL};
  for (size_t l = 0; l <= h->maxlen; l++) h->len_head[l] = OLSH_NIL;
  h->chunk_free = OLSH_NIL;
  h->ahead = h->atail = OLSH_NIL;
  *out = h;
  return BA_OK;
}

void ba_olsh_free(ba_olsh_t *h) {
  if (!h) return;
  ba_free(h->a1);
  ba_free(h->b1);
  ba_free(h->chains);
  ba_free(h->len_head);
  ba_free(h->slots);
  ba_free(h->free_slots);
  ba_free(h->chunks);
  ba_free(h->arena);
  ba_free(h->batch);
  ba_free(h->idx);
  ba_free(h->keys);
  ba_free(h);
}

size_t ba_olsh_buffered(const ba_olsh_t *h) { return h ? h->count : 0; }
uint64_t ba_olsh_buffered_frame_bytes(const ba_olsh_t *h) { return h ? h->arena_live : 0; }
void ba_olsh_get_stats(const ba_olsh_t *h, ba_olsh_stats_t *st) { *st = h->st; }

/* ---------- hashing ---------- */

static void olsh_vector(const ba_record_t *r, double v[OLSH_DIM]) {
  /* IPv4 (and non-IP, all zero) use a.b.c.d at bytes 12..15 of the mapped
   * form; IPv6 uses its first four bytes, the prefix that groups hosts. */
  int off = r->ipver == 6 ? 0 : 12;
  for (int i = 0; i < 4; i++) {
    v[i] = r->src[off + i];
    v[4 + i] = r->dst[off + i];
  }
  v[8] = r->src_port;
  v[9] = r->dst_port;
  v[10] = r->proto;
}

static uint32_t olsh_sum_mod(const double *a, const double *b, uint32_t n, double w, const double v[OLSH_DIM],
                             uint32_t mod) {
  int64_t sum = 0;
  for (uint32_t i = 0; i < n; i++, a += OLSH_DIM) {
    double dot = b[i];
    for (int k = 0; k < OLSH_DIM; k++) dot += a[k] * v[k];
    sum += (int64_t)floor(dot / w);
  }
  int64_t m = sum % (int64_t)mod;
  return (uint32_t)(m < 0 ? m + (int64_t)mod : m);
}

void ba_olsh_hash(const ba_olsh_t *h, const ba_record_t *r, uint32_t *h1, uint32_t *h2) {
  double v[OLSH_DIM];
  olsh_vector(r, v);
  *h1 = olsh_sum_mod(h->a1, h->b1, h->o.nfuncs, h->o.width, v, h->o.nchains);
  *h2 = olsh_sum_mod(h->a2, h->b2, h->o.nfuncs, h->o.width, v, h->o.q);
}

/* ---------- length lists ---------- */

static void olsh_len_unlink(ba_olsh_t *h, uint32_t c) {
  olsh_chain *ch = &h->chains[c];
  if (ch->lprev != OLSH_NIL) h->chains[ch->lprev].lnext = ch->lnext;
  else h->len_head[ch->len] = ch->lnext;
  if (ch->lnext != OLSH_NIL) h->chains[ch->lnext].lprev = ch->lprev;
  ch->lprev = ch->lnext = OLSH_NIL;
}

static void olsh_len_push(ba_olsh_t *h, uint32_t c) {
  olsh_chain *ch = &h->chains[c];
  uint32_t first = h->len_head[ch->len];
  ch->lprev = OLSH_NIL;
  ch->lnext = first;
  if (first != OLSH_NIL) h->chains[first].lprev = c;
  h->len_head[ch->len] = c;
  if (ch->len > h->top) h->top = ch->len;
}

/* The longest buffered chain (most recent to reach that length), or NIL. */
static uint32_t olsh_longest(ba_olsh_t *h) {
  while (h->top > 0 && h->len_head[h->top] == OLSH_NIL) h->top--;
  return h->top ? h->len_head[h->top] : OLSH_NIL;
}

/* ---------- frame arena ---------- */

static void olsh_arena_unlink(ba_olsh_t *h, uint32_t s) {
  olsh_slot *sl = &h->slots[s];
  if (sl->aprev != OLSH_NIL) h->slots[sl->aprev].anext = sl->anext;
  else h->ahead = sl->anext;
  if (sl->anext != OLSH_NIL) h->slots[sl->anext].aprev = sl->aprev;
  else h->atail = sl->aprev;
  h->arena_live -= sl->flen;
  sl->flen = 0;
  /* Space after the last live frame is free again. */
  h->arena_end = h->atail == OLSH_NIL ? 0 : h->slots[h->atail].foff + h->slots[h->atail].flen;
}

/* Slides live frames down in allocation order (which is offset order). */
static void olsh_arena_compact(ba_olsh_t *h) {
  uint64_t dst = 0;
  for (uint32_t s = h->ahead; s != OLSH_NIL; s = h->slots[s].anext) {
    olsh_slot *sl = &h->slots[s];
    if (sl->foff != dst) memmove(h->arena + dst, h->arena + sl->foff, sl->flen);
    sl->foff = dst;
    dst += sl->flen;
  }
  h->arena_end = dst;
  h->st.compactions++;
}

static int olsh_emit_chain(ba_olsh_t *h, uint32_t c, ba_record_sink_fn emit, void *ctx);
static int olsh_emit_all(ba_olsh_t *h, ba_record_sink_fn emit, void *ctx);

/* Makes room for `need` (<= frame_bytes) frame bytes at arena_end. */
static int olsh_arena_reserve(ba_olsh_t *h, uint64_t need, ba_record_sink_fn emit, void *ctx) {
  uint64_t budget = h->o.frame_bytes;
  if (h->arena_end + need > budget) {
    olsh_arena_compact(h);
    /* Leave at most half the budget live so the next compaction is at least
     * half a budget of new frames away (amortized O(1) per byte). */
    int rc = BA_OK;
    int evicted = 0;
    while ((h->arena_live > budget / 2 || h->arena_live + need > budget) && h->count > 0) {
      h->st.frame_chains++;
      evicted = 1;
      if (h->o.purge == BA_OLSH_PURGE_SORTED) {
        rc = olsh_emit_all(h, emit, ctx);
        break;
      }
      uint32_t c = olsh_longest(h);
      if ((rc = olsh_emit_chain(h, c, emit, ctx)) != 0) break;
    }
    if (evicted) olsh_arena_compact(h);
    if (rc != 0) return rc;
  }
  if (h->arena_end + need > h->arena_cap) {
    size_t ncap = h->arena_cap ? h->arena_cap * 2 : 64 * 1024;
    if (ncap < h->arena_end + need) ncap = (size_t)(h->arena_end + need);
    if (ncap > budget) ncap = (size_t)budget;
    uint8_t *p = ba_realloc(h->arena, ncap);
    BA_RETURN_IF(!p, BA_ERR_NOMEM);
    h->arena = p;
    h->arena_cap = ncap;
  }
  return BA_OK;
}

/* ---------- emission ---------- */

static void olsh_merge_sort(uint64_t *k, uint64_t *tmp, size_t n) {
  if (n <= 24) {
    for (size_t i = 1; i < n; i++) {
      uint64_t x = k[i];
      size_t j = i;
      for (; j > 0 && k[j - 1] > x; j--) k[j] = k[j - 1];
      k[j] = x;
    }
    return;
  }
  size_t m = n / 2;
  olsh_merge_sort(k, tmp, m);
  olsh_merge_sort(k + m, tmp, n - m);
  if (k[m - 1] <= k[m]) return; /* already ordered: common for similar records */
  memcpy(tmp, k, m * sizeof *k);
  size_t i = 0, j = m, o = 0;
  while (i < m && j < n) k[o++] = tmp[i] <= k[j] ? tmp[i++] : k[j++];
  while (i < m) k[o++] = tmp[i++];
}

static int key2_le(const olsh_key2 *x, const olsh_key2 *y) { return x->a < y->a || (x->a == y->a && x->b <= y->b); }

static void olsh_merge_sort2(olsh_key2 *k, olsh_key2 *tmp, size_t n) {
  if (n <= 24) {
    for (size_t i = 1; i < n; i++) {
      olsh_key2 x = k[i];
      size_t j = i;
      for (; j > 0 && !key2_le(&k[j - 1], &x); j--) k[j] = k[j - 1];
      k[j] = x;
    }
    return;
  }
  size_t m = n / 2;
  olsh_merge_sort2(k, tmp, m);
  olsh_merge_sort2(k + m, tmp, n - m);
  if (key2_le(&k[m - 1], &k[m])) return;
  memcpy(tmp, k, m * sizeof *k);
  size_t i = 0, j = m, o = 0;
  while (i < m && j < n) k[o++] = key2_le(&tmp[i], &k[j]) ? tmp[i++] : k[j++];
  while (i < m) k[o++] = tmp[i++];
}

/* The BA_OLSH_ORDER_TUPLE and _DST keys of a record: IPv4 pairs exactly; IPv6 by a
 * fold of each address (equal addresses stay together). */
static uint32_t olsh_addr32(const ba_record_t *r, const uint8_t a[16]) {
  if (r->ipver != 6) return ba_load_be32(a + 12);
  uint32_t x = 2166136261u;
  for (int i = 2; i < 16; i++) x = (x ^ a[i]) * 16777619u;
  return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (x >> 16);
}

/* Room to sort n entries (n <= olsh_scap): idx, keys and tmp grow by
 * doubling, so a buffer that never fills does not hold MMax of them. */
static int olsh_sort_reserve(ba_olsh_t *h, size_t n) {
  if (n <= h->scap) return BA_OK;
  size_t ncap = BA_MIN(BA_MAX(n, 2 * h->scap), olsh_scap(&h->o));
  uint32_t *idx = ba_malloc(ncap * sizeof *idx);
  uint64_t *keys = ba_malloc(2 * ncap * sizeof(olsh_key2));
  if (!idx || !keys) {
    ba_free(idx);
    ba_free(keys);
    return BA_ERR_NOMEM;
  }
  ba_free(h->idx);
  ba_free(h->keys);
  h->idx = idx;
  h->keys = keys;
  h->tmp = h->keys + ncap;
  h->keys2 = (olsh_key2 *)h->keys;
  h->tmp2 = h->keys2 + ncap;
  h->scap = ncap;
  return BA_OK;
}

/* Hands the n sorted records (keys2 with tuple, else keys; low 32 bits:
 * index into idx) to the sink in batches of at most bcap records and frees
 * their slots and frames. If the sink fails, the rest are dropped with the
 * failed batch (its owner is failing anyway; the handle stays usable). */
static int olsh_hand_over(ba_olsh_t *h, size_t n, int tuple, ba_record_sink_fn emit, void *ctx) {
  int rc = 0;
  for (size_t off = 0; off < n;) {
    size_t m = BA_MIN(n - off, h->bcap);
    for (size_t i = 0; i < m; i++) {
      size_t k = off + i;
      if (i + 8 < m) { /* the whole slot: a sorted buffer visits slots at random */
        const char *p = (const char *)&h->slots[h->idx[tuple ? (uint32_t)h->keys2[k + 8].b : (uint32_t)h->keys[k + 8]]];
        for (size_t b = 0; b < sizeof(olsh_slot); b += 64) __builtin_prefetch(p + b);
      }
      const olsh_slot *sl = &h->slots[h->idx[tuple ? (uint32_t)h->keys2[k].b : (uint32_t)h->keys[k]]];
      h->batch[i] = sl->rec;
      if (sl->flen) h->batch[i].frame = h->arena + sl->foff;
    }
    if (rc == 0) {
      rc = emit(ctx, h->batch, m);
      h->st.batches++;
    }
    /* Free after the sink returned: the batch's frames point into the arena. */
    for (size_t i = 0; i < m; i++) {
      size_t k = off + i;
      uint32_t s = h->idx[tuple ? (uint32_t)h->keys2[k].b : (uint32_t)h->keys[k]];
      if (h->slots[s].flen) olsh_arena_unlink(h, s);
      h->free_slots[h->nfree++] = s;
    }
    off += m;
  }
  h->count -= n;
  h->st.emitted += n;
  return rc;
}

/* Removes chain c, hands its records to the sink sorted by (H2, arrival),
 * (address pair, dst port and protocol, arrival) or (dst, src, dst port,
 * src port, arrival) and frees their slots and frames. */
static int olsh_emit_chain(ba_olsh_t *h, uint32_t c, ba_record_sink_fn emit, void *ctx) {
  olsh_chain *ch = &h->chains[c];
  BA_FORWARD(olsh_sort_reserve(h, ch->len)); /* nothing taken out yet on failure */
  size_t n = 0;
  int sorted = 1, tuple = h->o.chain_order != BA_OLSH_ORDER_H2;
  uint32_t last = OLSH_NIL;
  for (uint32_t k = ch->head; k != OLSH_NIL; k = h->chunks[k].next) {
    const olsh_chunk *ck = &h->chunks[k];
    if (ck->next != OLSH_NIL) __builtin_prefetch(&h->chunks[ck->next]);
    for (uint32_t j = 0; j < ck->n; j++, n++) {
      const olsh_entry *e = &ck->e[j];
      h->idx[n] = e->slot;
      if (tuple) {
        h->keys2[n] = (olsh_key2){e->pair, ((uint64_t)e->sub << 32) | n};
        if (n && !key2_le(&h->keys2[n - 1], &h->keys2[n])) sorted = 0;
      } else {
        h->keys[n] = ((uint64_t)e->h2 << 32) | n;
        if (n && h->keys[n] < h->keys[n - 1]) sorted = 0;
      }
    }
    last = k;
  }
  /* The chain's chunks go back to the free list. */
  if (last != OLSH_NIL) {
    h->chunks[last].next = h->chunk_free;
    h->chunk_free = ch->head;
  }
  if (!sorted) {
    if (tuple) olsh_merge_sort2(h->keys2, h->tmp2, n);
    else olsh_merge_sort(h->keys, h->tmp, n);
  }
  if (ch->len <= h->maxlen) olsh_len_unlink(h, c);
  ch->head = ch->tail = OLSH_NIL;
  ch->len = 0;
  return olsh_hand_over(h, n, tuple, emit, ctx);
}

/* BA_OLSH_PURGE_SORTED: empties every chain and hands the whole buffer to
 * the sink sorted by the chain order's key (TUPLE or DST), ties chain by
 * chain in arrival order. */
static int olsh_emit_all(ba_olsh_t *h, ba_record_sink_fn emit, void *ctx) {
  BA_FORWARD(olsh_sort_reserve(h, h->count)); /* nothing taken out yet on failure */
  size_t n = 0;
  for (uint32_t c = 0; c < h->o.nchains; c++) {
    olsh_chain *ch = &h->chains[c];
    if (!ch->len) continue;
    uint32_t last = OLSH_NIL;
    for (uint32_t k = ch->head; k != OLSH_NIL; k = h->chunks[k].next) {
      const olsh_chunk *ck = &h->chunks[k];
      for (uint32_t j = 0; j < ck->n; j++, n++) {
        h->idx[n] = ck->e[j].slot;
        h->keys2[n] = (olsh_key2){ck->e[j].pair, ((uint64_t)ck->e[j].sub << 32) | n};
      }
      last = k;
    }
    h->chunks[last].next = h->chunk_free;
    h->chunk_free = ch->head;
    if (ch->len <= h->maxlen) olsh_len_unlink(h, c);
    ch->head = ch->tail = OLSH_NIL;
    ch->len = 0;
  }
  h->top = 0;
  olsh_merge_sort2(h->keys2, h->tmp2, n);
  return olsh_hand_over(h, n, 1, emit, ctx);
}

static int olsh_drain(ba_olsh_t *h, size_t target, ba_record_sink_fn emit, void *ctx, uint64_t *reason) {
  if (h->o.purge == BA_OLSH_PURGE_SORTED && h->count > target) {
    if (reason) (*reason)++;
    return olsh_emit_all(h, emit, ctx);
  }
  while (h->count > target) {
    uint32_t c = olsh_longest(h);
    if (reason) (*reason)++;
    int rc = olsh_emit_chain(h, c, emit, ctx);
    if (rc != 0) return rc;
  }
  return 0;
}

static int olsh_slot_alloc(ba_olsh_t *h, uint32_t *out) {
  if (h->nfree) {
    *out = h->free_slots[--h->nfree];
    return BA_OK;
  }
  if (h->slot_used == h->slot_cap) {
    size_t ncap = h->slot_cap ? h->slot_cap * 2 : 256;
    if (ncap > h->slot_limit) ncap = h->slot_limit;
    BA_RETURN_IF(ncap <= h->slot_cap, BA_ERR_OVERFLOW); /* cannot happen: count <= MMax + 1 */
    olsh_slot *p = ba_realloc(h->slots, ncap * sizeof *p);
    BA_RETURN_IF(!p, BA_ERR_NOMEM);
    h->slots = p;
    uint32_t *l = ba_realloc(h->free_slots, ncap * sizeof *l);
    BA_RETURN_IF(!l, BA_ERR_NOMEM); /* slots grew; slot_cap says how far both reach */
    h->free_slots = l;
    h->slot_cap = ncap;
  }
  *out = h->slot_used++;
  return BA_OK;
}

static int olsh_chunk_alloc(ba_olsh_t *h, uint32_t *out) {
  if (h->chunk_free != OLSH_NIL) {
    *out = h->chunk_free;
    h->chunk_free = h->chunks[*out].next;
  } else {
    if (h->chunk_used == h->chunk_cap) {
      size_t ncap = h->chunk_cap ? h->chunk_cap * 2 : 64;
      if (ncap > h->chunk_limit) ncap = h->chunk_limit;
      BA_RETURN_IF(ncap <= h->chunk_cap, BA_ERR_OVERFLOW); /* cannot happen: see OLSH_CHUNK */
      olsh_chunk *p = ba_realloc(h->chunks, ncap * sizeof *p);
      BA_RETURN_IF(!p, BA_ERR_NOMEM);
      h->chunks = p;
      h->chunk_cap = ncap;
    }
    *out = h->chunk_used++;
  }
  h->chunks[*out].next = OLSH_NIL;
  h->chunks[*out].n = 0;
  return BA_OK;
}

static int olsh_push_one(ba_olsh_t *h, const ba_record_t *r, ba_record_sink_fn emit, void *ctx) {
  uint32_t flen = r->frame ? r->caplen : 0;
  if (flen > h->o.frame_bytes) {
    /* Larger than the whole frame budget: it cannot be buffered. */
    h->st.pushed++;
    h->st.passthrough++;
    h->st.emitted++;
    h->st.batches++;
    return emit(ctx, r, 1);
  }
  int rc;
  if (flen && (rc = olsh_arena_reserve(h, flen, emit, ctx)) != 0) return rc;
  /* Chain space first, then the slot: a failure leaves nothing half done
   * (at worst an empty chunk on the chain, which later records fill). */
  /* H2 is the sort key of BA_OLSH_ORDER_H2 only: the key orders skip it. */
  uint32_t c, h2 = 0;
  if (h->o.chain_order == BA_OLSH_ORDER_H2) {
    ba_olsh_hash(h, r, &c, &h2);
  } else {
    double v[OLSH_DIM];
    olsh_vector(r, v);
    c = olsh_sum_mod(h->a1, h->b1, h->o.nfuncs, h->o.width, v, h->o.nchains);
  }
  olsh_chain *ch = &h->chains[c];
  if (ch->tail == OLSH_NIL || h->chunks[ch->tail].n == OLSH_CHUNK) {
    uint32_t k;
    BA_FORWARD(olsh_chunk_alloc(h, &k));
    if (ch->tail != OLSH_NIL) h->chunks[ch->tail].next = k;
    else ch->head = k;
    ch->tail = k;
  }
  uint32_t s;
  BA_FORWARD(olsh_slot_alloc(h, &s));
  olsh_slot *sl = &h->slots[s];
  sl->rec = *r;
  sl->rec.frame = NULL;
  sl->flen = flen;
  if (flen) {
    sl->foff = h->arena_end;
    memcpy(h->arena + sl->foff, r->frame, flen);
    h->arena_end += flen;
    h->arena_live += flen;
    sl->anext = OLSH_NIL;
    sl->aprev = h->atail;
    if (h->atail != OLSH_NIL) h->slots[h->atail].anext = s;
    else h->ahead = s;
    h->atail = s;
  }
  olsh_chunk *ck = &h->chunks[ch->tail];
  olsh_entry *e = &ck->e[ck->n++];
  e->slot = s;
  e->h2 = h2;
  if (h->o.chain_order == BA_OLSH_ORDER_TUPLE) {
    e->pair = (uint64_t)olsh_addr32(r, r->src) << 32 | olsh_addr32(r, r->dst);
    e->sub = (uint32_t)r->dst_port << 8 | r->proto;
  } else if (h->o.chain_order == BA_OLSH_ORDER_DST) {
    e->pair = (uint64_t)olsh_addr32(r, r->dst) << 32 | olsh_addr32(r, r->src);
    e->sub = (uint32_t)r->dst_port << 16 | r->src_port;
  }
  if (ch->len) olsh_len_unlink(h, c);
  ch->len++;
  h->count++;
  h->st.pushed++;
  if (ch->len <= h->maxlen) olsh_len_push(h, c);
  if (ch->len > h->o.max_block) {
    h->st.full_chains++;
    if ((rc = olsh_emit_chain(h, c, emit, ctx)) != 0) return rc;
  }
  if (h->count > h->o.mmax) return olsh_drain(h, h->o.mmin, emit, ctx, &h->st.mem_chains);
  return 0;
}

int ba_olsh_push(ba_olsh_t *h, const ba_record_t *recs, size_t n, ba_record_sink_fn emit, void *ctx) {
  BA_RETURN_IF(!h || (!recs && n) || !emit, BA_ERR_INVALID);
  for (size_t i = 0; i < n; i++) {
    int rc = olsh_push_one(h, &recs[i], emit, ctx);
    if (rc != 0) return rc;
  }
  return 0;
}

int ba_olsh_flush(ba_olsh_t *h, ba_record_sink_fn emit, void *ctx) {
  BA_RETURN_IF(!h || !emit, BA_ERR_INVALID);
  return olsh_drain(h, 0, emit, ctx, NULL);
}
