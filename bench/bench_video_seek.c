/* bench_video_seek.c — random access to video frames (issue 17): one reader
 * opened once (its open timed apart), then ferry_video_frame_at for each
 * frame number asked, in the order given; each call's time, and the same
 * frames read in order up to each k by a fresh reader (what a user without
 * random access pays). Prints one line per call and a summary (median and
 * worst of the calls after the first open).
 *
 * usage: bench_video_seek FILE [--device N] [--frames K,K,...] [--random N]
 *        [--seed S] [--in-order]
 * --random N: N frame numbers drawn uniformly from the file (after the
 * given ones). --device -1 (default): the CPU; N: CUDA device N (NVDEC).
 *
 * Claims it proves (bench/CLAIMS.md): C42. */
#define _POSIX_C_SOURCE 200809L

#include <ferry.h>
#include "tools_tier.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Frames 0..k decoded and kept in order by a new reader: its seconds. */
static double in_order(const char *path, const ferry_video_options *base, int64_t k) {
  ferry_video_options o = *base;
  ferry_video_reader *r;
  double t0 = fy_now();
  if (ferry_video_open(path, &o, &r) != FERRY_OK)
    return -1;
  ferry_image im;
  int64_t idx = -1;
  while (idx < k && ferry_video_next_frame(r, &im, NULL, &idx) == FERRY_OK)
    ;
  ferry_video_close(r);
  return fy_now() - t0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_video_seek FILE [--device N] [--frames K,...] [--random N] "
                    "[--seed S] [--in-order]\n");
    return 2;
  }
  const char *path = argv[1], *list = "";
  int device = -1, random_n = 0, with_order = 0;
  unsigned seed = 1;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
      list = argv[++i];
    else if (!strcmp(argv[i], "--random") && i + 1 < argc)
      random_n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      seed = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--in-order"))
      with_order = 1;
    else {
      fprintf(stderr, "bench_video_seek: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  ferry_video_options o;
  ferry_video_options_default(&o);
  o.device = device;
  ferry_video_reader *r;
  double t0 = fy_now();
  if (ferry_video_open(path, &o, &r) != FERRY_OK) {
    fprintf(stderr, "bench_video_seek: %s\n", ferry_last_error());
    return 1;
  }
  double open_s = fy_now() - t0;
  ferry_video_info info;
  ferry_video_get_info(r, &info);
  int64_t ks[4096];
  int n = 0;
  for (const char *p = list; *p && n < 4096;) {
    ks[n++] = strtoll(p, (char **)&p, 10);
    if (*p == ',')
      p++;
    else if (*p)
      break;
  }
  srand(seed);
  for (int i = 0; i < random_n && n < 4096 && info.frames > 0; i++)
    ks[n++] = (int64_t)((double)rand() / ((double)RAND_MAX + 1) * (double)info.frames);
  printf("%s: %s %dx%d, %lld frames, %.3f fps, decoded by %s; open %.1f ms\n", path, info.codec,
         info.width, info.height, (long long)info.frames, info.fps,
         device < 0 ? "the CPU" : info.nvdec ? "NVDEC" : "the CPU (GPU reader)", open_s * 1e3);
  double *ms = calloc((size_t)n + 1, sizeof *ms);
  int failed = 0;
  for (int i = 0; i < n; i++) {
    ferry_image im;
    double t, c0 = fy_now();
    int st = ferry_video_frame_at(r, ks[i], &im, &t);
    ms[i] = (fy_now() - c0) * 1e3;
    if (st != FERRY_OK) {
      printf("frame %lld: error: %s\n", (long long)ks[i], ferry_last_error());
      failed++;
      continue;
    }
    printf("frame %lld (t=%.3f s): %.1f ms", (long long)ks[i], t, ms[i]);
    if (with_order)
      printf("; in order from the start: %.1f ms", in_order(path, &o, ks[i]) * 1e3);
    printf("\n");
  }
  ferry_video_close(r);
  if (n > failed) {
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    int under = 0;
    for (int i = 0; i < n; i++)
      under += ms[i] <= 50.0;
    printf("summary: %d calls, %d failed; median %.1f ms, 90th percentile %.1f ms, worst %.1f ms; "
           "%d of %d within 50 ms\n",
           n, failed, ms[n / 2], ms[(n * 9) / 10], ms[n - 1], under, n);
  }
  free(ms);
  return failed ? 1 : 0;
}
