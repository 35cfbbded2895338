/* Clustering while collecting (collect_cluster.h). The child is this very
 * program (/proc/self/exe) run as `reindex --cluster --segment NAME --idle
 * --quiet`: its exit status says what happened (0 clustered, 3 nothing done,
 * 2 busy: another clustering holds the store's cluster lock, else failed).
 * Clustering is crash-safe (ba_store_cluster_segment), so the child may be
 * killed at any moment. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bitarc/bitarc.h"
#include "cli/cli.h"
#include "cli/collect_cluster.h"

extern char **environ;

#define LIST_EVERY_NS 1000000000ull

int ba_cli_cluster_opt(int opt, const char *arg, ba_cli_cluster_t *c) {
  if (opt == BA_CLI_OPT_CLUSTER) {
    c->on = 1;
    return 0;
  }
  uint64_t v;
  if (ba_cli_opt_u64("collect", "cluster-memory", arg, 1, 1u << 20, &v)) return 2;
  c->mem_mb = (long)v;
  return 0;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void names_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* The complete segments of the store (seg-*.bitarc; journals are *.open),
 * sorted; -1 if the directory cannot be read. */
static int list_segments(const char *store, char ***out, size_t *nout) {
  DIR *d = opendir(store);
  if (!d) return -1;
  char **v = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (!ba_segment_name_parse(e->d_name, NULL, NULL)) continue;
    if (n == cap) {
      char **p = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
      if (!p) {
        rc = -1;
        break;
      }
      v = p;
    }
    if (!(v[n] = strdup(e->d_name))) rc = -1;
    else n++;
  }
  closedir(d);
  if (rc) {
    names_free(v, n);
    return -1;
  }
  if (n) qsort(v, n, sizeof *v, str_cmp);
  *out = v;
  *nout = n;
  return 0;
}

int ba_cli_cluster_begin(ba_cli_cluster_t *c, const char *store) {
  if (!c->on) return 0;
  if (list_segments(store, &c->known, &c->nknown) != 0) {
    ba_cli_err("collect", "--cluster: cannot list '%s': %s", store, strerror(errno));
    return 2;
  }
  return 0;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Starts the child for segment `name`; 0, or -1 (errno set). */
static int spawn(ba_cli_cluster_t *c, const char *store, const char *name) {
  char mem[32];
  snprintf(mem, sizeof mem, "%ld", c->mem_mb > 0 ? c->mem_mb : 1024);
  char *argv[] = {"bitarc", "reindex", "--store", (char *)store, "--cluster", "--segment", (char *)name,
                  "--memory", mem, "--idle", "--quiet", NULL};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (c->log_fd > 2) posix_spawn_file_actions_adddup2(&fa, c->log_fd, 2);
  sigset_t none, dflt;
  sigemptyset(&none);
  sigemptyset(&dflt);
  sigaddset(&dflt, SIGINT);
  sigaddset(&dflt, SIGTERM);
  sigaddset(&dflt, SIGHUP);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &dflt);
  /* Its own process group: a Ctrl-C meant for the collector does not hit it;
   * the collector stops it itself (ba_cli_cluster_end). */
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  c->pid = pid;
  snprintf(c->cur, sizeof c->cur, "%s", name);
  c->started_ns = mono_ns();
  return 0;
}

/* The child has ended with wait status ws. */
static void child_done(ba_cli_cluster_t *c, int ws, int quiet, void (*note)(void *, const char *), void *ctx) {
  char line[512];
  double s = (double)(mono_ns() - c->started_ns) / 1e9;
  int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  if (code == 0) {
    c->clustered++;
    snprintf(line, sizeof line, "cluster: %s clustered in %.1f s", c->cur, s);
  } else if (code == 3 || code == 2) {
    c->skipped++;
    snprintf(line, sizeof line, "cluster: %s skipped: %s", c->cur,
             code == 3 ? "already clustered, or expired meanwhile"
                       : "another clustering (reindex --cluster) runs on the store");
  } else {
    c->failed++;
    if (WIFSIGNALED(ws))
      snprintf(line, sizeof line, "warning: clustering %s was killed by signal %d after %.1f s; it stays as it was",
               c->cur, WTERMSIG(ws), s);
    else
      snprintf(line, sizeof line, "warning: clustering %s failed (exit %d, see above); it stays as it was",
               c->cur, code);
  }
  if (code != 0 || !quiet) note(ctx, line);
  c->pid = 0;
}

void ba_cli_cluster_tick(ba_cli_cluster_t *c, const char *store, uint64_t now_ns, int quiet,
                         void (*note)(void *ctx, const char *line), void *ctx) {
  if (!c->on) return;
  int ws;
  if (c->pid > 0 && waitpid(c->pid, &ws, WNOHANG) == c->pid) child_done(c, ws, quiet, note, ctx);
  if (now_ns < c->next_ns) return;
  c->next_ns = now_ns + LIST_EVERY_NS;
  char **v;
  size_t n;
  if (list_segments(store, &v, &n) != 0) return; /* tried again in a second */
  char line[512];
  /* The segments closed since the last listing: the first in the store's
   * order is clustered if the child is free, the others are skipped. */
  size_t first = n;
  for (size_t i = 0; i < n; i++)
    if (!(c->nknown && bsearch(&v[i], c->known, c->nknown, sizeof *c->known, str_cmp)) &&
        (first == n || ba_segment_name_cmp(v[i], v[first]) < 0))
      first = i;
  if (first < n && c->pid <= 0 && spawn(c, store, v[first]) != 0) {
    c->failed++;
    snprintf(line, sizeof line, "warning: cannot start the clustering of %s: %s", v[first], strerror(errno));
    note(ctx, line);
  }
  for (size_t i = 0; i < n; i++) {
    if (i == first || (c->nknown && bsearch(&v[i], c->known, c->nknown, sizeof *c->known, str_cmp))) continue;
    c->skipped++;
    if (!quiet) {
      snprintf(line, sizeof line, "cluster: %s skipped: still clustering %s", v[i], c->cur);
      note(ctx, line);
    }
  }
  names_free(c->known, c->nknown);
  c->known = v;
  c->nknown = n;
}

void ba_cli_cluster_end(ba_cli_cluster_t *c, const char *store, int quiet, void (*note)(void *ctx, const char *line),
                        void *ctx) {
  if (!c->on) return;
  int ws;
  if (c->pid > 0 && waitpid(c->pid, &ws, WNOHANG) == c->pid) child_done(c, ws, quiet, note, ctx);
  if (c->pid > 0) {
    kill(c->pid, SIGTERM);
    while (waitpid(c->pid, &ws, 0) < 0 && errno == EINTR) {
    }
    c->pid = 0;
    if (WIFEXITED(ws)) { /* it had just finished */
      c->pid = -1;
      child_done(c, ws, quiet, note, ctx);
    } else {
      ba_store_cluster_scratch_clear(store);
      if (!quiet) {
        char line[512];
        snprintf(line, sizeof line, "cluster: %s interrupted at stop; it stays as it was", c->cur);
        note(ctx, line);
      }
    }
  }
  names_free(c->known, c->nknown);
  c->known = NULL;
  c->nknown = 0;
}
