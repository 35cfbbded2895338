/* bitarc: a network-traffic archive indexed by compressed bitmaps.
 * The umbrella header; include what you need or this. */
#ifndef BITARC_BITARC_H
#define BITARC_BITARC_H

#include "bitarc/errors.h"
#include "bitarc/bitmap.h"
#include "bitarc/record.h"
#include "bitarc/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Library version, "MAJOR.MINOR.PATCH". */
const char *ba_version(void);

#ifdef __cplusplus
}
#endif
#endif
