/* test_shard_fd.c — shard members read through the reading thread's open
 * fds (src/io/shard_fd.c): many members of several shards read on several
 * threads at once and in interleaved orders, each compared with the bytes
 * written; a shard cut short, a member over the limit, a shard gone, a read
 * that fails: the same errors as before, and the next read well; a source
 * freed and another made in its place (the same address, the same shard
 * path, new bytes) never read through the old fd, in its thread or another;
 * the process's open fds bounded (200 shards read in one thread, then on
 * several) and all closed with the source or the thread; O_CLOEXEC; a shard
 * renamed over while open still read as the old file (as documented). */
#include "check.h"
#include "io/shard_fd.h"
#include "io/shards.h"
#include "tar_write.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char root[64];

/* Member m of shard k, version `tag`: its length and bytes. */
static size_t member_len(int k, int m, int tag) {
  return 1 + (size_t)(k * 37 + m * 101 + tag * 11) % 3000;
}
static uint8_t member_byte(int k, int m, int tag, size_t i) {
  return (uint8_t)(i * 7 + (size_t)k * 31 + (size_t)m * 17 + (size_t)tag * 5 + (i >> 8));
}

/* root/NAME, written whole then renamed into place (a new file). */
static void write_shard(const char *path, int k, int members, int tag) {
  tarw t = {0};
  for (int m = 0; m < members; m++) {
    char name[64];
    size_t n = member_len(k, m, tag);
    uint8_t *d = malloc(n);
    for (size_t i = 0; i < n; i++)
      d[i] = member_byte(k, m, tag, i);
    snprintf(name, sizeof name, "k%d-m%d-t%d.jpg", k, m, tag);
    tw_member(&t, USTAR, name, '0', d, n);
    free(d);
  }
  tw_end(&t);
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  CHECK_MSG(f && fwrite(t.p, 1, t.n, f) == t.n && fclose(f) == 0 && rename(tmp, path) == 0, "%s",
            path);
  free(t.p);
}

/* `n` shards root/PREFIX-K.tar (members each), into paths[n]. */
static void write_shards(const char *prefix, int n, int members, int tag, char **paths) {
  for (int k = 0; k < n; k++) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s-%04d.tar", root, prefix, k);
    write_shard(p, k, members, tag);
    paths[k] = strdup(p);
  }
}

static void free_paths(char **paths, int n) {
  for (int k = 0; k < n; k++)
    free(paths[k]);
}

static int open_source(fy_source *s, char **paths, int n) {
  memset(s, 0, sizeof *s);
  int rc = fy_shards_open(s, "the test's shards", paths, (size_t)n);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  return rc;
}

/* Reads sample i and compares it with the bytes its member name says
 * (shard k, member m, version tag) were written; 1 when equal. */
static int sample_ok(const fy_source *s, int64_t i, fy_buf *buf) {
  const char *path = fy_source_path(s, i), *member = strrchr(path, ':');
  int k, m, tag;
  if (!member || sscanf(member + 1, "k%d-m%d-t%d.jpg", &k, &m, &tag) != 3) {
    CHECK_MSG(0, "sample %lld: unexpected name %s", (long long)i, path);
    return 0;
  }
  size_t got = 0, want = member_len(k, m, tag);
  int rc = fy_source_read(s, i, 0, buf, &got);
  int ok = rc == FERRY_OK && got == want;
  for (size_t b = 0; ok && b < want; b++)
    ok = ((uint8_t *)buf->p)[b] == member_byte(k, m, tag, b);
  CHECK_MSG(ok, "%s: read %d, %zu of %zu bytes: %s", path, rc, got, want,
            rc ? ferry_last_error() : "bytes differ");
  return ok;
}

/* Open fds of the process (the directory's own fd counted each time). */
static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  if (!d)
    return -1;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

/* The fds open on files under root, and whether each is O_CLOEXEC. */
static int root_fds(int *cloexec) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  *cloexec = 1;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char link[300], target[4200];
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (len <= 0)
      continue;
    target[len] = '\0';
    if (strncmp(target, root, strlen(root)))
      continue;
    n++;
    int flags = fcntl(atoi(e->d_name), F_GETFD);
    if (flags < 0 || !(flags & FD_CLOEXEC))
      *cloexec = 0;
  }
  if (d)
    closedir(d);
  return n;
}

/* ------------------------------------------------------- threads */

typedef struct reader {
  const fy_source *s;
  int t, passes;
  int64_t bad;
} reader;

/* Every sample, `passes` times, in a stride order of its own (7 is prime
 * to the count: the shards interleave, a few reads each). */
static void *read_all(void *p) {
  reader *r = p;
  fy_buf buf = {0};
  int64_t n = r->s->count;
  for (int pass = 0; pass < r->passes; pass++)
    for (int64_t j = 0; j < n; j++) {
      int64_t i = r->t == 0 ? j : (j * 7 + r->t * 13 + pass) % n;
      r->bad += !sample_ok(r->s, i, &buf);
    }
  fy_buf_free(&buf);
  return NULL;
}

static void test_threads(void) {
  enum { NS = 8, M = 40, T = 4 };
  char *paths[NS];
  write_shards("thr", NS, M, 0, paths);
  fy_source s;
  if (open_source(&s, paths, NS) == FERRY_OK) {
    CHECK(s.count == NS * M && s.nshards == NS);
    CHECK(s.count % 7 != 0); /* the stride order visits every sample */
    pthread_t th[T];
    reader r[T];
    for (int t = 0; t < T; t++) {
      r[t] = (reader){&s, t, 3, 0};
      CHECK(pthread_create(&th[t], NULL, read_all, &r[t]) == 0);
    }
    for (int t = 0; t < T; t++) {
      pthread_join(th[t], NULL);
      CHECK_MSG(r[t].bad == 0, "thread %d: %lld bad reads", t, (long long)r[t].bad);
    }
    fy_source_free(&s);
  }
  free_paths(paths, NS);
}

/* One thread: members round-robin over 3 shards (fewer than a thread's
 * fds), then over 8 (more: each read replaces one), then backwards. */
static void test_interleave(void) {
  enum { NS = 8, M = 12 };
  char *paths[NS];
  write_shards("mix", NS, M, 0, paths);
  fy_source s;
  if (open_source(&s, paths, NS) == FERRY_OK) {
    fy_buf buf = {0};
    int64_t bad = 0;
    for (int ns = 3; ns <= NS; ns += NS - 3)
      for (int m = 0; m < M; m++)
        for (int k = 0; k < ns; k++)
          bad += !sample_ok(&s, (int64_t)k * M + m, &buf);
    for (int64_t i = s.count - 1; i >= 0; i--)
      bad += !sample_ok(&s, i, &buf);
    CHECK_MSG(bad == 0, "%lld bad reads", (long long)bad);
    fy_buf_free(&buf);
    fy_source_free(&s);
  }
  free_paths(paths, NS);
}

/* ------------------------------------------------------- errors */

static void expect_error(const fy_source *s, int64_t i, uint64_t max_bytes, int want_rc,
                         const char *want1, const char *want2) {
  fy_buf buf = {0};
  size_t got = 0;
  int rc = fy_source_read(s, i, max_bytes, &buf, &got);
  const char *e = ferry_last_error();
  CHECK_MSG(rc == want_rc && strstr(e, want1) && strstr(e, want2), "sample %lld: %d \"%s\"",
            (long long)i, rc, e);
  fy_buf_free(&buf);
}

static void test_errors(void) {
  enum { M = 6 };
  char *paths[1];
  write_shards("cut", 1, M, 0, paths);
  fy_source s;
  if (open_source(&s, paths, 1) != FERRY_OK) {
    free_paths(paths, 1);
    return;
  }
  fy_buf buf = {0};
  CHECK(sample_ok(&s, 0, &buf)); /* the shard is open in this thread now */
  /* over the limit: refused before any allocation, whatever is open */
  fy_buf none = {0};
  size_t got = 0;
  uint64_t len = (uint64_t)s.member_len[1];
  char want[200];
  snprintf(want, sizeof want, "member is %llu bytes, over the %llu-byte limit",
           (unsigned long long)len, (unsigned long long)len - 1);
  int rc = fy_source_read(&s, 1, len - 1, &none, &got);
  CHECK_MSG(rc == FERRY_ETOO_LARGE && strstr(ferry_last_error(), want) &&
                strstr(ferry_last_error(), fy_source_path(&s, 1)) && none.p == NULL,
            "%d: %s", rc, ferry_last_error());
  CHECK(sample_ok(&s, 1, &buf));

  /* cut in the middle of member 3 while open: member 3 ends early, member
   * 4 has no byte left; the members before it still read */
  int64_t cut = s.member_off[3] + s.member_len[3] / 2;
  CHECK(truncate(paths[0], cut) == 0);
  snprintf(want, sizeof want, "the shard ends after %lld of the member's %lld bytes",
           (long long)(s.member_len[3] / 2), (long long)s.member_len[3]);
  expect_error(&s, 3, 0, FERRY_ECORRUPT, fy_source_path(&s, 3), want);
  snprintf(want, sizeof want, "the shard ends after 0 of the member's %lld bytes",
           (long long)s.member_len[4]);
  expect_error(&s, 4, 0, FERRY_ECORRUPT, fy_source_path(&s, 4), want);
  CHECK(sample_ok(&s, 2, &buf));
  CHECK(sample_ok(&s, 0, &buf));

  /* an injected read failure (fault.c) through the open fd: the error with
   * its place, then the next read opens the shard again and reads well */
  fy_fail_bytes_set(FY_FAULT_READ, 5);
  expect_error(&s, 1, 0, FERRY_EIO, fy_source_path(&s, 1), "read failed at byte 4");
  fy_fail_bytes_set(FY_FAULT_READ, 0);
  CHECK(sample_ok(&s, 1, &buf));

  /* the shard gone: read on from the fd open in this thread (a deleted
   * file's bytes stay while it is open); from a new source the open fails,
   * naming the shard */
  CHECK(unlink(paths[0]) == 0);
  CHECK(sample_ok(&s, 2, &buf));
  fy_source_free(&s);
  memset(&s, 0, sizeof s);
  write_shard(paths[0], 0, M, 0);
  if (open_source(&s, paths, 1) == FERRY_OK) {
    CHECK(unlink(paths[0]) == 0);
    expect_error(&s, 0, 0, FERRY_EIO, paths[0], ": cannot open: No such file or directory");
    fy_source_free(&s);
  }
  fy_buf_free(&buf);
  free_paths(paths, 1);
}

/* ------------------------------------------------------- stale fds */

typedef struct stale_job {
  fy_source *s;
  pthread_barrier_t *bar;
  int first_ok, second_ok;
} stale_job;

/* Reads the source's first sample, waits while the main thread replaces
 * source and shard, then reads again. */
static void *stale_reader(void *p) {
  stale_job *j = p;
  fy_buf buf = {0};
  j->first_ok = sample_ok(j->s, 0, &buf);
  pthread_barrier_wait(j->bar);
  pthread_barrier_wait(j->bar);
  j->second_ok = sample_ok(j->s, 0, &buf) && sample_ok(j->s, 1, &buf);
  fy_buf_free(&buf);
  return NULL;
}

/* A source freed and another opened in the same struct over the same path,
 * the shard renamed over meanwhile (new bytes, new file): read in this
 * thread and in one that had the old shard open. */
static void test_stale(void) {
  char *paths[2];
  write_shards("stale", 2, 3, 0, paths);
  fy_source s;
  fy_buf buf = {0};
  if (open_source(&s, paths, 2) == FERRY_OK) {
    CHECK(sample_ok(&s, 0, &buf) && sample_ok(&s, 4, &buf));
    fy_source_free(&s);
  }
  write_shard(paths[0], 0, 3, 1);
  write_shard(paths[1], 1, 3, 1);
  if (open_source(&s, paths, 2) == FERRY_OK) {
    CHECK(strstr(fy_source_path(&s, 0), "-t1.jpg"));
    CHECK(sample_ok(&s, 0, &buf) && sample_ok(&s, 4, &buf));
    fy_source_free(&s);
  }

  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 2);
  stale_job j = {&s, &bar, 0, 0};
  pthread_t th;
  if (open_source(&s, paths, 2) == FERRY_OK) {
    CHECK(pthread_create(&th, NULL, stale_reader, &j) == 0);
    pthread_barrier_wait(&bar); /* it has shard 0 open */
    fy_source_free(&s);
    write_shard(paths[0], 0, 3, 2);
    CHECK(open_source(&s, paths, 2) == FERRY_OK);
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    CHECK(j.first_ok && j.second_ok);
    CHECK(strstr(fy_source_path(&s, 0), "-t2.jpg"));
    fy_source_free(&s);
  }
  pthread_barrier_destroy(&bar);
  fy_buf_free(&buf);
  free_paths(paths, 2);
}

/* A shard renamed over while this thread has it open: the open fd reads
 * the old file (what the source listed) until the source is freed. */
static void test_replaced(void) {
  char *paths[1];
  write_shards("repl", 1, 4, 0, paths);
  fy_source s;
  fy_buf buf = {0};
  if (open_source(&s, paths, 1) == FERRY_OK) {
    CHECK(sample_ok(&s, 0, &buf));
    write_shard(paths[0], 0, 4, 3);
    CHECK(sample_ok(&s, 1, &buf) && sample_ok(&s, 3, &buf)); /* the old bytes, as listed */
    fy_source_free(&s);
  }
  fy_buf_free(&buf);
  free_paths(paths, 1);
}

/* ------------------------------------------------------- bounds */

static void *read_once(void *p) {
  reader *r = p;
  fy_buf buf = {0};
  for (int64_t i = 0; i < r->s->count; i++)
    r->bad += !sample_ok(r->s, i, &buf);
  fy_buf_free(&buf);
  return NULL;
}

static void test_bound(void) {
  enum { NS = 200, T = 3 };
  char **paths = malloc(NS * sizeof *paths);
  write_shards("many", NS, 2, 0, paths);
  fy_source s;
  if (open_source(&s, paths, NS) == FERRY_OK) {
    int before = count_fds(), cloexec = 0;
    fy_buf buf = {0};
    int64_t bad = 0;
    for (int64_t i = 0; i < s.count; i++)
      bad += !sample_ok(&s, i, &buf);
    int during = count_fds(), open_here = root_fds(&cloexec);
    CHECK_MSG(bad == 0 && during > before && during <= before + 4 && open_here == during - before,
              "%lld bad; fds %d before, %d after reading %d shards (%d of them)", (long long)bad,
              before, during, NS, open_here);
    CHECK_MSG(cloexec, "a shard's fd without O_CLOEXEC");
    /* on threads: each keeps a few while it lives, none once it ends */
    pthread_t th[T];
    reader r[T];
    for (int t = 0; t < T; t++) {
      r[t] = (reader){&s, t, 1, 0};
      CHECK(pthread_create(&th[t], NULL, read_once, &r[t]) == 0);
    }
    for (int t = 0; t < T; t++) {
      pthread_join(th[t], NULL);
      CHECK(r[t].bad == 0);
    }
    CHECK_MSG(count_fds() == during, "fds %d after the threads ended, %d before", count_fds(),
              during);
    fy_source_free(&s);
    CHECK_MSG(count_fds() == before && root_fds(&cloexec) == 0,
              "fds %d after the source was freed, %d before reading", count_fds(), before);
    fy_buf_free(&buf);
  }
  free_paths(paths, NS);
  free(paths);
}

int main(void) {
  snprintf(root, sizeof root, "/tmp/ferry-shardfd-XXXXXX");
  if (!mkdtemp(root)) {
    SKIP("no temporary directory");
    return check_done();
  }
  test_threads();
  test_interleave();
  test_errors();
  test_stale();
  test_replaced();
  test_bound();
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  CHECK(system(cmd) == 0);
  return check_done();
}
