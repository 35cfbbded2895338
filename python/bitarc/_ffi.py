"""The C declarations of libbitarc's public API that the binding uses, and the
library loaded with cffi in ABI mode (no compiler needed at import time).

The declarations follow include/bitarc/{errors,record,store,query}.h; the test
tests/python/test_binding.py compiles a C program against those headers and
checks that every struct size and field offset declared here is the same.

Which library: $BITARC_LIBRARY (a path) if set, else the one `cmake --install`
put beside this package (bitarc/_config.py), else libbitarc.so.0 from the
dynamic loader's search path."""

import os

import cffi

CDEF = r"""
typedef enum ba_status {
  BA_OK = 0, BA_ERR_NOMEM = -1, BA_ERR_INVALID = -2, BA_ERR_CORRUPT = -3, BA_ERR_CHECKSUM = -4,
  BA_ERR_NOT_OURS = -5, BA_ERR_VERSION = -6, BA_ERR_IO = -7, BA_ERR_TRUNCATED = -8,
  BA_ERR_UNSUPPORTED = -9, BA_ERR_NOT_FOUND = -10, BA_ERR_SYNTAX = -11, BA_ERR_OVERFLOW = -12,
  BA_ERR_NODEVICE = -13, BA_ERR_EXISTS = -14, BA_ERR_BUSY = -15
} ba_status;
const char *ba_strerror(int status);

typedef enum ba_codec { BA_CODEC_WAH32 = 1, BA_CODEC_WAH64 = 2, BA_CODEC_PLWAH = 3, BA_CODEC_COMPAX = 4,
  BA_CODEC_MASC = 5, BA_CODEC_MASC_QT = 6 } ba_codec_t;
typedef struct ba_bitmap ba_bitmap_t;

typedef struct ba_record {
  uint64_t first_ns;
  uint64_t last_ns;
  uint8_t src[16];
  uint8_t dst[16];
  uint8_t exporter[16];
  uint64_t packets;
  uint64_t bytes;
  uint32_t src_as, dst_as;
  uint32_t in_if, out_if;
  uint32_t caplen;
  uint32_t wirelen;
  uint16_t src_port, dst_port;
  uint16_t vlan;
  uint16_t linktype;
  uint8_t ipver;
  uint8_t proto;
  uint8_t tcp_flags;
  uint8_t tos;
  uint8_t kind;
  uint8_t icmp_type, icmp_code;
  uint8_t pad_;
  const uint8_t *frame;
  uint64_t out_packets;
  uint64_t out_bytes;
  uint64_t received_ns;
  uint64_t in_src_mac, out_dst_mac, in_dst_mac, out_src_mac;
  uint8_t next_hop[16];
  uint8_t bgp_next_hop[16];
  uint8_t xsrc[16], xdst[16];
  uint32_t mpls[10];
  uint32_t obs_domain;
  uint32_t sampling;
  uint32_t ingress_vrf, egress_vrf;
  uint32_t prev_as, next_as;
  uint32_t aggr_flows;
  uint16_t xsrc_port, xdst_port;
  uint16_t dst_vlan;
  uint16_t fw_xevent;
  uint8_t dst_tos;
  uint8_t src_mask, dst_mask;
  uint8_t engine_type, engine_id;
  uint8_t sampling_algo;
  uint8_t nat_event;
  uint8_t fw_event;
  uint8_t direction;
  uint8_t pad2_[7];
} ba_record_t;
typedef int (*ba_record_sink_fn)(void *ctx, const ba_record_t *recs, size_t n);

typedef enum ba_compress { BA_COMPRESS_LZO = 1, BA_COMPRESS_LZ4 = 2, BA_COMPRESS_ZSTD = 3,
  BA_COMPRESS_NONE = 4 } ba_compress_t;
typedef enum ba_reorder { BA_REORDER_NONE = 0, BA_REORDER_OLSH = 1 } ba_reorder_t;

typedef struct ba_store_opts {
  ba_codec_t codec;
  ba_compress_t compress;
  uint32_t block_rows;
  uint32_t slice_seconds;
  uint32_t time_bin_seconds;
  ba_reorder_t reorder;
  uint32_t olsh_mem_records;
  int threads;
  uint64_t max_segment_rows;
  int clustered;
} ba_store_opts_t;
void ba_store_opts_init(ba_store_opts_t *o);
typedef struct ba_store_writer ba_store_writer_t;
typedef struct ba_store_writer_stats {
  uint64_t records_in, records_stored, records_dropped;
  uint64_t segments_written, bytes_archive, bytes_index;
} ba_store_writer_stats_t;
int ba_store_writer_open(const char *dir, const ba_store_opts_t *opts, ba_store_writer_t **out);
const char *ba_store_writer_open_error(void);
int ba_store_writer_append(ba_store_writer_t *w, const ba_record_t *recs, size_t n);
int ba_store_writer_close(ba_store_writer_t *w);
void ba_store_writer_get_stats(const ba_store_writer_t *w, ba_store_writer_stats_t *st);
const char *ba_store_writer_errmsg(const ba_store_writer_t *w);

typedef enum ba_col {
  BA_COL_FIRST = 1, BA_COL_LAST = 2, BA_COL_SRC = 4, BA_COL_DST = 8,
  BA_COL_PORTS = 16, BA_COL_PROTO = 32, BA_COL_FLAGS = 64, BA_COL_TOS = 128,
  BA_COL_AS = 256, BA_COL_IF = 512, BA_COL_PACKETS = 1024, BA_COL_BYTES = 2048,
  BA_COL_EXPORTER = 4096, BA_COL_VLAN = 8192, BA_COL_ICMP = 16384, BA_COL_FRAME = 32768,
  BA_COL_OUT = 65536, BA_COL_NEXTHOP = 131072, BA_COL_MASK = 262144, BA_COL_DSTTOS = 524288,
  BA_COL_ENGINE = 1048576, BA_COL_SAMPLING = 2097152, BA_COL_NAT = 4194304, BA_COL_FW = 8388608,
  BA_COL_MPLS = 16777216, BA_COL_MAC = 33554432, BA_COL_BGPAS = 67108864, BA_COL_MISC = 134217728,
  BA_COL_ALL = 268435455
} ba_col_t;

typedef struct ba_store ba_store_t;
typedef struct ba_segment ba_segment_t;
typedef struct ba_segment_info {
  const char *name;
  uint64_t start_ns, end_ns;
  uint64_t min_first_ns, max_first_ns;
  uint64_t rows;
  uint32_t block_rows, nblocks, time_bin_seconds;
  ba_codec_t codec;
  ba_compress_t compress;
  ba_reorder_t reorder;
  uint8_t kind;
  uint16_t version_major;
  uint16_t version_minor;
  uint64_t bytes_archive, bytes_index, bytes_file;
  uint64_t bytes_index_attr[20];
  uint8_t clustered;
} ba_segment_info_t;
int ba_store_open(const char *dir, ba_store_t **out);
int ba_store_refresh(ba_store_t *s);
void ba_store_close(ba_store_t *s);
const char *ba_store_errmsg(const ba_store_t *s);
size_t ba_store_segment_count(const ba_store_t *s);
int ba_store_segment(ba_store_t *s, size_t i, ba_segment_t **out);
const char *ba_store_segment_name(const ba_store_t *s, size_t i);
int ba_segment_info(const ba_segment_t *seg, ba_segment_info_t *out);
void ba_segment_release(ba_segment_t *seg);

typedef struct ba_query ba_query_t;
int ba_query_create(ba_query_t **out);
void ba_query_free(ba_query_t *q);
void ba_query_set_now(ba_query_t *q, uint64_t now_ns);
int ba_query_compile(ba_query_t *q, const char *text);
const char *ba_query_errmsg(const ba_query_t *q);
size_t ba_query_errcol(const ba_query_t *q);
int ba_query_dump(const ba_query_t *q, char *buf, size_t cap, size_t *len);
uint32_t ba_query_columns(const ba_query_t *q);

typedef enum ba_range_strategy { BA_RANGE_ITERATIVE = 0, BA_RANGE_REDUCTION = 1, BA_RANGE_BITSET = 2,
  BA_RANGE_AUTO = 3 } ba_range_strategy_t;
typedef void (*ba_query_explain_fn)(void *ctx, const char *line);
typedef struct ba_query_exec_opts {
  uint64_t start_ns, end_ns;
  uint32_t out_cols;
  int threads;
  ba_range_strategy_t strategy;
  int force_scan;
  uint64_t limit;
  ba_query_explain_fn explain;
  void *explain_ctx;
  int explain_only;
  int count_only;
  int (*range_or)(void *ctx, const ba_bitmap_t *const *bms, size_t n, uint64_t rows,
                  ba_codec_t codec, ba_bitmap_t **out);
  void *range_ctx;
  void (*warn)(void *ctx, const char *msg);
  void *warn_ctx;
  int (*field_fn)(void *ctx, const uint64_t *const *vals, size_t n);
  void *field_ctx;
  const uint16_t *fields;
  size_t nfields;
} ba_query_exec_opts_t;
void ba_query_exec_opts_init(ba_query_exec_opts_t *o);
typedef struct ba_query_stats {
  uint64_t segments_total, segments_used;
  uint64_t rows_total;
  uint64_t rows_candidate;
  uint64_t rows_matched;
  uint64_t blocks_read;
  uint64_t rows_damaged;
  uint64_t bitmap_ops;
  uint64_t first_ns, last_ns;
  uint64_t packets, bytes;
  uint64_t segments_damaged;
  uint64_t out_packets, out_bytes;
} ba_query_stats_t;
int ba_query_run(ba_query_t *q, ba_store_t *s, const ba_query_exec_opts_t *opts,
                 ba_record_sink_fn fn, void *ctx, ba_query_stats_t *stats);
typedef struct ba_query_window {
  uint64_t start_ns, end_ns;
  int64_t rel_s;
} ba_query_window_t;
int ba_query_parse_window(const char *text, uint64_t now_ns, int local, ba_query_window_t *w);
int ba_query_restrict_time(ba_query_t *q, uint64_t start_ns, uint64_t end_ns, int whole);

typedef struct ba_query_format ba_query_format_t;
enum { BA_FMT_LOCAL = 1, BA_FMT_PLAIN = 2, BA_FMT_V6LONG = 4 };
int ba_query_format_create(const char *spec, unsigned flags, ba_query_format_t **out, char *err, size_t errcap);
void ba_query_format_free(ba_query_format_t *f);
int ba_query_format_header(const ba_query_format_t *f, char *buf, size_t cap, size_t *len);
int ba_query_format_record(const ba_query_format_t *f, const ba_record_t *r, uint64_t flows, char *buf,
                           size_t cap, size_t *len);
uint32_t ba_query_format_columns(const ba_query_format_t *f);
int ba_query_format_kind(const ba_query_format_t *f);
const char *ba_query_proto_name(unsigned proto);
size_t ba_query_format_number(uint64_t v, unsigned flags, int fixed_width, char out[32]);

enum {
  BA_AGG_SRCIP = 1, BA_AGG_DSTIP = 2, BA_AGG_SRCPORT = 4, BA_AGG_DSTPORT = 8,
  BA_AGG_PROTO = 16, BA_AGG_IP = 32, BA_AGG_PORT = 64, BA_AGG_SRCAS = 128,
  BA_AGG_DSTAS = 256, BA_AGG_AS = 512, BA_AGG_INIF = 1024, BA_AGG_OUTIF = 2048,
  BA_AGG_IF = 4096, BA_AGG_TOS = 8192, BA_AGG_DSTTOS = 16384, BA_AGG_SRCVLAN = 32768,
  BA_AGG_DSTVLAN = 65536, BA_AGG_VLAN = 131072, BA_AGG_SRCMASK = 262144, BA_AGG_DSTMASK = 524288,
  BA_AGG_MASK = 1048576, BA_AGG_ROUTER = 2097152, BA_AGG_NEXTHOP = 4194304, BA_AGG_BGPNEXTHOP = 8388608,
  BA_AGG_DIR = 16777216, BA_AGG_PREVAS = 33554432, BA_AGG_NEXTAS = 67108864, BA_AGG_ODID = 134217728,
  BA_AGG_RECORD = 268435456
};
typedef enum ba_agg_order {
  BA_ORDER_FLOWS = 0, BA_ORDER_PACKETS, BA_ORDER_BYTES, BA_ORDER_PPS, BA_ORDER_BPS, BA_ORDER_BPP,
  BA_ORDER_TSTART, BA_ORDER_TEND
} ba_agg_order_t;
typedef struct ba_query_agg_spec {
  uint32_t fields;
  uint8_t v4bits, v6bits;
  uint8_t bidir;
  uint8_t proto_split;
  uint8_t inout;
  uint8_t dst_v4bits, dst_v6bits;
  uint8_t split_bits;
} ba_query_agg_spec_t;
typedef struct ba_query_agg_row {
  ba_record_t key;
  uint64_t flows, packets, bytes;
} ba_query_agg_row_t;
typedef struct ba_query_agg ba_query_agg_t;
int ba_query_agg_parse(const char *fields, int element, ba_query_agg_spec_t *out, char *err, size_t errcap);
int ba_query_agg_order(const char *name, ba_agg_order_t *out);
const char *ba_query_agg_order_name(ba_agg_order_t o);
const char *ba_query_agg_title(uint32_t field);
size_t ba_query_agg_value(uint32_t field, const ba_record_t *key, unsigned fmt_flags, int full_v6, char *buf,
                          size_t cap);
size_t ba_query_agg_pipe_value(uint32_t field, const ba_record_t *key, int *af, char *buf, size_t cap);
int ba_query_agg_create(const ba_query_agg_spec_t *spec, ba_query_agg_t **out);
void ba_query_agg_free(ba_query_agg_t *a);
int ba_query_agg_add(ba_query_agg_t *a, const ba_record_t *recs, size_t n);
int ba_query_agg_result(ba_query_agg_t *a, ba_agg_order_t order, const ba_query_agg_row_t **rows, size_t *n);
void ba_query_sort_records(ba_record_t *recs, size_t n, ba_agg_order_t order);
"""

# Structs whose layout the test checks against the C headers (it also checks
# every function prototype and enum constant of CDEF).
CHECKED_STRUCTS = ("ba_record_t", "ba_store_opts_t", "ba_store_writer_stats_t", "ba_segment_info_t", "ba_query_exec_opts_t", "ba_query_stats_t",
                   "ba_query_window_t", "ba_query_agg_spec_t", "ba_query_agg_row_t")

ffi = cffi.FFI()
ffi.cdef(CDEF)

_lib = None


def library_path():
    """The file or soname the binding loads."""
    if os.environ.get("BITARC_LIBRARY"):
        return os.environ["BITARC_LIBRARY"]
    try:
        from ._config import LIBRARY
        if os.path.exists(LIBRARY):
            return LIBRARY
    except ImportError:  # running from the source tree
        pass
    return "libbitarc.so.0"


def lib():
    """libbitarc, loaded on first use (once per process)."""
    global _lib
    if _lib is None:
        path = library_path()
        try:
            _lib = ffi.dlopen(path)
        except OSError as e:
            raise ImportError(
                f"cannot load libbitarc ({path}): {e}; install bitarc or set BITARC_LIBRARY "
                "to the path of libbitarc.so") from e
    return _lib
