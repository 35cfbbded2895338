/* Helpers shared by the kill -9 tests (test_crash, test_crash_collect). */
#ifndef BA_TEST_CRASHUTIL_H
#define BA_TEST_CRASHUTIL_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "testsupport.h"

/* Names of complete segment files (what a reader sees) in dir. */
static size_t ba_crash_complete_names(const char *dir, char names[][256], size_t cap) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l > 7 && !strcmp(e->d_name + l - 7, ".bitarc") && n < cap) snprintf(names[n++], 256, "%s", e->d_name);
  }
  closedir(d);
  return n;
}

/* Runs `bitarc verify --store st --recover`; fails the test unless it exits 0
 * and says "recovered N records". Returns N. */
static unsigned long long ba_crash_recover(const char *bitarc, const char *st, int it) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' verify --store '%s' --recover 2>&1", bitarc, st);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char line[4096];
  int said = 0;
  unsigned long long rec = 0;
  while (fgets(line, sizeof line, p))
    if (sscanf(line, "recovered %llu records", &rec) == 1) said = 1;
  int vst = pclose(p);
  if (!said) fail_msg("iteration %d: verify --recover did not report what it recovered", it);
  if (!WIFEXITED(vst) || WEXITSTATUS(vst) != 0) fail_msg("iteration %d: verify after recovery: exit %d", it, vst);
  return rec;
}

#endif
