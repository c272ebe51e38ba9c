/* report_page.h — the review page's style and script (report_page.c: the
 * files src/catalog/review_style.css and review_script.js, embedded at build
 * time, as NUL-terminated text) and its writer (report_html.c). */
#ifndef FY_REPORT_PAGE_H
#define FY_REPORT_PAGE_H

#include "catalog/dupes.h"

#include <stdio.h>

extern const char *const fy_report_style;
extern const char *const fy_report_script;

/* The review page of d into f; its thumbnails embedded, or, when out_path
 * names a file (not stdout, not a device), in the sidecar folder beside it
 * (fy_report_thumbs_dir). Messages name `what`. */
int fy_report_html(const ferry_dupes *d, FILE *f, const char *out_path, const char *what);

#endif
