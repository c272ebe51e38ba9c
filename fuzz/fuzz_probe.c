/* fuzz_probe.c — ferry_probe() (headers only: size, format, EXIF
 * orientation, subsampling) over arbitrary bytes. */
#include <ferry.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ferry_info info;
  if (ferry_probe(data, size, &info) == FERRY_OK) {
    /* the strings must be terminated */
    volatile size_t n = strlen(info.colorspace) + strlen(info.subsampling);
    (void)n;
  }
  return 0;
}
