/* cmd_doctor.c — `ferry doctor`: what this machine offers ferry (GPUs,
 * JPEG engine, NVDEC, codec libraries) and which backends ferry will use,
 * and why. */
#include "cli.h"

#include <string.h>
#include <unistd.h>

static const char help[] =
    "usage: ferry doctor [--json]\n"
    "\n"
    "Reports the CPU cores, the CUDA driver and runtime, each GPU (compute\n"
    "capability, memory), whether nvJPEG's hardware JPEG engine and NVDEC are\n"
    "usable, and which backends `ferry load --device` will use and why.\n"
    "--json: the same findings as one JSON object on stdout.\n"
    "Exit code 0 always: it is a report, not a test.\n";

/* "13.0" from 13000; NULL for 0 (none). */
static const char *version_text(int v, char *out, size_t size) {
  if (!v)
    return NULL;
  snprintf(out, size, "%d.%d", v / 1000, (v % 1000) / 10);
  return out;
}

static int report_json(const fy_gpu_probe *p) {
  cli_json j;
  char v[32];
  cli_json_begin(&j, stdout);
  cli_json_str(&j, "command", "doctor");
  cli_json_str(&j, "ferry", ferry_version());
  cli_json_int(&j, "cpu_cores", sysconf(_SC_NPROCESSORS_ONLN));
  cli_json_bool(&j, "built_with_cuda", p->built_with_cuda);
  cli_json_str(&j, "cuda_driver",
               p->built_with_cuda ? version_text(p->driver_version, v, sizeof v) : NULL);
  cli_json_str(&j, "cuda_runtime",
               p->built_with_cuda ? version_text(p->runtime_version, v, sizeof v) : NULL);
  if (p->built_with_cuda && p->nvjpeg_version) {
    snprintf(v, sizeof v, "%d.%d.%d", p->nvjpeg_version / 1000, (p->nvjpeg_version % 1000) / 10,
             p->nvjpeg_version % 10);
    cli_json_str(&j, "nvjpeg", v);
  } else {
    cli_json_null(&j, "nvjpeg");
  }
  cli_json_bool(&j, "nvdec", p->built_with_cuda && p->nvdec);
  int n = p->built_with_cuda ? (p->device_count < 8 ? p->device_count : 8) : 0;
  cli_json_array(&j, "gpus");
  for (int d = 0; d < n; d++) {
    cli_json_object(&j, NULL);
    snprintf(v, sizeof v, "cuda:%d", d);
    cli_json_str(&j, "device", v);
    cli_json_str(&j, "name", p->dev[d].name);
    snprintf(v, sizeof v, "%d.%d", p->dev[d].major, p->dev[d].minor);
    cli_json_str(&j, "compute_capability", v);
    cli_json_int(&j, "sms", p->dev[d].sms);
    cli_json_num(&j, "memory_gib", p->dev[d].total_mem / 1073741824.0);
    cli_json_num(&j, "free_gib", p->dev[d].free_mem / 1073741824.0);
    cli_json_bool(&j, "jpeg_engine", p->dev[d].hw_jpeg);
    cli_json_str(&j, "jpeg_engine_why", p->dev[d].hw_jpeg ? NULL : p->dev[d].hw_jpeg_why);
    cli_json_close(&j);
  }
  cli_json_close(&j);
  /* where `ferry load` decodes, and why not on a GPU when it cannot */
  cli_json_str(&j, "backend", n ? "gpu" : "cpu");
  cli_json_str(&j, "why_cpu", n ? NULL : p->error[0] ? p->error : "no device");
  cli_json_end(&j);
  return CLI_OK;
}

static void version(const char *what, int v) {
  if (v)
    printf("  %s: %d.%d\n", what, v / 1000, (v % 1000) / 10);
  else
    printf("  %s: none\n", what);
}

int cmd_doctor(int argc, char **argv) {
  int json = 0;
  for (int k = 1; k < argc; k++) {
    if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
      fputs(help, stdout);
      return CLI_OK;
    }
    if (!strcmp(argv[k], "--json")) {
      json = 1;
      continue;
    }
    return cli_usage_error("doctor", "unknown argument '%s'", argv[k]);
  }
  fy_gpu_probe p;
  fy_gpu_probe_run(&p);
  if (json)
    return report_json(&p);
  printf("ferry %s\n", ferry_version());
  printf("CPU: %ld cores online: the CPU path (libjpeg-turbo, libpng, libwebp) is always on\n",
         sysconf(_SC_NPROCESSORS_ONLN));
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
