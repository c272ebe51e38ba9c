/* test_pack.c — packs: round trip equals the direct pipeline bit for bit,
 * --verify finds a damaged byte, wrong version / truncated shard / foreign
 * file give clear errors, resuming keeps complete shards. JPEG packs
 * (--store jpeg): close to the direct pipeline, much smaller than u8, the
 * same checks, random crops, errors naming shard and sample. */
#include "check.h"
#include "core/internal.h"
#include "core/testctl.h"
#include "ferry.h"
#include "pack/pack.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *sample(void) {
  const char *s = getenv("FERRY_SAMPLE");
  return s ? s : "data/sample";
}

static void quiet_skip(void *u, const char *p, int st, const char *m) {
  (void)u, (void)p, (void)st, (void)m;
}

static int load_exact; /* 1: no DCT scaling (the exact decode path) */
static int load_big;   /* 1: a ring of 64 x 64 samples, set to take streaming copies */

/* Pack sample size: over 4 KiB, so that big rings copy with streaming
 * stores. */
#define PW 48
#define PH 32

/* Loads a whole epoch (no shuffle) as u8 HWC w x h; returns the count and
 * fills paths/pixels. */
static int load_all(const char *src, ferry_crop crop, int w, int h, char paths[64][512],
                    uint8_t *px) {
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = src;
  o.batch_size = load_big ? 64 : 7;
  o.prefetch = load_big ? 64 : 3;
  o.width = w;
  o.height = h;
  o.crop = crop;
  o.shuffle = 0;
  o.layout = FERRY_LAYOUT_HWC;
  o.workers = 2;
  o.on_skip = quiet_skip;
  o.allow_dct_scaling = !load_exact;
  ferry_loader *L;
  if (ferry_loader_open(&o, &L) != FERRY_OK) {
    CHECK_MSG(0, "open %s: %s", src, ferry_last_error());
    return 0;
  }
  ferry_batch *b;
  int n = 0;
  size_t per = (size_t)w * h * 3;
  while (ferry_loader_next(L, &b) == FERRY_OK) {
    for (int i = 0; i < b->count && n < 64; i++, n++) {
      snprintf(paths[n], 512, "%s", ferry_loader_path(L, b->indices[i]));
      memcpy(px + (size_t)n * per, (uint8_t *)b->data + (size_t)i * per, per);
    }
    ferry_loader_release(L, b);
  }
  ferry_loader_close(L);
  return n;
}

static int build(const char *out, int shard) {
  ferry_pack_options o;
  ferry_pack_options_default(&o);
  o.source = sample();
  o.output = out;
  o.width = PW;
  o.height = PH;
  o.shard_size = shard;
  o.workers = 2;
  return ferry_pack_build(&o);
}

static void test_round_trip(const char *dir) {
  CHECK_MSG(build(dir, 9) == FERRY_OK, "%s", ferry_last_error());
  CHECK(ferry_pack_verify(dir, NULL) == FERRY_OK);
  static char pa[64][512], pb[64][512];
  size_t per = PW * PH * 3;
  uint8_t *a = malloc(64 * per), *b = malloc(64 * per);
  int na = load_all(dir, FERRY_CROP_CENTER, PW, PH, pa, a);
  int nb = load_all(sample(), FERRY_CROP_CENTER, PW, PH, pb, b);
  CHECK_MSG(na == 48 && nb == 48, "pack %d, direct %d", na, nb);
  int same = 0;
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++) {
      char ra[4096], rb[4096];
      if (!realpath(pa[i], ra) || !realpath(pb[j], rb) || strcmp(ra, rb))
        continue;
      same += memcmp(a + i * per, b + j * per, per) == 0;
    }
  CHECK_MSG(same == 48, "%d of 48 samples identical to the direct pipeline", same);
  /* A ring of 64 batches of 64 (18.9 MB) taking streaming copies: the same
   * bytes in the same order. */
  /* the test control FERRY_STREAM_MIN_MB, whatever this machine's cache */
  CHECK(fy_tc_set(FY_TC_STREAM_MIN_MB, "16") == FERRY_OK);
  CHECK((size_t)64 * 64 * per > fy_stream_min_bytes());
  load_big = 1;
  int nc = load_all(dir, FERRY_CROP_CENTER, PW, PH, pb, b);
  load_big = 0;
  fy_tc_set(FY_TC_STREAM_MIN_MB, NULL);
  CHECK(fy_stream_min_bytes() >= FY_STREAM_MIN_BYTES); /* sysfs or the default */
  CHECK_MSG(nc == na && memcmp(a, b, (size_t)na * per) == 0, "big ring: %d samples, %s", nc,
            nc == na ? "bytes differ" : "count differs");
  free(a);
  free(b);
}

static void run(const char *cmd) { CHECK_MSG(system(cmd) == 0, "%s", cmd); }

/* Opening `dir` fails with FERRY_ECORRUPT naming `want`, for --verify and
 * the loader alike. */
static void refused(const char *dir, const char *want, const char *what) {
  CHECK_MSG(ferry_pack_verify(dir, NULL) == FERRY_ECORRUPT && strstr(ferry_last_error(), want),
            "%s: verify said %s", what, ferry_last_error());
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = dir;
  ferry_loader *L = NULL;
  CHECK_MSG(ferry_loader_open(&o, &L) == FERRY_ECORRUPT && strstr(ferry_last_error(), want),
            "%s: the loader said %s", what, ferry_last_error());
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* A MANIFEST rewritten with a valid checksum over `body`. */
static void write_manifest(const char *dir, const char *body) {
  char path[4400], text[8192];
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  snprintf(text, sizeof text, "%scrc32c %08x\n", body, fy_crc32c(0, body, strlen(body)));
  write_text(path, text);
}

static void read_text(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
  buf[n] = '\0';
  if (f)
    fclose(f);
}

/* Issue 16 item 10: shards are bound to their pack. `dir` is a complete
 * pack of 6 shards of 9 samples (and a last of 3); `other` a second pack
 * made with the same settings. */
static void test_binding(const char *dir, const char *other, const char *tmp) {
  char cmd[40000], a[4400], b[4400], man[4400], text[8192];
  CHECK_MSG(build(other, 9) == FERRY_OK, "%s", ferry_last_error());
  snprintf(man, sizeof man, "%s/MANIFEST", dir);
  read_text(man, text, sizeof text);
  CHECK_MSG(!strncmp(text, "ferry-pack 2\nid ", 16) && strstr(text, "\ncrc32c "), "%s", text);
  /* a shard copied in from the other pack */
  snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s && cp %s/shard-00002.fpk %s/", tmp, dir, tmp,
           other, tmp);
  run(cmd);
  refused(tmp, "shard-00002.fpk: a shard of another pack", "foreign shard");
  /* two shards of the pack swapped */
  snprintf(cmd, sizeof cmd,
           "rm -rf %s && cp -r %s %s && cd %s && mv shard-00000.fpk x && mv shard-00001.fpk "
           "shard-00000.fpk && mv x shard-00001.fpk",
           tmp, dir, tmp, tmp);
  run(cmd);
  refused(tmp, "shard-00000.fpk: holds shard 1 of this pack, listed as shard 0", "swapped shards");
  /* an edited MANIFEST: fewer shards announced */
  snprintf(cmd, sizeof cmd,
           "rm -rf %s && cp -r %s %s && sed -i 's/^shards 6$/shards 2/' %s/MANIFEST", tmp, dir, tmp,
           tmp);
  run(cmd);
  refused(tmp, "MANIFEST checksum mismatch", "edited shard count");
  /* the checksum line cut off */
  snprintf(cmd, sizeof cmd, "sed -i '/^crc32c /d' %s/MANIFEST", tmp);
  run(cmd);
  refused(tmp, "no checksum line", "MANIFEST without its checksum");
  /* rewritten with a valid checksum: a shard listed twice, too few or too
   * many lines */
  char body[8192], id[32] = "";
  sscanf(text, "ferry-pack 2\nid %16s", id);
  snprintf(body, sizeof body,
           "ferry-pack 2\nid %s\nshape %d %d 3\nshards 3\nshard-00000.fpk 9\nshard-00000.fpk "
           "9\nshard-00002.fpk 9\n",
           id, PH, PW);
  write_manifest(tmp, body);
  refused(tmp, "shard line 2 names shard-00000.fpk where shard-00001.fpk belongs", "listed twice");
  snprintf(body, sizeof body,
           "ferry-pack 2\nid %s\nshape %d %d 3\nshards 1\nshard-00000.fpk 9\nshard-00001.fpk 9\n",
           id, PH, PW);
  write_manifest(tmp, body);
  refused(tmp, "more shard lines than the 1", "a line more than announced");
  /* a MANIFEST of the other pack's id over this pack's shards */
  snprintf(a, sizeof a, "%s/MANIFEST", other);
  read_text(a, body, sizeof body);
  snprintf(b, sizeof b, "%s/MANIFEST", tmp);
  write_text(b, body);
  refused(tmp, "a shard of another pack", "another pack's MANIFEST");
  /* a pack made before binding (MANIFEST version 1, shards with id 0)
   * still loads */
  snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", tmp, tmp);
  run(cmd);
  uint8_t px[2 * PW * PH * 3] = {0};
  int32_t labels[2] = {0, 1};
  const char *paths[2] = {"/old/a.jpg", "/old/b.jpg"};
  CHECK(fy_pack_write_shard(tmp, 0, 0, PH, PW, 3, 2, px, labels, paths) == FERRY_OK);
  snprintf(b, sizeof b, "%s/MANIFEST", tmp);
  snprintf(body, sizeof body, "ferry-pack 1\nshape %d %d 3\nshards 1\nshard-00000.fpk 2\n", PH, PW);
  write_text(b, body);
  CHECK_MSG(ferry_pack_verify(tmp, NULL) == FERRY_OK, "legacy pack: %s", ferry_last_error());
  /* resuming with another pack's shard in place: refused, the file kept */
  snprintf(cmd, sizeof cmd,
           "rm -rf %s && cp -r %s %s && rm %s/MANIFEST %s/shard-00003.fpk && cp "
           "%s/shard-00003.fpk %s/",
           tmp, dir, tmp, tmp, tmp, other, tmp);
  run(cmd);
  struct stat st0, st1;
  snprintf(a, sizeof a, "%s/shard-00003.fpk", tmp);
  CHECK(stat(a, &st0) == 0);
  CHECK(build(tmp, 9) == FERRY_ECORRUPT);
  CHECK_MSG(strstr(ferry_last_error(), "shard-00003.fpk: belongs to another pack"), "%s",
            ferry_last_error());
  CHECK(stat(a, &st1) == 0 && st0.st_ino == st1.st_ino && st0.st_mtime == st1.st_mtime);
  /* moved away, the resume finishes and the pack verifies */
  unlink(a);
  CHECK_MSG(build(tmp, 9) == FERRY_OK, "%s", ferry_last_error());
  CHECK(ferry_pack_verify(tmp, NULL) == FERRY_OK);
}

static int build_jpeg(const char *out, int size, int shard) {
  ferry_pack_options o;
  ferry_pack_options_default(&o);
  o.source = sample();
  o.output = out;
  o.width = o.height = size;
  o.shard_size = shard;
  o.workers = 2;
  o.store = FERRY_PACK_JPEG;
  return ferry_pack_build(&o);
}

/* Bytes of every shard of a pack. */
static long long pack_bytes(const char *dir) {
  long long n = 0;
  char path[4400];
  struct stat st;
  for (int k = 0; k < 1000; k++) {
    snprintf(path, sizeof path, "%s/shard-%05d.fpk", dir, k);
    if (stat(path, &st) != 0)
      break;
    n += st.st_size;
  }
  return n;
}

static uint64_t get_u64(FILE *f, long at) {
  uint8_t b[8] = {0};
  fseek(f, at, SEEK_SET);
  CHECK(fread(b, 1, 8, f) == 8);
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | b[i];
  return v;
}

/* Offset of sample k's bytes in a shard file, from its index. */
static long sample_offset(FILE *f, int k) {
  uint64_t index_off = get_u64(f, 32);
  return (long)get_u64(f, (long)index_off + 32L * k);
}

/* Mean absolute difference per value between the samples of a pack and
 * of the direct pipeline, matched by path; *worst: the worst sample's. */
static double pack_vs_direct(const char *dir, double *worst) {
  static char pa[64][512], pb[64][512];
  size_t per = PW * PH * 3;
  uint8_t *a = malloc(64 * per), *b = malloc(64 * per);
  int na = load_all(dir, FERRY_CROP_CENTER, PW, PH, pa, a);
  int nb = load_all(sample(), FERRY_CROP_CENTER, PW, PH, pb, b);
  CHECK_MSG(na == 48 && nb == 48, "jpeg pack %d, direct %d", na, nb);
  int matched = 0;
  double sum = 0;
  *worst = 0;
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++) {
      char ra[4096], rb[4096];
      if (!realpath(pa[i], ra) || !realpath(pb[j], rb) || strcmp(ra, rb))
        continue;
      double d = 0;
      for (size_t k = 0; k < per; k++)
        d += abs((int)a[i * per + k] - (int)b[j * per + k]);
      d /= (double)per;
      sum += d;
      *worst = d > *worst ? d : *worst;
      matched++;
    }
  CHECK_MSG(matched == 48, "%d of 48 samples matched by path", matched);
  free(a);
  free(b);
  return matched ? sum / matched : 1e9;
}

/* A JPEG pack served by the loader is close to the direct pipeline from
 * the original files (re-encoding is lossy), and much smaller than a u8
 * pack of the same samples at the same size. */
static void test_jpeg_round_trip(const char *dir, const char *u8dir) {
  CHECK_MSG(build_jpeg(dir, 256, 9) == FERRY_OK, "%s", ferry_last_error());
  CHECK_MSG(ferry_pack_verify(dir, NULL) == FERRY_OK, "%s", ferry_last_error());
  /* Exact decoding on both sides: what remains is the pack's own loss
   * (resize to short side 256, quality 90 4:2:0, resampled again).
   * Measured: mean 0.53 levels, worst sample 1.33. */
  double worst, mean;
  load_exact = 1;
  mean = pack_vs_direct(dir, &worst);
  load_exact = 0;
  printf("jpeg pack vs direct, exact decode: mean abs difference %.2f levels, worst sample %.2f\n",
         mean, worst);
  CHECK_MSG(mean < 1.0 && worst < 2.5, "mean %.2f, worst %.2f", mean, worst);
  /* Default options (DCT scaling): the two paths decode at different DCT
   * scales, whose approximations dominate. Measured: mean 2.61, worst 8.7. */
  mean = pack_vs_direct(dir, &worst);
  printf("jpeg pack vs direct, default options: mean abs difference %.2f levels, worst %.2f\n",
         mean, worst);
  CHECK_MSG(mean < 4.0 && worst < 12.0, "mean %.2f, worst %.2f", mean, worst);
  /* the same samples as u8 at the same nominal size */
  ferry_pack_options o;
  ferry_pack_options_default(&o);
  o.source = sample();
  o.output = u8dir;
  o.width = o.height = 256;
  o.shard_size = 9;
  o.workers = 2;
  CHECK_MSG(ferry_pack_build(&o) == FERRY_OK, "%s", ferry_last_error());
  long long jb = pack_bytes(dir), ub = pack_bytes(u8dir);
  printf("bytes on disk: jpeg pack %lld, u8 pack %lld (%.1fx)\n", jb, ub, (double)ub / jb);
  CHECK_MSG(jb > 0 && jb * 4 < ub, "jpeg pack %lld bytes, u8 pack %lld", jb, ub);
}

/* Random crops, flips and another output size work on a JPEG pack. */
static void test_jpeg_random(const char *dir) {
  static char pa[64][512];
  size_t per = 24 * 24 * 3;
  uint8_t *a = malloc(64 * per), *b = malloc(64 * per);
  int na = load_all(dir, FERRY_CROP_RANDOM, 24, 24, pa, a);
  int nb = load_all(dir, FERRY_CROP_CENTER, 24, 24, pa, b);
  CHECK_MSG(na == 48 && nb == 48, "random %d, center %d", na, nb);
  CHECK(memcmp(a, b, 48 * per) != 0);
  int again = load_all(dir, FERRY_CROP_RANDOM, 24, 24, pa, b);
  CHECK(again == 48 && memcmp(a, b, 48 * per) == 0); /* seeded: repeatable */
  free(a);
  free(b);
}

static char skipped[2048];
static void keep_skip(void *u, const char *p, int st, const char *m) {
  (void)u, (void)p, (void)st;
  snprintf(skipped, sizeof skipped, "%s", m);
}

/* --verify finds a damaged byte in a JPEG shard; an undecodable sample is
 * reported by shard and sample. */
static void test_jpeg_damage(const char *dir, const char *tmp) {
  char cmd[16384], shard[4400];
  snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s", tmp, dir, tmp);
  run(cmd);
  snprintf(shard, sizeof shard, "%s/shard-00002.fpk", tmp);
  FILE *f = fopen(shard, "r+b");
  CHECK(f != NULL);
  if (!f)
    return;
  long at = sample_offset(f, 3);
  fseek(f, at + 200, SEEK_SET);
  int c = fgetc(f);
  fseek(f, at + 200, SEEK_SET);
  fputc(c ^ 0x10, f);
  fflush(f);
  int64_t bad = 0;
  CHECK(ferry_pack_verify(tmp, &bad) == FERRY_ECORRUPT && bad == 1);
  CHECK_MSG(strstr(ferry_last_error(), "shard-00002.fpk: sample 3") != NULL, "%s",
            ferry_last_error());
  /* its JPEG header gone: the loader skips it, naming shard and sample */
  fseek(f, at, SEEK_SET);
  fputc(0, f);
  fputc(0, f);
  fclose(f);
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = tmp;
  o.batch_size = 64;
  o.width = o.height = 32;
  o.shuffle = 0;
  o.workers = 2;
  o.on_skip = keep_skip;
  ferry_loader *L;
  CHECK_MSG(ferry_loader_open(&o, &L) == FERRY_OK, "%s", ferry_last_error());
  ferry_batch *b;
  int n = 0;
  while (ferry_loader_next(L, &b) == FERRY_OK) {
    n += b->count;
    ferry_loader_release(L, b);
  }
  ferry_loader_close(L);
  CHECK_MSG(n == 47, "%d samples", n);
  CHECK_MSG(strstr(skipped, "shard-00002.fpk sample 3") != NULL, "%s", skipped);
}

/* Resuming a JPEG pack keeps complete shards; another store kind (or
 * quality) in the same directory is refused, either way round. */
static void test_jpeg_resume(const char *dir, const char *u8dir) {
  char path[4400], cmd[20000];
  snprintf(cmd, sizeof cmd, "rm %s/MANIFEST %s/shard-00003.fpk", dir, dir);
  run(cmd);
  struct stat st0, st1;
  snprintf(path, sizeof path, "%s/shard-00000.fpk", dir);
  CHECK(stat(path, &st0) == 0);
  CHECK_MSG(build_jpeg(dir, 256, 9) == FERRY_OK, "%s", ferry_last_error());
  CHECK(stat(path, &st1) == 0);
  CHECK(st0.st_mtime == st1.st_mtime && st0.st_ino == st1.st_ino);
  CHECK(ferry_pack_verify(dir, NULL) == FERRY_OK);
  ferry_pack_options o;
  ferry_pack_options_default(&o);
  o.source = sample();
  o.output = dir;
  o.width = o.height = 256;
  o.shard_size = 9;
  o.workers = 2;
  CHECK(ferry_pack_build(&o) == FERRY_EINVAL); /* u8 over a jpeg pack */
  CHECK(strstr(ferry_last_error(), "other settings") != NULL);
  o.store = FERRY_PACK_JPEG;
  o.quality = 80;
  CHECK(ferry_pack_build(&o) == FERRY_EINVAL); /* another quality */
  o.output = u8dir;
  o.quality = 90;
  CHECK(ferry_pack_build(&o) == FERRY_EINVAL); /* jpeg over a u8 pack */
  CHECK(strstr(ferry_last_error(), "other settings") != NULL);
  o.quality = 0;
  CHECK(ferry_pack_build(&o) == FERRY_EINVAL);
}

static void test_damage(const char *dir, const char *tmp) {
  char cmd[16384], shard[4400], man[4400];
  snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s", tmp, dir, tmp);
  run(cmd);
  snprintf(shard, sizeof shard, "%s/shard-00002.fpk", tmp);
  /* one flipped byte inside sample 3's pixels */
  FILE *f = fopen(shard, "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, 64 + 3 * ((PW * PH * 3 + 63) / 64 * 64) + 100, SEEK_SET);
    int c = fgetc(f);
    fseek(f, -1, SEEK_CUR);
    fputc(c ^ 0x10, f);
    fclose(f);
  }
  int64_t bad = 0;
  CHECK(ferry_pack_verify(tmp, &bad) == FERRY_ECORRUPT && bad == 1);
  CHECK_MSG(strstr(ferry_last_error(), "shard-00002.fpk: sample 3") != NULL, "%s",
            ferry_last_error());
  /* truncated shard */
  CHECK(truncate(shard, 2000) == 0);
  ferry_loader *L;
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = tmp;
  CHECK(ferry_loader_open(&o, &L) == FERRY_ECORRUPT);
  CHECK_MSG(strstr(ferry_last_error(), "shard-00002.fpk: truncated") != NULL, "%s",
            ferry_last_error());
  /* a foreign file in a shard's place */
  f = fopen(shard, "wb");
  fputs("this is not a shard, just some text that is long enough to be read as one......", f);
  fclose(f);
  CHECK(ferry_loader_open(&o, &L) == FERRY_ECORRUPT);
  CHECK(strstr(ferry_last_error(), "not a ferry shard") != NULL);
  /* a MANIFEST from the future */
  snprintf(man, sizeof man, "%s/MANIFEST", tmp);
  f = fopen(man, "wb");
  fputs("ferry-pack 9\nshape 32 40 3\nshards 0\n", f);
  fclose(f);
  CHECK(ferry_loader_open(&o, &L) == FERRY_EUNSUPPORTED);
  CHECK(strstr(ferry_last_error(), "version 9") != NULL);
}

static void test_resume(const char *dir) {
  char path[4400], cmd[40000];
  /* lose two shards and the MANIFEST, leave a stray temporary file */
  snprintf(cmd, sizeof cmd,
           "rm %s/MANIFEST %s/shard-00001.fpk %s/shard-00004.fpk && echo junk > "
           "%s/shard-00004.fpk.tmp && echo junk > %s/.MANIFEST.tmp && echo mine > %s/notes.tmp "
           "&& echo mine > %s/shard-1.fpk.tmp && echo mine > %s/x.fpk.tmp",
           dir, dir, dir, dir, dir, dir, dir, dir);
  run(cmd);
  struct stat st0, st1;
  snprintf(path, sizeof path, "%s/shard-00000.fpk", dir);
  CHECK(stat(path, &st0) == 0);
  CHECK(build(dir, 9) == FERRY_OK);
  CHECK(stat(path, &st1) == 0);
  CHECK(st0.st_mtime == st1.st_mtime && st0.st_ino == st1.st_ino); /* kept, not redone */
  snprintf(path, sizeof path, "%s/shard-00004.fpk.tmp", dir);
  CHECK(access(path, F_OK) != 0);
  snprintf(path, sizeof path, "%s/.MANIFEST.tmp", dir);
  CHECK(access(path, F_OK) != 0);
  /* the user's own files are never removed, whatever their names end with */
  const char *mine[] = {"notes.tmp", "shard-1.fpk.tmp", "x.fpk.tmp"};
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, mine[i]);
    CHECK_MSG(access(path, F_OK) == 0, "%s was removed", path);
    unlink(path);
  }
  CHECK(ferry_pack_verify(dir, NULL) == FERRY_OK);
  /* other settings in the same directory are refused */
  CHECK(build(dir, 5) == FERRY_EINVAL);
  CHECK(strstr(ferry_last_error(), "other settings") != NULL);
}

/* A folder of the user's (files, no PLAN) is not packed into: refused before
 * anything is written, its files untouched. */
static void test_foreign_dir(const char *dir) {
  char cmd[14000], path[4400];
  snprintf(cmd, sizeof cmd, "mkdir -p %s && echo mine > %s/MANIFEST && echo mine > %s/a.tmp", dir,
           dir, dir);
  run(cmd);
  CHECK(build(dir, 9) == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "not empty") && strstr(ferry_last_error(), "no PLAN"), "%s",
            ferry_last_error());
  snprintf(path, sizeof path, "%s/PLAN", dir);
  CHECK(access(path, F_OK) != 0);
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  FILE *f = fopen(path, "r");
  char line[16] = "";
  CHECK(f && fgets(line, sizeof line, f) && !strcmp(line, "mine\n"));
  if (f)
    fclose(f);
  snprintf(path, sizeof path, "%s/a.tmp", dir);
  CHECK(access(path, F_OK) == 0);
}

/* A FIFO in a shard's place: verify, load and a resumed build fail at once,
 * naming it, instead of blocking in open(). */
static void test_fifo_shard(const char *dir, const char *work) {
  char cmd[20000], path[4400];
  snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s && rm %s/shard-00001.fpk", work, dir, work,
           work);
  run(cmd);
  snprintf(path, sizeof path, "%s/shard-00001.fpk", work);
  CHECK(mkfifo(path, 0644) == 0);
  CHECK(ferry_pack_verify(work, NULL) == FERRY_ECORRUPT);
  CHECK_MSG(strstr(ferry_last_error(), "not a regular file"), "%s", ferry_last_error());
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = work;
  ferry_loader *L;
  CHECK(ferry_loader_open(&o, &L) == FERRY_ECORRUPT);
  CHECK(build(work, 9) != FERRY_OK || access(path, F_OK) == 0); /* returns, whatever it says */
}

static int shrank_skips;
static void count_shrank(void *u, const char *p, int st, const char *m) {
  (void)u, (void)p, (void)st;
  if (strstr(m, "shrank while it was being read"))
    __atomic_fetch_add(&shrank_skips, 1, __ATOMIC_RELAXED);
}

/* A shard truncated while a loader reads the pack: its samples fail with a
 * named error (SIGBUS caught, src/core/bus.c), the process lives on. */
static void test_truncated_under_load(const char *dir, const char *work) {
  char cmd[20000], path[4400];
  snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s", work, dir, work);
  run(cmd);
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = work;
  o.batch_size = 7;
  o.prefetch = 2;
  o.width = PW;
  o.height = PH;
  o.shuffle = 0;
  o.workers = 2;
  o.on_skip = count_shrank;
  ferry_loader *L;
  if (ferry_loader_open(&o, &L) != FERRY_OK) {
    CHECK_MSG(0, "%s", ferry_last_error());
    return;
  }
  ferry_batch *b;
  CHECK(ferry_loader_next(L, &b) == FERRY_OK);
  snprintf(path, sizeof path, "%s/shard-00004.fpk", work);
  CHECK(truncate(path, 1000) == 0);
  ferry_loader_release(L, b);
  int rc;
  while ((rc = ferry_loader_next(L, &b)) == FERRY_OK)
    ferry_loader_release(L, b);
  CHECK(rc == FERRY_END);
  CHECK_MSG(shrank_skips > 0, "%d samples reported as read from a shrunk shard", shrank_skips);
  ferry_loader_close(L);
}

/* A shard cut while --verify reads it (after it was mapped): the reads
 * past its new end would raise SIGBUS and kill the process; under the
 * guard they fail the shard, named as having shrunk. */
static void test_truncated_under_verify(const char *dir, const char *work) {
  char cmd[20000], path[4400];
  snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s", work, dir, work);
  run(cmd);
  fy_pack p;
  if (fy_pack_open(&p, work) != FERRY_OK) {
    CHECK_MSG(0, "%s", ferry_last_error());
    return;
  }
  snprintf(path, sizeof path, "%s/shard-00003.fpk", work);
  CHECK(truncate(path, 1000) == 0);
  int64_t bad = 0;
  CHECK(fy_pack_verify_open(&p, &bad) == FERRY_ECORRUPT && bad >= 1);
  CHECK_MSG(strstr(ferry_last_error(), "shard-00003.fpk: the shard shrank while it was being read"),
            "%s", ferry_last_error());
  fy_pack_close(&p);
}

/* Two writers into one pack directory: the second is refused (the first
 * holds a lock on the directory), nothing is written. */
static void test_lock(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
  CHECK(build(dir, 9) == FERRY_ESTATE);
  CHECK_MSG(strstr(ferry_last_error(), "another ferry pack is writing"), "%s", ferry_last_error());
  close(fd);
  CHECK(build(dir, 9) == FERRY_OK); /* free again */
}

int main(void) {
  char dir[] = "/tmp/ferry_pack_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char pack[4200], tmp[4200], cmd[8500];
  snprintf(pack, sizeof pack, "%s/pack", dir);
  snprintf(tmp, sizeof tmp, "%s/damaged", dir);
  test_round_trip(pack);
  char other[4200];
  snprintf(other, sizeof other, "%s/other", dir);
  test_binding(pack, other, tmp);
  test_damage(pack, tmp);
  test_resume(pack);
  char fifo[4200];
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  test_fifo_shard(pack, fifo);
  test_lock(pack);
  test_truncated_under_load(pack, fifo);
  test_truncated_under_verify(pack, fifo);
  char foreign[4200];
  snprintf(foreign, sizeof foreign, "%s/mine", dir);
  test_foreign_dir(foreign);
  char jpack[4200], u8pack[4200];
  snprintf(jpack, sizeof jpack, "%s/jpack", dir);
  snprintf(u8pack, sizeof u8pack, "%s/u8pack", dir);
  test_jpeg_round_trip(jpack, u8pack);
  test_jpeg_random(jpack);
  test_jpeg_damage(jpack, tmp);
  test_jpeg_resume(jpack, u8pack);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  run(cmd);
  return check_done();
}
