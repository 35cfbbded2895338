/* flowgen: a NetFlow v9 load generator for the collector's load test.
 * Sends datagrams of 30-byte IPv4 flow records (template re-sent every 32
 * datagrams) to a loopback address at a fixed flow rate for a bounded time,
 * then prints how many flows, datagrams and bytes it sent. Loopback only: it
 * refuses any other destination.
 *
 *   flowgen --port 2055 --rate 50000 --seconds 3 [--per-datagram 40] [--seed 1] [--log FILE] [--v5]
 *
 * --v5 sends NetFlow v5 instead (48-byte records, at most 30 a datagram; the
 * same flows, times and --log lines).
 *
 * --log FILE writes every flow sent, one line each, before its datagram goes
 * out: "first_s src dst sport dport proto packets bytes" (first_s = the flow
 * start in Unix seconds as the datagram's header defines it: unix_secs - 5;
 * addresses as 32-bit integers), so a test can say exactly what a store must
 * hold. */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TEMPLATE_ID 256
#define REC_BYTES 30

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)); put16(p + 2, (uint16_t)v); }

static uint32_t get16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t get32(const uint8_t *p) { return get16(p) << 16 | get16(p + 2); }

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t g_rng = 1;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 11);
}

static void usage(void) {
  fprintf(stderr, "usage: flowgen --port P --rate FLOWS_PER_S --seconds S [--per-datagram N] [--seed X]\n"
                  "       [--log FILE] [--v5]\n"
                  "  sends NetFlow v9 to 127.0.0.1:P only; --log lists every flow sent\n");
  exit(2);
}

int main(int argc, char **argv) {
  int port = 0, per = 40, v5 = 0;
  double rate = 0, seconds = 0;
  FILE *log = NULL;
  static const struct option opts[] = {{"port", required_argument, 0, 'p'}, {"rate", required_argument, 0, 'r'},
                                       {"seconds", required_argument, 0, 's'},
                                       {"per-datagram", required_argument, 0, 'n'},
                                       {"seed", required_argument, 0, 'x'}, {"log", required_argument, 0, 'o'},
                                       {"v5", no_argument, 0, '5'}, {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 'p') port = atoi(optarg);
    else if (c == 'r') rate = atof(optarg);
    else if (c == 's') seconds = atof(optarg);
    else if (c == 'n') per = atoi(optarg);
    else if (c == '5') v5 = 1;
    else if (c == 'x') g_rng = strtoull(optarg, NULL, 10) | 1;
    else if (c == 'o') {
      log = fopen(optarg, "w");
      if (!log) {
        perror(optarg);
        return 1;
      }
    }
    else usage();
  }
  if (port <= 0 || port > 65535 || rate <= 0 || seconds <= 0 || seconds > 3600 || per < 1 || per > 45) usage();
  if (v5 && per > 30) per = 30;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    perror("flowgen: socket");
    return 1;
  }
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  static const uint16_t fields[][2] = {{8, 4}, {12, 4}, {7, 2}, {11, 2}, {4, 1}, {6, 1},
                                       {2, 4}, {1, 4}, {22, 4}, {21, 4}};
  const int nfields = (int)(sizeof fields / sizeof fields[0]);
  uint8_t buf[2048];
  uint64_t flows = 0, dgrams = 0, bytes = 0, total = (uint64_t)(rate * seconds);
  uint32_t seq = 0, unix_secs = (uint32_t)time(NULL);
  uint64_t t0 = now_ns();
  while (flows < total) {
    /* pace: flow k goes out at t0 + k / rate */
    uint64_t due = t0 + (uint64_t)((double)flows / rate * 1e9);
    uint64_t t = now_ns();
    if (t < due) {
      uint64_t d = due - t;
      if (d > 200000) {
        struct timespec ts = {0, (long)(d - 100000)};
        nanosleep(&ts, NULL);
      }
      continue;
    }
    if (v5) {
      uint32_t n = (uint32_t)per;
      if (n > total - flows) n = (uint32_t)(total - flows);
      uint32_t uptime = (uint32_t)((now_ns() - t0) / 1000000) + 100000;
      uint32_t usecs = unix_secs + (uint32_t)((now_ns() - t0) / 1000000000ull);
      memset(buf, 0, 24 + 48 * (size_t)n);
      put16(buf, 5);
      put16(buf + 2, (uint16_t)n);
      put32(buf + 4, uptime);
      put32(buf + 8, usecs);
      put32(buf + 16, (uint32_t)flows); /* flow_sequence */
      for (uint32_t i = 0; i < n; i++) {
        uint8_t *r = buf + 24 + 48 * (size_t)i;
        put32(r, 0x0A000000u | (rnd() & 0xffff));
        put32(r + 4, 0xC0A80000u | (rnd() & 0x3ff));
        put16(r + 32, (uint16_t)(1024 + rnd() % 60000));
        put16(r + 34, (uint16_t)(rnd() % 2 ? 443 : 53));
        r[38] = r[35] == 53 ? 17 : 6; /* prot */
        r[37] = 0x1b;                 /* tcp_flags */
        put32(r + 16, 1 + rnd() % 100);
        put32(r + 20, 40 + rnd() % 100000);
        put32(r + 24, uptime - 5000);
        put32(r + 28, uptime - 10);
        if (log)
          fprintf(log, "%u %u %u %u %u %u %u %u\n", usecs - 5, get32(r), get32(r + 4), get16(r + 32), get16(r + 34),
                  r[38], get32(r + 16), get32(r + 20));
      }
      if (log) fflush(log);
      size_t len = 24 + 48 * (size_t)n;
      if (sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof to) != (ssize_t)len) {
        perror("flowgen: sendto");
        return 1;
      }
      flows += n;
      dgrams++;
      bytes += len;
      continue;
    }
    size_t off = 20;
    uint16_t count = 0;
    if (dgrams % 32 == 0) {
      size_t start = off;
      put16(buf + off, 0); /* template flowset */
      off += 4;
      put16(buf + off, TEMPLATE_ID);
      put16(buf + off + 2, (uint16_t)nfields);
      off += 4;
      for (int i = 0; i < nfields; i++, off += 4) {
        put16(buf + off, fields[i][0]);
        put16(buf + off + 2, fields[i][1]);
      }
      put16(buf + start + 2, (uint16_t)(off - start));
      count++;
    }
    uint32_t n = (uint32_t)per;
    if (n > total - flows) n = (uint32_t)(total - flows);
    size_t start = off;
    put16(buf + off, TEMPLATE_ID);
    off += 4;
    uint32_t uptime = (uint32_t)((now_ns() - t0) / 1000000) + 100000;
    for (uint32_t i = 0; i < n; i++, off += REC_BYTES) {
      uint8_t *r = buf + off;
      put32(r, 0x0A000000u | (rnd() & 0xffff));
      put32(r + 4, 0xC0A80000u | (rnd() & 0x3ff));
      put16(r + 8, (uint16_t)(1024 + rnd() % 60000));
      put16(r + 10, (uint16_t)(rnd() % 2 ? 443 : 53));
      r[12] = r[11] == 53 ? 17 : 6;
      r[13] = 0x1b;
      put32(r + 14, 1 + rnd() % 100);
      put32(r + 18, 40 + rnd() % 100000);
      put32(r + 22, uptime - 5000);
      put32(r + 26, uptime - 10);
    }
    while ((off - start) % 4) buf[off++] = 0;
    put16(buf + start + 2, (uint16_t)(off - start));
    count = (uint16_t)(count + n);
    put16(buf, 9);
    put16(buf + 2, count);
    put32(buf + 4, uptime);
    put32(buf + 8, unix_secs + (uint32_t)((now_ns() - t0) / 1000000000ull));
    put32(buf + 12, seq++);
    put32(buf + 16, 1);
    if (log) {
      uint32_t usecs = unix_secs + (uint32_t)((now_ns() - t0) / 1000000000ull);
      put32(buf + 8, usecs);
      for (uint32_t i = 0; i < n; i++) {
        const uint8_t *r = buf + start + 4 + (size_t)i * REC_BYTES;
        fprintf(log, "%u %u %u %u %u %u %u %u\n", usecs - 5, get32(r), get32(r + 4), get16(r + 8), get16(r + 10),
                r[12], get32(r + 14), get32(r + 18));
      }
      fflush(log);
    }
    if (sendto(fd, buf, off, 0, (struct sockaddr *)&to, sizeof to) != (ssize_t)off) {
      perror("flowgen: sendto");
      return 1;
    }
    flows += n;
    dgrams++;
    bytes += off;
  }
  double secs = (double)(now_ns() - t0) / 1e9;
  printf("sent %llu flows in %llu datagrams (%llu bytes) in %.3f s = %.0f flows/s\n", (unsigned long long)flows,
         (unsigned long long)dgrams, (unsigned long long)bytes, secs, (double)flows / secs);
  close(fd);
  if (log) fclose(log);
  return 0;
}
