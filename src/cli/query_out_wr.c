/* bitarc query's helper thread (query_out.h): it reads the time zone while
 * the stores open, then writes the formatted rows while the next ones are
 * formatted. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/openat2.h>
#endif

#include "bitarc/bitarc.h"
#include "cli/query_out.h"

struct qo_writer {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* the writer waits for a chunk or stop; the query for the chunk's end */
  FILE *out;
  char *pend;         /* a chunk handed over, being written until NULL again */
  size_t npend, pend_cap;
  char *spare;        /* the last chunk written: the query's next buffer */
  size_t spare_cap;
  int stop, err, tz;
};

static void *writer_main(void *arg) {
  qo_writer_t *w = arg;
  /* localtime_r reads the zone (/etc/localtime) once, at its first call: a
   * cold path lookup and read of 4-5 ms, here beside the stores' reads */
  if (w->tz) tzset();
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->pend && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    if (!w->pend) break;
    char *buf = w->pend;
    size_t n = w->npend;
    int failed = w->err;
    pthread_mutex_unlock(&w->mu);
    int e = 0;
    /* after a failed write nothing more is written, as the query would stop there */
    if (!failed && n && fwrite(buf, 1, n, w->out) != n) e = errno ? errno : EIO;
    pthread_mutex_lock(&w->mu);
    if (e && !w->err) w->err = e;
    w->spare = buf;
    w->spare_cap = w->pend_cap;
    w->pend = NULL;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

int qo_tz_cold(void) {
  if (getenv("TZ")) return 0; /* a rule or a file named by TZ: read where used */
#if defined(__linux__) && defined(SYS_openat2) && defined(RESOLVE_CACHED) && defined(RWF_NOWAIT)
  struct open_how how = {.flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_CACHED};
  int fd = (int)syscall(SYS_openat2, AT_FDCWD, "/etc/localtime", &how, sizeof how);
  if (fd < 0) return errno != ENOENT; /* EAGAIN: the lookup needs the disk (or an older kernel) */
  char b;
  struct iovec v = {&b, 1};
  int cold = preadv2(fd, &v, 1, 0, RWF_NOWAIT) != 1;
  close(fd);
  return cold;
#else
  return 1;
#endif
}

int qo_writer_start(qo_writer_t **wp, FILE *out, int tz) {
  *wp = NULL;
  qo_writer_t *w = calloc(1, sizeof(*w));
  if (!w) return BA_ERR_NOMEM;
  w->out = out;
  w->tz = tz;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->th, NULL, writer_main, w) != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return BA_ERR_NOMEM;
  }
  *wp = w;
  return 0;
}

/* Waits until the writer holds no chunk; its error, if any. Locked. */
static int wait_idle(qo_writer_t *w) {
  while (w->pend) pthread_cond_wait(&w->cv, &w->mu);
  return w->err;
}

int qo_writer_put(qo_writer_t *w, char **buf, size_t *cap, size_t n) {
  pthread_mutex_lock(&w->mu);
  int e = wait_idle(w);
  if (e) {
    pthread_mutex_unlock(&w->mu);
    errno = e;
    return BA_ERR_IO;
  }
  char *next = w->spare;
  size_t next_cap = w->spare_cap;
  w->spare = NULL;
  if (!next) { /* the first chunk: a second buffer of the same size */
    if (!(next = malloc(*cap))) {
      pthread_mutex_unlock(&w->mu);
      return BA_ERR_NOMEM;
    }
    next_cap = *cap;
  }
  w->pend = *buf;
  w->npend = n;
  w->pend_cap = *cap;
  *buf = next;
  *cap = next_cap;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  return 0;
}

int qo_writer_sync(qo_writer_t *w) {
  pthread_mutex_lock(&w->mu);
  int e = wait_idle(w);
  pthread_mutex_unlock(&w->mu);
  if (e) {
    errno = e;
    return BA_ERR_IO;
  }
  return 0;
}

void qo_writer_stop(qo_writer_t *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->stop = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->th, NULL);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w->spare);
  free(w);
}
