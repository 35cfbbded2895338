/* The codec registry (id -> ops table, names) and the word vector the
 * encoders write into. Knows every codec by its ops table only. */
#include <string.h>

#include "codec/codec.h"

static const char *const codec_names[BA_CODEC_MAX + 1] = {NULL, "wah32", "wah64", "plwah",
                                                          "compax", "masc", "masc-qt"};

const char *ba_codec_name(ba_codec_t codec) {
  return (codec >= BA_CODEC_MIN && codec <= BA_CODEC_MAX) ? codec_names[codec] : NULL;
}

int ba_codec_from_name(const char *name, ba_codec_t *out) {
  BA_RETURN_IF(!name || !out, BA_ERR_INVALID);
  for (int c = BA_CODEC_MIN; c <= BA_CODEC_MAX; c++) {
    if (strcmp(name, codec_names[c]) == 0) {
      *out = (ba_codec_t)c;
      return BA_OK;
    }
  }
  return BA_ERR_INVALID;
}

unsigned ba_codec_word_bits(ba_codec_t codec) {
  if (codec < BA_CODEC_MIN || codec > BA_CODEC_MAX) return 0;
  return codec == BA_CODEC_WAH64 ? 64 : 32;
}

const ba_codec_ops_t *ba_codec_ops(ba_codec_t id) {
  const ba_codec_ops_t *o = NULL;
  switch (id) {
    case BA_CODEC_WAH32: o = &ba_wah32_ops; break;
    case BA_CODEC_WAH64: o = &ba_wah64_ops; break;
    case BA_CODEC_PLWAH: o = &ba_plwah_ops; break;
    case BA_CODEC_COMPAX: o = &ba_compax_ops; break;
    case BA_CODEC_MASC: o = &ba_masc_ops; break;
    case BA_CODEC_MASC_QT: o = &ba_masc_qt_ops; break;
    default: return NULL;
  }
  return (o->put && o->id == id) ? o : NULL;
}

/* ---- word vector ---- */

int ba_wordvec_reserve(ba_wordvec_t *v, size_t extra, unsigned word_bytes) {
  if (extra <= v->cap - v->n) return BA_OK;
  BA_RETURN_IF(extra > SIZE_MAX / word_bytes - v->n, BA_ERR_NOMEM);
  if (v->fixed) { /* out of the pool's room: the words move to the heap */
    void *p = NULL;
    size_t cap = v->cap;
    BA_FORWARD(ba_grow(&p, &cap, v->n + extra, word_bytes));
    if (v->n) memcpy(p, v->w, v->n * word_bytes);
    v->w = p;
    v->cap = cap;
    v->fixed = 0;
    return BA_OK;
  }
  return ba_grow(&v->w, &v->cap, v->n + extra, word_bytes);
}

void ba_wordvec_free(ba_wordvec_t *v) {
  if (!v->fixed) ba_free(v->w);
  v->w = NULL;
  v->n = v->cap = 0;
  v->fixed = 0;
}

