/* bench_shard_read.c — reading WebDataset members: ferry's fy_source_read
 * (one pread per member through the thread's kept fd, io/shard_fd.c)
 * against the way it read them before (open + lseek + read + close per
 * member), the same members, the same threads, page cache warm.
 *   bench_shard_read [DIR] [SHARDS] [MEMBERS] [RUNS]
 * DIR (default: a new folder under /tmp, removed after) gets SHARDS tars
 * (50) of MEMBERS members (200) of 1-16 KB; each way reads every member
 * RUNS times (7) on 1 and on 2 threads; printed: the median and best.
 *
 * Claims it proves (bench/CLAIMS.md): C71. */
#include "../tests/unit/tar_write.h"
#include "tools_tier.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct job {
  const fy_source *s;
  int64_t a, b;
  int old_way;
  size_t bytes;
} job;

/* The member as it was read before io/shard_fd.c: its own open and close. */
static int read_old_way(const fy_source *s, int64_t i, char *buf) {
  int fd = open(s->shards[s->shard[i]], O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = -1;
  if (lseek(fd, (off_t)s->member_off[i], SEEK_SET) == (off_t)s->member_off[i])
    n = read(fd, buf, (size_t)s->member_len[i]);
  close(fd);
  return n == (ssize_t)s->member_len[i] ? 0 : -1;
}

static void *run(void *p) {
  job *j = p;
  fy_buf buf = {0};
  static _Thread_local char raw[1 << 16];
  size_t n;
  for (int64_t i = j->a; i < j->b; i++) {
    int rc = j->old_way ? read_old_way(j->s, i, raw) : fy_source_read(j->s, i, 0, &buf, &n);
    if (rc) {
      fprintf(stderr, "bench_shard_read: member %lld: %s\n", (long long)i,
              j->old_way ? strerror(errno) : ferry_last_error());
      exit(1);
    }
    j->bytes += (size_t)j->s->member_len[i];
  }
  fy_buf_free(&buf);
  return NULL;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void write_shard(const char *path, int k, int members) {
  static uint8_t data[16384];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (uint8_t)(i * 31 + k);
  tarw t = {0};
  for (int m = 0; m < members; m++) {
    char name[64];
    snprintf(name, sizeof name, "%07d.jpg", k * members + m);
    tw_member(&t, USTAR, name, '0', data, 1024 + (size_t)(rand() % 15360));
  }
  tw_end(&t);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(t.p, 1, t.n, f) != t.n || fclose(f)) {
    fprintf(stderr, "bench_shard_read: cannot write %s\n", path);
    exit(1);
  }
  free(t.p);
}

int main(int argc, char **argv) {
  char tmp[] = "/tmp/bench_shard_read.XXXXXX";
  const char *dir = argc > 1 ? argv[1] : mkdtemp(tmp);
  int ns = argc > 2 ? atoi(argv[2]) : 50, members = argc > 3 ? atoi(argv[3]) : 200;
  int runs = argc > 4 ? atoi(argv[4]) : 7;
  if (!dir || ns < 1 || members < 1 || runs < 1 || runs > 99) {
    fprintf(stderr, "usage: bench_shard_read [DIR] [SHARDS>0] [MEMBERS>0] [RUNS 1..99]\n");
    return 2;
  }
  mkdir(dir, 0755);
  char **paths = calloc((size_t)ns, sizeof *paths);
  srand(1);
  for (int k = 0; k < ns; k++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/shard-%05d.tar", dir, k);
    paths[k] = strdup(p);
    write_shard(p, k, members);
  }
  fy_source s = {0};
  if (fy_shards_open(&s, "bench", paths, ns)) {
    fprintf(stderr, "bench_shard_read: %s\n", ferry_last_error());
    return 1;
  }
  printf("%d shards x %d members (%lld), %d runs each, median (best):\n", ns, members,
         (long long)s.count, runs);
  for (int threads = 1; threads <= 2; threads++) {
    double ms[2];
    for (int way = 0; way < 2; way++) {
      double t[99];
      size_t bytes = 0;
      for (int r = 0; r < runs; r++) {
        pthread_t th[2];
        job j[2];
        double t0 = now();
        for (int q = 0; q < threads; q++) {
          j[q] = (job){&s, s.count * q / threads, s.count * (q + 1) / threads, way, 0};
          pthread_create(&th[q], NULL, run, &j[q]);
        }
        bytes = 0;
        for (int q = 0; q < threads; q++) {
          pthread_join(th[q], NULL);
          bytes += j[q].bytes;
        }
        t[r] = now() - t0;
      }
      qsort(t, (size_t)runs, sizeof *t, cmp);
      ms[way] = t[runs / 2] * 1e3;
      printf("  %d thread(s), %-36s %8.2f ms (%.2f) = %6.2f us/member, %.1f MB\n", threads,
             way ? "open+lseek+read+close per member:" : "fy_source_read (kept fds, pread):",
             ms[way], t[0] * 1e3, ms[way] * 1e3 / (double)s.count, (double)bytes / 1e6);
    }
    printf("  %d thread(s): kept fds %.2fx the old way\n", threads, ms[1] / ms[0]);
  }
  fy_source_free(&s);
  if (argc <= 1) {
    for (int k = 0; k < ns; k++)
      unlink(paths[k]);
    rmdir(dir);
  }
  for (int k = 0; k < ns; k++)
    free(paths[k]);
  free(paths);
  return 0;
}
