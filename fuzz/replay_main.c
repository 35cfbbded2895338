/* Corpus replayer: runs LLVMFuzzerTestOneInput on every file in the given
 * folders (or files), so CTest replays fuzz corpora and regression inputs
 * without libFuzzer. Exit 0 when every input ran without a crash. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  size_t got = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  LLVMFuzzerTestOneInput(buf, got);
  free(buf);
  return 0;
}

static int run_path(const char *path, size_t *count) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "replay: no such file or folder: %s\n", path);
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) {
    (*count)++;
    return run_file(path);
  }
  DIR *d = opendir(path);
  if (!d) return 1;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    rc |= run_path(p, count);
  }
  closedir(d);
  return rc;
}

int main(int argc, char **argv) {
  size_t count = 0;
  int rc = 0;
  /* The empty input is always worth one run. */
  LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
  for (int i = 1; i < argc; i++) rc |= run_path(argv[i], &count);
  printf("replayed %zu inputs\n", count + 1);
  return rc;
}
