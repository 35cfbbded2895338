/* Finds and loads the device back-end modules with dlopen, the first time
 * their device is opened: libbitarc-cuda.so (the gpu device, linked with the
 * CUDA runtime) and libbitarc-omp.so (the omp device, linked with libgomp and
 * the C++ runtime), so neither libbitarc nor the bitarc binary loads those
 * libraries at start. Places tried, in order:
 *   $BITARC_GPU_MODULE / $BITARC_OMP_MODULE (a file; nothing else is tried
 *   when it is set);
 *   beside the object holding this code (the build tree: the bitarc binary,
 *   libbitarc.so and the modules are in one folder);
 *   the install's module folder relative to that object: <bindir>/<rel> for
 *   the bitarc binary, <libdir>/bitarc for libbitarc.so (relative, so an
 *   install moved with --prefix still finds it);
 *   the dynamic linker's own search (LD_LIBRARY_PATH, ld.so.cache). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bitarc_config.h"
#include "common/common.h"
#include "gpu/gpu_internal.h"

typedef struct module {
  const char *what;  /* "CUDA", "OpenMP" */
  const char *file;  /* BA_GPU_MODULE_NAME, BA_OMP_MODULE_NAME */
  const char *env;   /* variable naming the file */
  const char *entry; /* the exported entry function */
  const char *pkg;   /* where a packaged install has it ("" if nowhere) */
  pthread_once_t once;
  ba_gpu_backend_t backend;
  int rc;
  char why[512];
} module_t;

#if BA_HAVE_CUDA || BA_HAVE_OMP_DEVICE

/* Tries one file: 1 = loaded (or failed with a reason worth reporting), 0 = absent. */
static int try_path(module_t *m, const char *path, int must_exist) {
  if (!must_exist && strchr(path, '/') && access(path, F_OK) != 0) return 0;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(m->why, sizeof m->why, "cannot load the %s module: %s", m->what, e ? e : path);
    return 1;
  }
  ba_gpu_module_entry_fn entry;
  *(void **)&entry = dlsym(h, m->entry);
  if (!entry) {
    snprintf(m->why, sizeof m->why, "%s: not a bitarc %s module (no %s)", path, m->what, m->entry);
    dlclose(h);
    return 1;
  }
  if (entry(BA_GPU_MODULE_ABI, sizeof(ba_gpu_piece_t), sizeof(ba_gpu_rangejob_t), ba_malloc, &m->backend) < 0) {
    snprintf(m->why, sizeof m->why, "%s: built for another bitarc version", path);
    dlclose(h);
    return 1;
  }
  m->rc = BA_OK; /* the handle stays open for the life of the process */
  return 1;
}

static void load(module_t *m) {
  const char *env = getenv(m->env);
  if (env && *env) {
    try_path(m, env, 1);
    return;
  }
  char dir[PATH_MAX] = "", path[2 * PATH_MAX];
  Dl_info info;
  if (dladdr((void *)&ba_gpu_cuda_backend, &info) && info.dli_fname) {
    char real[PATH_MAX];
    if (realpath(info.dli_fname, real)) {
      char *slash = strrchr(real, '/');
      if (slash) *slash = 0;
      snprintf(dir, sizeof dir, "%s", real);
    }
  }
  const char *rels[] = {".", BA_GPU_MODULE_FROM_BINDIR, "bitarc"};
  for (size_t i = 0; dir[0] && i < BA_ARRAY_LEN(rels); i++) {
    int k = snprintf(path, sizeof path, "%s/%s/%s", dir, rels[i], m->file);
    if (k > 0 && (size_t)k < sizeof path && try_path(m, path, 0)) return;
  }
  if (try_path(m, m->file, 1) && m->rc == BA_OK) return;
  snprintf(m->why, sizeof m->why, "%s module %s not found in %.200s/%s (set %s%s%s)", m->what, m->file,
           dir[0] ? dir : "?", BA_GPU_MODULE_FROM_BINDIR, m->env, m->pkg[0] ? ", or install " : "", m->pkg);
}

static int get(module_t *m, void (*once_fn)(void), const ba_gpu_backend_t **out, char *why, size_t whycap) {
  pthread_once(&m->once, once_fn);
  if (m->rc < 0) {
    if (why && whycap) snprintf(why, whycap, "%s", m->why);
    return m->rc;
  }
  *out = &m->backend;
  return BA_OK;
}
#endif

#if BA_HAVE_CUDA
static module_t g_cuda = {"CUDA", BA_GPU_MODULE_NAME, "BITARC_GPU_MODULE", BA_GPU_MODULE_ENTRY, "",
                          PTHREAD_ONCE_INIT, {0}, BA_ERR_NODEVICE, ""};
static void load_cuda(void) { load(&g_cuda); }
int ba_gpu_cuda_backend(const ba_gpu_backend_t **out, char *why, size_t whycap) {
  return get(&g_cuda, load_cuda, out, why, whycap);
}
#else
int ba_gpu_cuda_backend(const ba_gpu_backend_t **out, char *why, size_t whycap) {
  (void)out;
  if (why && whycap) snprintf(why, whycap, "built without CUDA");
  return BA_ERR_NODEVICE;
}
#endif

#if BA_HAVE_OMP_DEVICE
static module_t g_omp = {"OpenMP", BA_OMP_MODULE_NAME, "BITARC_OMP_MODULE", BA_OMP_MODULE_ENTRY,
                         "the package libbitarc0-omp", PTHREAD_ONCE_INIT, {0}, BA_ERR_NODEVICE, ""};
static void load_omp(void) { load(&g_omp); }
int ba_gpu_omp_backend(const ba_gpu_backend_t **out, char *why, size_t whycap) {
  return get(&g_omp, load_omp, out, why, whycap);
}
#else
int ba_gpu_omp_backend(const ba_gpu_backend_t **out, char *why, size_t whycap) {
  (void)out;
  if (why && whycap) snprintf(why, whycap, "built without OpenMP");
  return BA_ERR_NODEVICE;
}
#endif
