/* Bitmap pools (bmpool.h): slabs cut into bitmap structs, each followed by
 * POOL_WORDS_BYTES of room for its first words; a bump pointer, no per-item
 * free. A bitmap whose words outgrow the room moves them to the heap
 * (ba_wordvec_reserve, vec.fixed), so large bitmaps cost one extra copy of
 * 64 bytes. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "codec/bitmap_internal.h"
#include "codec/bmpool.h"
#include "common/common.h"

#define POOL_WORDS_BYTES 64u
#define SLAB_BYTES ((size_t)256 << 10)

typedef struct slab {
  struct slab *next;
  size_t used; /* bytes of data[] handed out */
  _Alignas(16) unsigned char data[];
} slab_t;

struct ba_bmpool {
  slab_t *head; /* the slab being cut; older ones after it */
  size_t bytes;
};

/* A bitmap and its word room, rounded to 16 bytes. */
#define ITEM_BYTES ((sizeof(ba_bitmap_t) + POOL_WORDS_BYTES + 15) & ~(size_t)15)
#define SLAB_DATA (SLAB_BYTES - offsetof(slab_t, data))
_Static_assert(ITEM_BYTES <= SLAB_BYTES / 4, "several items per slab");

int ba_bmpool_create(ba_bmpool_t **out) {
  BA_RETURN_IF(!out, BA_ERR_INVALID);
  *out = ba_calloc(1, sizeof **out);
  return *out ? BA_OK : BA_ERR_NOMEM;
}

void ba_bmpool_free(ba_bmpool_t *p) {
  if (!p) return;
  for (slab_t *s = p->head, *n; s; s = n) {
    n = s->next;
    ba_free(s);
  }
  ba_free(p);
}

size_t ba_bmpool_bytes(const ba_bmpool_t *p) { return p ? p->bytes : 0; }

int ba_bmpool_bitmap(ba_bmpool_t *p, ba_codec_t codec, ba_bitmap_t **out) {
  BA_RETURN_IF(!p || !out, BA_ERR_INVALID);
  *out = NULL;
  BA_RETURN_IF(codec < BA_CODEC_MIN || codec > BA_CODEC_MAX, BA_ERR_INVALID);
  const ba_codec_ops_t *ops = ba_codec_ops(codec);
  BA_RETURN_IF(!ops, BA_ERR_UNSUPPORTED);
  slab_t *s = p->head;
  if (!s || SLAB_DATA - s->used < ITEM_BYTES) {
    s = ba_malloc(SLAB_BYTES);
    BA_RETURN_IF(!s, BA_ERR_NOMEM);
    s->next = p->head;
    s->used = 0;
    p->head = s;
    p->bytes += SLAB_BYTES;
  }
  unsigned char *m = s->data + s->used;
  s->used += ITEM_BYTES;
  ba_bitmap_t *bm = (ba_bitmap_t *)m;
  memset(bm, 0, sizeof *bm);
  atomic_init(&bm->cache, NULL);
  bm->ops = ops;
  bm->group = ops->group_bits;
  bm->pooled = 1;
  bm->vec.w = m + sizeof *bm;
  bm->vec.cap = POOL_WORDS_BYTES / ops->word_bytes;
  bm->vec.fixed = 1;
  *out = bm;
  return BA_OK;
}
