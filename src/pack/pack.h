/* pack.h — ferry's packed tensor format: shards of preprocessed samples
 * that the loader memory-maps and serves without decoding.
 *
 * A pack is a directory:
 *   PLAN                what is being packed (source, size, shard size; a
 *                       "store jpeg quality Q" line for JPEG packs) and the
 *                       pack's id ("id HEX", 64 random bits): lets an
 *                       interrupted `ferry pack` resume, refusing to mix
 *                       different settings
 *   shard-NNNNN.fpk     complete shards (written as .tmp, fsynced, renamed)
 *   MANIFEST            written last (same way): the pack is complete.
 *                       "ferry-pack 2", "id HEX", "shape H W C", "shards N",
 *                       N lines "shard-NNNNN.fpk COUNT" in order, then
 *                       "crc32c HEX" of every byte before that line. Packs
 *                       made before 2026-11-24 say "ferry-pack 1" and have
 *                       no id and no checksum: they still load, unbound.
 *
 * Binding: every shard header carries the pack's id and the shard's
 * number, so a shard copied in from another pack, two shards swapped, a
 * shard listed twice or an edited MANIFEST are refused by name.
 *
 * Shard file, little-endian:
 *   header (64 bytes): magic "FERRYPK1", u32 version, u32 kind (1 = u8 HWC
 *     tensors, 2 = JPEG files), u32 height, width, channels, count, u64
 *     index offset, u64 file size, u64 pack id, u32 shard number (both 0
 *     in packs made before 2026-11-24), u32 crc32c of the 60 bytes before
 *     it
 *   samples, 64-byte aligned: kind 1, count tensors of
 *     height*width*channels bytes; kind 2, count baseline JPEGs of any
 *     length (upright RGB, short side = min(height, width) unless the
 *     source was smaller; no EXIF). In kind 2 shards height, width and
 *     channels are the pack's nominal --size and 3, as in the MANIFEST: the
 *     samples' own sizes are in their JPEG headers.
 *   index at the index offset: count entries {u64 offset, u64 length, i32
 *     label, u32 crc32c of the sample, u32 path offset, u32 path length},
 *     then the path strings, then u32 crc32c of index + strings
 */
#ifndef FY_PACK_H
#define FY_PACK_H

#include "core/internal.h"
#include <stdio.h>

#define FY_PACK_MAGIC "FERRYPK1"
#define FY_PACK_VERSION 1
#define FY_PACK_KIND_U8 1
#define FY_PACK_KIND_JPEG 2
#define FY_PACK_HEADER 64
#define FY_PACK_MANIFEST_VERSION 2          /* 1: before packs were bound */
#define FY_PACK_SHARD_NAME "shard-%05d.fpk" /* shard number k's file, in a pack's directory */
#define FY_WDS_SHARD_NAME "shard-%06d.tar"  /* --store wds: shard k's WebDataset tar */

typedef struct fy_pack_entry {
  uint64_t offset, length;
  int32_t label;
  uint32_t crc;
  uint32_t path_off, path_len;
} fy_pack_entry;

typedef struct fy_pack_shard {
  char *path;
  const uint8_t *map; /* whole file, read-only */
  size_t size;
  uint32_t count;
  const uint8_t *index; /* count packed entries (32 bytes each) */
  const char *strings;
} fy_pack_shard;

typedef struct fy_pack {
  char *dir;
  uint64_t id; /* 0: a pack made before binding (MANIFEST version 1) */
  int kind;    /* FY_PACK_KIND_U8 or FY_PACK_KIND_JPEG (every shard the same) */
  int height, width, channels;
  int nshards;
  fy_pack_shard *shards;
  int64_t count;
  int32_t *sample_shard;  /* per sample: shard */
  uint32_t *sample_index; /* per sample: entry within the shard */
} fy_pack;

/* Little-endian fields of headers and indexes. */
static inline uint32_t fy_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fy_le64(const uint8_t *p) {
  return fy_le32(p) | (uint64_t)fy_le32(p + 4) << 32;
}

/* CRC-32C (Castagnoli), hardware-accelerated where the CPU has SSE4.2. */
uint32_t fy_crc32c(uint32_t crc, const void *data, size_t n);

/* 1 when `dir` is a pack (holds a MANIFEST). */
int fy_pack_is(const char *dir);
/* A pack's own file (MANIFEST, PLAN, a shard header) opened for reading
 * without blocking on a FIFO in its place: NULL with errno, EINVAL when the
 * path is there but not a regular file. */
FILE *fy_pack_fopen(const char *path);
/* Opens a complete pack: maps every shard, checks headers and indexes
 * (not the samples' checksums: that is fy_pack_verify's job). Errors name
 * the shard and the reason. */
int fy_pack_open(fy_pack *p, const char *dir);
void fy_pack_close(fy_pack *p);
/* ferry_pack_verify over a pack already open (mapped): every sample's
 * checksum, reads under the SIGBUS guard (a shard that shrank since it
 * was mapped is reported as damaged, naming it). */
int fy_pack_verify_open(const fy_pack *p, int64_t *bad);
/* Sample i: its bytes (height*width*channels, or a JPEG of *len bytes),
 * label. label and len may be NULL. */
const uint8_t *fy_pack_sample(const fy_pack *p, int64_t i, int32_t *label);
const uint8_t *fy_pack_sample_len(const fy_pack *p, int64_t i, size_t *len, int32_t *label);
/* "DIR/shard-NNNNN.fpk sample K" for sample i, for error messages. */
void fy_pack_sample_name(const fy_pack *p, int64_t i, char *buf, size_t len);
void fy_pack_entry_get(const fy_pack_shard *s, uint32_t k, fy_pack_entry *e);

/* A new pack's id: 64 random bits, never 0. */
uint64_t fy_pack_new_id(void);
/* Writes shard number `shard` of pack `id` atomically:
 * `dir`/shard-NNNNN.fpk.tmp, fsync, rename, fsync of the directory. data
 * holds count tensors of h*w*c bytes. */
int fy_pack_write_shard(const char *dir, uint64_t id, int shard, int h, int w, int c, int count,
                        const uint8_t *data, const int32_t *labels, const char *const *paths);
/* The same for samples of any length (kind FY_PACK_KIND_JPEG): sample i is
 * lens[i] bytes at samples[i]; h, w, c the nominal size for the header. */
int fy_pack_write_shard_var(const char *dir, uint64_t id, int shard, int kind, int h, int w, int c,
                            int count, const uint8_t *const *samples, const size_t *lens,
                            const int32_t *labels, const char *const *paths);

/* Shard k of pack `id` in dir: DONE when its file exists with a valid
 * header of this pack (*count set), FOREIGN when the header names another
 * pack id or shard number (never overwritten), else MISSING. */
enum { FY_SHARD_MISSING, FY_SHARD_DONE, FY_SHARD_FOREIGN };
int fy_pack_shard_state(const char *dir, int k, uint64_t id, uint32_t *count);
/* The error for a foreign shard k, naming it. */
int fy_pack_foreign_shard(const char *dir, int k);
/* dir/name replaced atomically by text (dir/.name.tmp, fsync, rename). */
int fy_pack_write_small(const char *dir, const char *name, const char *text);
/* The temporaries an interrupted `ferry pack` leaves, by exact name:
 * shard-NNNNN.fpk.tmp (fy_pack_write_shard_var), shard-NNNNNN.tar.tmp
 * (--store wds, pack_wds.c), .PLAN.tmp and .MANIFEST.tmp
 * (fy_pack_write_small). Nothing else in a directory is ferry's to remove,
 * whatever its name ends with. */
int fy_pack_is_temp(const char *name);
void fy_pack_remove_temps(const char *dir);
/* Writes MANIFEST (the pack is complete) after checking that every shard
 * 0..nshards-1 is there and this pack's; source names the input in the
 * error when no sample was packed at all. */
int fy_pack_write_manifest(const char *dir, const char *source, int h, int w, int nshards,
                           uint64_t id);

/* Renames tmp to final and fsyncs dir: the atomic step of every write. */
int fy_pack_commit(const char *tmp, const char *final, const char *dir);

#endif
