/* Sends a file of 2-byte-length-prefixed datagrams over UDP to one or more
 * loopback ports, each datagram to every port, at most RATE datagrams per
 * second (0 = as fast as possible), for the collector benchmarks. The file is
 * read into memory and sent with sendmmsg in batches of up to 32, paced per
 * batch. --seconds S repeats the file until S seconds are over (the last pass
 * stops where the time runs out); without it the file is sent once.
 * Prints on stdout: "sent D datagrams in T s (R/s), P passes".
 *   replay [--seconds S] FILE RATE PORT [PORT...] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BATCH 32

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  double seconds = 0;
  if (argc > 2 && !strcmp(argv[1], "--seconds")) {
    seconds = atof(argv[2]);
    argc -= 2;
    argv += 2;
  }
  if (argc < 4) {
    fprintf(stderr, "usage: replay [--seconds S] FILE RATE PORT [PORT...]\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *data = malloc((size_t)size + 1);
  if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) return 1;
  fclose(f);
  /* datagram offsets */
  size_t cap = 1024, nd = 0;
  size_t *off = malloc(cap * sizeof *off);
  uint16_t *len = malloc(cap * sizeof *len);
  for (long o = 0; o + 2 <= size;) {
    size_t l = (size_t)data[o] << 8 | data[o + 1];
    if (o + 2 + (long)l > size) break;
    if (nd == cap) {
      cap *= 2;
      off = realloc(off, cap * sizeof *off);
      len = realloc(len, cap * sizeof *len);
    }
    off[nd] = (size_t)o + 2;
    len[nd++] = (uint16_t)l;
    o += 2 + (long)l;
  }
  if (!nd) return 1;
  double rate = atof(argv[2]);
  int np = argc - 3 < 16 ? argc - 3 : 16;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  int sb = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
  struct sockaddr_in to[16];
  for (int i = 0; i < np; i++) {
    memset(&to[i], 0, sizeof(to[i]));
    to[i].sin_family = AF_INET;
    to[i].sin_port = htons((uint16_t)atoi(argv[3 + i]));
    to[i].sin_addr.s_addr = htonl(0x7f000001);
  }
  struct mmsghdr msgs[BATCH];
  struct iovec iov[BATCH];
  uint64_t sent = 0, passes = 0;
  size_t k = 0; /* next datagram of the file */
  double t0 = now(), end = t0 + seconds;
  for (;;) {
    if (seconds > 0 ? now() >= end : passes == 1) break;
    int n = 0;
    while (n < BATCH) {
      iov[n].iov_base = data + off[k];
      iov[n].iov_len = len[k];
      memset(&msgs[n], 0, sizeof(msgs[n]));
      msgs[n].msg_hdr.msg_iov = &iov[n];
      msgs[n].msg_hdr.msg_iovlen = 1;
      n++;
      if (++k == nd) {
        k = 0;
        passes++;
        break;
      }
    }
    for (int p = 0; p < np; p++) {
      for (int i = 0; i < n; i++) {
        msgs[i].msg_hdr.msg_name = &to[p];
        msgs[i].msg_hdr.msg_namelen = sizeof(to[p]);
      }
      for (int done = 0; done < n;) {
        int r = sendmmsg(fd, msgs + done, (unsigned)(n - done), 0);
        if (r > 0) done += r;
      }
    }
    sent += (uint64_t)n;
    if (rate > 0) {
      double due = t0 + (double)sent / rate;
      while (now() < due) {
      }
    }
  }
  double dt = now() - t0;
  printf("sent %llu datagrams in %.3f s (%.0f/s), %llu passes\n", (unsigned long long)sent, dt, (double)sent / dt,
         (unsigned long long)passes);
  fprintf(stderr, "replay: %llu datagrams to %d port(s) in %.2f s (%.0f/s)\n", (unsigned long long)sent, np, dt,
          (double)sent / dt);
  return 0;
}
