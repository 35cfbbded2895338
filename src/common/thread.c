/* Thread names, so that `top -H`, `ps -L` and a debugger tell the
 * collector's receive, writer and finisher threads apart. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/common.h"

void ba_thread_name(pthread_t t, const char *fmt, ...) {
  char name[16]; /* the kernel's limit: 15 bytes and the NUL */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  (void)pthread_setname_np(t, name); /* best effort */
}
