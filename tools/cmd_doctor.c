/* cmd_doctor.c — `ferry doctor`: what this machine offers ferry (GPUs,
 * JPEG engine, NVDEC, codec libraries) and which backends ferry will use,
 * and why; the environment variables of ferry's that are set (the two
 * deployment paths, the test controls of core/testctl.h). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
    "usage: ferry doctor [--json]\n"
    "\n"
    "Reports the CPU cores, the CUDA driver and runtime, each GPU (compute\n"
    "capability, memory), whether nvJPEG's hardware JPEG engine and NVDEC are\n"
    "usable, and which backends `ferry load --device` will use and why; the\n"
    "OpenCL platforms and devices (`ferry dupes --device opencl:N`), or why\n"
    "there are none. Names the environment variables ferry reads that are\n"
    "set: FERRY_NVJPEG_PATH, FERRY_OPENCL_LIBRARY and the test controls\n"
    "(fault injection and test switches, docs/SECURITY.md; not for production).\n"
    "--json: the same findings as one JSON object on stdout.\n"
    "Exit code 0 always: it is a report, not a test.\n";

/* "13.0" from 13000; NULL for 0 (none). */
static const char *version_text(int v, char *out, size_t size) {
  if (!v)
    return NULL;
  snprintf(out, size, "%d.%d", v / 1000, (v % 1000) / 10);
  return out;
}

/* OpenCL platforms and devices (src/opencl/), or why there are none. */
static void opencl_text(void) {
  fy_cl_device_info *d = NULL;
  int n = 0, platforms = 0;
  if (fy_cl_devices(&d, &n, &platforms) != FERRY_OK) {
    printf("OpenCL: %s\n", ferry_last_error());
    char lib[512];
    if (fy_cl_nvidia_unlisted(lib, sizeof lib))
      printf("OpenCL: NVIDIA's OpenCL driver is installed (%s) but not registered: "
             "OCL_ICD_FILENAMES=%s\n",
             lib, lib);
    return;
  }
  printf("OpenCL: %d platform%s, %d device%s (`ferry dupes --device opencl:N`, `ferry hash "
         "--device opencl:N`)\n",
         platforms, platforms == 1 ? "" : "s", n, n == 1 ? "" : "s");
  for (int i = 0; i < n; i++)
    printf("opencl:%d: %s (%s; %s), %s, %d compute units, %.1f GiB%s\n", i, d[i].name,
           d[i].platform_name, d[i].version,
           d[i].gpu   ? "GPU"
           : d[i].cpu ? "CPU"
                      : "accelerator",
           d[i].units, d[i].memory / 1073741824.0,
           d[i].fp64 ? "" : " (no double precision: cannot hash, can search)");
  free(d);
  char lib[512];
  if (fy_cl_nvidia_unlisted(lib, sizeof lib))
    printf("OpenCL: NVIDIA's OpenCL driver is installed (%s) but not registered with the ICD "
           "loader (no /etc/OpenCL/vendors/nvidia.icd): add that file with the library's name "
           "in it, or run with OCL_ICD_FILENAMES=%s\n",
           lib, lib);
}

/* The same in the JSON report. */
static void opencl_json(cli_json *j) {
  fy_cl_device_info *d = NULL;
  int n = 0, platforms = 0;
  int rc = fy_cl_devices(&d, &n, &platforms);
  cli_json_int(j, "opencl_platforms", platforms);
  cli_json_str(j, "opencl_why", rc ? ferry_last_error() : NULL);
  cli_json_array(j, "opencl_devices");
  for (int i = 0; i < n; i++) {
    char v[32];
    cli_json_object(j, NULL);
    snprintf(v, sizeof v, "opencl:%d", i);
    cli_json_str(j, "device", v);
    cli_json_str(j, "name", d[i].name);
    cli_json_str(j, "platform", d[i].platform_name);
    cli_json_str(j, "version", d[i].version);
    cli_json_str(j, "type", d[i].gpu ? "gpu" : d[i].cpu ? "cpu" : "accelerator");
    cli_json_int(j, "compute_units", d[i].units);
    cli_json_num(j, "memory_gib", d[i].memory / 1073741824.0);
    cli_json_bool(j, "can_hash", d[i].fp64);
    cli_json_close(j);
  }
  cli_json_close(j);
  free(d);
  char lib[512];
  cli_json_path(j, "opencl_nvidia_unregistered",
                fy_cl_nvidia_unlisted(lib, sizeof lib) ? lib : NULL);
}

/* The deployment paths and the test controls that are set, as text lines
 * or (j non-NULL) as two JSON objects of NAME: value. */
static void environment(cli_json *j) {
  const char *names[] = {"FERRY_NVJPEG_PATH", "FERRY_OPENCL_LIBRARY"};
  const char *values[] = {fy_nvjpeg_env_path(), fy_cl_env_library()};
  const char *what[] = {"libnvjpeg is loaded from there first",
                        "the OpenCL ICD loader opened instead of libOpenCL.so.1"};
  if (j)
    cli_json_object(j, "deployment_env");
  for (int i = 0; i < 2; i++)
    if (values[i] && j)
      cli_json_str(j, names[i], values[i]);
    else if (values[i])
      printf("%s=%s: %s\n", names[i], values[i], what[i]);
  if (j) {
    cli_json_close(j);
    cli_json_object(j, "test_controls");
  }
  for (int i = 0; i < FY_TC_COUNT; i++) {
    char v[512];
    if (!fy_tc_value_text((fy_tc)i, v, sizeof v))
      continue;
    if (j)
      cli_json_str(j, fy_tc_name((fy_tc)i), v);
    else
      printf("%s=%s: a test control, not for production (%s; docs/SECURITY.md)\n",
             fy_tc_name((fy_tc)i), v, fy_tc_purpose((fy_tc)i));
  }
  if (j)
    cli_json_close(j);
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
  cli_json_str(&j, "nvjpeg_why",
               p->built_with_cuda && !p->nvjpeg_version && p->nvjpeg_why[0] ? p->nvjpeg_why : NULL);
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
    cli_json_str(&j, "pci", p->dev[d].pci);
    cli_json_int(&j, "numa_node", p->dev[d].numa_node);
    cli_json_close(&j);
  }
  cli_json_close(&j);
  /* where `ferry load` decodes, and why not on a GPU when it cannot */
  cli_json_str(&j, "backend", n ? "gpu" : "cpu");
  cli_json_str(&j, "why_cpu", n ? NULL : p->error[0] ? p->error : "no device");
  opencl_json(&j);
  environment(&j);
  return cli_json_end(&j);
}

static void version(const char *what, int v) {
  if (v)
    printf("  %s: %d.%d\n", what, v / 1000, (v % 1000) / 10);
  else
    printf("  %s: none\n", what);
}

static void cuda_text(const fy_gpu_probe *p) {
  if (!p->built_with_cuda) {
    printf("GPU: %s; ferry runs on the CPU\n", p->error);
    return;
  }
  version("CUDA driver", p->driver_version);
  version("CUDA runtime", p->runtime_version);
  if (p->nvjpeg_version)
    printf("  nvJPEG: %d.%d.%d\n", p->nvjpeg_version / 1000, (p->nvjpeg_version % 1000) / 10,
           p->nvjpeg_version % 10);
  else
    printf("  nvJPEG: %s (the CPU decodes; the GPU still resizes)\n",
           p->nvjpeg_why[0] ? p->nvjpeg_why : "libnvjpeg not found");
  printf("  NVDEC (libnvcuvid): %s\n",
         p->nvdec ? "loads: `ferry video --device cuda:N` decodes on the video engines "
                    "(`ferry video --nvdec-caps` lists codecs)"
                  : "not found: `ferry video --device cuda:N` decodes on the CPU (libavcodec) "
                    "and converts, resizes and stores on the GPU");
  if (p->device_count == 0) {
    printf("GPU: none usable (%s); ferry runs on the CPU\n", p->error[0] ? p->error : "no device");
    return;
  }
  for (int d = 0; d < p->device_count && d < 8; d++) {
    printf("cuda:%d: %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f GiB free)\n", d,
           p->dev[d].name, p->dev[d].major, p->dev[d].minor, p->dev[d].sms,
           p->dev[d].total_mem / 1073741824.0, p->dev[d].free_mem / 1073741824.0);
    if (p->dev[d].hw_jpeg)
      printf("  JPEG: hardware engine usable: `--device cuda:%d` decodes baseline JPEGs on it, "
             "the CPU workers take the rest (progressive, CMYK, PNG, WebP, rotated)\n",
             d);
    else
      printf("  JPEG: %s: the CPU workers decode, the GPU resizes and normalizes\n",
             p->dev[d].hw_jpeg_why);
    if (p->dev[d].numa_node < 0)
      printf("  PCI %s, NUMA node unknown: the loader's threads are not placed\n", p->dev[d].pci);
    else if (p->numa_nodes < 2)
      printf("  PCI %s, NUMA node %d (the host's only one with CPUs)\n", p->dev[d].pci,
             p->dev[d].numa_node);
    else
      printf("  PCI %s, NUMA node %d of %d: the loader's threads run on its CPUs (--numa "
             "auto)\n",
             p->dev[d].pci, p->dev[d].numa_node, p->numa_nodes);
  }
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
  cuda_text(&p);
  opencl_text();
  environment(NULL);
  return CLI_OK;
}
