/* text.c — CSV and HTML text written safely (quoting, escaping of file
 * names, which may hold any byte but '/' and NUL), UTF-8 checked and made
 * valid for JSON (catalog/json.c writes JSON, through jansson), base64,
 * CSV records read back. */
#include "catalog/text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void fy_csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* Length of the valid UTF-8 sequence at s, or 0: no overlong forms, no
 * surrogates (U+D800..DFFF), nothing past U+10FFFF. */
static int utf8_len(const unsigned char *s) {
  if (s[0] < 0x80)
    return 1;
  int n = s[0] >= 0xC2 && s[0] <= 0xDF   ? 2
          : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
          : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4
                                         : 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 0;
  if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0) ||
      (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))
    return 0;
  return n;
}

int fy_utf8_valid(const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  while (*s) {
    int n = utf8_len(s);
    if (!n)
      return 0;
    s += n;
  }
  return 1;
}

char *fy_utf8_lossy(const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  size_t bad = 0, len = 0;
  for (; s[len];) {
    int n = utf8_len(s + len);
    bad += n == 0;
    len += n ? (size_t)n : 1;
  }
  if (bad > (SIZE_MAX - len - 1) / 2)
    return NULL;
  char *out = fy_malloc(len + 2 * bad + 1); /* 1 byte becomes EF BF BD */
  if (!out)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < len;) {
    int n = utf8_len(s + i);
    if (n == 0) {
      memcpy(out + k, "\xEF\xBF\xBD", 3); /* U+FFFD REPLACEMENT CHARACTER */
      k += 3, i++;
    } else {
      memcpy(out + k, s + i, (size_t)n);
      k += (size_t)n, i += (size_t)n;
    }
  }
  out[k] = '\0';
  return out;
}

char *fy_shown_text(const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  size_t len = strlen(str);
  char *out = malloc(4 * len + 1), *o = out; /* \xNN: four for one */
  if (!out)
    return NULL;
  while (*s) {
    int n = *s < 0x20 || *s == 0x7f ? 0 : utf8_len(s);
    if (n == 0) { /* a control character or a byte that is not UTF-8 */
      o += sprintf(o, "\\x%02X", *s++);
      continue;
    }
    if (*s == '\\') /* so that \xNN above is never ambiguous */
      *o++ = '\\';
    memcpy(o, s, (size_t)n);
    o += n;
    s += n;
  }
  *o = 0;
  return out;
}

void fy_html_text(FILE *f, const char *str) {
  char *shown = fy_shown_text(str);
  if (!shown) { /* out of memory: the page is cut short, and its write fails below */
    fputs("\\x??", f);
    return;
  }
  for (const char *s = shown; *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default: fputc(*s, f);
    }
  }
  free(shown);
}

/* The base64 of the 1 to 3 bytes at d (k of them) into out[0..3], padded. */
static void b64_quad(const uint8_t *d, size_t k, char out[4]) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  uint32_t v = (uint32_t)d[0] << 16 | (k > 1 ? (uint32_t)d[1] << 8 : 0) | (k > 2 ? d[2] : 0);
  out[0] = tab[v >> 18];
  out[1] = tab[(v >> 12) & 63];
  out[2] = k > 1 ? tab[(v >> 6) & 63] : '=';
  out[3] = k > 2 ? tab[v & 63] : '=';
}

void fy_base64(FILE *f, const uint8_t *d, size_t n) {
  char q[4];
  for (size_t i = 0; i < n; i += 3) {
    b64_quad(d + i, n - i < 3 ? n - i : 3, q);
    fwrite(q, 1, 4, f);
  }
}

char *fy_base64_text(const uint8_t *d, size_t n) {
  if (n / 3 >= (SIZE_MAX - 1) / 4 - 1)
    return NULL;
  char *out = fy_malloc((n + 2) / 3 * 4 + 1);
  if (!out)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i += 3, k += 4)
    b64_quad(d + i, n - i < 3 ? n - i : 3, out + k);
  out[k] = '\0';
  return out;
}

int fy_open_out(const char *path, fy_text_out *t) {
  t->path = path && strcmp(path, "-") ? path : NULL;
  t->f = stdout;
  if (!t->path)
    return FERRY_OK;
  /* a file written under a temporary name and renamed once complete: a
   * killed or failed run leaves the old report or export as it was */
  int rc = fy_out_open(&t->o, t->path);
  t->f = rc ? NULL : t->o.f;
  return rc;
}

int fy_close_out(fy_text_out *t, int rc) {
  if (!t->path) {
    int bad = (fflush(stdout) != 0 || ferror(stdout)) && rc == FERRY_OK;
    return bad ? fy_error(FERRY_EIO, "<stdout>: write failed") : rc;
  }
  int err = fy_out_close(&t->o, rc == FERRY_OK ? 0 : EIO);
  if (rc)
    return rc; /* the writer's message kept */
  return err ? fy_error(FERRY_EIO, "%s: write failed: %s", t->path, strerror(err)) : FERRY_OK;
}

int fy_base64_decode(const char *s, uint8_t **out, size_t *n) {
  size_t len = strlen(s);
  while (len && s[len - 1] == '=')
    len--;
  uint8_t *o = malloc(len * 3 / 4 + 3);
  if (!o)
    return fy_error(FERRY_ENOMEM, "base64: out of memory");
  uint32_t acc = 0;
  int bits = 0;
  size_t k = 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (v < 0) {
      free(o);
      return fy_error(FERRY_EINVAL, "base64: '%c' is not a base64 digit", c);
    }
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      o[k++] = (uint8_t)(acc >> bits);
    }
  }
  if (bits >= 6) { /* one digit alone carries no byte */
    free(o);
    return fy_error(FERRY_EINVAL, "base64: cut short");
  }
  *out = o;
  *n = k;
  return FERRY_OK;
}

void fy_csv_free(char **fields, size_t n) {
  for (size_t i = 0; fields && i < n; i++)
    free(fields[i]);
  free(fields);
}

int fy_csv_row(FILE *f, char ***fields, size_t *n) {
  *fields = NULL;
  *n = 0;
  int c = fgetc(f);
  if (c == EOF)
    return 0;
  char **v = NULL, *cur = NULL;
  size_t nv = 0, len = 0, cap = 0, total = 0;
  int quoted = 0, rc = 1;
  for (;; c = fgetc(f)) {
    int end_field = 0, end_row = 0;
    if (c == EOF) {
      if (quoted) {
        rc = fy_error(FERRY_EINVAL, "a quoted field is not closed");
        break;
      }
      end_field = end_row = 1;
    } else if (quoted) {
      if (c == '"') {
        int d = fgetc(f);
        if (d == '"')
          c = '"'; /* a quote, doubled */
        else {
          quoted = 0;
          if (d != EOF)
            ungetc(d, f);
          continue;
        }
      }
    } else if (c == '"' && len == 0) {
      quoted = 1;
      continue;
    } else if (c == ',') {
      end_field = 1;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r') {
        int d = fgetc(f);
        if (d != '\n' && d != EOF)
          ungetc(d, f);
      }
      end_field = end_row = 1;
    }
    if (!end_field) {
      if (++total > (1u << 20)) {
        rc = fy_error(FERRY_ETOO_LARGE, "a record over 1 MiB");
        break;
      }
      if (len + 2 > cap) {
        cap = cap ? 2 * cap : 64;
        char *p = realloc(cur, cap);
        if (!p) {
          rc = fy_error(FERRY_ENOMEM, "out of memory");
          break;
        }
        cur = p;
      }
      cur[len++] = (char)c;
      continue;
    }
    char **p = realloc(v, (nv + 1) * sizeof *v);
    char *field = malloc(len + 1);
    if (!p || !field) {
      free(field);
      if (p)
        v = p;
      rc = fy_error(FERRY_ENOMEM, "out of memory");
      break;
    }
    v = p;
    if (len)
      memcpy(field, cur, len);
    field[len] = '\0';
    v[nv++] = field;
    len = 0;
    if (end_row)
      break;
  }
  free(cur);
  if (rc != 1) {
    fy_csv_free(v, nv);
    return -1;
  }
  *fields = v;
  *n = nv;
  return 1;
}
