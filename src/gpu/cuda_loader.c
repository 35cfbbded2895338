/* Finds and loads the CUDA back end module (libbitarc-cuda.so) with dlopen,
 * the first time the gpu device is opened. Places tried, in order:
 *   $BITARC_GPU_MODULE (a file; nothing else is tried when it is set);
 *   beside the object holding this code (the build tree: the bitarc binary,
 *   libbitarc.so and the module are in one folder);
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

#if BA_HAVE_CUDA

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static ba_gpu_backend_t g_backend;
static int g_rc = BA_ERR_NODEVICE;
static char g_why[512];

/* Tries one file: 1 = loaded (or failed with a reason worth reporting), 0 = absent. */
static int try_path(const char *path, int must_exist) {
  if (!must_exist && strchr(path, '/') && access(path, F_OK) != 0) return 0;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(g_why, sizeof g_why, "cannot load the CUDA module: %s", e ? e : path);
    return 1;
  }
  ba_gpu_module_entry_fn entry;
  *(void **)&entry = dlsym(h, BA_GPU_MODULE_ENTRY);
  if (!entry) {
    snprintf(g_why, sizeof g_why, "%s: not a bitarc CUDA module (no %s)", path, BA_GPU_MODULE_ENTRY);
    dlclose(h);
    return 1;
  }
  if (entry(BA_GPU_MODULE_ABI, sizeof(ba_gpu_piece_t), sizeof(ba_gpu_rangejob_t), ba_malloc, &g_backend) < 0) {
    snprintf(g_why, sizeof g_why, "%s: built for another bitarc version", path);
    dlclose(h);
    return 1;
  }
  g_rc = BA_OK; /* the handle stays open for the life of the process */
  return 1;
}

static void load_once(void) {
  const char *env = getenv("BITARC_GPU_MODULE");
  if (env && *env) {
    try_path(env, 1);
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
    int k = snprintf(path, sizeof path, "%s/%s/%s", dir, rels[i], BA_GPU_MODULE_NAME);
    if (k > 0 && (size_t)k < sizeof path && try_path(path, 0)) return;
  }
  if (try_path(BA_GPU_MODULE_NAME, 1) && g_rc == BA_OK) return;
  snprintf(g_why, sizeof g_why, "CUDA module %s not found in %.200s/%s (set BITARC_GPU_MODULE)",
           BA_GPU_MODULE_NAME, dir[0] ? dir : "?", BA_GPU_MODULE_FROM_BINDIR);
}

int ba_gpu_cuda_backend(const ba_gpu_backend_t **out, char *why, size_t whycap) {
  pthread_once(&g_once, load_once);
  if (g_rc < 0) {
    if (why && whycap) snprintf(why, whycap, "%s", g_why);
    return g_rc;
  }
  *out = &g_backend;
  return BA_OK;
}

#else

int ba_gpu_cuda_backend(const ba_gpu_backend_t **out, char *why, size_t whycap) {
  (void)out;
  if (why && whycap) snprintf(why, whycap, "built without CUDA");
  return BA_ERR_NODEVICE;
}

#endif
