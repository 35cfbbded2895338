/* The libpcap functions bitarc calls, loaded with dlopen the first time a
 * capture is read (pcap_dl.c), so commands that read no capture do not load
 * libpcap and its dependencies (dbus, systemd, gcrypt...) at start. The types
 * and constants still come from <pcap/pcap.h>. */
#ifndef BA_PCAP_DL_H
#define BA_PCAP_DL_H

#include <pcap/pcap.h>
#include <stddef.h>
#include <stdio.h>

typedef struct ba_pcap_api {
  pcap_t *(*open_offline_with_tstamp_precision)(const char *path, u_int precision, char *errbuf);
  pcap_t *(*fopen_offline_with_tstamp_precision)(FILE *fp, u_int precision, char *errbuf);
  int (*datalink)(pcap_t *p);
  FILE *(*file)(pcap_t *p);
  int (*next_ex)(pcap_t *p, struct pcap_pkthdr **h, const u_char **data);
  char *(*geterr)(pcap_t *p);
  void (*close)(pcap_t *p);
} ba_pcap_api_t;

/* Loads libpcap once per process (thread-safe): BA_OK and the table, or
 * BA_ERR_UNSUPPORTED with a message naming the library (and dlerror's reason)
 * in why. $BITARC_LIBPCAP names another file to load (tests). */
int ba_pcap_api(const ba_pcap_api_t **out, char *why, size_t whycap);

#endif
