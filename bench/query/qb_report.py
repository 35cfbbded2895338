"""Markdown report of a compare.py run: per flow set, the store sizes and one
table per cache state with the ratios against issue 13's targets."""

MODE_TEXT = {"count": "`--count`", "rows": "`-o csv`", "top": "`-s srcip/bytes -n 10`"}


def target(cls, mode, flows, peer):
    """Issue 13's bar for a ratio peer / bitarc, or None where it sets none."""
    if peer == "nfdump":
        if mode == "count":
            return 100.0 if cls == "selective" else None
        if cls == "selective":
            return 100.0 if flows >= 100000000 else 50.0
        return 3.0
    if mode == "count":
        return None
    return 10.0 if cls == "selective" else 1.0


def _ratio_cells(peer_s, ba_s, tgt):
    if peer_s is None or not ba_s:
        return ["", ""]
    r = peer_s / ba_s
    cell = "%.1fx" % r if r >= 1 else "%.2fx" % r
    if tgt is None:
        return [cell, "-"]
    return [cell, ">= %gx: %s" % (tgt, "met" if r >= tgt else "**missed**")]


def _best(rows, tool):
    best = None
    for r in rows:
        if r["tool"] == tool and (best is None or float(r["seconds"]) < float(best["seconds"])):
            best = r
    return best


def query_table(ds, results, cache, have_ch):
    name, flows = ds["name"], ds["flows"]
    sel = [r for r in results if r["dataset"] == name and r["cache"] == cache and r["mode"] not in ("store", "cluster")]
    if not sel:
        return []
    head = ["filter", "matches", "class", "mode", "bitarc s", "nfdump s (fastest)", "nfdump / bitarc", "target"]
    if have_ch:
        head += ["ClickHouse s", "ClickHouse / bitarc", "target"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = []
    for r in sel:
        k = (r["filter"], r["mode"])
        if k not in keys:
            keys.append(k)
    for flt, mode in keys:
        rows = [r for r in sel if r["filter"] == flt and r["mode"] == mode]
        ba, nf, ch = _best(rows, "bitarc"), _best(rows, "nfdump"), _best(rows, "clickhouse")
        if not ba:
            continue
        ba_s = float(ba["seconds"])
        m = int(ba["matches"])
        cells = ["`%s`" % flt, "{:,} ({:.2f} %)".format(m, 100.0 * m / flows), ba["class"], MODE_TEXT[mode],
                 "%.3f" % ba_s]
        if nf:
            cells.append("%.3f (%s)" % (float(nf["seconds"]), nf["variant"]))
            cells += _ratio_cells(float(nf["seconds"]), ba_s, target(ba["class"], mode, flows, "nfdump"))
        else:
            cells += ["", "", ""]
        if have_ch:
            if ch:
                cells.append("%.3f" % float(ch["seconds"]))
                cells += _ratio_cells(float(ch["seconds"]), ba_s, target(ba["class"], mode, flows, "clickhouse"))
            else:
                cells += ["", "", ""]
        out.append("| " + " | ".join(cells) + " |")
    return out


# bitarc's columns that hold what the ClickHouse table (qb_clickhouse.COLUMNS) holds; the others (receive
# time and aggregation count "misc", exporter, ICMP type/code, record kind "meta", ...) ClickHouse does not store
SAME_AS_CH = ("first", "last", "src", "dst", "ports", "proto", "flags", "tos", "as", "if", "packets", "bytes")


def store_table(sizes, have_ch):
    head = ["flow set", "flows", "bitarc B/flow (archive + index)", "nfdump LZ4", "nfdump uncompressed",
            "bitarc / nfdump-LZ4 (target <= 1.0)"]
    if have_ch:
        head += ["ClickHouse compressed (on disk)", "bitarc / ClickHouse (stretch <= 1.0)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sizes:
        n = s["flows"]
        ba = s["bitarc_file"] / n
        lz = s["nfdump_lz4"] / n
        cells = [s["dataset"], "{:,}".format(n),
                 "%.1f (%.1f + %.1f)" % (ba, s["bitarc_archive"] / n, s["bitarc_index"] / n), "%.1f" % lz,
                 "%.1f" % (s["nfdump_raw"] / n), "%.2fx %s" % (ba / lz, "met" if ba <= lz else "**missed**")]
        if have_ch and "clickhouse" in s:
            c = s["clickhouse"]
            cells += ["%.1f (%.1f)" % (c["compressed"] / n, c["on_disk"] / n), "%.2fx" % (ba / (c["on_disk"] / n))]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    for s in sizes:
        per = s["bitarc_per_record"]
        attrs = ", ".join("%s %.2f" % (k, v) for k, v in per.items() if k not in ("archive", "index"))
        out.append("- %s, bitarc index B/flow by attribute: %s" % (s["dataset"], attrs))
        if "clickhouse" in s:
            cols = ", ".join("%s %.2f" % (k, v / s["flows"]) for k, v in s["clickhouse"]["columns"].items())
            out.append("- %s, ClickHouse compressed B/flow by column: %s" % (s["dataset"], cols))
            extra = {k: v for k, v in s.get("bitarc_columns", {}).items() if k not in SAME_AS_CH and v > 0}
            if extra:
                ba = s["bitarc_file"] / s["flows"] - sum(extra.values())
                ch = s["clickhouse"]["on_disk"] / s["flows"]
                out.append("- %s, the same fields in both: bitarc %.1f B/flow = %.2fx ClickHouse's %.1f (bitarc's "
                           "columns that ClickHouse's table does not hold, left out: %s)"
                           % (s["dataset"], ba, ba / ch, ch, ", ".join("%s %.2f" % kv for kv in extra.items())))
    return out


def render(cmd, started, info, datasets, results, sizes, mismatches, a):
    have_ch = any(r["tool"] == "clickhouse" for r in results)
    out = ["## Query comparison: bitarc, nfdump, ClickHouse (bench/query/compare.py)", "",
           "- command: `%s` (started %s)" % (cmd, started),
           "- machine: %s" % info.get("cpu", "?"),
           "- bitarc %s; %s; ClickHouse %s" % (info.get("bitarc", "?"), info.get("nfdump", "?"),
                                               info.get("clickhouse", "?")),
           "- whole-process wall time, stdout to a file; warm = median of %d (a run under 0.25 s, and the first, "
           "after an untimed run of the same command: a VM's idle vCPU wakes slowly); cold = one run after "
           "`sync; echo 3 > /proc/sys/vm/drop_caches`%s" % (a.reps, " (not run)" if a.no_cold else ""),
           "- nfdump: fastest of its LZ4 and uncompressed files (counts: also `-s proto -n 1` summary vs "
           "`-q -o fmt:%pr | wc -l`); ClickHouse: MergeTree ordered by start time, LZ4, no skip index, "
           "OPTIMIZE FINAL after the load; its own mark cache stays warm in cold runs",
           "- selective = under 1 %% of the flows; answers checked equal across the tools: %s" %
           ("**%d mismatches**" % len(mismatches) if mismatches else "all equal"), ""]
    out.append("### Store size, bytes per flow")
    out.append("")
    out += store_table(sizes, have_ch)
    for r in results:
        if r["mode"] == "cluster":
            out.append("- %s: `bitarc reindex --cluster` took %.1f s wall, max RSS %s MB" %
                       (r["dataset"], float(r["seconds"]), "%.0f" % (int(r["cache"].split("=")[1]) / 1024)
                        if r["cache"].split("=")[1] else "?"))
    for ds in datasets:
        for cache in ("warm", "cold"):
            t = query_table(ds, results, cache, have_ch)
            if t:
                extra = ", %d h of flows" % ds["hours"] if "hours" in ds else ""
                if "bitarc_in" in ds:
                    extra += ", bitarc loaded by %s" % ds["bitarc_in"]
                out += ["", "### %s flows%s, %s cache" % (ds["name"], extra, cache), ""] + t
    if mismatches:
        out += ["", "### Mismatches", ""] + ["- " + m for m in mismatches]
    return "\n".join(out) + "\n"
