"""Exact merging of partial aggregates and the -s / -A output of `bitarc
query`, through the library.

Merging: the groups of several runs go into one library aggregator
(Aggregator.merging) as records carrying their counters, so groups with the
same key become one group whose counters are the sums and whose time range
is the union, sorted by ba_query_agg_result itself: what one run over all the
records gives.

Printing: the -s tables mirror src/cli/cmd_query_out.c (print_stat,
stat_line) with the library's value, title, number and protocol helpers, so
the output is byte for byte the CLI's."""

import time

import numpy as np

from .core import FMT_LOCAL, FMT_PLAIN, AGG_RECORD, Aggregator, Groups, agg_pipe_value, agg_title, agg_value, as_spec, \
    format_number, order_name, parse_agg_fields, parse_order, proto_name
from .records import concat, take

# BA_AGG_* fields printed 39 wide with -6 (addresses)
_ADDR_FIELDS = (1 << 0) | (1 << 1) | (1 << 5) | (1 << 22) | (1 << 23) | (1 << 21)
_AGG_PROTO = 1 << 4


def merge_groups(parts, spec):
    """One Groups with a group per distinct key of the partial AGG_ROW
    arrays `parts` (each from an aggregator of `spec`). Groups are fed in
    first-seen order (their start time; ties keep the order of `parts`), so
    the rare groups the library's sort calls equal come out as one run
    would list them."""
    spec = as_spec(spec)
    agg = Aggregator.merging(spec)
    parts = [p for p in parts if len(p)]
    if parts:
        g = concat(parts)
        agg.merge(take(g, np.argsort(g["key"]["first_ns"], kind="stable")))
    return Groups(spec, agg)


def _pct(a, b):
    return float(a * 100) / float(b) if b else 0.0


def _rate(v, first_ns, last_ns):
    """nfdump's rate over the duration in seconds as a double, truncated."""
    a, b = first_ns // 1000000, last_ns // 1000000
    if b <= a:
        return 0
    return int(float(v) / (float(b - a) / 1000.0))


def _date(ns, flags):
    conv = time.localtime if flags & FMT_LOCAL else time.gmtime
    return time.strftime("%Y-%m-%d %H:%M:%S", conv(ns // 1000000000))


# nfdump's in/out forms of the -s orders: the base order and the direction
# counted (0 in, 2 out); the plain packets/bytes/pps/bps/bpp count both (1)
_IO_ORDERS = {"ipkg": ("packets", 0), "opkg": ("packets", 2), "ibyte": ("bytes", 0), "obyte": ("bytes", 2),
              "ipps": ("pps", 0), "opps": ("pps", 2), "ibps": ("bps", 0), "obps": ("bps", 2),
              "ibpp": ("bpp", 0), "obpp": ("bpp", 2)}
_CSV_HEADS = {0: b"ts,te,td,pr,val,fl,flP,ipkt,ipktP,ibyt,ibytP,ipps,ibps,ibpp\n",
              1: b"ts,te,td,pr,val,fl,flP,pkt,pktP,byt,bytP,pps,bps,bpp\n",
              2: b"ts,te,td,pr,val,fl,flP,opkt,opktP,obyt,obytP,opps,obps,obpp\n"}


def stat_order(tok):
    """A -s order as the CLI's stat_order: (ba_agg_order_t, direction, name)
    with direction 0 in (flows, tstart, tend, ipkg...), 1 both (packets,
    bytes, pps, bps, bpp: nfdump's sums of both directions), 2 out (opkg...).
    Raises ValueError on an unknown order."""
    if isinstance(tok, str) and tok in _IO_ORDERS:
        base, d = _IO_ORDERS[tok]
        return parse_order(base), d, tok
    order = parse_order(tok)
    return order, 0 if order in (0, 6, 7) else 1, order_name(order)


def _dir_counters(key, packets, nbytes, d):
    """The group's packets and bytes for direction d (as dir_counters)."""
    if d == 1:
        return packets + int(key["out_packets"]), nbytes + int(key["out_bytes"])
    if d == 2:
        return int(key["out_packets"]), int(key["out_bytes"])
    return packets, nbytes


def _stat_line(spec, g, stats, flags, full_v6, csv, d):
    field = spec.fields
    key = g["key"]
    first, last = int(key["first_ns"]), int(key["last_ns"])
    flows = int(g["flows"])
    packets, nbytes = _dir_counters(key, int(g["packets"]), int(g["bytes"]), d)
    val = agg_value(field, key, flags, csv or full_v6)
    ms = last // 1000000 - first // 1000000 if last // 1000000 > first // 1000000 else 0
    vpps = _rate(packets, first, last)
    vbps = _rate(nbytes * 8 % (1 << 64), first, last)
    bpp = nbytes // packets if packets else 0
    proto = "any"
    if field == _AGG_PROTO or spec.proto_split:
        proto = "%-5d" % int(key["proto"]) if flags & FMT_PLAIN else proto_name(int(key["proto"]))[:5]
    d1 = _date(first, flags)
    pf = _pct(flows, stats["rows_matched"])
    pp = _pct(packets, stats["packets"] + stats.get("out_packets", 0))
    pb = _pct(nbytes, stats["bytes"] + stats.get("out_bytes", 0))
    if csv:
        return "%s,%s,%d.%03d,%s,%s,%d,%.1f,%d,%.1f,%d,%.1f,%d,%d,%d\n" % (
            d1, _date(last, flags), ms // 1000, ms % 1000, proto, val, flows, pf, packets, pp, nbytes, pb, vpps,
            vbps, bpp)
    fl, pk, by, pps, bps = (format_number(v, flags, True) for v in (flows, packets, nbytes, vpps, vbps))
    if flags & FMT_PLAIN:
        dur = "%16.3f" % (ms / 1000.0)
    elif ms < 86400000:
        dur = "    %02d:%02d:%02d.%03d" % (ms // 3600000, ms // 60000 % 60, ms // 1000 % 60, ms % 1000)
    else:
        dur = "%2dd %02d:%02d:%02d.%03d" % (ms // 86400000, ms // 3600000 % 24, ms // 60000 % 60, ms // 1000 % 60,
                                            ms % 1000)
    w = 39 if full_v6 and field & _ADDR_FIELDS else 17
    return "%s.%03d %9s %-5s %*s %8s(%4.1f) %8s(%4.1f) %8s(%4.1f) %8s %8s %5d\n" % (
        d1, first // 1000000 % 1000, dur, proto, w, val, fl, pf, pk, pp, by, pb, pps, bps, bpp & 0xFFFFFFFF)


def _pipe_line(spec, g, d):
    """nfdump's -s line with -o pipe (as pipe_stat_line): af|first ms|last
    ms|proto|value|flows|packets|bytes|pps|bps|bpp, rates as 32-bit numbers,
    proto 0 unless the statistic is split by protocol."""
    key = g["key"]
    packets, nbytes = _dir_counters(key, int(g["packets"]), int(g["bytes"]), d)
    af, val = agg_pipe_value(spec.fields, key)
    a, b = int(key["first_ns"]) // 1000000, int(key["last_ns"]) // 1000000
    pps = bps = 0
    if b > a:
        secs = float(b - a) / 1000.0
        pps = int(float(packets) / secs) & 0xFFFFFFFF
        bps = int(float(8 * nbytes % (1 << 64)) / secs) & 0xFFFFFFFF
    bpp = (nbytes // packets) & 0xFFFFFFFF if packets else 0
    proto = int(key["proto"]) if spec.fields == _AGG_PROTO or spec.proto_split else 0
    return "%d|%d|%d|%d|%s|%d|%d|%d|%d|%d|%d\n" % (af, a, b, proto, val, int(g["flows"]), packets, nbytes, pps,
                                                  bps, bpp)


def stat_spec(text, tok):
    """The AggSpec and order of one -s statistic as the CLI builds it: `text`
    the element with nfdump's ":p" (split by protocol) allowed, `tok` one
    order. Raises ValueError naming what is wrong."""
    split = 0
    if ":" in text:
        text, rest = text.split(":", 1)
        if rest != "p":
            raise ValueError(f"':{rest}' after the statistic: only ':p' (split by protocol, as nfdump)")
        split = 1
    spec = parse_agg_fields(text, element=True)
    try:
        order, d, _ = stat_order(tok)
    except ValueError:
        raise ValueError(f"unknown order '{tok}' (flows packets bytes pps bps bpp tstart tend; ipkg ibyte ipps "
                         "ibps ibpp, opkg obyte opps obps obpp: in / out direction only)") from None
    record = spec.fields & AGG_RECORD
    return spec._replace(proto_split=0 if record else split, inout=0 if record else d), tok


def stat_table(spec, order, groups, stats, fmt, topn=10, quiet=False, full_v6=False):
    """`bitarc query -s` output (bytes) for one statistic: `groups` are every
    group (Groups, aggregated with `spec`), `stats` the run's (rows_matched,
    packets, bytes, out_packets, out_bytes: the percentages' totals), `fmt`
    the -o Formatter (text: nfdump's table, csv: the csv table, -s record:
    flow lines), topn as -n (0 = all). `order` is a -s order name (also
    nfdump's ipkg/obyte/...) or number; its direction must be the spec's
    inout (stat_spec gives both)."""
    spec = as_spec(spec)
    order, d, ordn = stat_order(order)
    if spec.fields & AGG_RECORD:
        d = 0
    rows = groups.top(order)
    show = rows[:topn] if topn and topn < len(rows) else rows
    kind, flags = fmt.kind(), fmt.flags
    out = []
    if spec.fields & AGG_RECORD:
        if not quiet and kind == 0:
            out.append(f"Top {topn} flows ordered by {ordn}:\n".encode())
        if not quiet or kind == 1:
            out.append(fmt.header())
        recs = np.ascontiguousarray(show["key"]).copy()
        recs["packets"], recs["bytes"] = show["packets"], show["bytes"]
        out.append(fmt.records(recs, flows=show["flows"]))
        if not quiet and kind == 0:
            out.append(b"\n")
        return b"".join(out)
    title = agg_title(spec.fields)
    if kind == 2:  # pipe: no header, a blank line after each table (as nfdump)
        out.extend(_pipe_line(spec, g, d).encode() for g in show)
        out.append(b"\n")
        return b"".join(out)
    if kind == 1:
        out.append(_CSV_HEADS[d])
    elif not quiet:
        out.append(f"Top {topn} {title} ordered by {ordn}:\n".encode())
        out.append(("Date first seen                 Duration Proto %*s    Flows(%%)     Packets(%%)       Bytes(%%)"
                    "         pps      bps   bpp\n" % (39 if full_v6 else 17, title)).encode())
    out.extend(_stat_line(spec, g, stats, flags, full_v6, kind == 1, d).encode() for g in show)
    out.append(b"\n")  # after each table, csv too (nfdump)
    return b"".join(out)


def agg_records(groups, fmt, order=None, quiet=False):
    """`bitarc query -A` output (bytes): the header (unless quiet; csv
    always), then every group as a record line, in first-seen order or, with
    `order` (-O), sorted."""
    rows = groups.top("tstart" if order is None else order)
    out = [fmt.header()] if not quiet or fmt.kind() == 1 else []
    recs = np.ascontiguousarray(rows["key"]).copy()
    recs["packets"], recs["bytes"] = rows["packets"], rows["bytes"]
    out.append(fmt.records(recs, flows=rows["flows"]))
    return b"".join(out)
