/* libpcap through dlopen: the only file that names libpcap's functions (see
 * pcap_dl.h). The real libpcap is loaded by its SONAME (found by CMake at
 * configure time, BA_LIBPCAP_SONAME), never reimplemented. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "ingest/pcap_dl.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static ba_pcap_api_t g_api;
static int g_rc = BA_ERR_UNSUPPORTED;
static char g_why[512];

static void load_once(void) {
  const char *env = getenv("BITARC_LIBPCAP");
  const char *name = env && *env ? env : BA_LIBPCAP_SONAME;
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(g_why, sizeof g_why, "reading captures needs libpcap (%s, Debian package libpcap0.8): %s", name,
             e ? e : "cannot load it");
    return;
  }
  static const char *const names[] = {"pcap_open_offline_with_tstamp_precision",
                                      "pcap_fopen_offline_with_tstamp_precision",
                                      "pcap_datalink", "pcap_file", "pcap_next_ex", "pcap_geterr", "pcap_close"};
  void *fns[BA_ARRAY_LEN(names)];
  for (size_t i = 0; i < BA_ARRAY_LEN(names); i++) {
    if (!(fns[i] = dlsym(h, names[i]))) {
      snprintf(g_why, sizeof g_why, "%s: no %s (libpcap 1.5 or newer needed)", name, names[i]);
      dlclose(h);
      return;
    }
  }
  /* Object pointer to function pointer through memcpy: ISO C has no cast. */
  memcpy(&g_api.open_offline_with_tstamp_precision, &fns[0], sizeof(void *));
  memcpy(&g_api.fopen_offline_with_tstamp_precision, &fns[1], sizeof(void *));
  memcpy(&g_api.datalink, &fns[2], sizeof(void *));
  memcpy(&g_api.file, &fns[3], sizeof(void *));
  memcpy(&g_api.next_ex, &fns[4], sizeof(void *));
  memcpy(&g_api.geterr, &fns[5], sizeof(void *));
  memcpy(&g_api.close, &fns[6], sizeof(void *));
  g_rc = BA_OK; /* the handle stays open for the life of the process */
}

int ba_pcap_api(const ba_pcap_api_t **out, char *why, size_t whycap) {
  pthread_once(&g_once, load_once);
  if (g_rc < 0) {
    if (why && whycap) snprintf(why, whycap, "%s", g_why);
    return g_rc;
  }
  *out = &g_api;
  return BA_OK;
}
