/* text.c — writing CSV, JSON and HTML text safely: quoting, escaping of
 * file names (which may hold any byte but '/' and NUL), base64. */
#include "catalog/text.h"

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

void fy_json_string(FILE *f, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', f);
  while (*s) {
    if (*s == '"' || *s == '\\') {
      fprintf(f, "\\%c", *s++);
    } else if (*s < 0x20) {
      fprintf(f, "\\u%04x", *s++);
    } else {
      int n = utf8_len(s);
      if (n == 0) {
        /* a byte that is not UTF-8 (a Latin-1 name, say): the lone
         * surrogate U+DC80..U+DCFF, as Python's surrogateescape spells it,
         * so that os.fsencode(json.loads(...)) gives the bytes back */
        fprintf(f, "\\udc%02x", *s++);
      } else {
        fwrite(s, 1, (size_t)n, f);
        s += n;
      }
    }
  }
  fputc('"', f);
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

void fy_json_path_b64(FILE *f, const char *key, const char *path) {
  if (fy_utf8_valid(path))
    return;
  fprintf(f, ", \"%s\": \"", key);
  fy_base64(f, (const uint8_t *)path, strlen(path));
  fputc('"', f);
}

void fy_html_text(FILE *f, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  while (*s) {
    int n = *s < 0x20 || *s == 0x7f ? 0 : utf8_len(s);
    if (n == 0) { /* a control character or a byte that is not UTF-8 */
      fprintf(f, "\\x%02X", *s++);
      continue;
    }
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    case '\\': fputs("\\\\", f); break; /* so that \xNN above is never ambiguous */
    default: fwrite(s, 1, (size_t)n, f);
    }
    s += n;
  }
}

void fy_base64(FILE *f, const uint8_t *d, size_t n) {
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
    fputc(tab[v >> 18], f), fputc(tab[(v >> 12) & 63], f), fputc(tab[(v >> 6) & 63], f),
        fputc(tab[v & 63], f);
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)d[i] << 16;
    fputc(tab[v >> 18], f), fputc(tab[(v >> 12) & 63], f), fputs("==", f);
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
    fputc(tab[v >> 18], f), fputc(tab[(v >> 12) & 63], f), fputc(tab[(v >> 6) & 63], f),
        fputc('=', f);
  }
}

int fy_open_out(const char *path, FILE **f) {
  if (!path || !strcmp(path, "-")) {
    *f = stdout;
    return FERRY_OK;
  }
  *f = fopen(path, "w");
  if (!*f)
    return fy_error(FERRY_EIO, "%s: cannot create: %s", path, strerror(errno));
  return FERRY_OK;
}

int fy_close_out(const char *path, FILE *f) {
  int bad = ferror(f);
  if (f == stdout)
    bad = fflush(f) != 0 || bad;
  else
    bad = fclose(f) != 0 || bad;
  return bad ? fy_error(FERRY_EIO, "%s: write failed", path ? path : "<stdout>") : FERRY_OK;
}
