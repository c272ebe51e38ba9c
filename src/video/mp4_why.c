/* mp4_why.c — why an MP4 (QuickTime, ISO media) file that libavformat
 * refused cannot be read, in words that are true of this file: its boxes
 * walked with pread() (bounds-checked, never trusted). A box running past
 * the end before any moov box: the file is cut off, and its index (the moov
 * box, written at the end) is missing. A whole moov box: the index is
 * damaged, and where the damage is one this walk can see (a box running
 * past its parent; a sample-size table, stsz, with more samples than room
 * for them, or a sample larger than the whole file) it is named. Built with
 * or without libavcodec. */
#include "video/video.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct box {
  int64_t at, size; /* the whole box */
  int64_t body;     /* where its contents start */
  char type[5];
} box;

typedef struct walk {
  int fd;
  int64_t file_size;
  int boxes; /* boxes read so far: a bound on a hostile file's walk */
} walk;

#define MAX_BOXES 100000

static int read_at(const walk *w, int64_t at, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(w->fd, (char *)buf + got, n - got, (off_t)(at + (int64_t)got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return -1;
    got += (size_t)r;
  }
  return 0;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The box at `at` inside [.., end): 1 when it was read (its size may run
 * past end: the caller checks), 0 at end or when it cannot be read. */
static int box_at(walk *w, int64_t at, int64_t end, box *b) {
  uint8_t h[16];
  if (at + 8 > end || ++w->boxes > MAX_BOXES || read_at(w, at, h, 8) != 0)
    return 0;
  b->at = at;
  b->body = at + 8;
  memcpy(b->type, h + 4, 4);
  b->type[4] = '\0';
  for (int i = 0; i < 4; i++)
    if (b->type[i] < 0x20 || b->type[i] > 0x7e)
      b->type[i] = '?';
  uint64_t size = be32(h);
  if (size == 1) { /* a 64-bit size follows the type */
    if (read_at(w, at + 8, h + 8, 8) != 0)
      return 0;
    size = (uint64_t)be32(h + 8) << 32 | be32(h + 12);
    b->body = at + 16;
  } else if (size == 0) { /* to the end of the file */
    size = (uint64_t)(w->file_size - at);
  }
  b->size = size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)size;
  return 1;
}

static int runs_past(const box *b, int64_t end) {
  return b->size < b->body - b->at || b->size > end - b->at;
}

/* A sample-size table: "" when it is sound, else what is wrong. */
static void check_stsz(walk *w, const box *b, int track, char *why, size_t n) {
  uint8_t h[12];
  int64_t room = b->at + b->size - (b->body + 12);
  if (room < 0 || read_at(w, b->body, h, 12) != 0) {
    snprintf(why, n, "the stsz box (sample sizes) of track %d is too short", track);
    return;
  }
  uint32_t fixed = be32(h + 4), count = be32(h + 8);
  if (fixed) { /* every sample of that size: no table */
    if (fixed > (uint64_t)w->file_size)
      snprintf(why, n,
               "the stsz box (sample sizes) of track %d gives every sample %u bytes, more than "
               "the whole file (%lld bytes)",
               track, fixed, (long long)w->file_size);
    return;
  }
  if ((int64_t)count * 4 > room) {
    snprintf(why, n, "the stsz box (sample sizes) of track %d lists %u samples in room for %lld",
             track, count, (long long)(room / 4));
    return;
  }
  uint8_t buf[4096];
  for (uint32_t k = 0; k < count;) {
    uint32_t m = count - k < sizeof buf / 4 ? count - k : (uint32_t)(sizeof buf / 4);
    if (read_at(w, b->body + 12 + (int64_t)k * 4, buf, (size_t)m * 4) != 0)
      return;
    for (uint32_t j = 0; j < m; j++) {
      uint32_t s = be32(buf + 4 * j);
      if (s > (uint64_t)w->file_size) {
        snprintf(why, n,
                 "the stsz box (sample sizes) of track %d gives sample %u a size of %u bytes, "
                 "more than the whole file (%lld bytes)",
                 track, k + j + 1, s, (long long)w->file_size);
        return;
      }
    }
    k += m;
  }
}

/* The boxes inside [from, end) of a moov box, and those inside the ones
 * that hold others on the way to the sample tables. */
static void walk_moov(walk *w, int64_t from, int64_t end, int *track, const char *parent, char *why,
                      size_t n) {
  static const char *const holders[] = {"trak", "mdia", "minf", "stbl", "edts", NULL};
  box b;
  for (int64_t at = from; !why[0] && box_at(w, at, end, &b); at = b.at + b.size) {
    if (runs_past(&b, end)) {
      snprintf(why, n, "its %s box at byte %lld (%lld bytes) runs past the end of its %s box",
               b.type, (long long)b.at, (long long)b.size, parent);
      return;
    }
    if (!strcmp(b.type, "trak"))
      ++*track;
    if (!strcmp(b.type, "stsz")) {
      check_stsz(w, &b, *track, why, n);
      continue;
    }
    for (int i = 0; holders[i]; i++)
      if (!strcmp(b.type, holders[i]))
        walk_moov(w, b.body, b.at + b.size, track, b.type, why, n);
  }
}

int fy_mp4_why(int fd, int64_t file_size, char *why, size_t n) {
  walk w = {fd, file_size, 0};
  box b;
  why[0] = '\0';
  if (!box_at(&w, 0, file_size, &b) || strcmp(b.type, "ftyp"))
    return 0;
  for (int64_t at = 0; box_at(&w, at, file_size, &b); at = b.at + b.size) {
    if (runs_past(&b, file_size)) {
      snprintf(why, n,
               "an MP4 without its index: the file is cut off in its %s box (at byte %lld, "
               "%lld bytes declared, %lld there) before the moov box that holds the index, "
               "written at the end, so no frame can be decoded",
               b.type, (long long)b.at, (long long)b.size, (long long)(file_size - b.at));
      return 1;
    }
    if (strcmp(b.type, "moov"))
      continue;
    char what[200] = "";
    int track = 0;
    walk_moov(&w, b.body, b.at + b.size, &track, "moov", what, sizeof what);
    snprintf(why, n, "an MP4 whose index (the moov box) is damaged%s%s", what[0] ? ": " : "", what);
    return 1;
  }
  snprintf(why, n, "an MP4 without a moov box (the index): no frame can be decoded");
  return 1;
}
