/* report_page.h — the review page's static text (report_page.c) and its
 * writer (report_html.c). */
#ifndef FY_REPORT_PAGE_H
#define FY_REPORT_PAGE_H

#include "catalog/dupes.h"

#include <stdio.h>

extern const char fy_report_style[];
extern const char fy_report_script[];

/* The review page of d into f; its thumbnails embedded, or, when out_path
 * names a file (not stdout, not a device), in the sidecar folder beside it
 * (fy_report_thumbs_dir). Messages name `what`. */
int fy_report_html(const ferry_dupes *d, FILE *f, const char *out_path, const char *what);

#endif
