/* out_file.c — an output file opened in place or as "temporary + rename"
 * (see out_file.h for the rule). */
#include "core/out_file.h"
#include "core/internal.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fy_out_in_place(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int fy_out_open(fy_out_file *o, const char *path) {
  o->f = NULL;
  o->path = path;
  o->tmp[0] = '\0';
  o->direct = fy_out_in_place(path);
  if (!o->direct &&
      (size_t)snprintf(o->tmp, sizeof o->tmp, "%s.tmp%ld", path, (long)getpid()) >= sizeof o->tmp)
    return fy_error(FERRY_EINVAL, "%s: path too long", path);
  const char *target = o->direct ? path : o->tmp;
  o->f = fopen(target, "wb");
  if (!o->f)
    return fy_error(FERRY_EIO, "%s: cannot create: %s", target, strerror(errno));
  return FERRY_OK;
}

int fy_out_close(fy_out_file *o, int err) {
  if (!o->f)
    return err ? err : EIO;
  errno = 0;
  if (!err && (fflush(o->f) != 0 || ferror(o->f)))
    err = errno ? errno : EIO;
  errno = 0;
  if (fclose(o->f) != 0 && !err)
    err = errno ? errno : EIO;
  o->f = NULL;
  if (!o->direct) {
    if (!err && rename(o->tmp, o->path) != 0)
      err = errno ? errno : EIO;
    if (err)
      unlink(o->tmp);
  }
  return err;
}
