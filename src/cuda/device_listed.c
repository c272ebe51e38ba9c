/* device_listed.c — whether CUDA device `device` is there, from what the
 * NVIDIA driver lists in /proc and CUDA_VISIBLE_DEVICES, without starting
 * CUDA: starting it costs a job of a second or two on every core several
 * per cent (bench/CLAIMS.md C46), which a job that never uses the GPU should
 * not pay. Declared in hash_gpu.h; the stub is in hash_gpu_stub.c. */
#ifdef FERRY_HAVE_CUDA
#include "cuda/hash_gpu.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* GPUs the driver lists, -1 when it lists none (no /proc entry: WSL, other
 * kernels) */
static int proc_gpus(void) {
  DIR *d = opendir("/proc/driver/nvidia/gpus");
  if (!d)
    return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

int fy_gpu_listed(int device) {
  if (device < 0)
    return fy_error(FERRY_EUNSUPPORTED, "no CUDA device %d", device);
  int n = proc_gpus();
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  if (vis) {
    /* CUDA counts the entries up to the first it cannot use: as many
     * as listed at most */
    int k = *vis ? 1 : 0;
    for (const char *p = vis; *p; p++)
      k += *p == ',';
    if (k == 0)
      return fy_error(FERRY_EUNSUPPORTED, "no CUDA device %d (CUDA_VISIBLE_DEVICES is empty)",
                      device);
    if (n < 0 || k < n)
      n = k;
  }
  if (n < 0)
    return 0;
  if (device >= n)
    return fy_error(FERRY_EUNSUPPORTED, "no CUDA device %d (%d listed by the NVIDIA driver%s)",
                    device, n, vis ? " and CUDA_VISIBLE_DEVICES" : "");
  return 1;
}
#endif
