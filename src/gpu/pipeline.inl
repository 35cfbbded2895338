/* The device pipelines, written once against Thrust primitives. Included by
 * build_omp.cpp (host C++ compiler, Thrust OpenMP system) and build_cuda.cu
 * (nvcc, Thrust CUDA system). The including file defines, before including:
 *   BA_CCCL_NS     the namespace CCCL is wrapped in (distinct per back end, so
 *                  the two instantiations of Thrust never collide in libbitarc)
 *   BA_HD          __host__ __device__ or nothing
 *   BA_SYNC()      waits for the device (for step timings)
 *   ba_vec<T>      the back end's vector type; ba_par: its execution policy
 *   ba_popc32/64, ba_clz32: bit counts usable in device code
 *   sort_by_value(): stable sort of row ids by value over key_bits bits
 *   BA_GPU_FN(x)   the C name of entry point x; BA_GPU_DEVNAME for messages
 *   BA_GPU_LINKAGE the entry points' linkage (extern "C", or static in the module)
 *   BA_GPU_ALLOC(n) the allocator of the output arrays the caller frees
 * and includes the Thrust headers listed below. Everything here is inside
 * BA_CCCL_NS::bagpu so each back end gets its own symbols.
 *
 * Word formats are those of the codec spec (MSB-first rows D-1, fills of
 * count >= 1 D-4, zero-padded tail group encoded D-3, PLWAH s = 1 with the
 * 0-fill and 1-fill piggyback D-8, MASC with the carrier on the last 0-fill
 * D-12). See README.md for how this departs from IMC'13 and GPU-MASC. */

#include <chrono>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <exception>
#include <new>

#include <thrust/fill.h>

namespace BA_CCCL_NS {
namespace bagpu {

typedef std::uint32_t u32;
typedef std::uint64_t u64;

static inline double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/* Step timer: lap(step) adds the time since the last lap to ms[step]. */
struct step_timer {
  double *ms;
  double t;
  explicit step_timer(double *m) : ms(m), t(now_ms()) {}
  void lap(int step) {
    BA_SYNC();
    double n = now_ms();
    ms[step] += n - t;
    t = n;
  }
};

/* ------------------------------------------------------------ group codecs */

/* W = word type, G = rows per group, FILLMAX = largest fill count, PL = PLWAH. */
template <class W, unsigned G, bool PL> struct gcodec {
  static BA_HD W all() { return (W)(((W)1 << G) - 1); }
  static BA_HD u64 fillmax() {
    return PL ? ((1ull << 25) - 1) : (G == 31 ? ((1ull << 30) - 1) : ((1ull << 62) - 1));
  }
  static BA_HD W fill(unsigned v, u64 cnt, unsigned p) {
    W w = (W)((W)1 << (sizeof(W) * 8 - 1)) | (W)((W)v << (sizeof(W) * 8 - 2)) | (W)cnt;
    if (PL) w |= (W)((W)p << 25);
    return w;
  }
};

/* Keys of reduce-by-key: (value, chunk id) packed in 64 bits; chunk ids and
 * literals are computed on the fly from the sorted row ids (IMC'13 Alg. 2 and
 * 3 fused: the n-long chIds and partial-literal arrays are never stored). */
template <unsigned G> struct key_of_row {
  const u32 *val, *rid;
  BA_HD u64 operator()(u64 i) const { return ((u64)val[i] << 32) | (u64)(rid[i] / G); }
};
template <class W, unsigned G> struct lit_of_row {
  const u32 *rid;
  BA_HD W operator()(u64 i) const { return (W)((W)1 << (G - 1 - rid[i] % G)); }
};
template <class W> struct bitor_op {
  BA_HD W operator()(W a, W b) const { return a | b; }
};
template <class W> struct bitand_op {
  BA_HD W operator()(W a, W b) const { return a & b; }
};

/* brk(j) = j unless entry j is an all-ones literal continued by the next
 * entry (same value, next chunk, all ones too); the reverse min-scan of it
 * gives the last entry of each 1-run. */
template <class W, unsigned G> struct run_break {
  const u64 *key;
  const W *lit;
  u64 k;
  BA_HD u64 operator()(u64 j) const {
    const W all = (W)(((W)1 << G) - 1);
    if (lit[j] == all && j + 1 < k && lit[j + 1] == all && (key[j + 1] >> 32) == (key[j] >> 32) &&
        (u32)key[j + 1] == (u32)key[j] + 1)
      return ~(u64)0;
    return j;
  }
};
struct min_op {
  BA_HD u64 operator()(u64 a, u64 b) const { return a < b ? a : b; }
};

/* Words produced by entry j = one distinct (value, chunk) with its literal
 * (IMC'13 Alg. 4 with the spec's erratum: a head's fill is its chunk id; Alg.
 * 7 for PLWAH incl. 1-fill piggyback; 1-fills for runs of all-ones chunks,
 * which IMC'13 leaves out; the trailing 0-fill up to the piece's last chunk).
 * The same function counts (out == NULL) and writes, so the two agree. */
template <class W, unsigned G, bool PL> struct group_emit {
  typedef gcodec<W, G, PL> C;
  const u64 *key;
  const W *lit;
  const u64 *runend;
  u64 k;
  u64 ngroups;

  BA_HD static u64 put_fill(W *out, u64 n, unsigned v, u64 cnt, unsigned p) {
    const u64 mx = C::fillmax();
    u64 nw = (cnt + mx - 1) / mx;
    if (out) {
      for (u64 i = 0; i + 1 < nw; i++) out[n + i] = C::fill(v, mx, 0);
      out[n + nw - 1] = C::fill(v, cnt - (nw - 1) * mx, p);
    }
    return n + nw;
  }
  BA_HD static unsigned ones(W x) {
    return sizeof(W) == 4 ? ba_popc32((u32)x) : ba_popc64((u64)x);
  }
  /* PLWAH position of the single odd bit of a 31-bit payload: 1 + its row. */
  BA_HD static unsigned pos(W odd) { return ba_clz32((u32)odd); }

  BA_HD u64 emit(u64 j, W *out) const {
    const W all = C::all();
    const u64 kj = key[j];
    const u32 v = (u32)(kj >> 32), g = (u32)kj;
    const bool head = j == 0 || (u32)(key[j - 1] >> 32) != v;
    const bool last = j + 1 == k || (u32)(key[j + 1] >> 32) != v;
    const u64 gap = head ? (u64)g : (u64)(g - (u32)key[j - 1] - 1);
    const W l = lit[j];
    const bool full = l == all;
    const bool prevfull = !head && gap == 0 && lit[j - 1] == all;
    bool pig0 = false, pig1 = false;
    if (PL && !full) {
      unsigned c = ones(l);
      pig0 = gap > 0 && c == 1;
      pig1 = prevfull && c == G - 1;
    }
    u64 n = 0;
    if (gap > 0) n = put_fill(out, n, 0, gap, pig0 ? pos(l) : 0);
    if (full) {
      if (!prevfull) { /* first chunk of a 1-run: one 1-fill for the run */
        u64 e = runend[j];
        unsigned p = 0;
        if (PL && e + 1 < k && (u32)(key[e + 1] >> 32) == v && (u32)key[e + 1] == (u32)key[e] + 1 &&
            ones(lit[e + 1]) == G - 1)
          p = pos((W)(all ^ lit[e + 1]));
        n = put_fill(out, n, 1, (u64)((u32)key[e] - g) + 1, p);
      }
    } else if (!pig0 && !pig1) {
      if (out) out[n] = l;
      n++;
    }
    if (last && (u64)g + 1 < ngroups) n = put_fill(out, n, 0, ngroups - g - 1, 0);
    return n;
  }
};
template <class E> struct count_op {
  E e;
  BA_HD u64 operator()(u64 j) const { return e.emit(j, (typename E::word_t *)0); }
};
template <class E, class W> struct write_op {
  E e;
  const u64 *offs;
  W *out;
  BA_HD void operator()(u64 j) const { e.emit(j, out + offs[j]); }
};

/* Head flags of sorted (value, ...) entries. */
struct head_of_key {
  const u64 *key;
  BA_HD bool operator()(u64 j) const { return j == 0 || (key[j] >> 32) != (key[j - 1] >> 32); }
};
struct meta_op {
  const u64 *key;
  const u64 *offs;
  const u64 *headidx;
  u32 *keys;
  u64 *offsets;
  BA_HD void operator()(u64 i) const {
    keys[i] = (u32)(key[headidx[i]] >> 32);
    offsets[i] = offs[headidx[i]];
  }
};

/* One element to or from the device (no thrust::reference: its host path
 * binds a null policy reference, which UBSan rejects). */
template <class T> static T get1(const ba_vec<T> &v, size_t i) {
  T x;
  thrust::copy(v.begin() + i, v.begin() + i + 1, &x);
  return x;
}
template <class T> static void set1(ba_vec<T> &v, size_t i, T x) {
  thrust::fill_n(ba_par, v.begin() + i, 1, x);
}

template <class T> static T *host_alloc(size_t n) {
  T *p = (T *)BA_GPU_ALLOC(n ? n * sizeof(T) : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

/* Copies values in and sorts row ids by value (IMC'13 Alg. 1 lines 1-2). */
static void load_and_sort(ba_gpu_piece_t *p, step_timer &tm, ba_vec<u32> &sval, ba_vec<u32> &srid) {
  ba_vec<u32> dval(p->values, p->values + p->n);
  tm.lap(BA_GPU_STEP_COPY_IN);
  sval.resize(p->n);
  srid.resize(p->n);
  sort_by_value(dval, sval, srid, p->n, p->key_bits);
  tm.lap(BA_GPU_STEP_SORT);
}

/* Scans per-entry word counts, writes the words, builds keys/offsets from the
 * entries flagged as heads, and copies everything out. */
template <class W, class Emit, class HeadFn>
static void fuse_and_copy(ba_gpu_piece_t *p, step_timer &tm, const Emit &em, u64 k, HeadFn headfn,
                          const u64 *keyarr_for_meta, bool masc) {
  (void)masc;
  ba_vec<u64> offs(k + 1);
  thrust::counting_iterator<u64> c0(0);
  count_op<Emit> cnt = {em};
  thrust::transform(ba_par, c0, c0 + k, offs.begin(), cnt);
  tm.lap(BA_GPU_STEP_FILLS);
  thrust::exclusive_scan(ba_par, offs.begin(), offs.end(), offs.begin(), (u64)0);
  u64 total = get1(offs, k);
  ba_vec<W> words(total);
  write_op<Emit, W> wr = {em, thrust::raw_pointer_cast(offs.data()), thrust::raw_pointer_cast(words.data())};
  thrust::for_each(ba_par, c0, c0 + k, wr);
  tm.lap(BA_GPU_STEP_FUSE);
  ba_vec<u64> headidx(k);
  u64 nkeys = (u64)(thrust::copy_if(ba_par, c0, c0 + k, c0, headidx.begin(), headfn) - headidx.begin());
  ba_vec<u32> keys(nkeys);
  ba_vec<u64> offsets(nkeys + 1);
  meta_op mo = {keyarr_for_meta, thrust::raw_pointer_cast(offs.data()),
                thrust::raw_pointer_cast(headidx.data()), thrust::raw_pointer_cast(keys.data()),
                thrust::raw_pointer_cast(offsets.data())};
  thrust::for_each(ba_par, c0, c0 + nkeys, mo);
  set1(offsets, nkeys, total);
  tm.lap(BA_GPU_STEP_META);
  p->keys = host_alloc<u32>(nkeys);
  p->offsets = host_alloc<u64>(nkeys + 1);
  p->words = host_alloc<W>(total);
  thrust::copy(keys.begin(), keys.end(), p->keys);
  thrust::copy(offsets.begin(), offsets.end(), p->offsets);
  thrust::copy(words.begin(), words.end(), (W *)p->words);
  p->nkeys = nkeys;
  p->nwords = total;
  tm.lap(BA_GPU_STEP_COPY_OUT);
}

template <class W, unsigned G, bool PL> struct group_emit_t : group_emit<W, G, PL> {
  typedef W word_t;
};

template <class W, unsigned G, bool PL> static void build_group(ba_gpu_piece_t *p) {
  step_timer tm(p->ms);
  ba_vec<u32> sval, srid;
  load_and_sort(p, tm, sval, srid);
  const u64 n = p->n;
  thrust::counting_iterator<u64> c0(0);
  key_of_row<G> kf = {thrust::raw_pointer_cast(sval.data()), thrust::raw_pointer_cast(srid.data())};
  lit_of_row<W, G> lf = {thrust::raw_pointer_cast(srid.data())};
  ba_vec<u64> key(n);
  ba_vec<W> lit(n);
  u64 k = (u64)(thrust::reduce_by_key(ba_par, thrust::make_transform_iterator(c0, kf),
                                      thrust::make_transform_iterator(c0 + n, kf),
                                      thrust::make_transform_iterator(c0, lf), key.begin(), lit.begin(),
                                      thrust::equal_to<u64>(), bitor_op<W>())
                    .first -
                key.begin());
  tm.lap(BA_GPU_STEP_LITERALS);
  { /* free the sort buffers before the output is allocated */
    ba_vec<u32>().swap(sval);
    ba_vec<u32>().swap(srid);
  }
  ba_vec<u64> runend(k);
  run_break<W, G> rb = {thrust::raw_pointer_cast(key.data()), thrust::raw_pointer_cast(lit.data()), k};
  thrust::inclusive_scan(
      ba_par, thrust::make_reverse_iterator(thrust::make_transform_iterator(c0 + k, rb)),
      thrust::make_reverse_iterator(thrust::make_transform_iterator(c0, rb)),
      thrust::make_reverse_iterator(runend.end()), min_op());
  group_emit_t<W, G, PL> em;
  em.key = thrust::raw_pointer_cast(key.data());
  em.lit = thrust::raw_pointer_cast(lit.data());
  em.runend = thrust::raw_pointer_cast(runend.data());
  em.k = k;
  em.ngroups = (n + G - 1) / G;
  head_of_key hf = {em.key};
  fuse_and_copy<W>(p, tm, em, k, hf, em.key, false);
}

/* -------------------------------------------------------------------- MASC */

/* GPU-MASC (MASC §IV) as runs of consecutive row ids: A-table = the 1-runs
 * (starts found by stream compaction), F-table + MergeFills + Encoding fused
 * into one emit per 1-run. */
struct run_start {
  const u32 *val, *rid;
  BA_HD bool operator()(u64 i) const {
    return i == 0 || val[i] != val[i - 1] || rid[i] != rid[i - 1] + 1;
  }
};

template <bool QT> struct masc_emit {
  typedef u32 word_t;
  const u32 *val, *rid;
  const u64 *start; /* run starts (indices into val/rid) */
  u64 m, n;

  BA_HD static u64 put(u32 *out, u64 w, int kind, u64 len, u32 carrier) {
    const u64 mx = (u64)((1u << 20) - 1) * 31 + 30;
    u64 nw = (len + mx - 1) / mx;
    if (out) {
      for (u64 i = 0; i < nw; i++) {
        u64 l = i + 1 < nw ? mx : len - (nw - 1) * mx;
        u32 x = (u32)((l / 31) << 5) | (u32)(l % 31);
        if (kind == 1)
          x |= 0x80000000u | (QT ? 0x40000000u : 0u);
        else if (i + 1 == nw && carrier)
          x |= 0x40000000u | (carrier << 25);
        out[w + i] = x;
      }
    }
    return w + nw;
  }
  BA_HD u64 emit(u64 r, u32 *out) const {
    const u64 s = start[r], end = r + 1 < m ? start[r + 1] : n, e = end - 1;
    const u32 v = val[s];
    const bool head = s == 0 || val[s - 1] != v;
    const bool last = end == n || val[end] != v;
    const u64 o = e - s + 1;
    const u64 z = head ? (u64)rid[s] : (u64)(rid[s] - rid[s - 1] - 1);
    u64 w = 0;
    if (z > 0 && o <= 30) {
      w = put(out, w, 0, z, (u32)o);
    } else {
      if (z > 0) w = put(out, w, 0, z, 0);
      w = put(out, w, 1, o, 0);
    }
    if (last && (u64)rid[e] + 1 < n) w = put(out, w, 0, n - rid[e] - 1, 0);
    return w;
  }
};
struct masc_head {
  const u32 *val;
  const u64 *start;
  BA_HD bool operator()(u64 r) const { return r == 0 || val[start[r]] != val[start[r] - 1]; }
};
/* meta_op reads keys as key[i] >> 32: give it (value << 32) per run. */
struct masc_key {
  const u32 *val;
  const u64 *start;
  BA_HD u64 operator()(u64 r) const { return (u64)val[start[r]] << 32; }
};

template <bool QT> static void build_masc(ba_gpu_piece_t *p) {
  step_timer tm(p->ms);
  ba_vec<u32> sval, srid;
  load_and_sort(p, tm, sval, srid);
  const u64 n = p->n;
  thrust::counting_iterator<u64> c0(0);
  run_start rs = {thrust::raw_pointer_cast(sval.data()), thrust::raw_pointer_cast(srid.data())};
  ba_vec<u64> start(n);
  u64 m = (u64)(thrust::copy_if(ba_par, c0, c0 + n, c0, start.begin(), rs) - start.begin());
  tm.lap(BA_GPU_STEP_LITERALS);
  masc_emit<QT> em = {rs.val, rs.rid, thrust::raw_pointer_cast(start.data()), m, n};
  ba_vec<u64> rkey(m);
  masc_key mk = {rs.val, em.start};
  thrust::transform(ba_par, c0, c0 + m, rkey.begin(), mk);
  masc_head hf = {rs.val, em.start};
  fuse_and_copy<u32>(p, tm, em, m, hf, thrust::raw_pointer_cast(rkey.data()), true);
}

static void build_piece(ba_gpu_piece_t *p) {
  switch (p->kind) {
  case BA_GPU_K_WAH32: build_group<u32, 31, false>(p); break;
  case BA_GPU_K_WAH64: build_group<u64, 63, false>(p); break;
  case BA_GPU_K_PLWAH: build_group<u32, 31, true>(p); break;
  case BA_GPU_K_MASC: build_masc<false>(p); break;
  case BA_GPU_K_MASC_QT: build_masc<true>(p); break;
  default: throw std::bad_alloc(); /* unreachable: the C front checks */
  }
}

/* ------------------------------------------------------------ range query */

static const u64 ALL63 = 0x7FFFFFFFFFFFFFFFull;

/* Alg. 2 of the range-query paper, for all columns at once. */
struct decomp_size {
  BA_HD u64 operator()(u64 w) const { return (w >> 63) ? (w & 0x3FFFFFFFFFFFFFFFull) : 1; }
};
struct decomp_expand {
  const u64 *words;
  BA_HD u64 operator()(u64 src) const {
    u64 w = words[src];
    if (!(w >> 63)) return w;
    return ((w >> 62) & 1) ? ALL63 : 0;
  }
};

struct op_of {
  int op; /* 0 AND, 1 OR */
  BA_HD u64 ident() const { return op ? 0 : ALL63; }
  BA_HD u64 operator()(u64 a, u64 b) const { return op ? (a | b) : (a & b); }
};

/* COA: one level of the pairwise column tree. */
struct coa_level {
  u64 *d;
  u64 groups, half;
  op_of f;
  BA_HD void operator()(u64 i) const {
    u64 c = i / groups, t = i % groups;
    d[c * groups + t] = f(d[c * groups + t], d[(c + half) * groups + t]);
  }
};
/* ROA: element i of the row-major walk is column i % m of row word i / m. */
struct roa_key {
  u64 m;
  BA_HD u64 operator()(u64 i) const { return i / m; }
};
struct roa_val {
  const u64 *d;
  u64 m, groups;
  BA_HD u64 operator()(u64 i) const { return d[(i % m) * groups + i / m]; }
};
/* Hybrid round 1: tile x row word -> the tile's lowest column. */
struct hybrid_tile {
  u64 *d;
  u64 m, groups, tile;
  op_of f;
  BA_HD void operator()(u64 i) const {
    u64 tl = i / groups, t = i % groups, c0 = tl * tile, c1 = c0 + tile < m ? c0 + tile : m;
    u64 acc = d[c0 * groups + t];
    for (u64 c = c0 + 1; c < c1; c++) acc = f(acc, d[c * groups + t]);
    d[c0 * groups + t] = acc;
  }
};
/* Ideal hybrid (and hybrid round 2 with stride = tile): one row word over all
 * (tile-leading) columns, one write. */
struct row_all {
  const u64 *d;
  u64 m, groups, stride;
  op_of f;
  BA_HD u64 operator()(u64 t) const {
    u64 acc = d[t];
    for (u64 c = stride; c < m; c += stride) acc = f(acc, d[c * groups + t]);
    return acc;
  }
};

/* Back to canonical wah64: runs of equal zero/all-ones words become fills. */
struct wclass {
  BA_HD static int of(u64 w) { return w == 0 ? 0 : (w == ALL63 ? 1 : 2); }
};
struct wrun_start {
  const u64 *r;
  BA_HD bool operator()(u64 t) const {
    int c = wclass::of(r[t]);
    return t == 0 || c == 2 || c != wclass::of(r[t - 1]);
  }
};
struct wrun_emit {
  typedef u64 word_t;
  const u64 *r, *start;
  u64 nr, groups;
  BA_HD u64 emit(u64 j, u64 *out) const {
    u64 s = start[j], e = j + 1 < nr ? start[j + 1] : groups;
    int c = wclass::of(r[s]);
    if (c == 2) {
      if (out) out[0] = r[s];
      return 1;
    }
    return group_emit<u64, 63, false>::put_fill(out, 0, (unsigned)c, e - s, 0);
  }
};

static void range(ba_gpu_rangejob_t *j) {
  step_timer tm(j->ms);
  const u64 m = j->m, groups = j->groups, nw = j->colstart[m];
  op_of f = {j->op};
  ba_vec<u64> res(groups);
  if (groups > 0) {
    ba_vec<u64> dw(j->words, j->words + nw);
    tm.lap(BA_GPU_STEP_COPY_IN);
    const u64 D = m * groups;
    ba_vec<u64> startp(nw);
    thrust::transform_exclusive_scan(ba_par, dw.begin(), dw.end(), startp.begin(), decomp_size(), (u64)0,
                                     thrust::plus<u64>());
    ba_vec<u64> src(D, 0);
    if (nw > 1)
      thrust::scatter(ba_par, thrust::make_constant_iterator((u64)1), thrust::make_constant_iterator((u64)1) + (nw - 1),
                      startp.begin() + 1, src.begin());
    thrust::inclusive_scan(ba_par, src.begin(), src.end(), src.begin());
    decomp_expand ex = {thrust::raw_pointer_cast(dw.data())};
    thrust::transform(ba_par, src.begin(), src.end(), src.begin(), ex); /* src now holds the words */
    ba_vec<u64>().swap(startp);
    tm.lap(BA_GPU_STEP_DECOMPRESS);
    u64 *d = thrust::raw_pointer_cast(src.data());
    thrust::counting_iterator<u64> c0(0);
    switch (j->alg) {
    case BA_GPU_RANGE_COA: {
      for (u64 cur = m; cur > 1;) {
        u64 half = (cur + 1) / 2;
        coa_level lv = {d, groups, half, f};
        thrust::for_each(ba_par, c0, c0 + (cur - half) * groups, lv);
        cur = half;
      }
      thrust::copy(ba_par, src.begin(), src.begin() + groups, res.begin());
      break;
    }
    case BA_GPU_RANGE_ROA: {
      roa_key rk = {m};
      roa_val rv = {d, m, groups};
      thrust::reduce_by_key(ba_par, thrust::make_transform_iterator(c0, rk),
                            thrust::make_transform_iterator(c0 + D, rk), thrust::make_transform_iterator(c0, rv),
                            thrust::make_discard_iterator(), res.begin(), thrust::equal_to<u64>(), f);
      break;
    }
    case BA_GPU_RANGE_HYBRID: {
      const u64 tile = 32, ntiles = (m + tile - 1) / tile;
      hybrid_tile ht = {d, m, groups, tile, f};
      thrust::for_each(ba_par, c0, c0 + ntiles * groups, ht);
      row_all ra = {d, m, groups, tile, f};
      thrust::transform(ba_par, c0, c0 + groups, res.begin(), ra);
      break;
    }
    default: {
      row_all ra = {d, m, groups, 1, f};
      thrust::transform(ba_par, c0, c0 + groups, res.begin(), ra);
      break;
    }
    }
    tm.lap(BA_GPU_STEP_REDUCE);
  }
  thrust::counting_iterator<u64> c0(0);
  wrun_start ws = {thrust::raw_pointer_cast(res.data())};
  ba_vec<u64> start(groups);
  u64 nr = (u64)(thrust::copy_if(ba_par, c0, c0 + groups, c0, start.begin(), ws) - start.begin());
  wrun_emit we = {ws.r, thrust::raw_pointer_cast(start.data()), nr, groups};
  ba_vec<u64> offs(nr + 1);
  count_op<wrun_emit> cnt = {we};
  thrust::transform(ba_par, c0, c0 + nr, offs.begin(), cnt);
  thrust::exclusive_scan(ba_par, offs.begin(), offs.end(), offs.begin(), (u64)0);
  u64 total = get1(offs, nr);
  ba_vec<u64> out(total);
  write_op<wrun_emit, u64> wr = {we, thrust::raw_pointer_cast(offs.data()), thrust::raw_pointer_cast(out.data())};
  thrust::for_each(ba_par, c0, c0 + nr, wr);
  tm.lap(BA_GPU_STEP_COMPRESS);
  j->out = host_alloc<u64>(total);
  thrust::copy(out.begin(), out.end(), j->out);
  j->nout = total;
  tm.lap(BA_GPU_STEP_COPY_OUT);
}

} /* namespace bagpu */
} /* namespace BA_CCCL_NS */

/* The back end's C entry points (named by the including file's BA_GPU_FN). */
static int ba_gpu_fail(char *err, size_t cap, const char *what, int code) {
  if (err && cap) std::snprintf(err, cap, "%s device: %s", BA_GPU_DEVNAME, what);
  return code;
}

BA_GPU_LINKAGE int BA_GPU_FN(build)(ba_gpu_piece_t *p, char *err, size_t errcap) {
  try {
    BA_CCCL_NS::bagpu::build_piece(p);
    return BA_OK;
  } catch (const std::bad_alloc &) {
    return ba_gpu_fail(err, errcap, "out of memory", BA_ERR_NOMEM);
  } catch (const std::exception &e) {
    return ba_gpu_fail(err, errcap, e.what(), BA_ERR_IO);
  }
}

BA_GPU_LINKAGE int BA_GPU_FN(range)(ba_gpu_rangejob_t *j, char *err, size_t errcap) {
  try {
    BA_CCCL_NS::bagpu::range(j);
    return BA_OK;
  } catch (const std::bad_alloc &) {
    return ba_gpu_fail(err, errcap, "out of memory", BA_ERR_NOMEM);
  } catch (const std::exception &e) {
    return ba_gpu_fail(err, errcap, e.what(), BA_ERR_IO);
  }
}
