/* The store directory's entries: one walk for every reader of the directory
 * (the store's segment list, crash recovery, retention, live queries, the
 * upgrade's scratch directory). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

int ba_dir_each(int dirfd, const char *sub, ba_dir_fn fn, void *ctx) {
  int fd = sub ? openat(dirfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) : dup(dirfd);
  if (fd < 0) return sub && errno == ENOENT ? BA_ERR_NOT_FOUND : BA_ERR_IO;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return BA_ERR_IO;
  }
  rewinddir(d); /* a dup shares the offset of an earlier walk */
  struct dirent *e;
  int rc = BA_OK;
  while (rc == BA_OK && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    rc = fn(ctx, fd, e->d_name);
  }
  closedir(d);
  return rc;
}

int ba_name_ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a > b && !strcmp(s + a - b, suffix);
}
