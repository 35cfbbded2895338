/* The device pipelines on NVIDIA GPUs: pipeline.inl compiled by nvcc with the
 * Thrust CUDA system, as the loadable module libbitarc-cuda.so (the only file
 * linked with the CUDA runtime; see gpu_internal.h). Sorting uses CUB's radix sort over only the key bits
 * the cardinality needs (8 passes' worth less work than IMC'13's 32-bit sort
 * at cardinality 256). */
#include "bitarc_config.h"

#define THRUST_CUB_WRAPPED_NAMESPACE ba_cuda_cccl
#define BA_CCCL_NS ba_cuda_cccl

#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <new>

#include <cub/device/device_radix_sort.cuh>
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
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system/cuda/vector.h>
#include <thrust/system_error.h>
#include <thrust/transform.h>
#include <thrust/transform_scan.h>
#include <thrust/for_each.h>

extern "C" {
#include "common/common.h"
}
#include "gpu/gpu_internal.h"

#define BA_HD __host__ __device__
#define BA_GPU_FN(x) ba_gpu_cuda_##x
#define BA_GPU_LINKAGE static
#define BA_GPU_ALLOC(n) ba_gpu_cuda_alloc(n)

/* The host's allocator, set by the module entry. */
static void *(*g_host_alloc)(size_t);
static void *ba_gpu_cuda_alloc(size_t n) { return g_host_alloc(n); }
#define BA_GPU_DEVNAME "cuda"
#define BA_SYNC() ((void)cudaDeviceSynchronize())

namespace BA_CCCL_NS {
namespace bagpu {
template <class T> using ba_vec = thrust::cuda::vector<T>;
#define ba_par thrust::cuda::par
__host__ __device__ static inline unsigned ba_popc32(std::uint32_t x) {
#ifdef __CUDA_ARCH__
  return (unsigned)__popc(x);
#else
  return (unsigned)__builtin_popcount(x);
#endif
}
__host__ __device__ static inline unsigned ba_popc64(std::uint64_t x) {
#ifdef __CUDA_ARCH__
  return (unsigned)__popcll(x);
#else
  return (unsigned)__builtin_popcountll(x);
#endif
}
__host__ __device__ static inline unsigned ba_clz32(std::uint32_t x) {
#ifdef __CUDA_ARCH__
  return (unsigned)__clz(x);
#else
  return (unsigned)__builtin_clz(x);
#endif
}

static void check(cudaError_t e) {
  if (e != cudaSuccess) throw thrust::system_error(e, thrust::cuda_category());
}

/* LSD radix sort of (value, row id) pairs over bits [0, key_bits): stable,
 * so row ids stay ascending within a value. */
static void sort_by_value(const ba_vec<std::uint32_t> &val, ba_vec<std::uint32_t> &sval,
                          ba_vec<std::uint32_t> &srid, std::size_t n, unsigned key_bits) {
  ba_vec<std::uint32_t> rid(n);
  thrust::sequence(ba_par, rid.begin(), rid.end());
  std::size_t tmp_bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, tmp_bytes, thrust::raw_pointer_cast(val.data()),
                                        thrust::raw_pointer_cast(sval.data()), thrust::raw_pointer_cast(rid.data()),
                                        thrust::raw_pointer_cast(srid.data()), (std::int64_t)n, 0, (int)key_bits));
  ba_vec<unsigned char> tmp(tmp_bytes ? tmp_bytes : 1);
  check(cub::DeviceRadixSort::SortPairs(thrust::raw_pointer_cast(tmp.data()), tmp_bytes,
                                        thrust::raw_pointer_cast(val.data()), thrust::raw_pointer_cast(sval.data()),
                                        thrust::raw_pointer_cast(rid.data()), thrust::raw_pointer_cast(srid.data()),
                                        (std::int64_t)n, 0, (int)key_bits));
}
} // namespace bagpu
} // namespace BA_CCCL_NS

#include "gpu/pipeline.inl"

static int ba_gpu_cuda_probe(char *err, size_t errcap) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (err && errcap) std::snprintf(err, errcap, "no CUDA device: %s", cudaGetErrorString(e));
    return BA_ERR_NODEVICE;
  }
  if (n < 1) {
    if (err && errcap) std::snprintf(err, errcap, "no CUDA device: none found");
    return BA_ERR_NODEVICE;
  }
  return BA_OK;
}

/* Per-piece budget: free device memory. The pipeline needs about 40 bytes per
 * row at its peak (values, sorted pairs, keys + literals); gpu.c divides. */
static size_t ba_gpu_cuda_mem_budget(void) {
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) return 0;
  return fr;
}

/* The module's only exported symbol (BA_GPU_MODULE_ENTRY). */
extern "C" __attribute__((visibility("default"))) int
ba_gpu_cuda_module_v1(int abi, size_t piece_size, size_t job_size, void *(*alloc)(size_t), ba_gpu_backend_t *out) {
  if (abi != BA_GPU_MODULE_ABI || piece_size != sizeof(ba_gpu_piece_t) || job_size != sizeof(ba_gpu_rangejob_t) ||
      !alloc || !out)
    return BA_ERR_VERSION;
  g_host_alloc = alloc;
  out->probe = ba_gpu_cuda_probe;
  out->build = ba_gpu_cuda_build;
  out->range = ba_gpu_cuda_range;
  out->mem_budget = ba_gpu_cuda_mem_budget;
  return BA_OK;
}
