/* cmd_doctor.c — `ferry doctor`: what this machine offers ferry (GPUs,
 * JPEG engine, NVDEC, codec libraries) and which backends ferry will use,
 * and why. */
#include "cli.h"

#include <string.h>
#include <unistd.h>

static const char help[] =
    "usage: ferry doctor\n"
    "\n"
    "Reports the CPU cores, the CUDA driver and runtime, each GPU (compute\n"
    "capability, memory), whether nvJPEG's hardware JPEG engine and NVDEC are\n"
    "usable, and which backends `ferry load --device` will use and why.\n"
    "Exit code 0 always: it is a report, not a test.\n";

static void version(const char *what, int v) {
  if (v)
    printf("  %s: %d.%d\n", what, v / 1000, (v % 1000) / 10);
  else
    printf("  %s: none\n", what);
}

int cmd_doctor(int argc, char **argv) {
  for (int k = 1; k < argc; k++) {
    if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
      fputs(help, stdout);
      return CLI_OK;
    }
    return cli_usage_error("doctor", "unknown argument '%s'", argv[k]);
  }
  printf("ferry %s\n", ferry_version());
  printf("CPU: %ld cores online: the CPU path (libjpeg-turbo, libpng, libwebp) is always on\n",
         sysconf(_SC_NPROCESSORS_ONLN));
  fy_gpu_probe p;
  fy_gpu_probe_run(&p);
  if (!p.built_with_cuda) {
    printf("GPU: %s; ferry runs on the CPU\n", p.error);
    return CLI_OK;
  }
  version("CUDA driver", p.driver_version);
  version("CUDA runtime", p.runtime_version);
  if (p.nvjpeg_version)
    printf("  nvJPEG: %d.%d.%d\n", p.nvjpeg_version / 1000, (p.nvjpeg_version % 1000) / 10,
           p.nvjpeg_version % 10);
  else
    printf("  nvJPEG: libnvjpeg not found (the CPU decodes; the GPU still resizes)\n");
  printf("  NVDEC (libnvcuvid): %s\n",
         p.nvdec ? "loads: `ferry video --device cuda:N` decodes on the video engines "
                   "(`ferry video --nvdec-caps` lists codecs)"
                 : "not found: `ferry video --device cuda:N` decodes on the CPU (libavcodec) "
                   "and converts, resizes and stores on the GPU");
  if (p.device_count == 0) {
    printf("GPU: none usable (%s); ferry runs on the CPU\n", p.error[0] ? p.error : "no device");
    return CLI_OK;
  }
  for (int d = 0; d < p.device_count && d < 8; d++) {
    printf("cuda:%d: %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f GiB free)\n", d,
           p.dev[d].name, p.dev[d].major, p.dev[d].minor, p.dev[d].sms,
           p.dev[d].total_mem / 1073741824.0, p.dev[d].free_mem / 1073741824.0);
    if (p.dev[d].hw_jpeg)
      printf("  JPEG: hardware engine usable: `--device cuda:%d` decodes baseline JPEGs on it, "
             "the CPU workers take the rest (progressive, CMYK, PNG, WebP, rotated)\n",
             d);
    else
      printf("  JPEG: %s: the CPU workers decode, the GPU resizes and normalizes\n",
             p.dev[d].hw_jpeg_why);
  }
  return CLI_OK;
}
