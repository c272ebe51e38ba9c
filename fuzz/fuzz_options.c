/* fuzz_options.c — the loader's options set from text and read back
 * (ferry_loader_options_set/_get, src/pipeline/options.c): what `ferry
 * load`'s flags and Python's keywords hand the library. A value that is
 * accepted reads back as text that sets the same value again. */
#include "ferry.h"
#include "fuzz_util.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  /* byte 0: the option, and whether it is named by its flag; then the text
   * (none at all: the flag alone) */
  int n = ferry_loader_option_count();
  const ferry_option *opt = ferry_loader_option(data[0] % n);
  int by_flag = opt->flag && (data[0] / n) % 2;
  char *text = malloc(size);
  if (!text)
    return 0;
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  ferry_loader_options a, b;
  ferry_loader_options_default(&a);
  ferry_loader_options_default(&b);
  const char *name = by_flag ? opt->flag : opt->name;
  if (ferry_loader_options_set(&a, name, by_flag && size == 1 ? NULL : text) == FERRY_OK) {
    char back[128], again[128];
    if (ferry_loader_options_get(&a, opt->name, back, sizeof back) != FERRY_OK ||
        ferry_loader_options_set(&b, opt->name, back) != FERRY_OK ||
        ferry_loader_options_get(&b, opt->name, again, sizeof again) != FERRY_OK ||
        strcmp(back, again))
      abort();
  }
  free(text);
  return 0;
}
