/* test_raw_check.c — fy_raw_tiff_check (src/codec/raw_check.c): a
 * TIFF-shaped raw whose IFDs or entries point past the end of the file is
 * refused with the reason before LibRaw reads it (LibRaw 0.20 crashed on
 * one); sound files in either byte order, with SubIFDs and an EXIF IFD,
 * pass, and so do the TIFF-shaped raws' own magics (ORF, RW2); loops end;
 * raws that are not TIFF-shaped are left to LibRaw. */
#include "codec/codec.h"

#include "check.h"

#include <stdint.h>
#include <string.h>

typedef struct tiff {
  uint8_t b[4096];
  size_t n;
  int big;
} tiff;

static void put(tiff *t, size_t at, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    t->b[at + (t->big ? (size_t)(bytes - 1 - i) : (size_t)i)] = (uint8_t)(v >> (8 * i));
}

/* An IFD of `count` entries (tag, type, count, value) at `at`, then `next`. */
static void ifd(tiff *t, size_t at, int count, const uint32_t (*e)[4], uint32_t next) {
  put(t, at, (uint32_t)count, 2);
  for (int i = 0; i < count; i++) {
    size_t p = at + 2 + 12 * (size_t)i;
    put(t, p, e[i][0], 2);
    put(t, p + 2, e[i][1], 2);
    put(t, p + 4, e[i][2], 4);
    put(t, p + 8, e[i][3], (e[i][1] == 3 && e[i][2] == 1) ? 2 : 4);
  }
  put(t, at + 2 + 12 * (size_t)count, next, 4);
}

/* A sound DNG-shaped file: IFD0 at 8 (DNGVersion, Make "NIKONCORP" at 200,
 * SubIFDs at 300 and 400 through an array at 240, the EXIF IFD at 500),
 * the chain's next IFD at 600. */
static void sound(tiff *t, int big) {
  memset(t, 0, sizeof *t);
  t->big = big;
  t->n = 700;
  memcpy(t->b, big ? "MM\0*" : "II*\0", 4);
  put(t, 4, 8, 4);
  const uint32_t e0[][4] = {
      {50706, 1, 4, 0x01040000}, {271, 2, 10, 200}, {330, 4, 2, 240}, {34665, 4, 1, 500}};
  ifd(t, 8, 4, e0, 600);
  memcpy(t->b + 200, "NIKONCORP", 10);
  put(t, 240, 300, 4);
  put(t, 244, 400, 4);
  const uint32_t sub[][4] = {{256, 4, 1, 64}, {257, 4, 1, 48}, {273, 4, 4, 660}};
  ifd(t, 300, 3, sub, 0);
  ifd(t, 400, 3, sub, 0);
  const uint32_t exif[][4] = {{37500, 7, 20, 640}}; /* a maker note, not walked */
  ifd(t, 500, 1, exif, 0);
  const uint32_t last[][4] = {{254, 4, 1, 1}};
  ifd(t, 600, 1, last, 0);
}

static int refused(const tiff *t, const char *why) {
  int rc = fy_raw_tiff_check(t->b, t->n, "x.dng");
  const char *m = ferry_last_error();
  int ok = rc == FERRY_ECORRUPT && strstr(m, "x.dng: camera raw: damaged TIFF structure: ") == m &&
           strstr(m, why);
  if (!ok)
    fprintf(stderr, "  want \"%s\", got %d \"%s\"\n", why, rc, rc ? m : "");
  return ok;
}

int main(void) {
  tiff t;
  for (int big = 0; big < 2; big++) {
    sound(&t, big);
    CHECK_MSG(fy_raw_tiff_check(t.b, t.n, "x.dng") == FERRY_OK, "%s", ferry_last_error());
    /* an entry's data past the end: the Make 1 byte too long for the file */
    sound(&t, big);
    t.n = 209;
    CHECK(refused(&t, "tag 271's data (10 bytes at byte 200) runs past the end of the file (209"));
    /* an entry whose count times its size wraps 32 bits */
    sound(&t, big);
    put(&t, 8 + 2 + 12 + 4, 0x40000001u, 4); /* Make: 2^30 + 1 ASCII bytes */
    CHECK(refused(&t, "tag 271's data (1073741825 bytes"));
    sound(&t, big);
    put(&t, 8 + 2 + 12 + 2, 12, 2); /* a DOUBLE: 8 bytes each */
    put(&t, 8 + 2 + 12 + 4, 0x20000001u, 4);
    CHECK(refused(&t, "tag 271's data (4294967304 bytes"));
    /* a SubIFD past the end, and one whose entries run past it */
    sound(&t, big);
    put(&t, 244, 9000, 4);
    CHECK(refused(&t, "an IFD at byte 9000, past the end of the file (700 bytes)"));
    sound(&t, big);
    put(&t, 400, 30000, 2);
    CHECK(refused(&t, "the IFD at byte 400 lists 30000 entries, past the end"));
    /* the SubIFD array itself past the end */
    sound(&t, big);
    put(&t, 8 + 2 + 24 + 8, 698, 4);
    CHECK(refused(&t, "tag 330's data (8 bytes at byte 698)"));
    /* a loop in the chain ends */
    sound(&t, big);
    put(&t, 600 + 2 + 12, 8, 4);
    CHECK(refused(&t, "more than 64 IFDs"));
    /* the EXIF IFD past the end */
    sound(&t, big);
    put(&t, 8 + 2 + 36 + 8, 5000, 4);
    CHECK(refused(&t, "an IFD at byte 5000"));
    /* the first IFD offset */
    sound(&t, big);
    put(&t, 4, 4, 4);
    CHECK(refused(&t, "an IFD at byte 4,"));
  }
  /* the TIFF-shaped raws' own magic (ORF, RW2): checked the same way */
  static const char *const magic[] = {"IIRO", "IIRS", "IIU", "MMOR"};
  for (int k = 0; k < 4; k++) {
    sound(&t, magic[k][0] == 'M');
    memcpy(t.b, magic[k], 4); /* "IIU" and its terminating 0 */
    CHECK_MSG(fy_raw_tiff_check(t.b, t.n, "x.dng") == FERRY_OK, "%s", ferry_last_error());
    t.n = 209;
    CHECK(refused(&t, "tag 271's data (10 bytes at byte 200)"));
  }
  /* not TIFF-shaped: LibRaw's own reading */
  static const uint8_t cr3[16] = {0, 0, 0, 0x18, 'f', 't', 'y', 'p', 'c', 'r', 'x', ' '};
  CHECK(fy_raw_tiff_check(cr3, sizeof cr3, "a.cr3") == FERRY_OK);
  /* the fixtures: the sound DNG, and the file that crashed LibRaw */
  const char *names[] = {"sensor.dng", "libraw_crash.dng"};
  for (int k = 0; k < 2; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/codecs/%s", check_fixtures(), names[k]);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f)
      continue;
    static uint8_t b[1 << 16];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    int rc = fy_raw_tiff_check(b, n, names[k]);
    CHECK_MSG(k == 0 ? rc == FERRY_OK : rc == FERRY_ECORRUPT, "%s: %d %s", names[k], rc,
              rc ? ferry_last_error() : "");
  }
  return check_done();
}
