/* fuzz_decode.c — ferry_decode() over arbitrary bytes: every format the
 * sniffer accepts (JPEG, PNG, WebP) and the EXIF parser behind orientation.
 * The first byte of the input picks decode options (crop, DCT scaling,
 * gray output, orientation), the rest is the file. */
#include <ferry.h>

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  uint8_t sel = data[0];
  ferry_decode_options o;
  ferry_decode_options_default(&o);
  o.max_pixels = 1u << 22; /* keep each run small: a 4 Mpx cap */
  o.channels = sel & 1 ? 1 : 3;
  o.ignore_orientation = (sel >> 1) & 1;
  o.fast_upsampling = (sel >> 2) & 1;
  o.allow_dct_scaling = (sel >> 3) & 1;
  if (sel & 0x10) {
    o.min_width = 1 + (sel >> 5);
    o.min_height = 1 + (sel >> 6);
  }
  if (sel & 0x80) {
    o.crop.x = sel & 7;
    o.crop.y = (sel >> 3) & 3;
    o.crop.width = 1 + (sel & 0x1f);
    o.crop.height = 1 + ((sel >> 2) & 0x1f);
  }
  ferry_image im = {0};
  if (ferry_decode(data + 1, size - 1, "fuzz", &o, &im) == FERRY_OK) {
    /* touch every byte: a short buffer shows up under ASan */
    volatile uint8_t sink = 0;
    for (int y = 0; y < im.height; y++)
      for (size_t x = 0; x < (size_t)im.width * (size_t)im.channels; x++)
        sink ^= im.data[(size_t)y * im.stride + x];
    (void)sink;
    ferry_image_free(&im);
  }
  return 0;
}
