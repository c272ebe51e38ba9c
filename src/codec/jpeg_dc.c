/* jpeg_dc.c — reads only the DC coefficients of a JPEG: the 1/8-scale
 * image (each 8x8 block's mean) that fast-mode hashes are computed from.
 *
 * A perceptual hash of a 12-megapixel photo needs a few thousand pixels;
 * the DC coefficients give 190 000 of them while skipping the inverse DCT,
 * upsampling and colour conversion of 12 million. What remains is the
 * entropy decoding, and that is made cheap here: AC coefficients are never
 * stored, only skipped, through a table that consumes a Huffman code and
 * its magnitude bits in one lookup. Progressive files are cheaper still:
 * the AC scans are skipped byte-wise to the next marker.
 *
 * Handles baseline and extended sequential and progressive Huffman JPEGs,
 * 8-bit, gray or YCbCr, any sampling factors, restart markers, interleaved
 * or not. Anything else (arithmetic coding, 12-bit, lossless, CMYK, RGB
 * JPEGs, damaged data) returns FY_DC_FALLBACK and the caller decodes through
 * libjpeg, which also produces the error message. Every read is bounds-
 * checked: hostile input can only lead to a fallback. */
#include "codec/jpeg_dc.h"
#include "codec/codec.h"

#include <stdlib.h>
#include <string.h>

#define LOOK FY_DC_LOOKAHEAD
#define LOOK_SIZE (1 << LOOK)
#define CODE FY_DC_LOOKCODE

/* ------------------------------------------------------- bit reader */

typedef struct bitreader {
  const uint8_t *p, *end; /* p: next byte not yet in buf */
  uint64_t buf;           /* left-aligned */
  int bits;               /* valid bits in buf */
  int pad;                /* zero bits appended past a marker or the end */
} bitreader;

#define FY_ALWAYS_INLINE inline __attribute__((always_inline))

/* Tops the buffer up to at least 57 bits, a byte at a time. Stops at a
 * marker (0xFF not followed by 0x00) or the end, appending zeros (counted
 * in pad), as libjpeg does; the caller fails if it ever consumes them.
 * Takes and returns the reader by value so that the hot loops keep theirs
 * in registers. */
static __attribute__((noinline)) bitreader refill_slow(bitreader br) {
  while (br.bits <= 56) {
    unsigned c = 0;
    if (br.p < br.end && !br.pad) {
      c = *br.p;
      if (c == 0xFF) {
        if (br.p + 1 < br.end && br.p[1] == 0x00) {
          br.p += 2;
        } else { /* a marker: stays unread */
          c = 0;
          br.pad += 8;
        }
      } else {
        br.p++;
      }
    } else {
      br.pad += 8;
    }
    br.buf |= (uint64_t)c << (56 - br.bits);
    br.bits += 8;
  }
  return br;
}

/* Refills to 56..63 bits without a data-dependent branch in the common
 * case (eight bytes ahead hold no 0xFF): OR in the next 64 bits, count only
 * the whole bytes (the partial one is read again next time). */
static FY_ALWAYS_INLINE void refill(bitreader *br) {
  if (__builtin_expect(br->end - br->p >= 8 && !br->pad, 1)) {
    uint64_t v;
    memcpy(&v, br->p, 8);
    v = __builtin_bswap64(v);
    uint64_t t = ~v; /* a 0xFF byte in v is a zero byte in t */
    if (__builtin_expect(!((t - 0x0101010101010101ull) & ~t & 0x8080808080808080ull), 1)) {
      br->buf |= v >> br->bits;
      br->p += (63 - br->bits) >> 3;
      br->bits |= 56;
      return;
    }
  }
  *br = refill_slow(*br);
}

static FY_ALWAYS_INLINE void need(bitreader *br, int n) {
  if (br->bits < n)
    refill(br);
}

static FY_ALWAYS_INLINE void drop(bitreader *br, int n) {
  br->buf <<= n;
  br->bits -= n;
}

static inline unsigned peek(const bitreader *br, int n) { return (unsigned)(br->buf >> (64 - n)); }

/* Consumed bits that were padding: the data ended early. */
static inline int overrun(const bitreader *br) { return br->bits < br->pad; }

/* JPEG's sign extension of an s-bit magnitude. */
static inline int extend(unsigned v, int s) {
  return v < (1u << (s - 1)) ? (int)v - (1 << s) + 1 : (int)v;
}

/* ------------------------------------------------------- Huffman */

/* The AC skip table: for every LOOK-bit window, as many whole symbols
 * (code and magnitude bits) as fit, up to an end of block: their total
 * length, the coefficients they advance (an EOB counting as one), and
 * whether the last is EOB. Entry: eob << 10 | advance << 4 | length (0: no
 * whole symbol fits). */
static int code_at(const fy_dc_huff *h, unsigned win, int avail, int *len) {
  for (int l = 1; l <= avail && l <= 16; l++) {
    int code = (int)(win >> (avail - l));
    if (code <= h->maxcode[l]) {
      *len = l;
      return h->vals[code + h->valoffset[l]];
    }
  }
  return -1;
}

static void build_skip(fy_dc_huff *h) {
  for (int idx = 0; idx < LOOK_SIZE; idx++) {
    int pos = 0, adv = 0, eob = 0;
    for (;;) {
      int len, avail = LOOK - pos;
      int sym = code_at(h, (unsigned)idx & ((1u << avail) - 1), avail, &len);
      if (sym < 0)
        break;
      int r = sym >> 4, sz = sym & 15;
      if (pos + len + sz > LOOK)
        break;
      int a = sz ? r + 1 : (r == 15 ? 16 : 0);
      if (!sz && r != 15) { /* end of block */
        pos += len;
        eob = 1;
        break;
      }
      if (adv + a > 63)
        break;
      pos += len + sz;
      adv += a;
    }
    /* an EOB counts as one more coefficient: it must come before 64 */
    h->skip[idx] = pos ? (uint16_t)(eob << 10 | (adv + eob) << 4 | pos) : 0;
  }
}

/* The DC table's shortcut: code and magnitude bits in one lookup, giving
 * the difference itself. */
static void build_dcfast(fy_dc_huff *h) {
  for (int idx = 0; idx < (1 << CODE); idx++) {
    unsigned e = h->look[idx];
    h->dcfast[idx] = 0;
    if (!e)
      continue;
    int len = (int)(e >> 8), t = (int)(e & 0xFF);
    if (t > 16 || len + t > CODE)
      continue;
    int diff = t ? extend(((unsigned)idx >> (CODE - len - t)) & ((1u << t) - 1), t) : 0;
    h->dcfast[idx] = (int32_t)((uint32_t)diff << 8) | (len + t);
  }
}

/* Builds the lookup tables from BITS (counts of codes of each length) and
 * HUFFVAL. 0, or -1 for an invalid table. */
static int huff_build(fy_dc_huff *h, const uint8_t counts[16], const uint8_t *vals, int nvals,
                      int ac) {
  memset(h, 0, sizeof *h);
  memcpy(h->vals, vals, (size_t)nvals);
  int code = 0, k = 0;
  for (int len = 1; len <= 16; len++) {
    int n = counts[len - 1];
    h->valoffset[len] = k - code;
    h->maxcode[len] = -1;
    if (n) {
      if (code + n > (1 << len))
        return -1; /* more codes than fit: not a prefix code */
      for (int i = 0; i < n; i++, k++, code++) {
        if (len > CODE)
          continue;
        int shift = CODE - len;
        for (int f = 0; f < (1 << shift); f++)
          h->look[(code << shift) | f] = (uint16_t)(len << 8 | vals[k]);
      }
      h->maxcode[len] = code - 1;
    }
    code <<= 1;
  }
  if (ac)
    build_skip(h);
  else
    build_dcfast(h);
  h->defined = 1;
  return 0;
}

/* Decodes one symbol the slow way (code longer than CODE bits); -1 when
 * the bits are no code. Needs 16 bits in the buffer. */
static FY_ALWAYS_INLINE int huff_slow(bitreader *br, const fy_dc_huff *h) {
  unsigned v = peek(br, 16);
  for (int len = CODE + 1; len <= 16; len++) {
    int code = (int)(v >> (16 - len));
    if (code <= h->maxcode[len]) {
      int idx = code + h->valoffset[len];
      if (idx < 0 || idx > 255)
        return -1;
      drop(br, len);
      return h->vals[idx];
    }
  }
  return -1;
}

static FY_ALWAYS_INLINE int huff_decode(bitreader *br, const fy_dc_huff *h) {
  unsigned e = h->look[peek(br, CODE)];
  if (e) {
    drop(br, (int)(e >> 8));
    return (int)(e & 0xFF);
  }
  return huff_slow(br, h);
}

/* Skips the 63 AC coefficients of a block (baseline). 0, or -1 on a bad
 * code. The hot loop of fast mode: one table lookup consumes two or three
 * symbols on average, and the bit buffer lives in registers, going back
 * to *br only around refills and the rare long codes. */
static FY_ALWAYS_INLINE int skip_ac(bitreader *br, const fy_dc_huff *h) {
  const uint16_t *skip = h->skip;
  int k = 1;
  for (;;) {
    /* an unconditional refill (cheaper than a branch that mispredicts)
     * leaves 56 bits or more: enough for two lookups of at most LOOK */
    refill(br);
    uint64_t buf = br->buf;
    int bits = br->bits;
    for (int twice = 0; twice < 2; twice++) {
      unsigned e = skip[buf >> (64 - LOOK)];
      int adv = (int)(e >> 4 & 63);
      /* whole symbols only while the block lasts: once coefficient 63 is
       * reached the next bits (an EOB too) belong to the next block */
      if (__builtin_expect(e == 0 || k + adv > 64, 0))
        goto slow;
      int n = (int)(e & 15);
      buf <<= n;
      bits -= n;
      k += adv;
      if (e >> 10 || k >= 64) {
        br->buf = buf, br->bits = bits;
        return 0; /* end of block */
      }
    }
    br->buf = buf, br->bits = bits;
    continue;
  slow:
    br->buf = buf, br->bits = bits;
    int rs = huff_decode(br, h);
    if (rs < 0)
      return -1;
    int r = rs >> 4, sz = rs & 15;
    if (sz)
      drop(br, sz);
    if (sz)
      k += r + 1;
    else if (r == 15)
      k += 16;
    else
      return 0;
    if (k >= 64)
      return 0;
  }
}

/* ------------------------------------------------------- markers */

typedef struct scan {
  int ns;
  int comp[4]; /* indices into dc->comp */
  int td[4], ta[4];
  int ss, se, ah, al;
} scan;

static int u16(const uint8_t *p) { return p[0] << 8 | p[1]; }

static int parse_sof(fy_jpeg_dc *dc, const uint8_t *p, int len, int progressive) {
  if (len < 6 || p[0] != 8)
    return -1; /* 12-bit and others: libjpeg */
  dc->height = u16(p + 1);
  dc->width = u16(p + 3);
  dc->ncomp = p[5];
  if (dc->width < 1 || dc->height < 1 || (dc->ncomp != 1 && dc->ncomp != 3) ||
      len < 6 + 3 * dc->ncomp)
    return -1;
  dc->progressive = progressive;
  dc->hmax = dc->vmax = 1;
  for (int i = 0; i < dc->ncomp; i++) {
    fy_dc_comp *c = &dc->comp[i];
    const uint8_t *q = p + 6 + 3 * i;
    c->id = q[0];
    c->h = q[1] >> 4;
    c->v = q[1] & 15;
    c->tq = q[2];
    if (c->h < 1 || c->h > 4 || c->v < 1 || c->v > 4 || c->tq > 3)
      return -1;
    if (c->h > dc->hmax)
      dc->hmax = c->h;
    if (c->v > dc->vmax)
      dc->vmax = c->v;
  }
  dc->have_sof = 1;
  return 0;
}

static int parse_dht(fy_jpeg_dc *dc, const uint8_t *p, int len) {
  while (len > 0) {
    if (len < 17)
      return -1;
    int tc = p[0] >> 4, th = p[0] & 15, n = 0;
    if (tc > 1 || th > 3)
      return -1;
    for (int i = 0; i < 16; i++)
      n += p[1 + i];
    if (n > 256 || len < 17 + n)
      return -1;
    fy_dc_huff *h = tc ? &dc->ac[th] : &dc->dcl[th];
    if (huff_build(h, p + 1, p + 17, n, tc) != 0)
      return -1;
    p += 17 + n;
    len -= 17 + n;
  }
  return 0;
}

static int parse_dqt(fy_jpeg_dc *dc, const uint8_t *p, int len) {
  while (len > 0) {
    int pq = p[0] >> 4, tq = p[0] & 15, n = pq ? 129 : 65;
    if (pq > 1 || tq > 3 || len < n)
      return -1;
    dc->q0[tq] = pq ? (uint16_t)u16(p + 1) : p[1]; /* zig-zag 0: the DC step */
    dc->qdef[tq] = 1;
    p += n;
    len -= n;
  }
  return 0;
}

static int parse_sos(fy_jpeg_dc *dc, const uint8_t *p, int len, scan *s) {
  if (len < 1)
    return -1;
  s->ns = p[0];
  if (s->ns < 1 || s->ns > 4 || len < 1 + 2 * s->ns + 3)
    return -1;
  for (int i = 0; i < s->ns; i++) {
    int id = p[1 + 2 * i], k;
    for (k = 0; k < dc->ncomp && dc->comp[k].id != id; k++)
      ;
    if (k == dc->ncomp)
      return -1;
    s->comp[i] = k;
    s->td[i] = p[2 + 2 * i] >> 4;
    s->ta[i] = p[2 + 2 * i] & 15;
    if (s->td[i] > 3 || s->ta[i] > 3)
      return -1;
  }
  const uint8_t *q = p + 1 + 2 * s->ns;
  s->ss = q[0];
  s->se = q[1];
  s->ah = q[2] >> 4;
  s->al = q[2] & 15;
  return 0;
}

/* ------------------------------------------------------- layout */

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

static int setup_grids(fy_jpeg_dc *dc, uint64_t max_pixels) {
  if (fy_over_pixel_limit((uint64_t)dc->width, (uint64_t)dc->height, max_pixels))
    return -1;
  dc->mcux = ceil_div(dc->width, 8 * dc->hmax);
  dc->mcuy = ceil_div(dc->height, 8 * dc->vmax);
  size_t total = 0;
  for (int i = 0; i < dc->ncomp; i++) {
    fy_dc_comp *c = &dc->comp[i];
    c->bw = ceil_div(ceil_div(dc->width * c->h, dc->hmax), 8);
    c->bh = ceil_div(ceil_div(dc->height * c->v, dc->vmax), 8);
    c->pw = dc->mcux * c->h;
    c->ph = dc->mcuy * c->v;
    c->al = -1;
    total += (size_t)c->pw * c->ph;
  }
  if (fy_buf_reserve(&dc->mem, total * sizeof(int32_t)) != FERRY_OK)
    return -1;
  int32_t *m = dc->mem.p;
  memset(m, 0, total * sizeof(int32_t));
  for (int i = 0; i < dc->ncomp; i++) {
    dc->comp[i].dc = m;
    m += (size_t)dc->comp[i].pw * dc->comp[i].ph;
  }
  dc->grids = 1;
  return 0;
}

/* --------------------------------------------------------- scans */

/* Restart: the reader sits before the RSTn marker; skips it. Returns 0,
 * or -1 when no RST marker follows. */
static int restart(bitreader *br) {
  const uint8_t *p = br->p;
  while (p + 1 < br->end && !(p[0] == 0xFF && p[1] >= 0xD0 && p[1] <= 0xD7))
    p++;
  if (p + 1 >= br->end)
    return -1;
  br->p = p + 2;
  br->buf = 0;
  br->bits = 0;
  br->pad = 0;
  return 0;
}

/* One block of a component in a DC scan: first pass (Ah = 0) adds the
 * difference to the predictor, refinement (Ah > 0) adds one bit; a
 * sequential scan skips the AC coefficients after the DC. */
static FY_ALWAYS_INLINE int block(fy_jpeg_dc *dc, bitreader *br, const scan *s, int i,
                                  int32_t *pred, int32_t *out) {
  need(br, 32);
  if (s->ah) {
    if (peek(br, 1))
      *out |= 1 << s->al;
    drop(br, 1);
    return overrun(br) ? -1 : 0;
  }
  int t = huff_decode(br, &dc->dcl[s->td[i]]);
  if (t < 0 || t > 16)
    return -1;
  if (t) {
    need(br, 32);
    unsigned v = peek(br, t);
    drop(br, t);
    /* wraps instead of overflowing on hostile data */
    pred[i] = (int32_t)((uint32_t)pred[i] + (uint32_t)extend(v, t));
  }
  *out = (int32_t)((uint32_t)pred[i] << s->al);
  if (!dc->progressive && skip_ac(br, &dc->ac[s->ta[i]]) != 0)
    return -1;
  return overrun(br) ? -1 : 0;
}

/* A sequential interleaved scan, the common case, in one tight loop: the
 * blocks of an MCU come from a precomputed list, the reader stays in
 * registers, data overruns are checked once per MCU. */
typedef struct mcu_slot {
  const fy_dc_huff *dct, *act;
  int comp;     /* index into the scan's predictors */
  int32_t *out; /* block (0, 0) of the component's grid */
  size_t row;   /* (v offset) * pw + h offset within the MCU */
  int mh, mv;   /* component blocks per MCU */
  size_t pw;
} mcu_slot;

static int sequential_interleaved(fy_jpeg_dc *dc, const scan *s, bitreader *brp) {
  mcu_slot slot[10];
  int nb = 0;
  for (int i = 0; i < s->ns; i++) {
    fy_dc_comp *c = &dc->comp[s->comp[i]];
    for (int v = 0; v < c->v; v++)
      for (int h = 0; h < c->h; h++) {
        if (nb == 10)
          return -1; /* JPEG allows at most 10 blocks per MCU */
        slot[nb++] = (mcu_slot){
            &dc->dcl[s->td[i]], &dc->ac[s->ta[i]], i, c->dc, (size_t)v * c->pw + h, c->h, c->v,
            (size_t)c->pw};
      }
  }
  int32_t pred[4] = {0, 0, 0, 0};
  bitreader br = *brp;
  int ri = dc->restart, n = 0;
  for (int my = 0; my < dc->mcuy; my++)
    for (int mx = 0; mx < dc->mcux; mx++, n++) {
      if (ri && n && n % ri == 0) {
        if (restart(&br) != 0)
          return -1;
        memset(pred, 0, sizeof pred);
      }
      for (int b = 0; b < nb; b++) {
        const mcu_slot *sl = &slot[b];
        refill(&br);
        int32_t f = sl->dct->dcfast[peek(&br, CODE)];
        if (f) {
          drop(&br, f & 0xFF);
          pred[sl->comp] = (int32_t)((uint32_t)pred[sl->comp] + (uint32_t)(f >> 8));
        } else {
          int t = huff_decode(&br, sl->dct);
          if (t < 0 || t > 16)
            return -1;
          if (t) {
            unsigned v = peek(&br, t);
            drop(&br, t);
            pred[sl->comp] = (int32_t)((uint32_t)pred[sl->comp] + (uint32_t)extend(v, t));
          }
        }
        sl->out[(size_t)my * sl->mv * sl->pw + (size_t)mx * sl->mh + sl->row] = pred[sl->comp];
        if (skip_ac(&br, sl->act) != 0)
          return -1;
      }
      if (overrun(&br))
        return -1;
    }
  *brp = br;
  return 0;
}

/* Decodes a DC (or sequential) scan whose data starts at *pp; leaves *pp
 * where the reader stopped. The reader is a local (restarts go through a
 * copy) so that it stays in registers. */
static int decode_scan(fy_jpeg_dc *dc, const scan *s, const uint8_t **pp, const uint8_t *end) {
  int32_t pred[4] = {0, 0, 0, 0};
  for (int i = 0; i < s->ns; i++) {
    if (!s->ah && !dc->dcl[s->td[i]].defined)
      return -1;
    if (!dc->progressive && !dc->ac[s->ta[i]].defined)
      return -1;
  }
  bitreader br = {*pp, end, 0, 0, 0};
  int ri = dc->restart, n = 0;
  if (s->ns == 1) { /* non-interleaved: the component's own block grid */
    fy_dc_comp *c = &dc->comp[s->comp[0]];
    for (int by = 0; by < c->bh; by++)
      for (int bx = 0; bx < c->bw; bx++, n++) {
        if (ri && n && n % ri == 0) {
          bitreader r = br;
          if (restart(&r) != 0)
            return -1;
          br = r;
          pred[0] = 0;
        }
        if (block(dc, &br, s, 0, pred, &c->dc[(size_t)by * c->pw + bx]) != 0)
          return -1;
      }
  } else if (!dc->progressive) {
    if (sequential_interleaved(dc, s, &br) != 0)
      return -1;
  } else {
    for (int my = 0; my < dc->mcuy; my++)
      for (int mx = 0; mx < dc->mcux; mx++, n++) {
        if (ri && n && n % ri == 0) {
          bitreader r = br;
          if (restart(&r) != 0)
            return -1;
          br = r;
          memset(pred, 0, sizeof pred);
        }
        for (int i = 0; i < s->ns; i++) {
          fy_dc_comp *c = &dc->comp[s->comp[i]];
          for (int v = 0; v < c->v; v++)
            for (int h = 0; h < c->h; h++) {
              size_t at = (size_t)(my * c->v + v) * c->pw + (size_t)(mx * c->h + h);
              if (block(dc, &br, s, i, pred, &c->dc[at]) != 0)
                return -1;
            }
        }
      }
  }
  *pp = br.p;
  return 0;
}

/* Next marker at or after p (0xFF followed by neither 0x00, 0xFF nor
 * RSTn); NULL when there is none. */
static const uint8_t *next_marker(const uint8_t *p, const uint8_t *end) {
  while (p + 1 < end) {
    const uint8_t *f = memchr(p, 0xFF, (size_t)(end - p - 1));
    if (!f)
      return NULL;
    uint8_t m = f[1];
    if (m != 0x00 && m != 0xFF && !(m >= 0xD0 && m <= 0xD7))
      return f;
    p = f + 1;
  }
  return NULL;
}

/* Whether the components we need have complete DC values. */
static int dc_complete(const fy_jpeg_dc *dc, int ncomp) {
  for (int i = 0; i < ncomp; i++)
    if (dc->comp[i].al != 0)
      return 0;
  return 1;
}

static int run_scan(fy_jpeg_dc *dc, const scan *s, const uint8_t **pp, const uint8_t *end) {
  if (!dc->grids)
    return -1;
  if (dc->progressive && s->ss > 0) { /* AC scan: not needed */
    *pp = next_marker(*pp, end);
    return *pp ? 0 : -1;
  }
  if (dc->progressive ? (s->se != 0) : (s->ss != 0 || s->se != 63 || s->ah || s->al))
    return -1;
  for (int i = 0; i < s->ns; i++) {
    fy_dc_comp *c = &dc->comp[s->comp[i]];
    if (s->ah ? c->al != s->ah || s->al != s->ah - 1 : c->al != -1)
      return -1; /* out-of-order successive approximation */
    if (!dc->qdef[c->tq])
      return -1;
  }
  const uint8_t *q = *pp;
  if (decode_scan(dc, s, &q, end) != 0)
    return -1;
  for (int i = 0; i < s->ns; i++)
    dc->comp[s->comp[i]].al = s->al;
  *pp = next_marker(q, end);
  return *pp ? 0 : -1;
}

/* 3-component JPEGs that libjpeg would not treat as YCbCr (Adobe
 * transform 0, or component ids 'R','G','B'). */
static int is_rgb(const fy_jpeg_dc *dc) {
  if (dc->ncomp != 3 || dc->jfif)
    return 0;
  if (dc->adobe)
    return dc->adobe_transform == 0;
  return dc->comp[0].id == 'R' && dc->comp[1].id == 'G' && dc->comp[2].id == 'B';
}

int fy_jpeg_dc_read(fy_jpeg_dc *dc, const uint8_t *data, size_t size, int color,
                    uint64_t max_pixels) {
  fy_buf keep = dc->mem;
  memset(dc, 0, sizeof *dc);
  dc->mem = keep;
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8)
    return FY_DC_FALLBACK;
  if (fy_jpeg_scan_budget(data, size, "<memory>") != FERRY_OK)
    return FY_DC_FALLBACK; /* what libjpeg would refuse, fast mode refuses too */
  const uint8_t *p = data + 2, *end = data + size;
  int eoi = 0;
  for (;;) {
    /* leniently, as libjpeg reads them; the data's end or a bad length:
     * libjpeg's business */
    size_t pos = (size_t)(p - data);
    fy_jpeg_seg sg;
    if (fy_jpeg_seg_next(data, size, &pos, 0, &sg) != 1)
      return FY_DC_FALLBACK;
    int m = sg.marker;
    if (m == 0xD9) { /* EOI */
      p = end;
      eoi = 1;
      break;
    }
    const uint8_t *seg = sg.data;
    int len = (int)sg.len; /* at most 65,533 */
    p = data + pos;
    int rc = 0;
    switch (m) {
    case 0xC0:
    case 0xC1: rc = dc->have_sof ? -1 : parse_sof(dc, seg, len, 0); break;
    case 0xC2: rc = dc->have_sof ? -1 : parse_sof(dc, seg, len, 1); break;
    case 0xC4: rc = parse_dht(dc, seg, len); break;
    case 0xDB: rc = parse_dqt(dc, seg, len); break;
    case 0xDD: /* DRI */
      if (len < 2)
        return FY_DC_FALLBACK;
      dc->restart = u16(seg);
      break;
    case 0xE0:
      if (len >= 5 && !memcmp(seg, "JFIF", 5))
        dc->jfif = 1;
      break;
    case 0xEE:
      if (len >= 12 && !memcmp(seg, "Adobe", 5)) {
        dc->adobe = 1;
        dc->adobe_transform = seg[11];
      }
      break;
    case 0xDA: {
      scan s;
      if (!dc->have_sof || parse_sos(dc, seg, len, &s) != 0)
        return FY_DC_FALLBACK;
      if (!dc->grids && (is_rgb(dc) || setup_grids(dc, max_pixels) != 0))
        return FY_DC_FALLBACK;
      const uint8_t *q = p;
      if (run_scan(dc, &s, &q, end) != 0)
        return FY_DC_FALLBACK;
      p = q;
      if (dc_complete(dc, color ? dc->ncomp : 1))
        goto done; /* the rest of the file holds no DC data we need */
      break;
    }
    default:
      /* SOF3, SOF5..7, SOF9..15 (lossless, hierarchical, arithmetic),
       * DNL, DHP, EXP: libjpeg's business. APPn, COM: skipped. */
      if ((m >= 0xC3 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) || m == 0xDC ||
          m == 0xDE || m == 0xDF)
        return FY_DC_FALLBACK;
      break;
    }
    if (rc != 0)
      return FY_DC_FALLBACK;
  }
done:
  if (!dc->grids || !dc_complete(dc, color ? dc->ncomp : 1))
    return FY_DC_FALLBACK;
  /* A file cut short after the scans we read is still a damaged file:
   * libjpeg (and so compatible mode) would report it, so fast mode hands it
   * over too. In entropy-coded data 0xFF is always followed by 0x00 or
   * RSTn, so FF D9 past the scans can only be the end-of-image marker. */
  if (eoi)
    return FERRY_OK;
  const uint8_t *q = p;
  while (q + 1 < end && (q = memchr(q, 0xFF, (size_t)(end - q - 1))) != NULL) {
    if (q[1] == 0xD9)
      return FERRY_OK;
    q++;
  }
  return FY_DC_FALLBACK;
}

/* ------------------------------------------------------- output */

void fy_jpeg_dc_luma(const fy_jpeg_dc *dc, int f, float *out) {
  const fy_dc_comp *c = &dc->comp[0];
  float q = (float)dc->q0[c->tq] / 8.0f;
  int ow = (c->bw + f - 1) / f, oh = (c->bh + f - 1) / f;
  for (int oy = 0; oy < oh; oy++) {
    int y1 = (oy + 1) * f < c->bh ? (oy + 1) * f : c->bh;
    for (int ox = 0; ox < ow; ox++) {
      int x1 = (ox + 1) * f < c->bw ? (ox + 1) * f : c->bw, n = 0;
      float sum = 0;
      for (int y = oy * f; y < y1; y++)
        for (int x = ox * f; x < x1; x++, n++) {
          float v = (float)c->dc[(size_t)y * c->pw + x] * q + 128.0f;
          sum += v < 0 ? 0 : v > 255 ? 255 : v;
        }
      out[(size_t)oy * ow + ox] = sum / (float)n;
    }
  }
}

static uint8_t clamp_u8(float v) { return (uint8_t)(v <= 0 ? 0 : v >= 255 ? 255 : v + 0.5f); }

void fy_jpeg_dc_rgb(const fy_jpeg_dc *dc, uint8_t *out) {
  const fy_dc_comp *l = &dc->comp[0];
  float ql = (float)dc->q0[l->tq] / 8.0f;
  if (dc->ncomp == 1) {
    for (int y = 0; y < l->bh; y++)
      for (int x = 0; x < l->bw; x++) {
        uint8_t g = clamp_u8((float)l->dc[(size_t)y * l->pw + x] * ql + 128.0f);
        uint8_t *o = out + ((size_t)y * l->bw + x) * 3;
        o[0] = o[1] = o[2] = g;
      }
    return;
  }
  const fy_dc_comp *cb = &dc->comp[1], *cr = &dc->comp[2];
  float qb = (float)dc->q0[cb->tq] / 8.0f, qr = (float)dc->q0[cr->tq] / 8.0f;
  for (int y = 0; y < l->bh; y++) {
    /* the chroma block under the centre of this luma block */
    int yb = (int)(((double)y + 0.5) * cb->v / l->v), yr = (int)(((double)y + 0.5) * cr->v / l->v);
    yb = yb < cb->bh ? yb : cb->bh - 1;
    yr = yr < cr->bh ? yr : cr->bh - 1;
    for (int x = 0; x < l->bw; x++) {
      int xb = (int)(((double)x + 0.5) * cb->h / l->h),
          xr = (int)(((double)x + 0.5) * cr->h / l->h);
      xb = xb < cb->bw ? xb : cb->bw - 1;
      xr = xr < cr->bw ? xr : cr->bw - 1;
      float Y = (float)l->dc[(size_t)y * l->pw + x] * ql + 128.0f;
      float B = (float)cb->dc[(size_t)yb * cb->pw + xb] * qb;
      float R = (float)cr->dc[(size_t)yr * cr->pw + xr] * qr;
      uint8_t *o = out + ((size_t)y * l->bw + x) * 3;
      o[0] = clamp_u8(Y + 1.402f * R);
      o[1] = clamp_u8(Y - 0.344136f * B - 0.714136f * R);
      o[2] = clamp_u8(Y + 1.772f * B);
    }
  }
}
