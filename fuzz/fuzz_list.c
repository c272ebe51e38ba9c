/* fuzz_list.c — the list-file parser (src/io/source.c): `path[,label]`
 * lines, comments, blank lines, paths relative to the list's folder. */
#include "fuzz_util.h"
#include "io/source.h"

#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[4200];
  snprintf(path, sizeof path, "%s/list.txt", fuzz_tmpdir());
  fuzz_write(path, data, size);
  fy_source s;
  if (fy_source_open(&s, path) == FERRY_OK) {
    volatile size_t n = 0;
    for (int64_t i = 0; i < s.count; i++)
      n += strlen(fy_source_path(&s, i)) + (size_t)(s.labels[i] < s.num_classes);
    (void)n;
    fy_source_free(&s);
  }
  return 0;
}
