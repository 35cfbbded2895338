/* The device pipelines on Thrust's OpenMP system: the same source as the CUDA
 * build (pipeline.inl), compiled by the host C++ compiler with -fopenmp as the
 * loadable module libbitarc-omp.so (the only file linked with libgomp and the
 * C++ runtime; see gpu_internal.h). It needs no GPU, so CI runs the device
 * logic through this file. */
#include "bitarc_config.h"

#if BA_HAVE_OMP_DEVICE

#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_OMP
#define THRUST_HOST_SYSTEM THRUST_HOST_SYSTEM_CPP
#define THRUST_CUB_WRAPPED_NAMESPACE ba_omp_cccl
#define BA_CCCL_NS ba_omp_cccl

#include <omp.h>

#include <cstdio>
#include <exception>
#include <new>
#include <vector>

#include <thrust/copy.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/reverse_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/scatter.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/system/omp/execution_policy.h>
#include <thrust/system/omp/vector.h>
#include <thrust/transform.h>
#include <thrust/transform_scan.h>
#include <thrust/for_each.h>

extern "C" {
#include "common/common.h"
}
#include "gpu/gpu_internal.h"

#define BA_HD
#define BA_GPU_FN(x) ba_gpu_omp_##x
#define BA_GPU_LINKAGE static
#define BA_GPU_ALLOC(n) ba_gpu_omp_alloc(n)

/* The host's allocator, set by the module entry. */
static void *(*g_host_alloc)(size_t);
static void *ba_gpu_omp_alloc(size_t n) { return g_host_alloc(n); }
#define BA_GPU_DEVNAME "omp"
#define BA_SYNC() ((void)0)

namespace BA_CCCL_NS {
namespace bagpu {
template <class T> using ba_vec = thrust::omp::vector<T>;
#define ba_par thrust::omp::par
static inline unsigned ba_popc32(std::uint32_t x) { return (unsigned)__builtin_popcount(x); }
static inline unsigned ba_popc64(std::uint64_t x) { return (unsigned)__builtin_popcountll(x); }
static inline unsigned ba_clz32(std::uint32_t x) { return (unsigned)__builtin_clz(x); }

/* Stable sort of row ids by value. IMC'13 sorts 32-bit keys; the values here
 * are known to be < 2^key_bits, so up to 16 bits one counting-sort pass does
 * it (per-thread histograms, scan, scatter: rows of one thread stay in order,
 * threads own consecutive row ranges, hence stable). Wider keys: Thrust's
 * stable sort. */
static void sort_by_value(const ba_vec<std::uint32_t> &val, ba_vec<std::uint32_t> &sval,
                          ba_vec<std::uint32_t> &srid, std::size_t n, unsigned key_bits) {
  if (key_bits > 16) {
    thrust::copy(ba_par, val.begin(), val.end(), sval.begin());
    thrust::sequence(ba_par, srid.begin(), srid.end());
    thrust::stable_sort_by_key(ba_par, sval.begin(), sval.end(), srid.begin());
    return;
  }
  const std::size_t B = (std::size_t)1 << key_bits;
  const int T = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
  std::vector<std::size_t> hist((std::size_t)T * B, 0);
  const std::uint32_t *v = thrust::raw_pointer_cast(val.data());
  std::uint32_t *ov = thrust::raw_pointer_cast(sval.data());
  std::uint32_t *orid = thrust::raw_pointer_cast(srid.data());
  std::size_t *h = hist.data();
#pragma omp parallel num_threads(T)
  {
    const int nth = omp_get_num_threads();
    for (int t = omp_get_thread_num(); t < T; t += nth) {
      std::size_t lo = n * (std::size_t)t / (std::size_t)T, hi = n * (std::size_t)(t + 1) / (std::size_t)T;
      std::size_t *ht = h + (std::size_t)t * B;
      for (std::size_t i = lo; i < hi; i++) ht[v[i]]++;
    }
  }
  std::size_t sum = 0;
  for (std::size_t b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      std::size_t c = h[(std::size_t)t * B + b];
      h[(std::size_t)t * B + b] = sum;
      sum += c;
    }
#pragma omp parallel num_threads(T)
  {
    const int nth = omp_get_num_threads();
    for (int t = omp_get_thread_num(); t < T; t += nth) {
      std::size_t lo = n * (std::size_t)t / (std::size_t)T, hi = n * (std::size_t)(t + 1) / (std::size_t)T;
      std::size_t *ht = h + (std::size_t)t * B;
      for (std::size_t i = lo; i < hi; i++) {
        std::size_t pos = ht[v[i]]++;
        ov[pos] = v[i];
        orid[pos] = (std::uint32_t)i;
      }
    }
  }
}
} // namespace bagpu
} // namespace BA_CCCL_NS

#include "gpu/pipeline.inl"

static int ba_gpu_omp_probe(char *err, size_t errcap) {
  (void)err;
  (void)errcap;
  return BA_OK;
}
static size_t ba_gpu_omp_mem_budget(void) { return 0; }

/* The module's only exported symbol (BA_OMP_MODULE_ENTRY). */
extern "C" __attribute__((visibility("default"))) int
ba_gpu_omp_module_v1(int abi, size_t piece_size, size_t job_size, void *(*alloc)(size_t), ba_gpu_backend_t *out) {
  if (abi != BA_GPU_MODULE_ABI || piece_size != sizeof(ba_gpu_piece_t) || job_size != sizeof(ba_gpu_rangejob_t) ||
      !alloc || !out)
    return BA_ERR_VERSION;
  g_host_alloc = alloc;
  out->probe = ba_gpu_omp_probe;
  out->build = ba_gpu_omp_build;
  out->range = ba_gpu_omp_range;
  out->mem_budget = ba_gpu_omp_mem_budget;
  return BA_OK;
}

#endif
