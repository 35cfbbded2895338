/* bitarc: a network-traffic archive indexed by compressed bitmaps.
 * The umbrella header: the whole public API (or include the parts you use).
 * Link with `pkg-config --cflags --libs bitarc` (add --static for libbitarc.a). */
#ifndef BITARC_BITARC_H
#define BITARC_BITARC_H

#include "bitarc/errors.h"
#include "bitarc/bitmap.h"
#include "bitarc/record.h"
#include "bitarc/store.h"
#include "bitarc/query.h"
#include "bitarc/ingest.h"
#include "bitarc/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Library version, "MAJOR.MINOR.PATCH". */
const char *ba_version(void);

#ifdef __cplusplus
}
#endif
#endif
