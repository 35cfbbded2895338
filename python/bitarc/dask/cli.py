"""python3 -m bitarc.dask query --scheduler tcp://HOST:PORT [options] FILTER

The same question as `bitarc query -r STORE`, asked of every store the
workers of a Dask cluster announce; the same filter language and the same
output (records, --count, -s tables, -A groups, -O order), merged exactly.
-t keeps the flows that start in the window (bitarc query --window-start -t;
--window-start is accepted and changes nothing). Not on a cluster: -b/-B
(a flow and its reverse may be in different stores) and -c with -s/-A. The
summary goes to stderr. Exit status: 0 ok, 1 damaged blocks were skipped, 2
bad usage or input, 3 partial answer (a worker died and no other holds its
stores; stderr names them)."""

import argparse
import sys
import time

from ..aggregate import agg_records, stat_spec, stat_table
from ..core import FMT_LOCAL, Error, FilterError, Formatter, format_number, parse_agg_fields, parse_order, \
    sort_records

FIVE = "srcip,dstip,srcport,dstport,proto"


def err(msg):
    sys.stderr.write(f"bitarc query: {msg}\n")


def _parser():
    p = argparse.ArgumentParser(prog="python3 -m bitarc.dask query", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scheduler", required=True, metavar="ADDR", help="the Dask scheduler, tcp://HOST:PORT")
    p.add_argument("-t", "--window", help="YYYY/MM/dd.hh:mm[:ss][-YYYY/MM/dd.hh:mm[:ss]] or 3h / 45m / 2d: "
                   "the flows that start in it (as bitarc query --window-start)")
    p.add_argument("--window-start", action="store_true", help="accepted for bitarc query's sake: -t is always "
                   "on start times here")
    p.add_argument("--tz", choices=("utc", "UTC", "local"), default="local",
                   help="time zone of -t and of printed times (default local, as bitarc query)")
    p.add_argument("-f", "--filter-file", help="read the filter from FILE")
    p.add_argument("-o", "--output", default="line", help="line, long, extended, csv, pipe, raw, ndjson or 'fmt:...'")
    p.add_argument("-c", "--limit", help="stop after N records")
    p.add_argument("-n", "--top", default="10", help="-s: the top N (default 10, 0 = all)")
    p.add_argument("--count", action="store_true", help="print only the number of matching records")
    p.add_argument("-s", "--stat", action="append", default=[],
                   help="top-N statistics ELEMENT[/ORDER[:ORDER...]] (repeatable; nfdump's elements, srcip4/24, "
                   "record; orders flows packets bytes pps bps bpp tstart tend)")
    p.add_argument("-A", "--aggregate", help="aggregate over fields (srcip,dstip,srcport,dstport,proto, "
                   "srcip4/24, ...)")
    p.add_argument("-a", action="store_true", help="-A " + FIVE)
    p.add_argument("-O", "--order", help="order of -A groups or of records (flows packets bytes pps bps bpp tstart "
                   "tend)")
    p.add_argument("-N", dest="plain", action="store_true", help="numbers unscaled, protocols as numbers")
    p.add_argument("-6", dest="v6", action="store_true", help="IPv6 addresses in full")
    p.add_argument("-q", "--quiet", action="store_true", help="no header, no summary")
    p.add_argument("--grace", type=float, default=5.0,
                   help="seconds to wait for a store whose worker died to be served again (default 5)")
    p.add_argument("--chunk-rows", type=int, default=1 << 20,
                   help="stored rows per task when streaming records (default 1048576)")
    p.add_argument("--connect-timeout", type=float, default=10.0, help="seconds to reach the scheduler")
    p.add_argument("filter", nargs="*")
    return p


def _read_filter(a):
    if a.filter_file:
        if a.filter:
            raise ValueError("give the filter either with -f or as arguments, not both")
        try:
            with open(a.filter_file, "rb") as f:
                return f.read().decode()
        except OSError as e:
            raise ValueError(f"cannot read filter file '{a.filter_file}': {e.strerror}") from e
    return " ".join(a.filter)


def _show_caret(text, col):
    col = min(col, len(text))
    ls = text.rfind("\n", 0, col) + 1
    le = text.find("\n", col)
    le = len(text) if le < 0 else le
    pad = "".join("\t" if c == "\t" else " " for c in text[ls:col])
    sys.stderr.write(f"  {text[ls:le]}\n  {pad}^\n")


def _summary(cq, wall, flags):
    """bitarc query's summary (on stderr here), and the cluster's line."""
    st = cq.stats
    a, b = st["first_ns"] // 1000000, st["last_ns"] // 1000000
    d = (b - a) / 1000.0 if st["rows_matched"] and b > a else 0.0
    bps = int(float((st["bytes"] << 3) % (1 << 64)) / d) if d > 0 else 0
    pps = int(float(st["packets"]) / d) if d > 0 else 0
    bpp = st["bytes"] // st["packets"] if d > 0 and st["packets"] else 0
    n = [format_number(v, flags) for v in (st["bytes"], st["packets"], bps, pps, bpp)]
    w = sys.stderr.write
    w(f"Summary: total flows: {st['rows_matched']}, total bytes: {n[0]}, total packets: {n[1]}, "
      f"avg bps: {n[2]}, avg pps: {n[3]}, avg bpp: {n[4]}\n")
    if st["rows_matched"]:
        conv = time.localtime if flags & FMT_LOCAL else time.gmtime
        t1 = time.strftime("%Y-%m-%d %H:%M:%S", conv(st["first_ns"] // 10**9))
        t2 = time.strftime("%Y-%m-%d %H:%M:%S", conv(st["last_ns"] // 10**9))
        w(f"Time window: {t1} - {t2}\n")
    else:
        w("Time window: <unknown>\n")
    holders = {a for sp in cq.plans for a, _ in sp.holders}
    w(f"Total records in {st['segments_used']} of {st['segments_total']} segments: {st['rows_total']}, "
      f"candidates: {st['rows_candidate']}, passed: {st['rows_matched']}, blocks read: {st['blocks_read']}, "
      f"wall: {wall:.4f}s\n")
    w(f"Cluster: {len(cq.plans)} stores queried on {len(holders)} workers, {len(cq.pruned)} pruned by time, "
      f"{cq.tasks} tasks, {cq.rows_moved} rows moved\n")


def _count_arg(opt, v):
    if not v.isdigit():
        raise ValueError(f"{opt} wants a count, not '{v}'")
    return int(v)


def _options(a):
    """Checks the options the way `bitarc query` does; returns a dict: limit,
    top, stats [(spec, order, text)], agg (spec or None), order (-O or None),
    fmt."""
    o = {"limit": _count_arg("-c", a.limit) if a.limit is not None else 0, "top": _count_arg("-n", a.top)}
    o["fmt"] = Formatter(a.output, local=a.tz == "local", plain=a.plain, v6long=a.v6)
    o["stats"] = []
    for text in a.stat:
        # orders follow the first '/' that is not a prefix length (srcip4/24): srcip/bytes, srcip/bytes:packets
        i = 0
        while True:
            i = text.find("/", i)
            if i < 0 or not text[i + 1:i + 2].isdigit():
                break
            i += 1
        field, ords = (text, "flows") if i < 0 else (text[:i], text[i + 1:])
        for tok in [t for t in ords.replace(":", "/").split("/") if t]:
            try:
                o["stats"].append(stat_spec(field, tok))
            except ValueError as e:
                raise ValueError(f"-s {text}: {str(e).split(': ', 1)[-1] if 'aggregation' in str(e) else e}") \
                    from None
    o["agg"] = None
    if a.aggregate or a.a:
        fields = a.aggregate or FIVE
        try:
            o["agg"] = parse_agg_fields(fields, element=False)
        except ValueError as e:
            raise ValueError(f"-A {fields}: {str(e).split(': ', 1)[-1]}") from None
    o["order"] = None
    if a.order:
        try:
            o["order"] = parse_order(a.order)
        except ValueError:
            raise ValueError(f"-O {a.order}: unknown order (tstart tend flows packets bytes pps bps bpp)") from None
    if o["limit"] and (o["stats"] or o["agg"]) and not a.count:
        raise ValueError("-c with -s or -A is not supported on a cluster (the first N records of all stores "
                         "are not aggregated on their workers)")
    return o


def _answer(cq, a, out, o):
    fmt = o["fmt"]
    if a.count:
        out.write(f"{cq.count()}\n".encode())
        return
    if o["agg"] is None and not o["stats"]:
        if not a.quiet:
            out.write(fmt.header())
        if o["order"] is None:
            for batch in cq.rows(limit=o["limit"], columns=fmt.columns()):
                out.write(fmt.records(batch))
        else:  # -O: every record first (all columns, as the CLI), then sorted
            from ..records import RECORD, concat
            import numpy as np
            batches = [b for b in cq.rows(limit=o["limit"]) if len(b)]
            rows = concat(batches) if batches else np.empty(0, RECORD)
            rows = sort_records(rows, o["order"])
            out.write(fmt.records(rows, flows=[int(f) if f else 1 for f in rows["aggr_flows"]]))
        return
    if o["agg"] is not None:
        groups = cq.aggregate(o["agg"])
        out.write(agg_records(groups, fmt, o["order"], a.quiet))
    for spec, order in o["stats"]:
        groups = cq.aggregate(spec)
        out.write(stat_table(spec, order, groups, cq.stats, fmt, o["top"], a.quiet, a.v6))


def query_main(argv, client=None, out=None, keep=None):
    """Runs `query ARGS`; with a client, on it (the scheduler option is then
    only checked), else on a new connection to --scheduler. Returns the exit
    status; records go to `out` (default: stdout, as bytes); the ClusterQuery
    is appended to the list `keep` if given (its stats, plan, task times)."""
    a = _parser().parse_args(argv)
    try:
        text = _read_filter(a)
        opts = _options(a)
    except ValueError as e:
        err(str(e))
        return 2
    from .execute import ClusterError, ClusterQuery
    try:
        cq = ClusterQuery(None, text, window=a.window, local=a.tz == "local", grace=a.grace,
                          chunk_rows=max(1, a.chunk_rows))
    except FilterError as e:
        err(f"bad filter: {e.reason} (column {e.column + 1})")
        _show_caret(text, e.column)
        return 2
    except ValueError as e:
        err(str(e))
        return 2
    if keep is not None:
        keep.append(cq)
    own = client is None
    if own:
        from distributed import Client
        try:
            client = Client(a.scheduler, timeout=a.connect_timeout, set_as_default=False)
        except (OSError, TimeoutError) as e:
            err(f"cannot reach the scheduler {a.scheduler}: {e}")
            return 2
    cq.client = client
    out = sys.stdout.buffer if out is None else out
    t0 = time.monotonic()
    try:
        _answer(cq, a, out, opts)
        out.flush()
    except (Error, ClusterError, ValueError) as e:
        err(f"query failed: {e}")
        return 2
    finally:
        if own:
            client.close()
    wall = time.monotonic() - t0
    for w in cq.warnings:
        err(f"warning: {w}")
    if not a.quiet and not a.count:
        _summary(cq, wall, opts["fmt"].flags)
    ret = 0
    if cq.stats["rows_damaged"] or cq.stats["segments_damaged"]:
        err(f"{cq.stats['rows_damaged']} rows in damaged blocks and {cq.stats['segments_damaged']} damaged segments "
            "were skipped or scanned (run bitarc verify on the worker)")
        ret = 1
    if cq.partial:
        for who, stores in sorted(cq.missing.items()):
            err(f"partial answer: worker {who} left during the query; not answered: stores {', '.join(stores)}")
        ret = 3
    return ret


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write("usage: python3 -m bitarc.dask query --scheduler tcp://HOST:PORT [options] FILTER\n"
                         "       (python3 -m bitarc.dask query --help for the options)\n")
        return 0 if argv else 2
    if argv[0] != "query":
        err(f"unknown command '{argv[0]}' (want: query)")
        return 2
    return query_main(argv[1:])
