/* text.h — helpers for the catalog's text outputs (CSV, HTML; the strings
 * and base64 that catalog/json.c puts into JSON). */
#ifndef FY_TEXT_H
#define FY_TEXT_H

#include "core/internal.h"
#include "core/out_file.h"

#include <errno.h>
#include <stdio.h>

/* A CSV field, quoted when it holds a comma, quote or newline. */
void fy_csv_field(FILE *f, const char *s);
/* 1 when s is strict UTF-8: no overlong forms, no surrogates (U+D800..DFFF),
 * nothing past U+10FFFF (what JSON, and jansson, take). */
int fy_utf8_valid(const char *s);
/* s made strict UTF-8 (malloc'd): each byte that is not part of a valid
 * UTF-8 sequence replaced by U+FFFD; valid text unchanged. NULL when out of
 * memory. The one place the project decides what a name that is not UTF-8
 * reads as in JSON (docs/DEDUP.md, "names in any bytes"). */
char *fy_utf8_lossy(const char *s);
/* Text escaped for HTML content and attribute values: <>&"' as entities;
 * bytes that are not UTF-8 and control characters as \xNN, a backslash as
 * \\ (readable, reversible; the page stays valid UTF-8). */
void fy_html_text(FILE *f, const char *s);
/* s as the page shows it, that rule without the entities (malloc'd; NULL
 * when out of memory): a name that is valid UTF-8 without control
 * characters or backslashes is itself. */
char *fy_shown_text(const char *s);
/* Base64 of n bytes (for data: URIs). */
void fy_base64(FILE *f, const uint8_t *d, size_t n);
/* The same as a string (malloc'd); NULL when out of memory. */
char *fy_base64_text(const uint8_t *d, size_t n);
/* Decodes base64 (RFC 4648, padding optional) into *out (malloc'd, *n
 * bytes). FERRY_EINVAL for anything else. */
int fy_base64_decode(const char *s, uint8_t **out, size_t *n);
/* Reads one CSV record (RFC 4180: quoted fields may hold commas, quotes
 * doubled, newlines; CRLF or LF ends a record) into *fields (n strings,
 * free with fy_csv_free). 1: a record, 0: end of file, -1: an error (an
 * unterminated quote, a line over 1 MiB, no memory) with the message. */
int fy_csv_row(FILE *f, char ***fields, size_t *n);
void fy_csv_free(char **fields, size_t n);
/* A text output: stdout, or a file written through core/out_file.h (a
 * temporary renamed over the path once complete; a device or FIFO written
 * into). */
typedef struct fy_text_out {
  FILE *f;          /* where to write */
  const char *path; /* NULL: stdout */
  fy_out_file o;
} fy_text_out;
/* Opens `path` for writing ("-" or NULL: stdout). */
int fy_open_out(const char *path, fy_text_out *t);
/* Ends the output after a writer that answered rc: on success the file is
 * renamed into place (write errors reported, FERRY_EIO naming it); on
 * failure the temporary is removed (the path keeps what it had) and rc is
 * returned with its message. */
int fy_close_out(fy_text_out *t, int rc);

#endif
