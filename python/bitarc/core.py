"""Stores, queries, output formats and aggregates of libbitarc, for Python.

    import bitarc
    with bitarc.Store("st") as st:
        res = st.query("src ip 10.4.*.* and dst port 445", limit=100)
        res.rows["dst_port"]        # numpy structured array of bitarc.RECORD
        res.stats["rows_matched"]
        st.count("proto udp")       # from the bitmap index where it can
        st.aggregate("any", "srcip4/24").top("bytes", 10)

A Store handle, like the C one, is for one thread at a time."""

import time
from typing import NamedTuple

import numpy as np

from ._ffi import ffi, lib
from .records import AGG_ROW, RECORD, as_c_records, concat, from_c, records_from_c

# ba_col_t
COL_FIRST, COL_LAST, COL_SRC, COL_DST = 1 << 0, 1 << 1, 1 << 2, 1 << 3
COL_PORTS, COL_PROTO, COL_FLAGS, COL_TOS = 1 << 4, 1 << 5, 1 << 6, 1 << 7
COL_AS, COL_IF, COL_PACKETS, COL_BYTES = 1 << 8, 1 << 9, 1 << 10, 1 << 11
COL_EXPORTER, COL_VLAN, COL_ICMP, COL_FRAME = 1 << 12, 1 << 13, 1 << 14, 1 << 15
COL_OUT, COL_NEXTHOP, COL_MASK, COL_DSTTOS = 1 << 16, 1 << 17, 1 << 18, 1 << 19
COL_ENGINE, COL_SAMPLING, COL_NAT, COL_FW = 1 << 20, 1 << 21, 1 << 22, 1 << 23
COL_MPLS, COL_MAC, COL_BGPAS, COL_MISC = 1 << 24, 1 << 25, 1 << 26, 1 << 27
#: every column but the packet frames
COL_ALL = 0x0FFFFFFF & ~COL_FRAME
#: what an aggregate reads (as the CLI: every field a key or a counter can use)
COL_AGG = COL_ALL

#: ba_agg_order_t by name (-s FIELD/ORDER, -O ORDER)
ORDERS = {"flows": 0, "packets": 1, "bytes": 2, "pps": 3, "bps": 4, "bpp": 5, "tstart": 6, "tend": 7}

# BA_FMT_* flags of Formatter and the number/value helpers
FMT_LOCAL, FMT_PLAIN, FMT_V6LONG = 1, 2, 4

# BA_AGG_* pair elements (counted once per side) and the source-side field
# whose key bytes they use
_PAIR_TO_SRC = {1 << 5: 1 << 0, 1 << 6: 1 << 2, 1 << 9: 1 << 7, 1 << 12: 1 << 10, 1 << 17: 1 << 15,
                1 << 20: 1 << 18}
AGG_RECORD = 1 << 28
_AGG_FIVE = 0x1F

STAT_FIELDS = ("segments_total", "segments_used", "rows_total", "rows_candidate", "rows_matched",
               "blocks_read", "rows_damaged", "bitmap_ops", "first_ns", "last_ns", "packets", "bytes",
               "segments_damaged", "out_packets", "out_bytes")


class Error(Exception):
    """A libbitarc call failed: .status is the ba_status code, .detail the
    handle's message (which file, segment or block)."""

    def __init__(self, what, status, detail=""):
        self.status = status
        self.detail = detail
        msg = f"{what}: {_str(lib().ba_strerror(status))}"
        super().__init__(msg + (f": {detail}" if detail else ""))


class FilterError(ValueError):
    """The filter does not parse: .column is the 0-based byte column of the
    offending token, .reason the library's message."""

    def __init__(self, text, reason, column):
        self.text, self.reason, self.column = text, reason, column
        super().__init__(f"bad filter: {reason} (column {column + 1})")


def _str(p):
    return ffi.string(p).decode("utf-8", "replace") if p != ffi.NULL else ""


def now_ns():
    return time.time_ns()


def parse_window(text, now=None, local=False):
    """nfdump's -t window (or "3h") as [start_ns, end_ns) on the flows' start
    time, as `bitarc query --window-start -t` reads it (end 0: no end). The
    window's end is inclusive to the millisecond, so end_ns is 1 ms past it.
    nfdump's relative "+N" / "-N" windows need the data's range: not here."""
    w = ffi.new("ba_query_window_t *")
    rc = lib().ba_query_parse_window(text.encode(), now_ns() if now is None else now, int(local), w)
    if rc < 0:
        raise ValueError(f"bad time window '{text}' (want YYYY/MM/dd.hh:mm[:ss][-YYYY/MM/dd.hh:mm[:ss]] or 3h)")
    if w.rel_s:
        raise ValueError(f"time window '{text}': relative +N/-N windows are not supported here")
    end = 0 if w.end_ns == 2**64 - 1 else w.end_ns + 1_000_000
    return w.start_ns, end


class AggSpec(NamedTuple):
    """ba_query_agg_spec_t as a plain (picklable) tuple: fields (BA_AGG_*
    mask), v4bits / v6bits (address prefix lengths, 0 = all), bidir (-A only:
    1 = nfdump -b, 2 = -B), proto_split (-s only: nfdump's ":p", one group
    per value and protocol), inout (-s orders: 0 in, 1 both directions, 2 out),
    dst_v4bits / dst_v6bits with split_bits = 1 (-A srcip4/24,dstip4/28: the
    destination's own prefix lengths; v4bits / v6bits are then the source's)."""
    fields: int
    v4bits: int = 0
    v6bits: int = 0
    bidir: int = 0
    proto_split: int = 0
    inout: int = 0
    dst_v4bits: int = 0
    dst_v6bits: int = 0
    split_bits: int = 0

    def c(self):
        p = ffi.new("ba_query_agg_spec_t *")
        (p.fields, p.v4bits, p.v6bits, p.bidir, p.proto_split, p.inout, p.dst_v4bits, p.dst_v6bits,
         p.split_bits) = self
        return p


def parse_agg_fields(text, element=None):
    """An AggSpec from fields text: a -A list ("srcip,dstport",
    "srcip4/24,dstport"; element=False) or one -s element ("srcip", "ip",
    "dstip6/64", "record"; element=True). element=None: a list, else one
    element (so "ip" and "record" work too)."""
    out = ffi.new("ba_query_agg_spec_t *")
    err = ffi.new("char[]", 256)
    rc = lib().ba_query_agg_parse(text.encode(), int(bool(element)), out, err, 256)
    if rc < 0 and element is None:
        rc2 = lib().ba_query_agg_parse(text.encode(), 1, out, ffi.new("char[]", 256), 256)
        rc = rc2 if rc2 >= 0 else rc
    if rc < 0:
        raise ValueError(f"bad aggregation fields '{text}': {_str(err)}")
    return AggSpec(out.fields, out.v4bits, out.v6bits, out.bidir, out.proto_split, out.inout, out.dst_v4bits,
                   out.dst_v6bits, out.split_bits)


def as_spec(spec):
    """An AggSpec from an AggSpec, fields text or a bare BA_AGG_* mask."""
    if isinstance(spec, AggSpec):
        return spec
    if isinstance(spec, str):
        return parse_agg_fields(spec)
    if isinstance(spec, tuple):
        return AggSpec(*spec)
    return AggSpec(int(spec))


def parse_order(name):
    """An order name (flows packets bytes pps bps bpp tstart tend) or number
    as ba_agg_order_t."""
    if isinstance(name, int):
        if not 0 <= name <= 7:
            raise ValueError(f"bad order {name}")
        return name
    out = ffi.new("ba_agg_order_t *")
    if lib().ba_query_agg_order(name.encode(), out) < 0:
        raise ValueError(f"unknown order '{name}' (flows packets bytes pps bps bpp tstart tend)")
    return int(out[0])


def order_name(order):
    return _str(lib().ba_query_agg_order_name(parse_order(order)))


def format_number(v, flags=0, fixed_width=False):
    """nfdump's number scaling ("1234", "  1.2 M"; unscaled with FMT_PLAIN)."""
    buf = ffi.new("char[32]")
    n = lib().ba_query_format_number(int(v), flags, int(fixed_width), buf)
    return ffi.string(buf, n).decode()


def proto_name(proto):
    """nfdump's protocol name ("TCP", "ICMP6", ...)."""
    return _str(lib().ba_query_proto_name(int(proto)))


def agg_title(field):
    """nfdump's -s header for a BA_AGG_* element ("Src IP Addr")."""
    return _str(lib().ba_query_agg_title(int(field)))


def agg_value(field, key, flags=0, full_v6=False):
    """A -s element's value of a group key (a RECORD scalar or 1-array) as
    nfdump prints it."""
    ptr, keep = as_c_records(np.asarray(key, RECORD).reshape(1))
    buf = ffi.new("char[]", 128)
    n = lib().ba_query_agg_value(int(field), ptr, flags, int(full_v6), buf, 128)
    return ffi.string(buf, n).decode()


def agg_pipe_value(field, key):
    """A -s element's value for -o pipe (nfdump's PrintPipeStatLine) and the
    address family number it prints first: (af, text)."""
    ptr, keep = as_c_records(np.asarray(key, RECORD).reshape(1))
    buf = ffi.new("char[]", 128)
    af = ffi.new("int *")
    n = lib().ba_query_agg_pipe_value(int(field), ptr, af, buf, 128)
    return int(af[0]), ffi.string(buf, n).decode()


def sort_records(rows, order):
    """A copy of a RECORD array sorted as `bitarc query -O ORDER` sorts."""
    out = np.array(rows, RECORD, copy=True, order="C")
    if len(out):
        lib().ba_query_sort_records(ffi.from_buffer("ba_record_t[]", out), len(out), parse_order(order))
    return out


class Query:
    """A compiled filter. `now` (ns) fixes what relative times mean."""

    def __init__(self, text, now=None):
        L = lib()
        p = ffi.new("ba_query_t **")
        rc = L.ba_query_create(p)
        if rc < 0:
            raise Error("query", rc)
        self._q = ffi.gc(p[0], L.ba_query_free)
        self.text = text
        self.now = now_ns() if now is None else now
        L.ba_query_set_now(self._q, self.now)
        rc = L.ba_query_compile(self._q, text.encode())
        if rc == L.BA_ERR_SYNTAX:
            raise FilterError(text, _str(L.ba_query_errmsg(self._q)), L.ba_query_errcol(self._q))
        if rc < 0:
            raise Error("cannot compile the filter", rc)

    def dump(self):
        """The compiled tree as canonical text."""
        n = ffi.new("size_t *")
        buf = ffi.new("char[]", 4096)
        lib().ba_query_dump(self._q, buf, 4096, n)
        if n[0] >= 4096:
            buf = ffi.new("char[]", n[0] + 1)
            lib().ba_query_dump(self._q, buf, n[0] + 1, n)
        return _str(buf)

    def columns(self):
        return lib().ba_query_columns(self._q)

    def restrict_time(self, start_ns, end_ns, whole=True):
        """ANDs the window [start_ns, end_ns] onto the filter (end 2**64-1 =
        open): whole keeps the flows lying entirely inside it (nfdump's -t),
        else the flows that start in it. Give the run the window too (it
        selects segments)."""
        rc = lib().ba_query_restrict_time(self._q, start_ns, end_ns, int(whole))
        if rc < 0:
            raise Error("cannot restrict the filter to the window", rc)


class Result:
    """Rows (RECORD array; empty for counts and aggregates) and the run's stats."""

    def __init__(self, rows, stats, warnings):
        self.rows, self.stats, self.warnings = rows, stats, warnings

    @property
    def count(self):
        return self.stats["rows_matched"]


class Groups:
    """Aggregated groups of one or many runs, held by the library's
    aggregator: .spec (AggSpec), .rows (AGG_ROW array in first-seen order,
    as `bitarc query -A` without -O), .top(order, n)."""

    def __init__(self, spec, agg):
        self.spec, self._agg = as_spec(spec), agg

    @property
    def fields(self):
        return self.spec.fields

    @property
    def rows(self):
        return self._agg.groups("tstart")

    def __len__(self):
        return self._agg.count()

    def top(self, order="flows", n=None):
        """Groups sorted as the CLI sorts them (ba_query_agg_result: counters
        and rates descending, times ascending, ties by key); the first n."""
        s = self._agg.groups(order)
        return s if n is None else s[:n]


class Store:
    """A store directory opened for reading."""

    def __init__(self, path):
        L = lib()
        self.path = str(path)
        p = ffi.new("ba_store_t **")
        rc = L.ba_store_open(self.path.encode(), p)
        if rc < 0:
            detail = _str(L.ba_store_errmsg(p[0])) if p[0] != ffi.NULL else ""
            if p[0] != ffi.NULL:
                L.ba_store_close(p[0])
            raise Error(f"cannot open store '{self.path}'", rc, detail)
        self._s = p[0]

    def close(self):
        if self._s is not None:
            lib().ba_store_close(self._s)
            self._s = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _handle(self):
        if self._s is None:
            raise ValueError(f"store '{self.path}' is closed")
        return self._s

    def refresh(self):
        """Picks up segments completed since open."""
        rc = lib().ba_store_refresh(self._handle())
        if rc < 0:
            raise Error(f"cannot refresh store '{self.path}'", rc, _str(lib().ba_store_errmsg(self._s)))

    def segments(self):
        """One dict per segment (ordered by start): name, start_ns, end_ns (the
        slice), min_first_ns, max_first_ns, rows, kind. A segment that cannot be
        opened is listed with error set and no times."""
        L, s = lib(), self._handle()
        out = []
        seg = ffi.new("ba_segment_t **")
        info = ffi.new("ba_segment_info_t *")
        for i in range(L.ba_store_segment_count(s)):
            rc = L.ba_store_segment(s, i, seg)
            if rc < 0 or L.ba_segment_info(seg[0], info) < 0:
                out.append({"name": _str(L.ba_store_segment_name(s, i)), "error": _str(L.ba_strerror(rc))})
                continue
            out.append({"name": _str(info.name), "start_ns": info.start_ns, "end_ns": info.end_ns,
                        "min_first_ns": info.min_first_ns, "max_first_ns": info.max_first_ns,
                        "rows": info.rows, "kind": info.kind})
            L.ba_segment_release(seg[0])
        return out

    def _run(self, query, sink, ctx, *, start_ns, end_ns, limit, columns, count_only, threads, scan):
        L = lib()
        q = query if isinstance(query, Query) else Query(query)
        o = ffi.new("ba_query_exec_opts_t *")
        L.ba_query_exec_opts_init(o)
        o.start_ns, o.end_ns = start_ns, end_ns
        o.out_cols = columns
        o.threads = threads
        o.limit = limit
        o.count_only = int(count_only)
        o.force_scan = int(scan)
        warnings = []

        @ffi.callback("void(void *, const char *)")
        def warn(_ctx, msg):
            warnings.append(_str(msg))

        o.warn = warn
        st = ffi.new("ba_query_stats_t *")
        rc = L.ba_query_run(q._q, self._handle(), o, sink, ctx, st)
        if rc < 0:
            raise Error("query failed", rc, _str(L.ba_store_errmsg(self._s)))
        stats = {k: getattr(st, k) for k in STAT_FIELDS}
        return rc, stats, warnings

    def query(self, query, *, start_ns=0, end_ns=0, limit=0, columns=COL_ALL, threads=1, scan=False):
        """Matching records in store order as a RECORD array (fields outside
        `columns` and the filter's own columns are zero). [start_ns, end_ns) is
        a window on first_ns (0, 0 = all; end 0 = no end); limit 0 = all."""
        chunks, err = [], []

        @ffi.callback("ba_record_sink_fn")
        def sink(_ctx, recs, n):
            try:
                chunks.append(records_from_c(recs, n))
                return 0
            except BaseException as e:  # stop the run, re-raise below
                err.append(e)
                return 1

        rc, stats, warnings = self._run(query, sink, ffi.NULL, start_ns=start_ns, end_ns=end_ns, limit=limit,
                                        columns=columns, count_only=False, threads=threads, scan=scan)
        if err:
            raise err[0]
        if rc:
            raise Error("query stopped", rc)
        rows = concat(chunks) if len(chunks) > 1 else (chunks[0] if chunks else np.empty(0, RECORD))
        return Result(rows, stats, warnings)

    def count(self, query, *, start_ns=0, end_ns=0, threads=1):
        """The number of matching records (from the bitmaps where the index
        answers exactly); the Result has no rows."""
        noop = ffi.callback("ba_record_sink_fn", lambda _c, _r, _n: 0)
        _, stats, warnings = self._run(query, noop, ffi.NULL, start_ns=start_ns, end_ns=end_ns, limit=0,
                                       columns=0, count_only=True, threads=threads, scan=False)
        return Result(np.empty(0, RECORD), stats, warnings)

    def aggregate(self, query, fields, *, start_ns=0, end_ns=0, threads=1):
        """Groups of the matching records by `fields` (an AggSpec or text:
        "srcip,dstport", "srcip4/24", "ip", "record", ...): every group
        (Groups.top sorts). Returns (Groups, Result)."""
        spec = as_spec(fields)
        agg = Aggregator(spec)
        # the library's own ba_query_agg_add is the sink: no Python per batch
        sink = ffi.cast("ba_record_sink_fn", lib().ba_query_agg_add)
        _, stats, warnings = self._run(query, sink, ffi.cast("void *", agg._a), start_ns=start_ns, end_ns=end_ns,
                                       limit=0, columns=COL_AGG, count_only=False, threads=threads, scan=False)
        agg._any = stats["rows_matched"] > 0
        return Groups(spec, agg), Result(np.empty(0, RECORD), stats, warnings)


class StoreWriter:
    """Writes records (RECORD arrays, any time order) into a store directory,
    as ingest/collect do: one writer per store; close() finishes the open
    slices and returns the writer's counters as they were just before (records
    of the slices still open then are in records_in, not yet in
    records_stored)."""

    WRITER_STATS = ("records_in", "records_stored", "records_dropped", "segments_written", "bytes_archive",
                    "bytes_index")

    def __init__(self, path, *, slice_seconds=0, block_rows=0, threads=0):
        L = lib()
        self.path = str(path)
        o = ffi.new("ba_store_opts_t *")
        L.ba_store_opts_init(o)
        if slice_seconds:
            o.slice_seconds = slice_seconds
        if block_rows:
            o.block_rows = block_rows
        if threads:
            o.threads = threads
        p = ffi.new("ba_store_writer_t **")
        rc = L.ba_store_writer_open(self.path.encode(), o, p)
        if rc < 0:
            why = ffi.string(L.ba_store_writer_open_error()).decode(errors="replace")
            raise Error(f"cannot open store '{self.path}' for writing", rc, why)
        self._w = p[0]

    def append(self, rows):
        ptr, keep = as_c_records(rows)
        if len(keep) and (keep["frame"] != 0).any():
            raise ValueError("records with frame pointers cannot be written from Python")
        rc = lib().ba_store_writer_append(self._w, ptr, len(keep))
        if rc < 0:
            raise Error(f"cannot write to store '{self.path}'", rc, _str(lib().ba_store_writer_errmsg(self._w)))

    def close(self):
        if self._w is None:
            return None
        st = ffi.new("ba_store_writer_stats_t *")
        lib().ba_store_writer_get_stats(self._w, st)
        rc = lib().ba_store_writer_close(self._w)
        self._w = None
        if rc < 0:
            raise Error(f"cannot finish store '{self.path}'", rc)
        return {k: getattr(st, k) for k in self.WRITER_STATS}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Aggregator:
    """ba_query_agg: groups records by an AggSpec (or fields text, or a
    BA_AGG_* mask)."""

    def __init__(self, spec):
        L = lib()
        self.spec = as_spec(spec)
        p = ffi.new("ba_query_agg_t **")
        rc = L.ba_query_agg_create(self.spec.c(), p)
        if rc < 0:
            raise Error("aggregate", rc)
        self._a = ffi.gc(p[0], L.ba_query_agg_free)
        # whether records went in: ba_query_agg_result of an empty aggregator
        # passes NULL to qsort_r (UBSan), so it is not asked then
        self._any = False

    @property
    def mask(self):
        return self.spec.fields

    @classmethod
    def merging(cls, spec):
        """An aggregator that merges partial groups of `spec` (merge()):
        pair elements become their source-side field (whose key bytes they
        hold, counted once), so groups of equal keys merge and sort exactly
        as one run over all the records would have them. -b/-B groups do
        not merge exactly (a flow and its reverse may be in different parts):
        refused."""
        spec = as_spec(spec)
        if spec.bidir:
            raise ValueError("bidirectional (-b/-B) groups cannot be merged exactly")
        f = spec.fields
        if f & AGG_RECORD:
            f = (f & ~AGG_RECORD) | _AGG_FIVE
        for pair, src in _PAIR_TO_SRC.items():
            if f & pair:
                f = (f & ~pair) | src
        return cls(spec._replace(fields=f))

    def add(self, rows):
        ptr, keep = as_c_records(rows)
        rc = lib().ba_query_agg_add(self._a, ptr, len(keep))
        if rc < 0:
            raise Error("aggregate", rc)
        self._any = self._any or len(keep) > 0

    def merge(self, groups):
        """Adds partial groups (an AGG_ROW array of an aggregator of the same
        spec; see merging()): counters add, time ranges and TCP flags join."""
        if len(groups) == 0:
            return
        recs = np.ascontiguousarray(groups["key"]).copy()
        recs["packets"], recs["bytes"] = groups["packets"], groups["bytes"]
        flows = groups["flows"].astype(np.uint64)
        cap = np.uint64(0xFFFFFFFF)  # aggr_flows is 32-bit: bigger groups go in as several records
        recs["aggr_flows"] = np.minimum(flows, cap)
        self.add(recs)
        rest = flows - np.minimum(flows, cap)
        while rest.any():
            more = recs[rest > 0].copy()
            more["packets"], more["bytes"], more["out_packets"], more["out_bytes"] = 0, 0, 0, 0
            more["aggr_flows"] = np.minimum(rest[rest > 0], cap)
            self.add(more)
            rest = rest - np.minimum(rest, cap)

    def count(self):
        return len(self.groups("flows"))

    def groups(self, order="flows"):
        """Every group as an AGG_ROW array (a copy), sorted by the order
        (a name of ORDERS or its number)."""
        if not self._any:
            return np.empty(0, AGG_ROW)
        rows = ffi.new("ba_query_agg_row_t **")
        n = ffi.new("size_t *")
        rc = lib().ba_query_agg_result(self._a, parse_order(order), rows, n)
        if rc < 0:
            raise Error("aggregate", rc)
        return from_c(rows[0], n[0], AGG_ROW)


class Formatter:
    """An output format of `bitarc query -o` (line, long, extended, csv,
    pipe, raw, ndjson, fmt:...): local = times in the local time zone
    (FMT_LOCAL), plain = unscaled numbers (-N, FMT_PLAIN), v6long = full IPv6
    addresses (-6, FMT_V6LONG)."""

    def __init__(self, spec="line", local=False, plain=False, v6long=False):
        L = lib()
        p = ffi.new("ba_query_format_t **")
        err = ffi.new("char[]", 256)
        self.flags = (FMT_LOCAL if local else 0) | (FMT_PLAIN if plain else 0) | (FMT_V6LONG if v6long else 0)
        rc = L.ba_query_format_create(spec.encode(), self.flags, p, err, 256)
        if rc < 0:
            raise ValueError(f"-o {spec}: {_str(err)}")
        self._f = ffi.gc(p[0], L.ba_query_format_free)
        self._cap = 1024
        self._buf = ffi.new("char[]", self._cap)
        self._len = ffi.new("size_t *")
        self.spec = spec

    def columns(self):
        return lib().ba_query_format_columns(self._f)

    def kind(self):
        """0 text (line, long, fmt, raw, ndjson), 1 csv, 2 pipe, 3 null."""
        return lib().ba_query_format_kind(self._f)

    def header(self):
        """The header line (b'' if the format has none)."""
        buf = ffi.new("char[]", 4096)
        rc = lib().ba_query_format_header(self._f, buf, 4096, self._len)
        if rc < 0:
            raise Error("format header", rc)
        return ffi.buffer(buf, self._len[0])[:]

    def _one(self, ptr, flows):
        fn = lib().ba_query_format_record
        rc = fn(self._f, ptr, flows, self._buf, self._cap, self._len)
        if rc == lib().BA_ERR_OVERFLOW:
            self._cap = self._len[0] + 1
            self._buf = ffi.new("char[]", self._cap)
            rc = fn(self._f, ptr, flows, self._buf, self._cap, self._len)
        if rc < 0:
            raise Error("format", rc)
        return ffi.buffer(self._buf, self._len[0])[:]

    def records(self, rows, flows=None):
        """The lines of a RECORD array as bytes; flows[i] is what %fl prints
        (default, as the CLI: the record's aggr_flows, or 1)."""
        ptr, keep = as_c_records(rows)
        one = self._one
        if flows is None:
            flows = np.maximum(keep["aggr_flows"], 1)
        return b"".join([one(ptr + i, int(flows[i])) for i in range(len(keep))])
