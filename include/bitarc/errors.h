/* bitarc status codes. Every library call returns int: 0 on success, a negative
 * ba_status on failure. Detail (which block, which column) is kept by the handle
 * that failed and read with that module's *_errmsg() call. */
#ifndef BITARC_ERRORS_H
#define BITARC_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ba_status {
  BA_OK = 0,
  BA_ERR_NOMEM = -1,       /* allocation failed */
  BA_ERR_INVALID = -2,     /* bad argument from the caller */
  BA_ERR_CORRUPT = -3,     /* structurally impossible data (lengths, counts, reserved bits) */
  BA_ERR_CHECKSUM = -4,    /* CRC32C mismatch */
  BA_ERR_NOT_OURS = -5,    /* wrong magic: not a bitarc file of this kind */
  BA_ERR_VERSION = -6,     /* written by a newer, incompatible format version */
  BA_ERR_IO = -7,          /* the operating system refused a read/write/open (see errno) */
  BA_ERR_TRUNCATED = -8,   /* input ends before a complete unit */
  BA_ERR_UNSUPPORTED = -9, /* valid but not handled (format feature, link type, ...) */
  BA_ERR_NOT_FOUND = -10,  /* no such object (segment, column, value, file) */
  BA_ERR_SYNTAX = -11,     /* a filter or option text does not parse */
  BA_ERR_OVERFLOW = -12,   /* a count or size does not fit its field */
  BA_ERR_NODEVICE = -13,   /* requested device (e.g. a CUDA GPU) is not present */
  BA_ERR_EXISTS = -14,     /* target already exists */
  BA_ERR_BUSY = -15        /* resource locked by another process */
} ba_status;

/* Static, human-readable text for a status code; never NULL. */
const char *ba_strerror(int status);

#ifdef __cplusplus
}
#endif
#endif
