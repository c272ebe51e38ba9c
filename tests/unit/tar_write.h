/* tar_write.h — the tests' tar writer: headers as tar writers make them
 * (v7, ustar, GNU; checksums, octal fields), and a tar built in memory
 * member by member (pax records, GNU long names, the end blocks). */
#ifndef FY_TEST_TAR_WRITE_H
#define FY_TEST_TAR_WRITE_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V7, USTAR, GNU };

static inline void put_octal(uint8_t *f, size_t len, uint64_t v) {
  char tmp[32];
  snprintf(tmp, sizeof tmp, "%0*llo", (int)len - 1, (unsigned long long)v);
  memcpy(f, tmp, len - 1);
  f[len - 1] = '\0';
}

/* The checksum field written over the header (unsigned byte sum, or the
 * signed sum some old writers used). */
static inline void put_checksum(uint8_t *b, int is_signed) {
  memset(b + 148, ' ', 8);
  long sum = 0;
  for (int i = 0; i < 512; i++)
    sum += is_signed ? (long)(int8_t)b[i] : (long)b[i];
  char tmp[16];
  snprintf(tmp, sizeof tmp, "%06lo", (unsigned long)sum & 0777777);
  memcpy(b + 148, tmp, 6);
  b[154] = '\0';
  b[155] = ' ';
}

/* A header as tar writers make them; name longer than 100 bytes is cut
 * (that is what pax and GNU headers are for). */
static inline void make_header(uint8_t b[512], int fmt, const char *prefix, const char *name,
                               char type, uint64_t size) {
  memset(b, 0, 512);
  size_t ln = strlen(name);
  memcpy(b, name, ln > 100 ? 100 : ln);
  put_octal(b + 100, 8, 0644);
  put_octal(b + 108, 8, 1000);
  put_octal(b + 116, 8, 1000);
  put_octal(b + 124, 12, size);
  put_octal(b + 136, 12, 1700000000);
  b[156] = (uint8_t)type;
  if (fmt == USTAR) {
    memcpy(b + 257,
           "ustar\0"
           "00",
           8);
    if (prefix)
      memcpy(b + 345, prefix, strlen(prefix));
  } else if (fmt == GNU) {
    memcpy(b + 257, "ustar  \0", 8);
  }
  if (fmt != V7) {
    memcpy(b + 265, "user", 4);
    memcpy(b + 297, "group", 5);
  }
  put_checksum(b, 0);
}

/* A tar being written in memory. */
typedef struct tarw {
  uint8_t *p;
  size_t n, cap;
} tarw;

static inline void tw_bytes(tarw *t, const void *d, size_t n) {
  if (t->n + n > t->cap) {
    t->cap = (t->n + n) * 2 + 4096;
    t->p = realloc(t->p, t->cap);
    if (!t->p)
      abort();
  }
  if (n)
    memcpy(t->p + t->n, d, n);
  t->n += n;
}

static inline void tw_pad(tarw *t) {
  static const uint8_t zeros[512];
  tw_bytes(t, zeros, (512 - t->n % 512) % 512);
}

/* A header, then the data padded to 512 bytes; returns the data's offset. */
static inline size_t tw_member(tarw *t, int fmt, const char *name, char type, const void *d,
                               size_t n) {
  uint8_t b[512];
  make_header(b, fmt, NULL, name, type, n);
  tw_bytes(t, b, 512);
  size_t at = t->n;
  tw_bytes(t, d, n);
  tw_pad(t);
  return at;
}

static inline size_t tw_file(tarw *t, const char *name, const char *text) {
  return tw_member(t, USTAR, name, '0', text, strlen(text));
}

/* A pax 'x' header with the given records ("key=value" each). */
static inline void tw_pax(tarw *t, int count, ...) {
  char recs[8192];
  size_t n = 0;
  va_list ap;
  va_start(ap, count);
  for (int i = 0; i < count; i++) {
    const char *kv = va_arg(ap, const char *);
    size_t body = strlen(kv) + 2; /* ' ' and '\n' */
    size_t len = body + 1;
    while (snprintf(NULL, 0, "%zu", len) + body != len)
      len++;
    n += (size_t)snprintf(recs + n, sizeof recs - n, "%zu %s\n", len, kv);
  }
  va_end(ap);
  tw_member(t, USTAR, "./PaxHeaders/x", 'x', recs, n);
}

/* A GNU long name: "././@LongLink" of type 'L', the name and its NUL. */
static inline void tw_gnu_long(tarw *t, const char *name) {
  tw_member(t, GNU, "././@LongLink", 'L', name, strlen(name) + 1);
}

static inline void tw_end(tarw *t) {
  static const uint8_t zeros[1024];
  tw_bytes(t, zeros, 1024);
}

#endif
