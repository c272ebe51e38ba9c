/* test_hash_jpegdc.c — fast mode's DC-only JPEG reader: its block means
 * must be exactly libjpeg's 1/8-scale decode (every fixture JPEG and, when
 * present, every corpus JPEG), it must hand unusual files to libjpeg
 * (arithmetic coding, CMYK) and survive damaged data: thousands of
 * mutations and every truncation, under ASan in the sanitizer build. */
#include "hash/hash.h"
#include "hash_check.h"

#include <dirent.h>
#include <jpeglib.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef struct jerr {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
} jerr;
static void jerr_exit(j_common_ptr c) { longjmp(((jerr *)c->err)->jump, 1); }
static void jerr_quiet(j_common_ptr c, int level) { (void)c, (void)level; }

/* Blocks that differ from libjpeg's 1/8-scale gray decode; -1 when the
 * sizes differ or libjpeg fails. */
static long compare_with_libjpeg(const fy_jpeg_dc *dc, const uint8_t *data, size_t n) {
  struct jpeg_decompress_struct c;
  jerr e;
  c.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = jerr_exit;
  e.pub.emit_message = jerr_quiet;
  long bad = 0;
  uint8_t *row = NULL;
  if (setjmp(e.jump)) {
    jpeg_destroy_decompress(&c);
    free(row);
    return -1;
  }
  jpeg_create_decompress(&c);
  jpeg_mem_src(&c, data, (unsigned long)n);
  jpeg_read_header(&c, TRUE);
  c.scale_num = 1;
  c.scale_denom = 8;
  c.out_color_space = JCS_GRAYSCALE;
  c.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&c);
  const fy_dc_comp *l = &dc->comp[0];
  if ((int)c.output_width != l->bw || (int)c.output_height != l->bh) {
    jpeg_destroy_decompress(&c);
    return -1;
  }
  row = malloc(c.output_width);
  while (c.output_scanline < c.output_height) {
    int y = (int)c.output_scanline;
    JSAMPROW rp = row;
    jpeg_read_scanlines(&c, &rp, 1);
    for (int x = 0; x < l->bw; x++) {
      int v = ((l->dc[(size_t)y * l->pw + x] * dc->q0[l->tq] + 4) >> 3) + 128;
      v = v < 0 ? 0 : v > 255 ? 255 : v;
      bad += v != row[x];
    }
  }
  jpeg_destroy_decompress(&c);
  free(row);
  return bad;
}

static int read_all(const char *path, fy_buf *b, size_t *n) {
  return fy_read_file(path, 0, b, n) == FERRY_OK ? 0 : -1;
}

static void check_dir(const char *dir, int *files, int *fallbacks) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  fy_jpeg_dc dc = {0};
  fy_buf b = {0};
  size_t n;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".jpg"))
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (read_all(path, &b, &n))
      continue;
    if (fy_jpeg_dc_read(&dc, b.p, n, 1, 0) != FERRY_OK) {
      (*fallbacks)++;
      continue;
    }
    (*files)++;
    long bad = compare_with_libjpeg(&dc, b.p, n);
    CHECK_MSG(bad == 0, "%s: %ld blocks differ from libjpeg's 1/8 scale", path, bad);
  }
  closedir(d);
  fy_buf_free(&b);
  fy_buf_free(&dc.mem);
}

static void test_exact(void) {
  char dir[4096];
  int files = 0, fallbacks = 0;
  snprintf(dir, sizeof dir, "%s/hash", check_fixtures());
  check_dir(dir, &files, &fallbacks);
  CHECK_MSG(files >= 9 && fallbacks == 1, "fixtures: %d read, %d fell back (cmyk only)", files,
            fallbacks);
  const char *corpus = check_corpus("DC reader on the corpus");
  if (corpus) {
    const char *subs[] = {"photos", "hires", "dupes"};
    files = fallbacks = 0;
    for (int i = 0; i < 3; i++) {
      snprintf(dir, sizeof dir, "%s/%s", corpus, subs[i]);
      check_dir(dir, &files, &fallbacks);
    }
    /* falls back: arithmetic coding and CMYK (3 files) */
    CHECK_MSG(files > 600 && fallbacks == 3, "corpus: %d read, %d fell back", files, fallbacks);
    printf("corpus: %d JPEGs read exactly as libjpeg's 1/8 scale, %d handed to libjpeg\n", files,
           fallbacks);
  }
}

/* Damaged data: mutated bytes and every truncation must never crash, and a
 * success must mean a fully decoded image (no reads past the data). */
static void test_hostile(void) {
  const char *names[] = {"rgb420.jpg", "progressive.jpg", "restart.jpg", "gray.jpg", "rgb422.jpg"};
  uint64_t x = 0x9E3779B97F4A7C15ull;
  int runs = 0;
  fy_jpeg_dc dc = {0};
  for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/hash/%s", check_fixtures(), names[f]);
    fy_buf b = {0};
    size_t n;
    if (read_all(path, &b, &n)) {
      CHECK_MSG(0, "%s missing", path);
      continue;
    }
    uint8_t *copy = malloc(n);
    int mutations = HC_SANITIZED ? 300 : 1500;
    for (int m = 0; m < mutations; m++) {
      memcpy(copy, b.p, n);
      int flips = 1 + (int)(x % 8);
      for (int k = 0; k < flips; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        copy[(x >> 33) % n] ^= (uint8_t)(1u << ((x >> 20) & 7));
      }
      fy_jpeg_dc_read(&dc, copy, n, (int)(m & 1), 1u << 24);
      runs++;
    }
    for (size_t cut = 0; cut < n; cut += HC_SANITIZED ? 7 : 1) {
      int rc = fy_jpeg_dc_read(&dc, b.p, cut, 1, 1u << 24);
      /* the picture needs its last scan's data: short files must fall back */
      if (cut + 2 < n)
        CHECK_MSG(rc == FY_DC_FALLBACK || cut > n - 16, "%s cut at %zu/%zu accepted", names[f], cut,
                  n);
      runs++;
    }
    free(copy);
    fy_buf_free(&b);
  }
  fy_buf_free(&dc.mem);
  printf("%d damaged inputs survived\n", runs);
  /* the pixel limit is checked before allocating */
  char path[4096];
  snprintf(path, sizeof path, "%s/hash/rgb420.jpg", check_fixtures());
  fy_buf b = {0};
  size_t n;
  if (!read_all(path, &b, &n)) {
    CHECK(fy_jpeg_dc_read(&dc, b.p, n, 0, 100) == FY_DC_FALLBACK);
    CHECK(fy_jpeg_dc_read(&dc, b.p, n, 0, 0) == FERRY_OK);
  }
  fy_buf_free(&b);
  fy_buf_free(&dc.mem);
}

int main(void) {
  test_exact();
  test_hostile();
  return check_done();
}
