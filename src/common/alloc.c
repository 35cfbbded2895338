/* Allocation hooks and growable-buffer helper. */
#include <stdlib.h>
#include <time.h>

#include "common/common.h"

static ba_alloc_hooks_t g_hooks = {malloc, calloc, realloc, free};

void ba_set_alloc_hooks(const ba_alloc_hooks_t *hooks) {
  if (hooks) g_hooks = *hooks;
  else g_hooks = (ba_alloc_hooks_t){malloc, calloc, realloc, free};
}
void *ba_malloc(size_t n) { return g_hooks.malloc_fn(n ? n : 1); }
void *ba_calloc(size_t n, size_t size) { return g_hooks.calloc_fn(n ? n : 1, size ? size : 1); }
void *ba_realloc(void *p, size_t n) { return g_hooks.realloc_fn(p, n ? n : 1); }
void ba_free(void *p) { if (p) g_hooks.free_fn(p); }

int ba_grow(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return BA_OK;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2) return BA_ERR_NOMEM;
    ncap *= 2;
  }
  if (elem && ncap > SIZE_MAX / elem) return BA_ERR_NOMEM;
  void *p = ba_realloc(*buf, ncap * elem);
  if (!p) return BA_ERR_NOMEM;
  *buf = p;
  *cap = ncap;
  return BA_OK;
}

uint64_t ba_now_ns(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
