/* Wires the GPU module's pipelines (omp, gpu) into the index module's batch
 * builder, so `bitarc reindex --device omp|gpu` uses them. This lives in cli/
 * because only cli may know both modules (ARCHITECTURE.md: index and gpu each
 * depend on codec alone). */
#include <string.h>

#include "bitarc/gpu.h"
#include "cli/cli.h"
#include "common/common.h"
#include "index/index.h"

/* Builds every attribute on one device. Rows without a value (BA_IDX_NONE, e.g.
 * the IPv4 byte attributes of an IPv6 row) become an extra key `domain` whose
 * column is dropped, so the device sees a dense key space. */
static int device_build(ba_device_t dev, ba_codec_t codec, const uint32_t *const *vals,
                        const uint32_t *domains, size_t nattr, size_t nrows, ba_idx_attr_t *out) {
  ba_gpu_t *g = NULL;
  int rc = ba_gpu_open(dev, &g, NULL, 0);
  if (rc < 0) return rc;
  uint32_t *mapped = NULL;
  for (size_t a = 0; a < nattr && rc >= 0; a++) {
    if (!vals[a]) continue;
    const uint32_t *v = vals[a];
    uint64_t card = domains[a];
    int has_none = 0;
    for (size_t i = 0; i < nrows && !has_none; i++) has_none = v[i] == BA_IDX_NONE;
    if (has_none) {
      if (!mapped && !(mapped = ba_malloc(nrows * sizeof *mapped))) { rc = BA_ERR_NOMEM; break; }
      for (size_t i = 0; i < nrows; i++) mapped[i] = v[i] == BA_IDX_NONE ? domains[a] : v[i];
      v = mapped;
      card = (uint64_t)domains[a] + 1;
    }
    ba_gpu_index_t *ix = NULL;
    if ((rc = ba_gpu_build_index(g, codec, v, nrows, card, &ix)) < 0) break;
    size_t n = ix->nkeys;
    if (has_none && n && ix->keys[n - 1] == domains[a]) n--; /* keys ascend: NONE is last */
    out[a].values = ba_malloc((n ? n : 1) * sizeof *out[a].values);
    out[a].bms = ba_calloc(n ? n : 1, sizeof *out[a].bms);
    if (!out[a].values || !out[a].bms) rc = BA_ERR_NOMEM;
    for (size_t i = 0; i < n && rc >= 0; i++) {
      out[a].values[i] = ix->keys[i];
      rc = ba_gpu_index_bitmap(ix, i, &out[a].bms[i]);
      if (rc >= 0) out[a].n = i + 1;
    }
    ba_gpu_index_free(ix);
  }
  ba_free(mapped);
  ba_gpu_close(g);
  if (rc < 0)
    for (size_t a = 0; a < nattr; a++) ba_idx_attr_clear(&out[a]);
  return rc < 0 ? rc : BA_OK;
}

static int omp_build(ba_codec_t codec, const uint32_t *const *vals, const uint32_t *domains,
                     size_t nattr, size_t nrows, int threads, ba_idx_attr_t *out) {
  (void)threads; /* OpenMP uses every core; OMP_NUM_THREADS limits it */
  return device_build(BA_DEVICE_OMP, codec, vals, domains, nattr, nrows, out);
}

static int gpu_build(ba_codec_t codec, const uint32_t *const *vals, const uint32_t *domains,
                     size_t nattr, size_t nrows, int threads, ba_idx_attr_t *out) {
  (void)threads;
  return device_build(BA_DEVICE_GPU, codec, vals, domains, nattr, nrows, out);
}

int ba_cli_device_name(const char *cmd, const char *name, ba_device_t *dev) {
  if (ba_device_from_name(name, dev) < 0) {
    ba_cli_err(cmd, "--device '%s': expected cpu, omp or gpu", name);
    return 2;
  }
  return 0;
}

int ba_cli_device_check(const char *cmd, const char *name) {
  ba_device_t dev;
  if (ba_cli_device_name(cmd, name, &dev)) return 2;
  ba_gpu_t *g = NULL;
  char why[BA_GPU_ERRMSG_LEN] = "";
  int rc = ba_gpu_open(dev, &g, why, sizeof why);
  ba_gpu_close(g);
  if (rc < 0) {
    ba_cli_err(cmd, "--device %s is not available: %s", name, why[0] ? why : ba_strerror(rc));
    return 2;
  }
  static int registered;
  if (!registered) {
    ba_idx_register_device("omp", omp_build);
    ba_idx_register_device("gpu", gpu_build);
    registered = 1;
  }
  return 0;
}

int ba_cli_device_range_open(const char *name, void **ctx) {
  ba_device_t dev;
  BA_FORWARD(ba_device_from_name(name, &dev));
  ba_gpu_t *g = NULL;
  BA_FORWARD(ba_gpu_open(dev, &g, NULL, 0));
  *ctx = g;
  return BA_OK;
}

void ba_cli_device_range_close(void *ctx) { ba_gpu_close(ctx); }

int ba_cli_device_range_or(void *ctx, const ba_bitmap_t *const *bms, size_t n, uint64_t rows,
                           ba_codec_t codec, ba_bitmap_t **out) {
  (void)rows; /* every bin of a segment has the segment's rows */
  ba_bitmap_t **w = NULL;
  const ba_bitmap_t **ops = ba_calloc(n, sizeof *ops);
  int rc = ops ? BA_OK : BA_ERR_NOMEM;
  if (rc == BA_OK && codec != BA_CODEC_WAH64) {
    if (!(w = ba_calloc(n, sizeof *w))) rc = BA_ERR_NOMEM;
    for (size_t i = 0; i < n && rc == BA_OK; i++) rc = ba_bitmap_convert(bms[i], BA_CODEC_WAH64, &w[i]);
  }
  for (size_t i = 0; i < n && rc == BA_OK; i++) ops[i] = w ? w[i] : bms[i];
  ba_bitmap_t *r = NULL;
  if (rc == BA_OK) rc = ba_gpu_range(ctx, BA_OP_OR, (const ba_bitmap_t *const *)ops, n, BA_GPU_RANGE_AUTO, &r);
  if (rc == BA_OK && codec != BA_CODEC_WAH64) {
    ba_bitmap_t *c = NULL;
    rc = ba_bitmap_convert(r, codec, &c);
    ba_bitmap_free(r);
    r = c;
  }
  if (rc == BA_OK) *out = r;
  else ba_bitmap_free(r);
  for (size_t i = 0; w && i < n; i++) ba_bitmap_free(w[i]);
  ba_free(w);
  ba_free(ops);
  return rc;
}
