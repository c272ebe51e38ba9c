/* report_page.c — the review page's style and script, embedded at build time
 * from the real files src/catalog/review_style.css and review_script.js:
 * CMakeLists.txt (ferry_embed) and scripts/gen_embedded.py (for setup.py and
 * fuzz/fuzz.mk) write their bytes as FY_PAGE_REVIEW_STYLE_BYTES and
 * FY_PAGE_REVIEW_SCRIPT_BYTES into the generated header review_page_src.h.
 * report_html.c writes them into the page, with the groups as one JSON blob;
 * what the script does: review_script.js, docs/DEDUP.md, "The review page". */
#include "catalog/report_page.h"
#include "review_page_src.h"

/* unsigned: the files are UTF-8, any byte may be above 0x7f */
static const unsigned char style[] = {FY_PAGE_REVIEW_STYLE_BYTES, 0};
static const unsigned char script[] = {FY_PAGE_REVIEW_SCRIPT_BYTES, 0};

const char *const fy_report_style = (const char *)style;
const char *const fy_report_script = (const char *)script;
