/* cli_image.c — one sample of a batch (loader or video) back to u8 RGB for
 * a PNG to look at: the one place the CLI undoes layout, dtype and
 * normalisation. */
#include "cli.h"

#include <math.h>
#include <stddef.h>

void cli_sample_to_rgb(const void *sample, int width, int height, ferry_layout layout,
                       ferry_dtype dtype, int normalize, const float mean[3], const float std[3],
                       uint8_t *rgb) {
  size_t n = (size_t)width * height;
  for (size_t p = 0; p < n; p++)
    for (int c = 0; c < 3; c++) {
      size_t i = layout == FERRY_LAYOUT_CHW ? c * n + p : p * 3 + c;
      float v;
      if (dtype == FERRY_U8) {
        rgb[p * 3 + c] = ((const uint8_t *)sample)[i]; /* with normalize: the stored codes */
        continue;
      }
      v = dtype == FERRY_F32 ? ((const float *)sample)[i]
                             : fy_f16_to_f32(((const uint16_t *)sample)[i]);
      v = (normalize ? v * std[c] + mean[c] : v) * 255.0f;
      rgb[p * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lrintf(v));
    }
}
