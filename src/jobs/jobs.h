/* jobs.h — the jobs above the pipeline (src/jobs/): builders that drive
 * the loader, the decoders or the hashers and write a file format (a pack,
 * a catalog). Nothing below this layer calls into it. */
#ifndef FY_JOBS_H
#define FY_JOBS_H

#include "ferry.h"

#include <stdint.h>

/* `ferry pack --store jpeg`: decodes, resizes (short side) and re-encodes
 * the samples of the listed shards with o->workers threads, writing each
 * shard once its samples are done (pack_jpeg.c). Shard k holds source
 * samples k * shard_size onwards; bad files are left out (on_error skip)
 * or stop the build (fail). done0 = samples already packed (progress). */
struct fy_source;
int fy_pack_build_jpeg(const ferry_pack_options *o, uint64_t id, const struct fy_source *src,
                       const int *missing, int nmissing, int64_t done0);

/* `ferry pack --store wds`: the source's samples as WebDataset shards
 * OUT/shard-NNNNNN.tar of o->shard_size samples (the files' own bytes as
 * KEY.EXT, EXT their sniffed format; labels as KEY.cls), each written whole
 * then renamed, the shards already complete kept (pack_wds.c; the folder,
 * its PLAN, lock and temporaries are pack_build.c's). Bad files, and files
 * that are no image ferry reads, are left out (skip) or stop the build
 * (fail). */
int fy_pack_build_wds(const ferry_pack_options *o, const struct fy_source *src);

#endif
