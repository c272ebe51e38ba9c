/* test_fuzz_regressions.c — every input under tests/fixtures/fuzz-regressions
 * (crashes the fuzzers found, each fixed in the library) goes through the
 * same harness that found it: under the ASan+UBSan build a regression
 * aborts this test. Known inputs also check the error they must give. */
#include "../../fuzz/fuzz_util.h"
#include "check.h"

#include <dirent.h>
#include <stdint.h>
#include <string.h>

/* The harnesses, each under its own name. */
#define LLVMFuzzerTestOneInput fuzz_decode_one
#include "../../fuzz/fuzz_decode.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_probe_one
#include "../../fuzz/fuzz_probe.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_pack_one
#include "../../fuzz/fuzz_pack.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_list_one
#include "../../fuzz/fuzz_list.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_catalog_one
#include "../../fuzz/fuzz_catalog.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_options_one
#include "../../fuzz/fuzz_options.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_shards_one
#include "../../fuzz/fuzz_shards.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_video_one
#include "../../fuzz/fuzz_video.c"
#undef LLVMFuzzerTestOneInput
#include "../../fuzz/fuzz_util.c"

static const struct {
  const char *name;
  int (*one)(const uint8_t *, size_t);
} targets[] = {{"decode", fuzz_decode_one},   {"probe", fuzz_probe_one},
               {"pack", fuzz_pack_one},       {"list", fuzz_list_one},
               {"catalog", fuzz_catalog_one}, {"options", fuzz_options_one},
               {"shards", fuzz_shards_one},   {"video", fuzz_video_one}};

#define slurp(path, n) check_slurp(path, n)

static int run_dir(const char *root, const char *name, int (*one)(const uint8_t *, size_t)) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", root, name);
  DIR *d = opendir(dir);
  int ran = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n = 0;
    uint8_t *data = slurp(path, &n);
    CHECK_MSG(data != NULL, "%s: cannot read", path);
    if (data) {
      printf("%s: %s (%zu bytes)\n", name, e->d_name, n);
      CHECK(one(data, n) == 0);
      ran++;
    }
    free(data);
  }
  if (d)
    closedir(d);
  return ran;
}

/* The catalog with a bad version: refused, naming the version (the message
 * was built from freed memory before the fix). */
static void catalog_version(const char *root) {
  char path[4096];
  snprintf(path, sizeof path, "%s/catalog/version-uaf", root);
  size_t n = 0;
  uint8_t *data = slurp(path, &n);
  CHECK(data && n > 1);
  if (!data || n < 2)
    return;
  char out[4200];
  snprintf(out, sizeof out, "%s/v.fidx", fuzz_tmpdir());
  fuzz_write(out, data + 1, n - 1);
  ferry_catalog *c = NULL;
  CHECK(ferry_catalog_load(out, &c) == FERRY_EUNSUPPORTED && !c);
  CHECK_MSG(strstr(ferry_last_error(), "catalog version") != NULL, "%s", ferry_last_error());
  free(data);
}

/* A catalog input of mode 1 (its checksum recomputed, as the harness does)
 * written where ferry_catalog_load reads it; 0, or -1 when missing. */
static int catalog_input(const char *root, const char *name, char *out, size_t cap) {
  char path[4096];
  snprintf(path, sizeof path, "%s/catalog/%s", root, name);
  size_t n = 0;
  uint8_t *data = slurp(path, &n);
  CHECK_MSG(data && n > 45 && data[0] == 1, "%s: missing, or not of mode 1", path);
  if (!data || n <= 45 || data[0] != 1) {
    free(data);
    return -1;
  }
  put32(data + n - 4, fy_crc32(0, data + 1, n - 5));
  snprintf(out, cap, "%s/shrd.fidx", fuzz_tmpdir());
  fuzz_write(out, data + 1, n - 1);
  free(data);
  return 0;
}

/* Issue 21's partial catalogs: the SHRD block of a partial catalog (mkseeds'
 * seed-2-fixed: rank 1 of 3 over /data and /srv/more) read back; the same
 * with a world size over FY_MAX_WORLD refused as damaged. */
static void catalog_shares(const char *root) {
  char path[4200];
  if (catalog_input(root, "shrd-partial", path, sizeof path) == 0) {
    ferry_catalog *c = NULL;
    int rc = ferry_catalog_load(path, &c);
    CHECK_MSG(rc == FERRY_OK, "shrd-partial: %s", ferry_last_error());
    int rank = -1, world = -1, nroots = -1;
    const char *const *roots = NULL;
    CHECK(c && ferry_catalog_share(c, &rank, &world, &roots, &nroots) == 1);
    CHECK_MSG(rank == 1 && world == 3 && nroots == 2, "rank %d of %d, %d roots", rank, world,
              nroots);
    CHECK(roots && nroots == 2 && !strcmp(roots[0], "/data") && !strcmp(roots[1], "/srv/more"));
    CHECK(c && ferry_catalog_size(c) == 3);
    ferry_catalog_free(c);
  }
  if (catalog_input(root, "shrd-world-too-large", path, sizeof path) == 0) {
    ferry_catalog *c = NULL;
    int rc = ferry_catalog_load(path, &c);
    CHECK_MSG(rc == FERRY_ECORRUPT && !c && strstr(ferry_last_error(), "damaged"), "%d: %s", rc,
              ferry_last_error());
  }
}

/* Pack inputs through their harness (a MANIFEST and one shard), with the
 * error each must give: a shard whose index entry offset wraps around
 * 2^64 is refused at open; (issue 16 item 10) a bound pack opens, another
 * pack's MANIFEST over its shard or its MANIFEST edited is refused by
 * name. */
static void pack_cases(const char *root) {
  static const struct {
    const char *file;
    int rc;
    const char *want;
  } cases[] = {{"offset-wrap", FERRY_ECORRUPT, "out of bounds"},
               {"bound-ok", FERRY_OK, NULL},
               {"bound-foreign-id", FERRY_ECORRUPT, "a shard of another pack"},
               {"bound-edited-manifest", FERRY_ECORRUPT, "MANIFEST checksum mismatch"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/pack/%s", root, cases[i].file);
    size_t n = 0;
    uint8_t *data = slurp(path, &n);
    CHECK_MSG(data && n > FY_PACK_HEADER, "%s: missing", path);
    if (!data || n <= FY_PACK_HEADER) {
      free(data);
      continue;
    }
    fuzz_pack_one(data, n);
    fy_pack p;
    int rc = fy_pack_open(&p, fuzz_tmpdir());
    CHECK_MSG(rc == cases[i].rc && (!cases[i].want || strstr(ferry_last_error(), cases[i].want)),
              "%s: %d, %s", cases[i].file, rc, rc ? ferry_last_error() : "opened");
    if (rc == FERRY_OK) { /* bound-ok: two samples */
      CHECK(p.count == 2 && p.id != 0);
      fy_pack_close(&p);
    }
    free(data);
  }
}

/* Issue 16 item 5, through the decode harness: a progressive JPEG whose
 * AC scan repeats 1,500 times is refused as over the scan limit, at once. */
static void decode_scan_bomb(const char *root) {
  char path[4096];
  snprintf(path, sizeof path, "%s/decode/scan-bomb", root);
  size_t n = 0;
  uint8_t *data = slurp(path, &n);
  CHECK_MSG(data && n > 1000, "%s: missing", path);
  if (!data || n <= 1000)
    return;
  ferry_image im;
  memset(&im, 0, sizeof im);
  int rc = ferry_decode(data + 1, n - 1, "scan-bomb", NULL, &im);
  CHECK_MSG(rc == FERRY_ETOO_LARGE && strstr(ferry_last_error(), "scans"), "scan bomb: %d, %s", rc,
            ferry_last_error());
  ferry_image_free(&im);
  free(data);
}

/* Label members read as JSON (jansson), through the shards harness's own
 * input: "label" as a string, nested, or before the top-level key; a bare
 * integer; JSON cut short; "label" only inside a string. (The hand-written
 * scanner took the first "label" it met anywhere.) */
static void shards_json_labels(const char *root) {
  char path[4096];
  snprintf(path, sizeof path, "%s/shards/json-labels", root);
  size_t n = 0;
  uint8_t *data = slurp(path, &n);
  CHECK_MSG(data && n > 1024 && data[0] == 0, "%s: missing, or not of mode 0", path);
  if (!data || n <= 1024 || data[0] != 0) {
    free(data);
    return;
  }
  char shard[4200];
  snprintf(shard, sizeof shard, "%s/json-labels.tar", fuzz_tmpdir());
  fuzz_write(shard, data + 1, n - 1);
  free(data);
  char *shards[] = {shard};
  fy_source s;
  memset(&s, 0, sizeof s);
  int rc = fy_shards_open(&s, "json-labels", shards, 1);
  static const int32_t want[] = {2, 2, 4, 7, -1, -1};
  CHECK_MSG(rc == FERRY_OK && s.count == 6, "%d, %lld samples: %s", rc, (long long)s.count,
            ferry_last_error());
  for (int64_t i = 0; rc == FERRY_OK && i < s.count && i < 6; i++)
    CHECK_MSG(s.labels[i] == want[i], "sample %lld: label %d, want %d", (long long)i,
              (int)s.labels[i], (int)want[i]);
  if (rc == FERRY_OK)
    fy_source_free(&s);
}

int main(void) {
  const char *fx = getenv("FERRY_FIXTURES");
  char root[2048];
  snprintf(root, sizeof root, "%s/fuzz-regressions", fx ? fx : "tests/fixtures");
  int ran = 0;
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
    ran += run_dir(root, targets[i].name, targets[i].one);
  CHECK_MSG(ran >= 2, "only %d regression inputs found under %s", ran, root);
  catalog_version(root);
  catalog_shares(root);
  pack_cases(root);
  decode_scan_bomb(root);
  shards_json_labels(root);
  return check_done();
}
