/* test_corpus.c — every file of the shared corpus through ferry's decoder:
 * photos/, hires/ and formats/ decode (BMP refused by name), every
 * file in bad/ fails with a message naming it. Run by the sanitizer build
 * too, so it is the ASan+UBSan pass over the corpus. Skips, saying so,
 * without ../shared/corpus. */
#include "check.h"
#include "ferry.h"

#include <dirent.h>
#include <string.h>

typedef enum { EXPECT_OK, EXPECT_FAIL } expect;

static void run_dir(const char *corpus, const char *sub, expect want) {
  char dir[4096], path[8192];
  snprintf(dir, sizeof dir, "%s/%s", corpus, sub);
  DIR *d = opendir(dir);
  if (!d) {
    SKIP("%s not found", dir);
    return;
  }
  struct dirent *e;
  int files = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strstr(e->d_name, ".csv") || strstr(e->d_name, ".md"))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    ferry_image im;
    ferry_decode_options o;
    ferry_decode_options_default(&o);
    int rc = ferry_decode_file(path, &o, &im);
    files++;
    if (want == EXPECT_OK) {
      CHECK_MSG(rc == FERRY_OK, "%s: %s", path, ferry_last_error());
      if (rc == FERRY_OK) {
        CHECK(im.width > 0 && im.height > 0 && im.channels == 3);
        ferry_image_free(&im);
        /* and a scaled, cropped decode of the same file */
        o.min_width = 64;
        o.min_height = 64;
        o.crop = (ferry_rect){7, 5, 120, 90};
        CHECK_MSG(ferry_decode_file(path, &o, &im) == FERRY_OK, "%s", ferry_last_error());
        ferry_image_free(&im);
      }
    } else {
      CHECK_MSG(rc != FERRY_OK, "%s decoded but should fail", path);
      if (rc == FERRY_OK)
        ferry_image_free(&im);
      CHECK_MSG(strstr(ferry_last_error(), e->d_name) != NULL, "%s: message '%s'", path,
                ferry_last_error());
    }
  }
  closedir(d);
  printf("%s: %d files\n", sub, files);
}

/* The documented error of every file in bad/ (docs/ERRORS.md). */
static void check_documented_errors(const char *corpus) {
  static const struct {
    const char *file;
    int status;
    const char *says;
  } want[] = {
      {"bad_crc.png", FERRY_ECORRUPT, "PNG: "},
      {"bomb_65500x65500.jpg", FERRY_ETOO_LARGE, "65500x65500 (4290250000 pixels), over the"},
      {"corrupt_scan.jpg", FERRY_ECORRUPT, "corrupt JPEG: Corrupt JPEG data"},
      {"empty.jpg", FERRY_ECORRUPT, "empty file"},
      {"random_bytes.jpg", FERRY_EUNSUPPORTED, "unsupported format: not a JPEG, PNG, WebP"},
      {"text.jpg", FERRY_EUNSUPPORTED, "unsupported format: not a JPEG, PNG, WebP"},
      {"truncated.png", FERRY_ECORRUPT, "truncated PNG data"},
      {"truncated_0.jpg", FERRY_ECORRUPT, "truncated JPEG data"},
      {"truncated_1.jpg", FERRY_ECORRUPT, "truncated JPEG data"},
      {"truncated_2.jpg", FERRY_ECORRUPT, "truncated JPEG data"},
      {"truncated_3.jpg", FERRY_ECORRUPT, "truncated JPEG data"},
  };
  char path[4096];
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    snprintf(path, sizeof path, "%s/bad/%s", corpus, want[i].file);
    ferry_image im;
    int rc = ferry_decode_file(path, NULL, &im);
    if (rc == FERRY_OK)
      ferry_image_free(&im);
    CHECK_MSG(rc == want[i].status, "%s: status %d, documented %d", want[i].file, rc,
              want[i].status);
    CHECK_MSG(strstr(ferry_last_error(), want[i].file) && strstr(ferry_last_error(), want[i].says),
              "%s: '%s' lacks '%s'", want[i].file, ferry_last_error(), want[i].says);
  }
}

int main(void) {
  const char *c = check_corpus("corpus decode");
  if (c) {
    run_dir(c, "photos", EXPECT_OK);
    run_dir(c, "hires", EXPECT_OK);
    run_dir(c, "formats", EXPECT_OK);
    run_dir(c, "bad", EXPECT_FAIL);
    check_documented_errors(c);
  }
  return check_done();
}
