/* test_fault_io.c — I/O faults: a full disk while writing a pack shard and a
 * catalog (tmpfs of 256 KiB when root can mount one, else RLIMIT_FSIZE),
 * ENOSPC in the middle of a catalog journal record (injected), files
 * deleted or truncated during an epoch, permission denied, EIO in the middle
 * of a file (injected), a FIFO nobody writes (read time-out), and a batch
 * ring over max_batch_bytes. Each must give a clear error naming the file
 * and lose nothing already written. */
#include "catalog/catalog.h"
#include "check.h"
#include "core/internal.h"
#include "pack/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define slurp(path, n) check_slurp(path, n)

static int same_file(const char *path, const char *want, size_t n) {
  size_t m = 0;
  char *got = slurp(path, &m);
  int same = got && m == n && memcmp(got, want, n) == 0;
  free(got);
  return same;
}

/* A small filesystem: tmpfs mounted on dir (1), or the file size limit (0). */
static int full_disk_start(const char *dir, struct rlimit *old) {
  if (mount("tmpfs", dir, "tmpfs", 0, "size=256k") == 0)
    return 1;
  signal(SIGXFSZ, SIG_IGN);
  getrlimit(RLIMIT_FSIZE, old);
  struct rlimit small = {64 << 10, old->rlim_max};
  setrlimit(RLIMIT_FSIZE, &small);
  return 0;
}

static void full_disk_end(const char *dir, int mounted, const struct rlimit *old) {
  if (mounted)
    umount(dir);
  else
    setrlimit(RLIMIT_FSIZE, old);
}

static void pack_full_disk(const char *dir) {
  static uint8_t data[2 * 300 * 300 * 3];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (uint8_t)(i * 7);
  int32_t labels[2] = {0, 1};
  const char *paths[2] = {"a.jpg", "b.jpg"};
  struct rlimit old;
  int mounted = full_disk_start(dir, &old);
  /* shard 0: small, fits */
  CHECK(fy_pack_write_shard(dir, 1, 0, 8, 8, 3, 2, data, labels, paths) == FERRY_OK);
  char s0[4200], s1[4200], tmp[4300];
  snprintf(s0, sizeof s0, "%s/shard-00000.fpk", dir);
  snprintf(s1, sizeof s1, "%s/shard-00001.fpk", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", s1);
  size_t n0 = 0;
  char *before = slurp(s0, &n0);
  /* shard 1: 540 KB, does not */
  int rc = fy_pack_write_shard(dir, 1, 1, 300, 300, 3, 2, data, labels, paths);
  const char *why = mounted ? "No space left" : "File too large";
  CHECK_MSG(rc == FERRY_EIO, "full disk: %s", ferry_strerror(rc));
  CHECK_MSG(strstr(ferry_last_error(), why) && strstr(ferry_last_error(), "shard-00001"), "%s",
            ferry_last_error());
  printf("full disk (%s): %s\n", mounted ? "tmpfs" : "RLIMIT_FSIZE", ferry_last_error());
  CHECK(before && same_file(s0, before, n0));
  CHECK(access(s1, F_OK) != 0 && access(tmp, F_OK) != 0);
  free(before);

  /* a catalog saved again onto the full disk keeps the old one */
  ferry_hash_options o;
  ferry_hash_options_default(&o);
  ferry_catalog *c = fy_catalog_new(&o);
  char idx[4200], longpath[2048];
  snprintf(idx, sizeof idx, "%s/cat.fidx", dir);
  ferry_catalog_entry e;
  memset(&e, 0, sizeof e);
  e.path = "/x/first.jpg";
  e.error = "";
  CHECK(c && fy_catalog_add(c, &e) == FERRY_OK && fy_catalog_save(c, idx) == FERRY_OK);
  size_t ni = 0;
  char *cat_before = slurp(idx, &ni);
  memset(longpath, 'p', sizeof longpath - 1);
  longpath[0] = '/';
  longpath[sizeof longpath - 1] = '\0';
  e.path = longpath;
  for (int i = 0; i < 300 && c; i++) {
    longpath[1] = (char)('a' + i % 26), longpath[2] = (char)('a' + i / 26);
    fy_catalog_add(c, &e);
  }
  rc = c ? fy_catalog_save(c, idx) : FERRY_ENOMEM;
  CHECK_MSG(rc != FERRY_OK, "catalog save on a full disk succeeded");
  printf("full disk, catalog: %s: %s\n", ferry_strerror(rc), ferry_last_error());
  CHECK(cat_before && same_file(idx, cat_before, ni));
  ferry_catalog *back = NULL;
  CHECK(ferry_catalog_load(idx, &back) == FERRY_OK && back && ferry_catalog_size(back) == 1);
  ferry_catalog_free(back);
  ferry_catalog_free(c);
  free(cat_before);
  unlink(s0);
  unlink(idx);
  full_disk_end(dir, mounted, &old);
}

typedef struct {
  int count, named;
} skips;

static void on_skip(void *user, const char *path, int status, const char *msg) {
  skips *s = user;
  s->count++;
  if (strstr(msg, path) || strstr(msg, "No such file") || strstr(msg, "truncated"))
    s->named++;
}

/* 12 copies of a JPEG; after the first batch each file is deleted (mode 0)
 * or truncated (mode 1); the rest of the epoch is skipped or fails. */
static void vanishing_files(const char *dir, const char *jpeg, int mode, ferry_on_error policy) {
  size_t n = 0;
  char *img = slurp(jpeg, &n);
  CHECK(img && n > 100);
  if (!img)
    return;
  char list[4200], path[4300];
  snprintf(list, sizeof list, "%s/list.txt", dir);
  FILE *lf = fopen(list, "w");
  CHECK(lf != NULL);
  if (!lf) {
    free(img);
    return;
  }
  for (int i = 0; i < 12; i++) {
    snprintf(path, sizeof path, "%s/img%02d.jpg", dir, i);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(img, 1, n, f) == n);
    if (f)
      fclose(f);
    fprintf(lf, "img%02d.jpg,%d\n", i, i % 3);
  }
  fclose(lf);
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = list;
  o.batch_size = 2, o.workers = 1, o.prefetch = 1, o.shuffle = 0;
  o.width = o.height = 32;
  o.on_error = policy;
  o.epoch_ahead = 0; /* one epoch's files and skips exactly (epoch 1 ahead would read more) */
  skips sk = {0, 0};
  o.on_skip = on_skip, o.on_skip_user = &sk;
  ferry_loader *L = NULL;
  CHECK(ferry_loader_open(&o, &L) == FERRY_OK);
  if (!L) {
    free(img);
    return;
  }
  CHECK(ferry_loader_start_epoch(L, 0) == FERRY_OK);
  ferry_batch *b;
  int rc = ferry_loader_next(L, &b), images = 0;
  CHECK(rc == FERRY_OK);
  if (rc == FERRY_OK) {
    images += b->count;
    for (int i = 0; i < 12; i++) {
      snprintf(path, sizeof path, "%s/img%02d.jpg", dir, i);
      if (mode == 0)
        unlink(path);
      else
        CHECK(truncate(path, (off_t)n / 3) == 0);
    }
    ferry_loader_release(L, b);
  }
  while ((rc = ferry_loader_next(L, &b)) == FERRY_OK) {
    images += b->count;
    ferry_loader_release(L, b);
  }
  if (policy == FERRY_ON_ERROR_SKIP) {
    CHECK_MSG(rc == FERRY_END, "%s", ferry_strerror(rc));
    CHECK_MSG(images + sk.count == 12 && sk.count >= 8, "images %d skipped %d", images, sk.count);
    CHECK(sk.named == sk.count);
  } else {
    CHECK_MSG(rc != FERRY_END && rc != FERRY_OK, "epoch with missing files did not fail");
    CHECK_MSG(strstr(ferry_last_error(), "img"), "error does not name the file: %s",
              ferry_last_error());
    printf("%s during an epoch, on_error=fail: %s\n", mode ? "truncated" : "deleted",
           ferry_last_error());
  }
  ferry_loader_close(L);
  for (int i = 0; i < 12; i++) {
    snprintf(path, sizeof path, "%s/img%02d.jpg", dir, i);
    unlink(path);
  }
  unlink(list);
  free(img);
}

/* Unreadable files. Root reads anything, so the check drops to an
 * unprivileged file-system uid for this thread (setfsuid). */
static void permission_denied(const char *dir, const char *jpeg) {
  char path[4200], list[4200];
  snprintf(path, sizeof path, "%s/secret.jpg", dir);
  snprintf(list, sizeof list, "%s/secret.txt", dir);
  size_t n = 0;
  char *img = slurp(jpeg, &n);
  FILE *f = fopen(path, "wb");
  CHECK(f && img && fwrite(img, 1, n, f) == n);
  if (f)
    fclose(f);
  f = fopen(list, "w");
  CHECK(f && fputs("secret.jpg,0\n", f) >= 0);
  if (f)
    fclose(f);
  chmod(path, 0);
  chmod(list, 0);
  chmod(dir, 0755);
  int root = geteuid() == 0;
  if (root)
    setfsuid(65534);
  ferry_image im = {0};
  int rc = ferry_decode_file(path, NULL, &im);
  CHECK_MSG(rc == FERRY_EIO && strstr(ferry_last_error(), "Permission denied") &&
                strstr(ferry_last_error(), "secret.jpg"),
            "%s: %s", ferry_strerror(rc), ferry_last_error());
  printf("permission denied: %s\n", ferry_last_error());
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = list;
  ferry_loader *L = NULL;
  rc = ferry_loader_open(&o, &L);
  CHECK_MSG(rc != FERRY_OK && strstr(ferry_last_error(), "secret.txt"), "%s", ferry_last_error());
  if (L)
    ferry_loader_close(L);
  if (root)
    setfsuid(0);
  unlink(path);
  unlink(list);
  free(img);
}

/* `count` copies of jpeg as dir/img00.jpg ..., listed in dir/list.txt,
 * with `extra` (a path relative to dir) listed after the first. */
static int write_list(const char *dir, const char *jpeg, int count, const char *extra,
                      size_t *size) {
  char *img = slurp(jpeg, size);
  char list[4200], path[4300];
  snprintf(list, sizeof list, "%s/list.txt", dir);
  FILE *lf = fopen(list, "w");
  int ok = img && lf;
  for (int i = 0; ok && i < count; i++) {
    snprintf(path, sizeof path, "%s/img%02d.jpg", dir, i);
    FILE *f = fopen(path, "wb");
    ok = f && fwrite(img, 1, *size, f) == *size;
    if (f)
      fclose(f);
    fprintf(lf, "img%02d.jpg,0\n", i);
    if (i == 0 && extra)
      fprintf(lf, "%s,0\n", extra);
  }
  if (lf)
    fclose(lf);
  free(img);
  CHECK(ok);
  return ok;
}

static void remove_list(const char *dir, int count) {
  char path[4300];
  for (int i = 0; i < count; i++) {
    snprintf(path, sizeof path, "%s/img%02d.jpg", dir, i);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/list.txt", dir);
  unlink(path);
}

typedef struct {
  int count;
  char msg[1024];
} last_skip;

static void keep_skip(void *user, const char *path, int status, const char *msg) {
  last_skip *s = user;
  s->count++;
  snprintf(s->msg, sizeof s->msg, "%s", msg);
}

/* One epoch of dir/list.txt, 32x32, one worker, in order: images loaded;
 * *rc gets the end status (FERRY_END, or the error under on_error=fail). */
static int run_epoch(const char *dir, ferry_on_error policy, last_skip *sk, int *rc) {
  char list[4200];
  snprintf(list, sizeof list, "%s/list.txt", dir);
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = list;
  o.batch_size = 2, o.workers = 1, o.prefetch = 1, o.shuffle = 0;
  o.width = o.height = 32;
  o.on_error = policy;
  o.epoch_ahead = 0; /* one epoch's files and skips exactly (epoch 1 ahead would read more) */
  o.on_skip = keep_skip, o.on_skip_user = sk;
  ferry_loader *L = NULL;
  *rc = ferry_loader_open(&o, &L);
  CHECK_MSG(*rc == FERRY_OK, "%s", ferry_last_error());
  if (!L)
    return 0;
  ferry_batch *b;
  int images = 0;
  while ((*rc = ferry_loader_next(L, &b)) == FERRY_OK) {
    images += b->count;
    ferry_loader_release(L, b);
  }
  ferry_loader_close(L);
  return images;
}

/* A FIFO that nobody writes, and a character device (/dev/zero, endless):
 * refused at once by name as not regular files, never waited on nor read;
 * the other files load. */
static void fifo_and_device(const char *dir, const char *jpeg) {
  char fifo[4200];
  snprintf(fifo, sizeof fifo, "%s/hung.jpg", dir);
  size_t n;
  if (mkfifo(fifo, 0600) != 0 || !write_list(dir, jpeg, 4, "hung.jpg", &n)) {
    CHECK_MSG(0, "mkfifo %s: %s", fifo, strerror(errno));
    return;
  }
  const char *name[2] = {fifo, "/dev/zero"};
  const char *kind[2] = {"hung.jpg: a FIFO, not a regular file",
                         "/dev/zero: a character device, not a regular file"};
  for (int i = 0; i < 2; i++) {
    fy_buf buf = {0};
    size_t got;
    double t0 = fy_now();
    int rc = fy_read_file(name[i], 0, &buf, &got);
    double took = fy_now() - t0;
    CHECK_MSG(rc == FERRY_EINVAL && strstr(ferry_last_error(), kind[i]), "%s: %s: %s", name[i],
              ferry_strerror(rc), ferry_last_error());
    CHECK_MSG(took < 1 && buf.cap == 0, "%s: refused after %.3f s, %zu bytes held", name[i], took,
              buf.cap);
    fy_buf_free(&buf);
  }

  last_skip sk = {0, ""};
  int rc;
  double t0 = fy_now();
  int images = run_epoch(dir, FERRY_ON_ERROR_SKIP, &sk, &rc);
  double took = fy_now() - t0;
  CHECK_MSG(rc == FERRY_END && images == 4 && sk.count == 1, "%s: %d images, %d skipped",
            ferry_strerror(rc), images, sk.count);
  CHECK_MSG(strstr(sk.msg, kind[0]), "%s", sk.msg);
  CHECK_MSG(took < 10, "epoch with a FIFO took %.1f s", took);
  printf("FIFO in a list, on_error=skip: %s (epoch %.2f s)\n", sk.msg, took);

  images = run_epoch(dir, FERRY_ON_ERROR_FAIL, &sk, &rc);
  CHECK_MSG(rc == FERRY_EINVAL && strstr(ferry_last_error(), kind[0]), "%s: %s", ferry_strerror(rc),
            ferry_last_error());
  printf("FIFO in a list, on_error=fail: %s\n", ferry_last_error());
  unlink(fifo);
  remove_list(dir, 4);
}

/* EIO half-way through img01.jpg (FY_FAULT_READ): that file fails with
 * "Input/output error", naming it; the others load. */
static void eio_mid_file(const char *dir, const char *jpeg) {
  size_t n;
  if (!write_list(dir, jpeg, 4, NULL, &n))
    return;
  last_skip sk = {0, ""};
  int rc;
  /* img00 reads n bytes; byte n + n/2 lies in img01 */
  fy_fail_bytes_set(FY_FAULT_READ, n + n / 2);
  int images = run_epoch(dir, FERRY_ON_ERROR_SKIP, &sk, &rc);
  fy_fail_bytes_set(FY_FAULT_READ, 0);
  char want[128];
  snprintf(want, sizeof want, "img01.jpg: read failed at byte %zu: Input/output error", n / 2 - 1);
  CHECK_MSG(rc == FERRY_END && images == 3 && sk.count == 1, "%s: %d images, %d skipped",
            ferry_strerror(rc), images, sk.count);
  CHECK_MSG(strstr(sk.msg, want), "'%s' is not '%s'", sk.msg, want);
  printf("EIO in the middle of a file: %s\n", sk.msg);
  fy_fail_bytes_set(FY_FAULT_READ, n + n / 2);
  images = run_epoch(dir, FERRY_ON_ERROR_FAIL, &sk, &rc);
  fy_fail_bytes_set(FY_FAULT_READ, 0);
  CHECK_MSG(rc == FERRY_EIO && strstr(ferry_last_error(), want), "%s: %s", ferry_strerror(rc),
            ferry_last_error());
  remove_list(dir, 4);
}

/* The batch ring is checked against max_batch_bytes before anything is
 * allocated or read (the source does not even exist here). */
static void ring_limit(const char *dir) {
  char missing[4200];
  snprintf(missing, sizeof missing, "%s/no-such-dir", dir);
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = missing;
  o.batch_size = 256, o.prefetch = 3, o.dtype = FERRY_F32; /* 3 x 154 MB */
  o.max_batch_bytes = 100u << 20;
  ferry_loader *L = NULL;
  int rc = ferry_loader_open(&o, &L);
  CHECK_MSG(rc == FERRY_ETOO_LARGE && !L, "%s", ferry_strerror(rc));
  CHECK_MSG(strstr(ferry_last_error(), "needs 462422016 bytes") &&
                strstr(ferry_last_error(), "limit of 104857600 bytes") &&
                strstr(ferry_last_error(), "max_batch_bytes"),
            "%s", ferry_last_error());
  printf("ring over the limit: %s\n", ferry_last_error());
  /* the default (4 GiB), and a ring whose size overflows */
  o.max_batch_bytes = 0;
  o.width = o.height = 16384, o.batch_size = 1 << 20;
  rc = ferry_loader_open(&o, &L);
  CHECK_MSG(rc == FERRY_ETOO_LARGE && strstr(ferry_last_error(), "limit of 4294967296 bytes"), "%s",
            ferry_last_error());
  /* under the limit: the next check is the source's */
  o.width = o.height = 224, o.batch_size = 256;
  rc = ferry_loader_open(&o, &L);
  CHECK_MSG(rc == FERRY_EIO && strstr(ferry_last_error(), "no-such-dir"), "%s", ferry_last_error());
}

/* The disk fills up in the middle of a journal record (FY_FAULT_WRITE):
 * the run fails naming the journal, the previous catalog stays as it was
 * and loads, and the next run completes. */
static void journal_enospc(const char *dir, const char *jpeg) {
  char pics[4200], idx[4200], path[4300];
  snprintf(pics, sizeof pics, "%s/pics", dir);
  snprintf(idx, sizeof idx, "%s/cat.fidx", dir);
  mkdir(pics, 0755);
  size_t n;
  char *img = slurp(jpeg, &n);
  for (int i = 0; img && i < 6; i++) {
    snprintf(path, sizeof path, "%s/p%d.jpg", pics, i);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(img, 1, n, f) == n);
    if (f)
      fclose(f);
    if (i == 2) { /* first run: three files */
      const char *roots[] = {pics};
      ferry_index_options o;
      ferry_index_options_default(&o);
      o.threads = 1;
      CHECK_MSG(ferry_index_update(idx, roots, 1, &o, NULL) == FERRY_OK, "%s", ferry_last_error());
    }
  }
  free(img);
  size_t ni = 0;
  char *before = slurp(idx, &ni);
  const char *roots[] = {pics};
  ferry_index_options o;
  ferry_index_options_default(&o);
  o.threads = 1;
  fy_fail_bytes_set(FY_FAULT_WRITE, 100);
  int rc = ferry_index_update(idx, roots, 1, &o, NULL);
  fy_fail_bytes_set(FY_FAULT_WRITE, 0);
  CHECK_MSG(rc == FERRY_EIO && strstr(ferry_last_error(), "cat.fidx.journal") &&
                strstr(ferry_last_error(), "No space left on device"),
            "%s: %s", ferry_strerror(rc), ferry_last_error());
  printf("journal ENOSPC: %s\n", ferry_last_error());
  CHECK(before && same_file(idx, before, ni));
  ferry_catalog *back = NULL;
  CHECK(ferry_catalog_load(idx, &back) == FERRY_OK && back && ferry_catalog_size(back) == 3);
  ferry_catalog_free(back);
  ferry_index_stats st;
  rc = ferry_index_update(idx, roots, 1, &o, &st);
  CHECK_MSG(rc == FERRY_OK && st.files == 6 && st.reused == 3 && st.hashed + st.resumed == 3,
            "%s: %zu files, %zu reused, %zu hashed, %zu resumed", ferry_last_error(), st.files,
            st.reused, st.hashed, st.resumed);
  back = NULL;
  CHECK(ferry_catalog_load(idx, &back) == FERRY_OK && back && ferry_catalog_size(back) == 6);
  ferry_catalog_free(back);
  snprintf(path, sizeof path, "%s.journal", idx);
  CHECK(access(path, F_OK) != 0);
  free(before);
  for (int i = 0; i < 6; i++) {
    snprintf(path, sizeof path, "%s/p%d.jpg", pics, i);
    unlink(path);
  }
  rmdir(pics);
  unlink(idx);
}

int main(void) {
  const char *fx = getenv("FERRY_FIXTURES");
  char jpeg[4096];
  snprintf(jpeg, sizeof jpeg, "%s/hash/rgb420.jpg", fx ? fx : "tests/fixtures");
  char dir[] = "/tmp/ferry-faults-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  pack_full_disk(dir);
  for (int mode = 0; mode < 2; mode++) {
    vanishing_files(dir, jpeg, mode, FERRY_ON_ERROR_SKIP);
    vanishing_files(dir, jpeg, mode, FERRY_ON_ERROR_FAIL);
  }
  permission_denied(dir, jpeg);
  fifo_and_device(dir, jpeg);
  eio_mid_file(dir, jpeg);
  ring_limit(dir);
  journal_enospc(dir, jpeg);
  rmdir(dir);
  return check_done();
}
