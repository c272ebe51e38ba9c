/* text.h — helpers for the catalog's text outputs (CSV, JSON, HTML). */
#ifndef FY_TEXT_H
#define FY_TEXT_H

#include "core/internal.h"

#include <errno.h>
#include <stdio.h>

/* A CSV field, quoted when it holds a comma, quote or newline. */
void fy_csv_field(FILE *f, const char *s);
/* A JSON string literal. Bytes that are not (strict) UTF-8 become lone
 * surrogates \udc80..\udcff (Python's surrogateescape): lossless. */
void fy_json_string(FILE *f, const char *s);
/* 1 when s is strict UTF-8 (as fy_json_string judges it). */
int fy_utf8_valid(const char *s);
/* For a path that is not UTF-8: `, "KEY": "BASE64"`, its exact bytes in
 * base64 (any JSON reader, not only Python's surrogateescape, gets them
 * back); nothing for a UTF-8 path. */
void fy_json_path_b64(FILE *f, const char *key, const char *path);
/* Text escaped for HTML content and attribute values: <>&"' as entities;
 * bytes that are not UTF-8 and control characters as \xNN, a backslash as
 * \\ (readable, reversible; the page stays valid UTF-8). */
void fy_html_text(FILE *f, const char *s);
/* Base64 of n bytes (for data: URIs). */
void fy_base64(FILE *f, const uint8_t *d, size_t n);
/* Decodes base64 (RFC 4648, padding optional) into *out (malloc'd, *n
 * bytes). FERRY_EINVAL for anything else. */
int fy_base64_decode(const char *s, uint8_t **out, size_t *n);
/* Reads one CSV record (RFC 4180: quoted fields may hold commas, quotes
 * doubled, newlines; CRLF or LF ends a record) into *fields (n strings,
 * free with fy_csv_free). 1: a record, 0: end of file, -1: an error (an
 * unterminated quote, a line over 1 MiB, no memory) with the message. */
int fy_csv_row(FILE *f, char ***fields, size_t *n);
void fy_csv_free(char **fields, size_t n);
/* Opens `path` for writing ("-" or NULL: stdout). */
int fy_open_out(const char *path, FILE **f);
/* Closes (or flushes stdout), reporting write errors. */
int fy_close_out(const char *path, FILE *f);

#endif
