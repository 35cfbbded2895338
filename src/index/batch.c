/* Batch (sort-based) index builder, IMC'13 §3 on the CPU: pair every row with
 * its value, sort the pairs by value with an LSD radix sort over only the bits
 * the largest value needs (stable, so each value's rows stay ascending), then
 * build each value's bitmap from its row list. Attributes are spread over
 * pthreads. The bitmaps equal the online builder's byte for byte. */
#include <pthread.h>
#include <string.h>

#include "common/common.h"
#include "index/index.h"

int ba_idx_bitmap_from_rows(ba_codec_t codec, const uint32_t *rows, size_t n, uint64_t nrows,
                            ba_bitmap_t **out) {
  unsigned G = ba_idx_chunk_rows(codec);
  BA_RETURN_IF(G == 0 || !out, BA_ERR_INVALID);
  ba_bitmap_t *bm;
  BA_FORWARD(ba_bitmap_create(codec, &bm));
  int rc = BA_OK;
  uint64_t done = 0; /* chunks described */
  size_t i = 0;
  while (i < n) {
    uint64_t g = rows[i] / G;
    uint64_t lit = 0;
    for (; i < n && rows[i] / G == g; i++) lit |= 1ull << (G - 1 - (rows[i] - g * G));
    if (g > done && (rc = ba_bitmap_append_run(bm, 0, (g - done) * G)) < 0) goto fail;
    uint64_t left = nrows - g * G;
    unsigned keep = left < G ? (unsigned)left : G;
    if ((rc = ba_bitmap_append_bits(bm, lit >> (G - keep), keep)) < 0) goto fail;
    done = g + 1;
  }
  if ((rc = ba_bitmap_finish(bm, nrows)) < 0) goto fail;
  *out = bm;
  return BA_OK;
fail:
  ba_bitmap_free(bm);
  return rc;
}

/* Stable LSD radix sort of row ids by value; digits of up to 16 bits. */
static int sort_rows(const uint32_t *vals, size_t n, uint32_t maxv, uint32_t *rows_out,
                     uint32_t *keys_out) {
  unsigned bits = 0;
  while (bits < 32 && (maxv >> bits)) bits++;
  if (bits == 0) bits = 1;
  unsigned passes = (bits + 15) / 16;
  unsigned dbits = (bits + passes - 1) / passes;
  size_t nb = (size_t)1 << dbits;
  uint32_t *cnt = ba_malloc(nb * sizeof *cnt);
  uint32_t *tk = NULL, *tr = NULL;
  if (passes > 1) {
    tk = ba_malloc(n * sizeof *tk);
    tr = ba_malloc(n * sizeof *tr);
  }
  if (!cnt || (passes > 1 && (!tk || !tr))) {
    ba_free(cnt);
    ba_free(tk);
    ba_free(tr);
    return BA_ERR_NOMEM;
  }
  /* Pass 0 reads (vals, implicit rows) and skips BA_IDX_NONE. */
  size_t m = 0;
  const uint32_t *sk = NULL, *sr = NULL;
  for (unsigned p = 0; p < passes; p++) {
    unsigned sh = p * dbits;
    uint32_t mask = (uint32_t)(nb - 1);
    uint32_t *dk = ((passes - p) & 1) ? keys_out : tk;
    uint32_t *dr = ((passes - p) & 1) ? rows_out : tr;
    memset(cnt, 0, nb * sizeof *cnt);
    if (p == 0) {
      for (size_t i = 0; i < n; i++)
        if (vals[i] != BA_IDX_NONE) cnt[(vals[i] >> sh) & mask]++;
    } else {
      for (size_t i = 0; i < m; i++) cnt[(sk[i] >> sh) & mask]++;
    }
    uint32_t sum = 0;
    for (size_t d = 0; d < nb; d++) {
      uint32_t c = cnt[d];
      cnt[d] = sum;
      sum += c;
    }
    if (p == 0) {
      for (size_t i = 0; i < n; i++) {
        uint32_t v = vals[i];
        if (v == BA_IDX_NONE) continue;
        uint32_t pos = cnt[(v >> sh) & mask]++;
        dk[pos] = v;
        dr[pos] = (uint32_t)i;
      }
      m = sum;
    } else {
      for (size_t i = 0; i < m; i++) {
        uint32_t pos = cnt[(sk[i] >> sh) & mask]++;
        dk[pos] = sk[i];
        dr[pos] = sr[i];
      }
    }
    sk = dk;
    sr = dr;
  }
  ba_free(cnt);
  ba_free(tk);
  ba_free(tr);
  (void)m;
  return BA_OK;
}

int ba_idx_batch_build(ba_codec_t codec, uint32_t domain, const uint32_t *vals, size_t n,
                       ba_idx_attr_t *out) {
  BA_RETURN_IF(!out || (n && !vals) || domain == 0 || domain > BA_IDX_MAX_DOMAIN, BA_ERR_INVALID);
  BA_RETURN_IF(ba_idx_chunk_rows(codec) == 0, BA_ERR_INVALID);
  BA_RETURN_IF(n > UINT32_MAX, BA_ERR_OVERFLOW);
  memset(out, 0, sizeof *out);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (vals[i] == BA_IDX_NONE) continue;
    BA_RETURN_IF(vals[i] >= domain, BA_ERR_INVALID);
    m++;
  }
  if (m == 0) return BA_OK;
  uint32_t *rows = ba_malloc(m * sizeof *rows), *keys = ba_malloc(m * sizeof *keys);
  int rc = BA_ERR_NOMEM;
  if (!rows || !keys) goto done;
  if ((rc = sort_rows(vals, n, domain - 1, rows, keys)) < 0) goto done;
  size_t nv = 0;
  for (size_t i = 0; i < m; i++)
    if (i == 0 || keys[i] != keys[i - 1]) nv++;
  out->values = ba_malloc(nv * sizeof *out->values);
  out->bms = ba_calloc(nv, sizeof *out->bms);
  rc = BA_ERR_NOMEM;
  if (!out->values || !out->bms) goto done;
  for (size_t i = 0; i < m;) {
    size_t j = i;
    while (j < m && keys[j] == keys[i]) j++;
    out->values[out->n] = keys[i];
    if ((rc = ba_idx_bitmap_from_rows(codec, rows + i, j - i, n, &out->bms[out->n])) < 0) goto done;
    out->n++;
    i = j;
  }
  rc = BA_OK;
done:
  if (rc < 0) ba_idx_attr_clear(out);
  ba_free(rows);
  ba_free(keys);
  return rc;
}

/* ---- multi-attribute CPU build over pthreads ---- */
typedef struct cpu_job {
  ba_codec_t codec;
  const uint32_t *const *vals;
  const uint32_t *domains;
  size_t nattr, nrows;
  ba_idx_attr_t *out;
  pthread_mutex_t mu;
  size_t next;
  int rc;
} cpu_job_t;

static void *cpu_worker(void *arg) {
  cpu_job_t *j = arg;
  for (;;) {
    pthread_mutex_lock(&j->mu);
    size_t a = j->next++;
    int stop = j->rc < 0;
    pthread_mutex_unlock(&j->mu);
    if (stop || a >= j->nattr) break;
    if (!j->vals[a]) continue;
    int rc = ba_idx_batch_build(j->codec, j->domains[a], j->vals[a], j->nrows, &j->out[a]);
    if (rc < 0) {
      pthread_mutex_lock(&j->mu);
      if (j->rc == BA_OK) j->rc = rc;
      pthread_mutex_unlock(&j->mu);
    }
  }
  return NULL;
}

static int cpu_build(ba_codec_t codec, const uint32_t *const *vals, const uint32_t *domains,
                     size_t nattr, size_t nrows, int threads, ba_idx_attr_t *out) {
  cpu_job_t j = {.codec = codec, .vals = vals, .domains = domains, .nattr = nattr, .nrows = nrows,
                 .out = out, .next = 0, .rc = BA_OK};
  pthread_mutex_init(&j.mu, NULL);
  if (threads < 1) threads = 1;
  if ((size_t)threads > nattr) threads = nattr ? (int)nattr : 1;
  pthread_t tid[64];
  int started = 0;
  for (int t = 1; t < threads && t < 64; t++) {
    if (pthread_create(&tid[started], NULL, cpu_worker, &j) != 0) break;
    started++;
  }
  cpu_worker(&j);
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
  pthread_mutex_destroy(&j.mu);
  if (j.rc < 0)
    for (size_t a = 0; a < nattr; a++) ba_idx_attr_clear(&out[a]);
  return j.rc;
}

typedef struct device_entry {
  const char *name;
  ba_idx_device_fn fn;
} device_entry_t;

/* "cpu" is always built; "omp" and "gpu" are filled in by src/gpu when built. */
static device_entry_t g_devices[8] = {{"cpu", cpu_build}, {"omp", NULL}, {"gpu", NULL}};

int ba_idx_register_device(const char *name, ba_idx_device_fn fn) {
  BA_RETURN_IF(!name || !fn, BA_ERR_INVALID);
  for (size_t i = 0; i < BA_ARRAY_LEN(g_devices); i++) {
    if (g_devices[i].name && !strcmp(g_devices[i].name, name)) {
      g_devices[i].fn = fn;
      return BA_OK;
    }
    if (!g_devices[i].name) {
      g_devices[i].name = name;
      g_devices[i].fn = fn;
      return BA_OK;
    }
  }
  return BA_ERR_OVERFLOW;
}

int ba_idx_batch_build_many(const char *device, ba_codec_t codec, const uint32_t *const *vals,
                            const uint32_t *domains, size_t nattr, size_t nrows, int threads,
                            ba_idx_attr_t *out) {
  BA_RETURN_IF(!vals || !domains || !out, BA_ERR_INVALID);
  for (size_t a = 0; a < nattr; a++) memset(&out[a], 0, sizeof out[a]);
  if (!device) device = "cpu";
  for (size_t i = 0; i < BA_ARRAY_LEN(g_devices); i++) {
    if (!g_devices[i].name || strcmp(g_devices[i].name, device)) continue;
    if (!g_devices[i].fn) return BA_ERR_NODEVICE; /* device not built */
    return g_devices[i].fn(codec, vals, domains, nattr, nrows, threads, out);
  }
  return BA_ERR_INVALID;
}
