/* Bitmap pools (bmpool.c): many small bitmaps made and freed together without
 * a malloc and a free each. The online index builder makes one bitmap per
 * value seen; at 65,536-value attributes (ports) most hold a few words, and
 * their calloc, first word vector and frees were about 5 % of a flow's
 * instructions. Internal to the library (index and archive modules). */
#ifndef BA_CODEC_BMPOOL_H
#define BA_CODEC_BMPOOL_H

#include "bitarc/bitmap.h"

typedef struct ba_bmpool ba_bmpool_t;

int ba_bmpool_create(ba_bmpool_t **out);
/* Frees the pool's memory: every bitmap made in it must be freed (or never
 * used again) first. NULL is a no-op. */
void ba_bmpool_free(ba_bmpool_t *p);
/* As ba_bitmap_create, the struct and room for the first words (64 bytes)
 * taken from the pool: ba_bitmap_free of it frees only words that outgrew
 * that room, and the struct stays until ba_bmpool_free. Not thread-safe:
 * one pool per builder. */
int ba_bmpool_bitmap(ba_bmpool_t *p, ba_codec_t codec, ba_bitmap_t **out);
/* Bytes the pool holds (its slabs). */
size_t ba_bmpool_bytes(const ba_bmpool_t *p);

#endif
