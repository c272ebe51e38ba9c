/* tools_tier.h — the internal tier that tools/ (the ferry command) and
 * bench/ may use beside ferry.h: what they need of src/ and nothing more.
 * Everything else in src/ is private to the library (tests/unit may reach
 * further: they test internals). tests/layout/check.sh holds tools/ and
 * bench/ to this header. A new need is added here, with its reason. */
#ifndef FY_TOOLS_TIER_H
#define FY_TOOLS_TIER_H

#include "catalog/catalog.h"  /* fy_scan, FY_MOVES_LOG: ferry hash, --move-dupes-to */
#include "catalog/dupes.h"    /* fy_dupes_parse_keep: --keep refused before the search */
#include "catalog/json.h"     /* fy_json_text, fy_json_set_path, fy_json_write: the --json
                                summaries through the project's one JSON writer (jansson) */
#include "catalog/text.h"     /* fy_csv_field: the one CSV writer; fy_csv_row,
                                fy_base64_decode: --apply-list's move list */
#include "codec/jpeg_write.h" /* fy_write_jpeg: decode -o OUT.jpg, the writer beside PNG's */
#include "core/internal.h"    /* fy_now, fy_buf, fault points (FERRY_FAIL_* in the CLI's tests) */
#include "core/out_file.h"    /* fy_out_open/close: PPM outputs, devices written into as PNG's
                                 and JPEG's are */
#include "core/testctl.h"     /* fy_tc_*: doctor lists the test controls set */
#include "core/user_file.h"   /* fy_out_guard, fy_open_regular, fy_openat_regular,
                                 fy_path_under: the CLI's outputs never over its inputs; the
                                 files it reads itself regular files only */
#include "cuda/gpu.h"         /* fy_gpu_probe (doctor), GPU batches copied back, --consume-ms */
#include "cuda/nvjpeg_find.h" /* fy_nvjpeg_env_path: doctor names the deployment path set */
#include "hash/run.h"         /* fy_hash_device_name: --device values as reports name them */
#include "image/image.h"      /* fy_f16_to_f32: batches back to pixels */
#include "io/walk.h"          /* FY_IMAGE_EXTENSIONS: what the walks take, for messages */
#include "opencl/opencl.h"    /* fy_cl_devices: doctor lists the OpenCL devices (bench/:
                                 fy_cl_hasher, the OpenCL hashes timed beside CUDA's) */
#include "video/video.h"      /* fy_nvdec_probe: doctor, ferry video --caps; fy_video_describe:
                                 ferry info of a video; fy_video_is_still:
                                 ferry video refuses still images by the readers' rule */

/* bench/ only: the GPU kernels timed on their own; shard members read as
 * the loader reads them (fy_shards_open, fy_source_read: bench_shard_read) */
#include "cuda/hamming.h"
#include "cuda/hash_gpu.h"
#include "io/shards.h"

#endif
