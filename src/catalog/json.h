/* json.h — JSON written through jansson, the project's one JSON library:
 * strings and file names as members (the contract for names that are not
 * UTF-8: docs/DEDUP.md), one value written in the project's shape, and
 * objects whose last member is an array written element by element (a
 * catalog's entries, a report's groups: never one tree in memory).
 * Every function takes NULL for "out of memory before this", so that a
 * caller builds a value in a row of calls and checks once. */
#ifndef FY_JSON_H
#define FY_JSON_H

#include <jansson.h>
#include <stdio.h>

/* One line, ", " and ": " between members, reals with 10 significant
 * digits (as %.10g; jansson adds ".0" to a whole number). */
#define FY_JSON_FLAGS JSON_REAL_PRECISION(10)

/* A JSON string of s (a new reference): each byte that is not part of
 * valid UTF-8 becomes U+FFFD (catalog/text.c's fy_utf8_lossy); s NULL
 * gives null. NULL when out of memory. */
json_t *fy_json_text(const char *s);
/* A real, or null when v is not finite (JSON has no NaN or infinity). */
json_t *fy_json_num(double v);
/* obj[key] = fy_json_text(s): 0, or -1 when out of memory (obj NULL
 * included). */
int fy_json_set_text(json_t *obj, const char *key, const char *s);
/* A file name under `key`, as fy_json_set_text writes it; when the name is
 * not UTF-8, `<key>_b64` beside it holds its exact bytes in base64 (and
 * only then). path NULL: null. 0, or -1 when out of memory. */
int fy_json_set_path(json_t *obj, const char *key, const char *path);
/* Writes v (its reference taken; NULL: out of memory) to f, then `tail`.
 * FERRY_OK, FERRY_ENOMEM, or FERRY_EIO when f failed; messages name
 * `what`. */
int fy_json_write(FILE *f, json_t *v, const char *tail, const char *what);

/* Parses n bytes of JSON text (jansson's json_loadb, no flags): the value
 * (a new reference), or NULL with *oom 0 when the text is not JSON and 1
 * when memory ran out. jansson reports some allocation failures as syntax
 * errors (one inside a string) or with no reason at all, so its
 * allocations are routed through fy_malloc, which says which it was; that
 * is done once, and only while jansson still has its default allocator
 * (json_set_alloc_funcs is the process' setting: a program that set its
 * own keeps it, and then only jansson's own error code tells). */
json_t *fy_json_parse(const char *t, size_t n, int *oom);

/* Streaming: writes the object `head` (its reference taken) with an array
 * `key` added as its last member, up to that array's '[': the caller
 * writes the elements (fy_json_write, its own separators) and then "]}". */
int fy_json_stream_begin(FILE *f, json_t *head, const char *key, const char *what);

#endif
