/* fields.c — a WebDataset sample's other members (captions, metadata)
 * beside the batch: `ferry_loader_field`, by the sample's index in the
 * source, which is what a batch's `indices` give for each of its images
 * (in the batch's order, after skipped files are compacted away: keyed by
 * index, the fields stay aligned whatever moves the images in the slot). */
#include "io/shards.h"
#include "pipeline/loader_int.h"

#include <stdlib.h>
#include <string.h>

int ferry_loader_field(const ferry_loader *L, int64_t index, const char *field, void **data,
                       size_t *size) {
  *data = NULL;
  *size = 0;
  if (!field || !*field)
    return fy_error(FERRY_EINVAL, "ferry_loader_field: no field named");
  if (index < 0 || index >= L->src.count)
    return fy_error(FERRY_EINVAL, "ferry_loader_field: sample index %lld out of range",
                    (long long)index);
  fy_buf buf = {.heap_only = 1};
  int found = 0;
  int rc = fy_shards_field(&L->src, index, field, &buf, size, &found);
  if (rc == FERRY_OK && found)
    *data = buf.p; /* heap_only: the caller free()s it */
  else
    fy_buf_free(&buf);
  return rc;
}
