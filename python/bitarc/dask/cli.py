"""python3 -m bitarc.dask query --scheduler tcp://HOST:PORT [options] FILTER

The same question as `bitarc query -r STORE`, asked of every store the
workers of a Dask cluster announce; the same filter language and the same
output (records, --count, -s, -A), merged exactly. Exit status: 0 ok, 1
damaged blocks were skipped, 2 bad usage or input, 3 partial answer (a worker
died and no other holds its stores; stderr names them)."""

import argparse
import sys
import time

from ..core import ORDERS, Error, FilterError, Formatter, parse_agg_fields

AGG_NAMES = {1: "Src IP Addr", 2: "Dst IP Addr", 32: "IP Addr", 4: "Src Port", 8: "Dst Port", 64: "Port",
             16: "Protocol"}
KEY_SPEC = {1: "fmt:%sa", 32: "fmt:%sa", 2: "fmt:%da", 4: "fmt:%sp", 64: "fmt:%sp", 8: "fmt:%dp"}


def err(msg):
    sys.stderr.write(f"bitarc query: {msg}\n")


def _parser():
    p = argparse.ArgumentParser(prog="python3 -m bitarc.dask query", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scheduler", required=True, metavar="ADDR", help="the Dask scheduler, tcp://HOST:PORT")
    p.add_argument("-t", "--window", help="YYYY/MM/dd.hh:mm[:ss][-YYYY/MM/dd.hh:mm[:ss]] or 3h / 45m / 2d: "
                   "the flows that start in it (as bitarc query --window-start)")
    p.add_argument("--tz", choices=("utc", "UTC", "local"), default="utc")
    p.add_argument("-f", "--filter-file", help="read the filter from FILE")
    p.add_argument("-o", "--output", default="line", help="line, long, csv, ndjson or 'fmt:...'")
    p.add_argument("-n", "--limit", help="stop after N records (with -s/-A: the top N)")
    p.add_argument("-c", "--count", action="store_true", help="print only the number of matching records")
    p.add_argument("-s", "--stat", help="top-N statistics FIELD[/flows|packets|bytes]")
    p.add_argument("-A", "--aggregate", help="aggregate over srcip,dstip,srcport,dstport,proto")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
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


def _pct(a, b):
    return 100.0 * a / b if b else 0.0


def _stat_table(out, mask, order, groups, show, stats):
    ordn = ("flows", "packets", "bytes")[order]
    name = AGG_NAMES.get(mask, "Aggregate")
    out.write(f"Top {show} {name} ordered by {ordn}:\n".encode())
    out.write(("%-40s %18s %20s %22s\n" % (name, "Flows(%)", "Packets(%)", "Bytes(%)")).encode())
    kf = Formatter(KEY_SPEC.get(mask, "fmt:%pr"))
    for g in groups[:show]:
        kt = kf.records(g["key"].reshape(1)).decode()[:-1].lstrip(" ")
        out.write(("%-40s %10d(%5.1f) %12d(%5.1f) %14d(%5.1f)\n" % (
            kt, g["flows"], _pct(g["flows"], stats["rows_matched"]), g["packets"],
            _pct(g["packets"], stats["packets"]), g["bytes"], _pct(g["bytes"], stats["bytes"]))).encode())


def _agg_records(out, fmt, groups):
    out.write(fmt.header())
    recs = groups["key"].copy()
    recs["packets"] = groups["packets"]
    recs["bytes"] = groups["bytes"]
    out.write(fmt.records(recs, flows=groups["flows"]))


def _summary(cq, wall, local):
    st = cq.stats
    dur = (st["last_ns"] - st["first_ns"]) / 1e9 if st["last_ns"] > st["first_ns"] else 0.0
    bps = st["bytes"] * 8 / dur if dur > 0 else 0.0
    pps = st["packets"] / dur if dur > 0 else 0.0
    bpp = st["bytes"] // st["packets"] if st["packets"] else 0
    w = sys.stderr.write
    w(f"Summary: total flows: {st['rows_matched']}, total bytes: {st['bytes']}, total packets: {st['packets']}, "
      f"avg bps: {bps:.0f}, avg pps: {pps:.0f}, avg bpp: {bpp}\n")
    if st["rows_matched"]:
        conv = time.localtime if local else time.gmtime
        a = time.strftime("%Y-%m-%d %H:%M:%S", conv(st["first_ns"] // 10**9))
        b = time.strftime("%Y-%m-%d %H:%M:%S", conv(st["last_ns"] // 10**9))
        w(f"Time window: {a} - {b}\n")
    holders = {a for sp in cq.plans for a, _ in sp.holders}
    w(f"Total records in {st['segments_used']} of {st['segments_total']} segments: {st['rows_total']}, "
      f"candidates: {st['rows_candidate']}, passed: {st['rows_matched']}, blocks read: {st['blocks_read']}, "
      f"wall: {wall:.4f}s\n")
    w(f"Cluster: {len(cq.plans)} stores queried on {len(holders)} workers, {len(cq.pruned)} pruned by time, "
      f"{cq.tasks} tasks, {cq.rows_moved} rows moved\n")


def _options(a):
    """Checks the options the way `bitarc query` does; returns (limit,
    have_limit, mask, order, fmt)."""
    limit, have_limit = 0, a.limit is not None
    if have_limit:
        if not a.limit.isdigit():
            raise ValueError(f"-n wants a count, not '{a.limit}'")
        limit = int(a.limit)
    fmt = Formatter(a.output, a.tz == "local")
    if a.stat and a.aggregate:
        raise ValueError("use either -s or -A")
    mask, order = 0, 0
    if a.stat:
        field, _, ordn = a.stat.partition("/")
        if ordn:
            if ordn not in ORDERS:
                raise ValueError(f"-s {a.stat}: order must be flows, packets or bytes")
            order = ORDERS[ordn]
        try:
            mask = parse_agg_fields(field)
        except ValueError:
            mask = 0
        if bin(mask).count("1") != 1:
            raise ValueError(f"-s {a.stat}: field must be one of srcip dstip ip srcport dstport port proto")
    if a.aggregate:
        try:
            mask = parse_agg_fields(a.aggregate)
        except ValueError:
            mask = -1
        if mask < 0 or mask & (32 | 64):
            raise ValueError(f"-A {a.aggregate}: fields must be among srcip,dstip,srcport,dstport,proto")
    return limit, have_limit, mask, order, fmt


def _answer(cq, a, out, limit, have_limit, mask, order, fmt):
    if a.count:
        n = cq.count()
        out.write(f"{n}\n".encode())
        return
    if mask:
        groups = cq.aggregate(mask).top(order)
        ng = len(groups)
        show = min(limit, ng) if have_limit else (min(ng, 10) if a.stat else ng)
        if a.stat:
            _stat_table(out, mask, order, groups, show, cq.stats)
        else:
            _agg_records(out, fmt, groups[:show])
        return
    out.write(fmt.header())
    for batch in cq.rows(limit=limit, columns=fmt.columns()):
        out.write(fmt.records(batch))


def query_main(argv, client=None, out=None, keep=None):
    """Runs `query ARGS`; with a client, on it (the scheduler option is then
    only checked), else on a new connection to --scheduler. Returns the exit
    status; records go to `out` (default: stdout, as bytes); the ClusterQuery
    is appended to the list `keep` if given (its stats, plan, task times)."""
    a = _parser().parse_args(argv)
    try:
        text = _read_filter(a)
        limit, have_limit, mask, order, fmt = _options(a)
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
        _answer(cq, a, out, limit, have_limit, mask, order, fmt)
        out.flush()
    except (Error, ClusterError) as e:
        err(f"query failed: {e}")
        return 2
    finally:
        if own:
            client.close()
    wall = time.monotonic() - t0
    for w in cq.warnings:
        err(f"warning: {w}")
    if not a.quiet and not a.count:
        _summary(cq, wall, a.tz == "local")
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
