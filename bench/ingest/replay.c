/* Sends a file of 2-byte-length-prefixed datagrams over UDP to one or more
 * loopback ports, each datagram to every port, at most RATE datagrams per
 * second (0 = as fast as possible), for the collector benchmark.
 *   replay FILE RATE PORT [PORT...] */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: replay FILE RATE PORT [PORT...]\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 1;
  double rate = atof(argv[2]);
  int np = argc - 3;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  int sb = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
  struct sockaddr_in to[16];
  for (int i = 0; i < np && i < 16; i++) {
    memset(&to[i], 0, sizeof(to[i]));
    to[i].sin_family = AF_INET;
    to[i].sin_port = htons((uint16_t)atoi(argv[3 + i]));
    to[i].sin_addr.s_addr = htonl(0x7f000001);
  }
  uint8_t hdr[2], buf[65536];
  uint64_t n = 0;
  double t0 = now();
  while (fread(hdr, 1, 2, f) == 2) {
    size_t len = (size_t)hdr[0] << 8 | hdr[1];
    if (fread(buf, 1, len, f) != len) break;
    for (int i = 0; i < np && i < 16; i++)
      while (sendto(fd, buf, len, 0, (struct sockaddr *)&to[i], sizeof(to[i])) < 0) {
      }
    n++;
    if (rate > 0) {
      double due = t0 + (double)n / rate;
      while (now() < due) {
      }
    }
  }
  double dt = now() - t0;
  fprintf(stderr, "replay: %llu datagrams to %d port(s) in %.2f s (%.0f/s)\n", (unsigned long long)n, np, dt,
          (double)n / dt);
  return 0;
}
