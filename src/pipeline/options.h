/* options.h — the loader's option registry (public side: ferry.h's
 * ferry_option): the table (options_table.c, the one place an option is
 * added) and what the library does with it (options.c: defaults, text in
 * and out, the checks of ferry_loader_open). */
#ifndef FY_OPTIONS_H
#define FY_OPTIONS_H

#include "core/internal.h"

/* The table, in ferry_loader_option() order. */
extern const ferry_option fy_loader_option_table[];
extern const int fy_loader_option_table_count;

/* ferry_loader_open's checks: every option in its range (or at its
 * default), then the rules between options (a source, rank < world_size,
 * the memory cache's deterministic pipeline, finite normalisation).
 * FERRY_OK, or FERRY_EINVAL with the message naming the option, the value
 * and the range. */
int fy_loader_options_check(const ferry_loader_options *o);

#endif
