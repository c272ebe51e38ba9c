/* test_raw_check.c — fy_raw_check (src/codec/raw_check.c): a
 * TIFF-shaped raw whose IFDs or entries point past the end of the file is
 * refused with the reason before LibRaw reads it (LibRaw 0.20 crashed on
 * one); sound files in either byte order, with SubIFDs and an EXIF IFD,
 * pass, and so do the TIFF-shaped raws' own magics (ORF, RW2); loops end.
 * The TIFFs LibRaw reads inside a Fujifilm RAF (at the raw data's offset
 * and past the preview's) and a Canon CR3 (moov/uuid/CMT1-4 boxes) are
 * checked the same way, their offsets from the embedded TIFF's start and
 * the messages' from the file's; a RAF header whose offsets lie past the
 * end is refused; CR3 boxes LibRaw would not read are left alone, and the
 * 64-bit box sizes on which LibRaw loops without end (raw_cr3.c) refused. */
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

/* A RAF around `t` (at byte 256; the preview offset at 84 is `preview`)
 * or a CR3 with `t` in box CMT<k>, into `out`. */
static size_t raf(const tiff *t, uint32_t preview, uint8_t *out) {
  memset(out, 0, 256);
  memcpy(out, "FUJIFILMCCD-RAW 0201FF383501", 28);
  const uint32_t at[][2] = {{84, preview}, {100, 256}, {104, (uint32_t)t->n}};
  for (int i = 0; i < 3; i++)
    for (int b = 0; b < 4; b++)
      out[at[i][0] + (size_t)b] = (uint8_t)(at[i][1] >> (24 - 8 * b));
  memcpy(out + 256, t->b, t->n);
  return 256 + t->n;
}

static size_t be32(uint8_t *p, size_t v) {
  for (int b = 0; b < 4; b++)
    p[b] = (uint8_t)(v >> (24 - 8 * b));
  return 4;
}

static size_t cr3(const tiff *t, int k, uint8_t *out) {
  static const uint8_t canon[16] = {0x85, 0xc0, 0xb6, 0x87, 0x82, 0x0f, 0x11, 0xe0,
                                    0x81, 0x11, 0xf4, 0xce, 0x46, 0x2b, 0x6a, 0x48};
  size_t n = be32(out, 24);
  memcpy(out + n, "ftypcrx \0\0\0\1crx isom", 20);
  n = 24;
  size_t cmt = 8 + t->n, uuid = 8 + 16 + 8 /* a free box first */ + cmt, moov = 8 + uuid;
  be32(out + n, moov);
  memcpy(out + n + 4, "moov", 4);
  be32(out + n + 8, uuid);
  memcpy(out + n + 12, "uuid", 4);
  memcpy(out + n + 16, canon, 16);
  be32(out + n + 32, 8);
  memcpy(out + n + 36, "free", 4);
  be32(out + n + 40, cmt);
  memcpy(out + n + 44, "CMT0", 4);
  out[n + 47] = (uint8_t)('0' + k);
  memcpy(out + n + 48, t->b, t->n);
  return n + 48 + t->n;
}

static int refused_as(const uint8_t *b, size_t n, const char *name, const char *why) {
  int rc = fy_raw_check(b, n, name);
  const char *m = ferry_last_error();
  int ok = rc == FERRY_ECORRUPT && strstr(m, name) == m && strstr(m, why);
  if (!ok)
    fprintf(stderr, "  want \"%s\", got %d \"%s\"\n", why, rc, rc ? m : "");
  return ok;
}

static void containers(void) {
  static uint8_t b[8192];
  tiff t;
  for (int big = 0; big < 2; big++) {
    /* RAF: a sound TIFF at the raw data's offset passes; one whose entry
     * runs past the end is refused, the places counted from the file */
    sound(&t, big);
    size_t n = raf(&t, 0, b);
    CHECK_MSG(fy_raw_check(b, n, "x.raf") == FERRY_OK, "%s", ferry_last_error());
    t.n = 209;
    n = raf(&t, 0, b);
    CHECK(refused_as(b, n, "x.raf",
                     "damaged TIFF structure (RAF's raw data block at byte 256): tag 271's data "
                     "(10 bytes at byte 456) runs past the end of the file (465 bytes)"));
    /* the preview's TIFF (its offset + 12) is read too */
    sound(&t, big);
    n = raf(&t, 0, b);
    memcpy(b + n, b + 256, 209); /* a second copy of the TIFF, cut, as the preview's EXIF */
    n += 209;
    b[84] = 0, b[85] = 0, b[86] = (uint8_t)((956 - 12) >> 8), b[87] = (uint8_t)(956 - 12);
    CHECK(refused_as(b, n, "x.raf", "(RAF's preview at byte 944): tag 271's data"));
    /* CR3: the TIFF in CMT1..CMT4 */
    for (int k = 1; k <= 4; k++) {
      sound(&t, big);
      n = cr3(&t, k, b);
      CHECK_MSG(fy_raw_check(b, n, "x.cr3") == FERRY_OK, "CMT%d: %s", k, ferry_last_error());
      put(&t, 244, 9000, 4); /* a SubIFD past the end */
      n = cr3(&t, k, b);
      char want[64];
      snprintf(want, sizeof want, "(CR3's CMT%d box at byte 64): an IFD at byte 9072", k);
      CHECK(refused_as(b, n, "x.cr3", want));
    }
    /* LibRaw walks a CMT box's IFD, not the chain after it */
    sound(&t, big);
    put(&t, 600 + 2 + 12, 9000, 4);
    n = cr3(&t, 1, b);
    CHECK_MSG(fy_raw_check(b, n, "x.cr3") == FERRY_OK, "%s", ferry_last_error());
    /* a CMT box whose header LibRaw refuses (IFD0 not at 8) is not read */
    sound(&t, big);
    put(&t, 244, 9000, 4);
    put(&t, 4, 12, 4);
    n = cr3(&t, 1, b);
    CHECK_MSG(fy_raw_check(b, n, "x.cr3") == FERRY_OK, "%s", ferry_last_error());
  }
  /* a RAF header whose offsets lie past the end of the file */
  sound(&t, 0);
  size_t n = raf(&t, 0, b);
  b[100] = 0x7f;
  CHECK(refused_as(b, n, "x.raf", "damaged RAF header: the raw data's offset"));
  n = raf(&t, 0, b);
  b[84] = 0x01;
  CHECK(refused_as(b, n, "x.raf", "damaged RAF header: the preview's offset"));
  n = raf(&t, 0, b);
  CHECK(refused_as(b, 103, "x.raf", "damaged RAF header: 103 bytes"));
  /* a CR3's boxes cut or oversized: LibRaw walks a container to the end
   * its 32-bit size claims, past the file's (fuzz_probe found the crash
   * again through a moov 12 bytes too long): its TIFFs are still checked */
  sound(&t, 0);
  n = cr3(&t, 1, b);
  be32(b + 24, 1u << 30);
  CHECK(fy_raw_check(b, n, "x.cr3") == FERRY_OK);
  CHECK(fy_raw_check(b, 30, "x.cr3") == FERRY_OK);
  put(&t, 244, 9000, 4);
  n = cr3(&t, 1, b);
  be32(b + 24, 1u << 30);
  CHECK(refused_as(b, n, "x.cr3", "(CR3's CMT1 box at byte 64): an IFD at byte 9072"));
  /* a CMT box elsewhere than moov/uuid(Canon) is not LibRaw's: left */
  n = cr3(&t, 1, b);
  b[24 + 8 + 16] ^= 0xff; /* not Canon's UUID */
  CHECK(fy_raw_check(b, n, "x.cr3") == FERRY_OK);
  /* 64-bit sizes: 0 never moves LibRaw's walk on (a 104-byte file hung
   * it), and one that wraps back loops it; a container claiming more than
   * the file is refused as damaged */
  static const uint8_t ftyp[24] = {0, 0, 0, 24, 'f', 't', 'y', 'p', 'c', 'r', 'x', ' '};
  const struct {
    const char *type;
    uint64_t size;
    const char *why;
  } big[] = {
      {"free", 0, "the 'free' box at byte 24 has a 64-bit size of 0 (LibRaw would walk"},
      {"free", 15, "has a 64-bit size of 15"},
      {"free", UINT64_MAX - 8, "has a 64-bit size of 18446744073709551607"},
      {"moov", 1ull << 40, "the 'moov' box at byte 24 claims 1099511627776 bytes, past the end"},
      {"free", 1ull << 40, NULL}, /* not a container: LibRaw steps over it */
      {"moov", 64, NULL},
  };
  for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
    memset(b, 0, 128);
    memcpy(b, ftyp, 24);
    be32(b + 24, 1);
    memcpy(b + 28, big[k].type, 4);
    be32(b + 32, (size_t)(big[k].size >> 32));
    be32(b + 36, (size_t)(big[k].size & 0xffffffffu));
    if (big[k].why)
      CHECK(refused_as(b, 88, "x.cr3", big[k].why));
    else
      CHECK_MSG(fy_raw_check(b, 88, "x.cr3") == FERRY_OK, "%s: %s", big[k].type,
                ferry_last_error());
  }
  /* a header across the end of the file, inside a moov whose 32-bit size
   * claims more than the file: read with 0xff past the end (raw_cr3.c),
   * its 64-bit size wraps and is refused */
  memset(b, 0, 128);
  memcpy(b, ftyp, 24);
  be32(b + 24, 4096);
  memcpy(b + 28, "moov", 4);
  be32(b + 32, 1);
  memcpy(b + 36, "free", 4);
  memset(b + 40, 0xff, 5);
  CHECK(refused_as(b, 45, "x.cr3",
                   "the 'free' box at byte 32 has a 64-bit size of "
                   "18446744073709551615"));
  b[40] = 0; /* 0x00ffffff ffffffff: no wrap, and past the end: not walked */
  CHECK_MSG(fy_raw_check(b, 45, "x.cr3") == FERRY_OK, "%s", ferry_last_error());
  /* a 64-bit size of 0 deeper down: inside moov (LibRaw walks moov's
   * children), not inside a box LibRaw does not open */
  for (int open = 0; open < 2; open++) {
    memset(b, 0, 128);
    memcpy(b, ftyp, 24);
    be32(b + 24, 64);
    memcpy(b + 28, open ? "moov" : "mdat", 4);
    be32(b + 32, 1);
    memcpy(b + 36, "trak", 4);
    if (open)
      CHECK(refused_as(b, 88, "x.cr3", "the 'trak' box at byte 32 has a 64-bit size of 0"));
    else
      CHECK(fy_raw_check(b, 88, "x.cr3") == FERRY_OK);
  }
}

/* refused_as for a TIFF-shaped file, its message a TIFF structure's. */
static int refused(const tiff *t, const char *why) {
  static const char head[] = "x.dng: camera raw: damaged TIFF structure: ";
  return refused_as(t->b, t->n, "x.dng", why) &&
         !strncmp(ferry_last_error(), head, sizeof head - 1);
}

int main(void) {
  tiff t;
  for (int big = 0; big < 2; big++) {
    sound(&t, big);
    CHECK_MSG(fy_raw_check(t.b, t.n, "x.dng") == FERRY_OK, "%s", ferry_last_error());
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
    CHECK_MSG(fy_raw_check(t.b, t.n, "x.dng") == FERRY_OK, "%s", ferry_last_error());
    t.n = 209;
    CHECK(refused(&t, "tag 271's data (10 bytes at byte 200)"));
  }
  containers();
  /* the fixtures: sound files, and the ones that crashed LibRaw */
  const char *names[] = {"sensor.dng",       "sensor.raf",       "sensor.cr3",
                         "libraw_crash.dng", "libraw_crash.raf", "libraw_crash.cr3"};
  for (int k = 0; k < 6; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/codecs/%s", check_fixtures(), names[k]);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f)
      continue;
    static uint8_t b[1 << 16];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    int rc = fy_raw_check(b, n, names[k]);
    CHECK_MSG(k < 3 ? rc == FERRY_OK : rc == FERRY_ECORRUPT, "%s: %d %s", names[k], rc,
              rc ? ferry_last_error() : "");
  }
  return check_done();
}
