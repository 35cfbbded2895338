/* TEMPORARY placeholders until compax.c / masc.c land (owned by another
 * helper). Weak and empty: ba_codec_ops() reports these codecs as absent.
 * This file is deleted once the real definitions are in the tree. */
#include "codec/codec_internal.h"

#if !defined(__has_include) || !__has_include("codec/compax.c")
__attribute__((weak)) const ba_codec_ops_t ba_compax_ops = {0};
#endif
#if !defined(__has_include) || !__has_include("codec/masc.c")
__attribute__((weak)) const ba_codec_ops_t ba_masc_ops = {0};
__attribute__((weak)) const ba_codec_ops_t ba_masc_qt_ops = {0};
#endif
