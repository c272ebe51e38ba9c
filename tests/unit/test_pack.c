/* test_pack.c — packs: round trip equals the direct pipeline bit for bit,
 * --verify finds a damaged byte, wrong version / truncated shard / foreign
 * file give clear errors, resuming keeps complete shards. */
#include "check.h"
#include "ferry.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *sample(void) {
  const char *s = getenv("FERRY_SAMPLE");
  return s ? s : "data/sample";
}

static void quiet_skip(void *u, const char *p, int st, const char *m) {
  (void)u, (void)p, (void)st, (void)m;
}

/* Loads a whole epoch (no shuffle) as u8 HWC w x h; returns the count and
 * fills paths/pixels. */
static int load_all(const char *src, ferry_crop crop, int w, int h, char paths[64][512],
                    uint8_t *px) {
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = src;
  o.batch_size = 7;
  o.width = w;
  o.height = h;
  o.crop = crop;
  o.shuffle = 0;
  o.layout = FERRY_LAYOUT_HWC;
  o.workers = 2;
  o.on_skip = quiet_skip;
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
  o.width = 40;
  o.height = 32;
  o.shard_size = shard;
  o.workers = 2;
  return ferry_pack_build(&o);
}

static void test_round_trip(const char *dir) {
  CHECK_MSG(build(dir, 9) == FERRY_OK, "%s", ferry_last_error());
  CHECK(ferry_pack_verify(dir, NULL) == FERRY_OK);
  static char pa[64][512], pb[64][512];
  size_t per = 40 * 32 * 3;
  uint8_t *a = malloc(64 * per), *b = malloc(64 * per);
  int na = load_all(dir, FERRY_CROP_CENTER, 40, 32, pa, a);
  int nb = load_all(sample(), FERRY_CROP_CENTER, 40, 32, pb, b);
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
  free(a);
  free(b);
}

static void run(const char *cmd) { CHECK_MSG(system(cmd) == 0, "%s", cmd); }

static void test_damage(const char *dir, const char *tmp) {
  char cmd[16384], shard[4400], man[4400];
  snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s", tmp, dir, tmp);
  run(cmd);
  snprintf(shard, sizeof shard, "%s/shard-00002.fpk", tmp);
  /* one flipped byte inside sample 3's pixels */
  FILE *f = fopen(shard, "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, 64 + 3 * ((40 * 32 * 3 + 63) / 64 * 64) + 100, SEEK_SET);
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
  char path[4400], cmd[20000];
  /* lose two shards and the MANIFEST, leave a stray temporary file */
  snprintf(cmd, sizeof cmd,
           "rm %s/MANIFEST %s/shard-00001.fpk %s/shard-00004.fpk && echo junk > "
           "%s/shard-00004.fpk.tmp",
           dir, dir, dir, dir);
  run(cmd);
  struct stat st0, st1;
  snprintf(path, sizeof path, "%s/shard-00000.fpk", dir);
  CHECK(stat(path, &st0) == 0);
  CHECK(build(dir, 9) == FERRY_OK);
  CHECK(stat(path, &st1) == 0);
  CHECK(st0.st_mtime == st1.st_mtime && st0.st_ino == st1.st_ino); /* kept, not redone */
  snprintf(path, sizeof path, "%s/shard-00004.fpk.tmp", dir);
  CHECK(access(path, F_OK) != 0);
  CHECK(ferry_pack_verify(dir, NULL) == FERRY_OK);
  /* other settings in the same directory are refused */
  CHECK(build(dir, 5) == FERRY_EINVAL);
  CHECK(strstr(ferry_last_error(), "other settings") != NULL);
}

int main(void) {
  char dir[] = "/tmp/ferry_pack_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char pack[4200], tmp[4200], cmd[8500];
  snprintf(pack, sizeof pack, "%s/pack", dir);
  snprintf(tmp, sizeof tmp, "%s/damaged", dir);
  test_round_trip(pack);
  test_damage(pack, tmp);
  test_resume(pack);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  run(cmd);
  return check_done();
}
