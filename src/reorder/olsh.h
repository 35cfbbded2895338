/* oLSH: NET-FLi's online locality-sensitive-hashing reordering buffer
 * (netfli-archive-and-index.txt §4.4, Program 1). Groups similar records so
 * column blocks and bitmap indexes compress better. Depends on nothing but the
 * record type. Records are copied in (frames included) and emitted in batches.
 *
 * Program 1, as implemented here, for every pushed record r:
 *   v  = (src a.b.c.d, dst a.b.c.d, src port, dst port, protocol)   d = 11
 *        (IPv6: the first four address bytes stand for a.b.c.d), each
 *        dimension multiplied by its weight (all 1 = the paper's raw vector)
 *   h(a,b,v) = floor((a.v + b) / W), a ~ N(0,1)^11, b ~ U[0,W)   (p-stable, Datar et al.)
 *   H1 = sum_i h(a_i,b_i,v) mod P     picks the chain
 *   H2 = sum_i h(a'_i,b'_i,v) mod Q   other projections: the chain's sort key
 *   the chain is kept insertion-sorted by H2 (stable: equal keys keep arrival order);
 *     with chain_order = BA_OLSH_ORDER_TUPLE by the exact (address pair, dst
 *     port, protocol) instead, with BA_OLSH_ORDER_DST (the default) by (dst
 *     address, src address, dst port, src port), see ba_olsh_opts_init
 *   if chain length > maxBlockSize: emit the chain
 *   if buffered > MMax: emit the longest chain, repeatedly, until buffered <= MMin
 *     (BA_OLSH_PURGE_LONGEST); the default, BA_OLSH_PURGE_SORTED, emits the
 *     whole buffer instead, every chain merged in the chain order
 * Ties between equally long chains go to the chain that reached that length
 * most recently. ba_olsh_flush emits the longest chain until none is left
 * (BA_OLSH_PURGE_SORTED: the whole buffer, sorted, in batches of at most
 * 16384 records).
 *
 * Memory: at most MMax records (after every push returns) and at most
 * frame_bytes bytes of packet frames are buffered; when a frame does not fit,
 * the longest chains (BA_OLSH_PURGE_SORTED: all records) are emitted until
 * the buffered frames take at most half the frame budget, and a frame larger
 * than the whole budget passes straight through (after everything buffered). ba_olsh_mem_bound gives the largest
 * number of bytes a handle ever allocates, whatever the input. */
#ifndef BA_OLSH_H
#define BA_OLSH_H

#include <stddef.h>
#include <stdint.h>

#include "bitarc/record.h"

typedef struct ba_olsh_opts {
  uint32_t nfuncs;          /* LSH functions summed into H1 (and H2), 1..64 */
  uint32_t nchains;         /* P: H1 mod P picks the chain */
  uint32_t max_block;       /* maxBlockSize */
  uint32_t mmax, mmin;      /* memory bounds in records (MMax, MMin), mmin < mmax */
  double width;             /* bucket width w of the p-stable hash */
  uint64_t seed;            /* fixed: runs are reproducible */
  uint32_t q;               /* Q: H2 mod Q is the chain sort key */
  uint64_t frame_bytes;     /* budget for buffered packet-frame bytes */
  /* Scale of each vector dimension (src a,b,c,d, dst a,b,c,d, src port, dst
   * port, protocol), i.e. the metric the LSH preserves. All 1 is the paper's
   * raw vector; see ba_olsh_opts_init for the default and why. */
  double weight[11];
  /* Order of the records of an emitted chain: BA_OLSH_ORDER_H2 = Program 1
   * (stably by H2); BA_OLSH_ORDER_TUPLE = stably by (address pair, dst
   * port, protocol), so equal host pairs of a chain come out as runs in
   * arrival (time) order; BA_OLSH_ORDER_DST = stably by (dst address, src
   * address, dst port, src port). IPv6 addresses by a 32-bit fold. */
  uint32_t chain_order;
  /* What a memory purge (more than MMax records buffered), a frame purge and
   * ba_olsh_flush emit: BA_OLSH_PURGE_LONGEST = Program 1 (the longest
   * chain, repeatedly, down to MMin); BA_OLSH_PURGE_SORTED = the whole
   * buffer at once (MMin unused), merged across chains in chain_order
   * (which must not be BA_OLSH_ORDER_H2), ties chain by chain in arrival
   * order. Chains longer than maxBlockSize are emitted alone either way. */
  uint32_t purge;
} ba_olsh_opts_t;

enum { BA_OLSH_ORDER_H2 = 0, BA_OLSH_ORDER_TUPLE = 1, BA_OLSH_ORDER_DST = 2 };
enum { BA_OLSH_PURGE_LONGEST = 0, BA_OLSH_PURGE_SORTED = 1 };

typedef struct ba_olsh ba_olsh_t;

typedef struct ba_olsh_stats {
  uint64_t pushed;          /* records accepted */
  uint64_t emitted;         /* records handed to the sink */
  uint64_t batches;         /* sink calls */
  uint64_t full_chains;     /* chains emitted because they exceeded maxBlockSize */
  uint64_t mem_chains;      /* chains emitted because buffered records exceeded MMax */
  uint64_t frame_chains;    /* chains emitted to make room for frames */
  uint64_t passthrough;     /* frames larger than the frame budget, emitted alone */
  uint64_t compactions;     /* frame-arena compactions */
} ba_olsh_stats_t;

void ba_olsh_opts_init(ba_olsh_opts_t *o);
/* BA_ERR_INVALID for out-of-range options. */
int ba_olsh_create(const ba_olsh_opts_t *o, ba_olsh_t **out);
void ba_olsh_free(ba_olsh_t *h);
/* Buffers records; calls emit with reordered batches whenever a bound is hit.
 * Batches are borrowed: records and frames stay valid only during the call.
 * A non-zero return from emit stops the push and is returned; the failed
 * batch counts as delivered and records after the one being pushed are not
 * taken (the handle stays usable). */
int ba_olsh_push(ba_olsh_t *h, const ba_record_t *recs, size_t n, ba_record_sink_fn emit, void *ctx);
/* Emits everything still buffered (slice boundary, close). */
int ba_olsh_flush(ba_olsh_t *h, ba_record_sink_fn emit, void *ctx);
/* Records currently buffered. */
size_t ba_olsh_buffered(const ba_olsh_t *h);
/* Frame bytes currently buffered. */
uint64_t ba_olsh_buffered_frame_bytes(const ba_olsh_t *h);
void ba_olsh_get_stats(const ba_olsh_t *h, ba_olsh_stats_t *st);
/* Upper bound on the bytes a handle created with these options ever holds
 * allocated (0 if the options are invalid). */
size_t ba_olsh_mem_bound(const ba_olsh_opts_t *o);
/* Bytes the handle holds allocated now. */
size_t ba_olsh_mem_bytes(const ba_olsh_t *h);
/* The two hash values of a record (for tests and diagnostics). */
void ba_olsh_hash(const ba_olsh_t *h, const ba_record_t *r, uint32_t *h1, uint32_t *h2);

#endif
