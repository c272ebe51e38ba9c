/* cli_stdin.c — `-` for standard input: an image (`ferry decode -`), a list
 * of paths (`ferry hash -`) or a list file (`ferry load -`). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_read_stdin(const char *cmd, uint64_t max, uint8_t **data, size_t *n) {
  size_t cap = 1 << 16, len = 0;
  uint8_t *d = malloc(cap);
  *data = NULL;
  *n = 0;
  if (!d)
    return fprintf(stderr, "ferry %s: out of memory\n", cmd), CLI_FAIL;
  for (;;) {
    if (len == cap) {
      uint8_t *g = cap <= SIZE_MAX / 2 ? realloc(d, cap * 2) : NULL;
      if (!g) {
        free(d);
        return fprintf(stderr, "ferry %s: standard input: out of memory\n", cmd), CLI_FAIL;
      }
      d = g;
      cap *= 2;
    }
    size_t got = fread(d + len, 1, cap - len, stdin);
    len += got;
    if (max && len > max) {
      free(d);
      fprintf(stderr, "ferry %s: standard input: more than %llu bytes\n", cmd,
              (unsigned long long)max);
      return CLI_FAIL;
    }
    if (got == 0)
      break;
  }
  if (ferror(stdin)) {
    int e = errno;
    free(d);
    fprintf(stderr, "ferry %s: standard input: read error: %s\n", cmd, strerror(e));
    return CLI_FAIL;
  }
  *data = d;
  *n = len;
  return CLI_OK;
}

#define LINE_MAX_BYTES 65536 /* as the loader's list files: a path is at most 4096 */

/* One line of stdin into buf (cap + 1 bytes), without its end: the bytes
 * it held (more than cap: too long, the rest skipped), or -1 at the end.
 * Memory stays bounded whatever comes in. */
static long read_line(char *buf, size_t cap) {
  size_t n = 0, total = 0;
  int c;
  while ((c = getc(stdin)) != EOF && c != '\n') {
    if (n < cap)
      buf[n++] = (char)c;
    if (++total > cap)
      break;
  }
  if (total > cap)
    while ((c = getc(stdin)) != EOF && c != '\n')
      ;
  buf[n] = '\0';
  return c == EOF && total == 0 ? -1 : (long)total;
}

void cli_free_lines(char **paths, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(paths[i]);
  free(paths);
}

int cli_stdin_lines(const char *cmd, char ***paths, size_t *n) {
  char *line = malloc(LINE_MAX_BYTES + 1);
  size_t count = 0, room = 0;
  char **v = NULL;
  long got, lineno = 0;
  *paths = NULL;
  *n = 0;
  if (!line)
    goto oom;
  while ((got = read_line(line, LINE_MAX_BYTES)) >= 0) {
    lineno++;
    if (got > LINE_MAX_BYTES || memchr(line, '\0', (size_t)got)) {
      fprintf(stderr, "ferry %s: standard input:%ld: %s: not a list of paths\n", cmd, lineno,
              got > LINE_MAX_BYTES ? "a line of more than 65536 bytes" : "binary data");
      free(line);
      cli_free_lines(v, count);
      return CLI_FAIL;
    }
    if (got > 0 && line[got - 1] == '\r')
      line[--got] = '\0';
    if (got == 0)
      continue;
    if (count == room) {
      size_t r = room ? room * 2 : 64;
      char **g = realloc(v, r * sizeof *v);
      if (!g)
        goto oom;
      v = g;
      room = r;
    }
    if (!(v[count] = strdup(line)))
      goto oom;
    count++;
  }
  free(line);
  if (ferror(stdin)) {
    int e = errno;
    cli_free_lines(v, count);
    fprintf(stderr, "ferry %s: standard input: read error: %s\n", cmd, strerror(e));
    return CLI_FAIL;
  }
  *paths = v;
  *n = count;
  return CLI_OK;
oom:
  free(line);
  cli_free_lines(v, count);
  fprintf(stderr, "ferry %s: standard input: out of memory\n", cmd);
  return CLI_FAIL;
}

int cli_stdin_list(const char *cmd, char *out, size_t cap) {
  const char *dir = getenv("TMPDIR");
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd))
    return fprintf(stderr, "ferry %s: the working directory: %s\n", cmd, strerror(errno)), CLI_FAIL;
  if ((size_t)snprintf(out, cap, "%s/ferry-stdin-XXXXXX", dir && *dir ? dir : "/tmp") >= cap)
    return fprintf(stderr, "ferry %s: TMPDIR too long\n", cmd), CLI_FAIL;
  int fd = mkstemp(out);
  if (fd < 0)
    return fprintf(stderr, "ferry %s: %s: cannot create: %s\n", cmd, out, strerror(errno)),
           CLI_FAIL;
  FILE *f = fdopen(fd, "w");
  char *line = malloc(LINE_MAX_BYTES + 1);
  if (!f || !line) {
    if (f)
      fclose(f);
    else
      close(fd);
    free(line);
    unlink(out);
    return fprintf(stderr, "ferry %s: out of memory\n", cmd), CLI_FAIL;
  }
  /* Line for line (the loader's messages name line numbers); a relative
   * path gets the working directory before it. What the loader refuses
   * (binary data) is copied for it to refuse. */
  long got, lineno = 0;
  int rc = CLI_OK;
  while (rc == CLI_OK && (got = read_line(line, LINE_MAX_BYTES)) >= 0) {
    lineno++;
    if (got > LINE_MAX_BYTES) {
      fprintf(stderr,
              "ferry %s: standard input:%ld: a line of more than %d bytes: not a list "
              "file\n",
              cmd, lineno, LINE_MAX_BYTES);
      rc = CLI_FAIL;
      break;
    }
    const char *p = line;
    if (lineno == 1 && got >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
      p += 3; /* a byte order mark is not part of the first path */
    const char *q = p + strspn(p, " \t");
    if (*q && *q != '/' && *q != '#' && *q != '\r' && *q != ',')
      fprintf(f, "%s/", cwd), p = q;
    fwrite(p, 1, (size_t)got - (size_t)(p - line), f);
    fputc('\n', f);
  }
  free(line);
  int e = rc == CLI_OK && ferror(stdin) ? (errno ? errno : EIO) : 0;
  int written = fflush(f) == 0 && !ferror(f);
  if ((fclose(f) != 0 || !written || e) && rc == CLI_OK) {
    e = e ? e : errno ? errno : EIO;
    fprintf(stderr, "ferry %s: standard input: %s\n", cmd, strerror(e));
    rc = CLI_FAIL;
  }
  if (rc)
    unlink(out);
  return rc;
}
