/* bitarc graph output: the series as csv, or drawn by gnuplot as SVG or PNG
 * (a script with the series as an inline data block, run by the gnuplot
 * binary; gnuplot writes the image to our output file). */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/graph.h"

extern char **environ;

#define NS 1000000000ull

static const char *const g_measure[3] = {"flows", "packets", "bytes"};

void graph_bin_text(uint64_t bin_ns, char *buf, size_t cap) {
  uint64_t s = bin_ns / NS;
  if (s % 86400 == 0) snprintf(buf, cap, "%llu d", (unsigned long long)(s / 86400));
  else if (s % 3600 == 0) snprintf(buf, cap, "%llu h", (unsigned long long)(s / 3600));
  else if (s % 60 == 0) snprintf(buf, cap, "%llu min", (unsigned long long)(s / 60));
  else snprintf(buf, cap, "%llu s", (unsigned long long)s);
}

static void fmt_time(uint64_t ns, int local, const char *fmt, char *buf, size_t cap) {
  time_t t = (time_t)(ns / NS);
  struct tm tm;
  if (local) localtime_r(&t, &tm);
  else gmtime_r(&t, &tm);
  if (!strftime(buf, cap, fmt, &tm)) buf[0] = 0;
}

/* Seconds east of UTC at time ns (0 in UTC mode): gnuplot draws times as UTC. */
static long tz_offset(uint64_t ns, int local) {
  if (!local) return 0;
  time_t t = (time_t)(ns / NS);
  struct tm tm;
  localtime_r(&t, &tm);
  return tm.tm_gmtoff;
}

static uint64_t measure_of(const ba_query_series_bin_t *b, int m) {
  return m == 0 ? b->flows : m == 1 ? b->packets : b->bytes;
}

static void put_value(FILE *f, const gdata_t *d, uint64_t v) {
  if (d->rate) fprintf(f, ",%.3f", (double)v / ((double)d->bin_ns / (double)NS));
  else fprintf(f, ",%llu", (unsigned long long)v);
}

/* A csv cell, quoted (RFC 4180) when it holds a comma, quote, line break or
 * outer blank. */
static void put_cell(FILE *f, const char *label, const char *measure, int rate) {
  char cell[512];
  snprintf(cell, sizeof(cell), "%s %s%s", label, measure, rate ? "/s" : "");
  size_t n = strlen(cell);
  int quote = strpbrk(cell, ",\"\r\n") != NULL || cell[0] == ' ' || (n && cell[n - 1] == ' ');
  fputc(',', f);
  if (!quote) {
    fputs(cell, f);
    return;
  }
  fputc('"', f);
  for (const char *p = cell; *p; p++) {
    if (*p == '"') fputc('"', f);
    fputc(*p, f);
  }
  fputc('"', f);
}

int graph_write_csv(const gdata_t *d, FILE *f) {
  fputs("start,epoch", f);
  for (size_t s = 0; s < d->n; s++)
    for (int m = 0; m < 3; m++)
      if (d->measures & (1u << m)) put_cell(f, d->s[s].label, g_measure[m], d->rate);
  fputc('\n', f);
  for (size_t k = 0; k < d->nbins; k++) {
    uint64_t t = d->start_ns + (uint64_t)k * d->bin_ns;
    char when[64];
    fmt_time(t, d->local, "%Y-%m-%d %H:%M:%S", when, sizeof(when));
    fprintf(f, "%s,%llu", when, (unsigned long long)(t / NS));
    for (size_t s = 0; s < d->n; s++)
      for (int m = 0; m < 3; m++)
        if (d->measures & (1u << m)) put_value(f, d, measure_of(&d->s[s].bins[k], m));
    fputc('\n', f);
  }
  return ferror(f) ? -1 : 0;
}

/* A gnuplot single-quoted string ('' stands for '). */
static void gp_string(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'') fputc('\'', f);
    if (*s != '\n' && *s != '\r') fputc(*s, f);
  }
  fputc('\'', f);
}

static void gp_script(FILE *f, const gdata_t *d, const gplot_t *p, const char *kind) {
  if (!strcmp(kind, "svg"))
    fprintf(f, "set terminal svg size %u,%u dynamic background rgb 'white' font 'sans,10'\n", p->width, p->height);
  else
    fprintf(f, "set terminal pngcairo size %u,%u background rgb 'white' font 'sans,10'\n", p->width, p->height);
  fputs("set termoption noenhanced\nset datafile separator ','\n$series << EOD\n", f);
  for (size_t k = 0; k < d->nbins; k++) {
    uint64_t t = d->start_ns + (uint64_t)k * d->bin_ns;
    fprintf(f, "%lld", (long long)(t / NS) + tz_offset(t, d->local));
    for (size_t s = 0; s < d->n; s++)
      for (int m = 0; m < 3; m++)
        if (d->measures & (1u << m)) put_value(f, d, measure_of(&d->s[s].bins[k], m));
    fputc('\n', f);
  }
  uint64_t end = d->start_ns + (uint64_t)d->nbins * d->bin_ns;
  char a[64], b[64], bin[32], title[512];
  fmt_time(d->start_ns, d->local, "%Y-%m-%d %H:%M", a, sizeof(a));
  fmt_time(end, d->local, "%Y-%m-%d %H:%M", b, sizeof(b));
  graph_bin_text(d->bin_ns, bin, sizeof(bin));
  snprintf(title, sizeof(title), "%s to %s%s, per %s", a, b, d->local ? "" : " UTC", bin);
  uint64_t span = end - d->start_ns;
  const char *xf = span <= 86400 * NS ? "%H:%M" : span <= 7 * 86400 * NS ? "%m/%d %H:%M" : "%Y/%m/%d";
  fprintf(f, "EOD\nset xdata time\nset timefmt '%%s'\nset format x '%s'\nset xrange [%lld:%lld]\n", xf,
          (long long)(d->start_ns / NS) + tz_offset(d->start_ns, d->local),
          (long long)(end / NS) + tz_offset(end, d->local));
  /* headroom above the highest line for the key */
  fputs("set grid\nset key top left horizontal\nset offsets 0, 0, graph 0.15, 0\nset format y '%.1s%c'\n"
        "set yrange [0:*]\n", f);
  if (p->logscale) fputs("set logscale y\nset yrange [1:*]\n", f);
  int npanel = __builtin_popcount(d->measures);
  fprintf(f, "set multiplot layout %d,1 title ", npanel);
  gp_string(f, p->title ? p->title : title);
  fputc('\n', f);
  int col = 2, per = 0;
  for (int m = 0; m < 3; m++) per += (d->measures >> m) & 1;
  for (int m = 0, panel = 0; m < 3; m++) {
    if (!(d->measures & (1u << m))) continue;
    char yl[96];
    if (d->rate) snprintf(yl, sizeof(yl), "%s/s", g_measure[m]);
    else snprintf(yl, sizeof(yl), "%s per %s", g_measure[m], bin);
    fputs("set ylabel ", f);
    gp_string(f, yl);
    fputs("\nplot ", f);
    if (d->stacked) {
      /* Stacked: series s is drawn as the sum of series 0..s, the largest sum
       * first so that each smaller one covers its part of it. */
      for (size_t s = d->n; s-- > 0;) {
        fprintf(f, "%s$series using 1:(", s + 1 < d->n ? ", " : "");
        for (size_t t = 0; t <= s; t++) fprintf(f, "%s$%d", t ? "+" : "", col + (int)t * per + panel);
        fputs(") with fillsteps fs solid 0.85 border lw 0.5 title ", f);
        gp_string(f, d->s[s].label);
      }
    } else {
      for (size_t s = 0; s < d->n; s++) {
        fprintf(f, "%s$series using 1:%d with steps lw 1.5 title ", s ? ", " : "", col + (int)s * per + panel);
        gp_string(f, d->s[s].label);
      }
    }
    fputc('\n', f);
    panel++;
  }
  fputs("unset multiplot\n", f);
}

/* Runs gnuplot on the script with stdout to out_fd; 0 or 2 (reported). */
static int run_gnuplot(const char *script, int out_fd) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  char *argv[] = {"gnuplot", (char *)script, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc == ENOENT) {
    ba_cli_err("graph", "gnuplot not found in PATH: -o svg/png are drawn by gnuplot (Debian: apt-get install "
                        "gnuplot-nox); -o csv needs nothing");
    return 2;
  }
  if (rc != 0) {
    ba_cli_err("graph", "cannot run gnuplot: %s", strerror(rc));
    return 2;
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      ba_cli_err("graph", "waiting for gnuplot: %s", strerror(errno));
      return 2;
    }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    ba_cli_err("graph", "gnuplot failed (%s %d; its messages are above)", WIFEXITED(st) ? "exit status" : "signal",
               WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return 2;
  }
  return 0;
}

int graph_draw(const gdata_t *d, const gplot_t *p, const char *kind, const char *path) {
  const char *tmpdir = getenv("TMPDIR");
  char script[4096];
  snprintf(script, sizeof(script), "%s/bitarc-graph-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  int sfd = mkstemp(script);
  if (sfd < 0) {
    ba_cli_err("graph", "cannot create a temporary file in '%s': %s", tmpdir && *tmpdir ? tmpdir : "/tmp",
               strerror(errno));
    return 2;
  }
  FILE *sf = fdopen(sfd, "w");
  int bad = !sf;
  if (sf) {
    gp_script(sf, d, p, kind);
    bad = ferror(sf) != 0;
    bad |= fclose(sf) != 0;
  } else {
    close(sfd);
  }
  if (bad) {
    ba_cli_err("graph", "cannot write the gnuplot script '%s': %s", script, strerror(errno));
    unlink(script);
    return 2;
  }
  int to_stdout = !strcmp(path, "-");
  int ofd = to_stdout ? STDOUT_FILENO : open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (ofd < 0) {
    ba_cli_err("graph", "cannot create '%s': %s", path, strerror(errno));
    unlink(script);
    return 2;
  }
  if (to_stdout) fflush(stdout);
  int rc = run_gnuplot(script, ofd);
  struct stat sb;
  if (rc == 0 && !to_stdout && (fstat(ofd, &sb) != 0 || sb.st_size == 0)) {
    ba_cli_err("graph", "gnuplot wrote nothing to '%s'", path);
    rc = 2;
  }
  if (!to_stdout && close(ofd) != 0 && rc == 0) {
    ba_cli_err("graph", "cannot write '%s': %s", path, strerror(errno));
    rc = 2;
  }
  if (rc != 0 && !to_stdout) unlink(path);
  unlink(script);
  return rc;
}
