#!/usr/bin/env python3
"""Compares bitarc's decode of the vendor corpus with tshark's, record by
record and field by field:

  vendors_tshark_compare.py TSHARK.json RAW.csv SCALED.csv REPORT.txt MAP [STORE.ndjson]

TSHARK.json: `tshark -T json --no-duplicate-keys` (TZ=UTC) of the corpus with
each message in a frame of its own (vendor_corpus.py splitpcap); RAW.csv /
SCALED.csv: `ingest_dump --as flows [--raw]` of the corpus as sent; REPORT.txt:
ingest_dump --report (per exporter counts); MAP: "group exporter" lines.

tshark's records become bitarc's expected values through the named rules of
cflow_tshark.py; RAW.csv is compared with them on every field tshark decoded
(counters as sent), SCALED.csv with RAW.csv: the same records, counters
multiplied by the sampling rate tshark's options records / v5 header give
(rule sampling-scaled). Options records tshark shows as flows are counted
against bitarc's options-records, data sets without a template against
bitarc's unknown-template drops. Per group: records tshark / bitarc, fields
compared, differences, rules applied. Exit status 1 on any difference or
unpaired record.

STORE.ndjson: `bitarc query -o ndjson` of a store `bitarc ingest --as flows`
wrote from the same capture: per exporter, its records must be SCALED.csv's
(as multisets) on every column ndjson prints."""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cflow_tshark  # noqa: E402

COLS = ("kind first_ns last_ns src dst sport dport proto flags tos packets bytes in_if out_if src_as dst_as vlan "
        "exporter ipver caplen wirelen linktype icmp_type icmp_code out_packets out_bytes received_ns next_hop "
        "bgp_next_hop src_mask dst_mask dst_tos dst_vlan obs_domain engine_type engine_id sampling sampling_algo "
        "xsrc xdst xsrc_port xdst_port nat_event fw_event fw_xevent ingress_vrf egress_vrf mpls in_src_mac "
        "out_dst_mac in_dst_mac out_src_mac prev_as next_as direction aggr_flows").split()
TEXT = {"kind", "src", "dst", "exporter", "next_hop", "bgp_next_hop", "xsrc", "xdst", "mpls"}
HEX = {"in_src_mac", "out_dst_mac", "in_dst_mac", "out_src_mac"}
COUNTERS = ("packets", "bytes", "out_packets", "out_bytes")


def read_csv(path):
    out = collections.defaultdict(list)
    for line in open(path):
        w = line.rstrip("\n").split(",")
        if w[0] != "flow":
            continue
        r = {}
        for k, v in zip(COLS, w):
            r[k] = v if k in TEXT else int(v, 16) if k in HEX else int(v)
        out[r["exporter"]].append(r)
    return out


def read_report(path):
    """exporter -> {"options-records": n, "unknown-template": n}"""
    out = {}
    for line in open(path):
        w = line.split()
        if len(w) < 2 or w[1] != "datagrams" or not w[0][0].isdigit():
            continue
        d = {"options-records": 0, "unknown-template": 0}
        for i, x in enumerate(w):
            if x == "options-records":
                d["options-records"] = int(w[i + 1])
            elif x.startswith("unknown-template="):
                d["unknown-template"] = int(x.split("=")[1])
        out[w[0]] = d
    return out


def norm_addr(a):
    return "" if a in ("", "0.0.0.0", "::") else a


def differs(e, b, f):
    if f in ("next_hop", "bgp_next_hop", "xsrc", "xdst"):
        return norm_addr(e[f]) != norm_addr(b[f])
    return e[f] != b[f]


def fields_of(e):
    return [f for f in e if not f.startswith("_")]


def pair(exp, got):
    """Pairs expected and bitarc records: same (src, dst, proto), then the
    candidate with the fewest differing fields, in order."""
    pool = collections.defaultdict(list)
    for i, b in enumerate(got):
        pool[(b["src"], b["dst"], b["proto"])].append(i)
    pairs, lost = [], []
    for e in exp:
        if "src" in e:
            cands = pool.get((e["src"], e["dst"], e.get("proto", 0)))
        else:  # tshark-mpls-cw: no addresses to pair by
            cands = next((v for v in pool.values() if v), None)
        if not cands:
            lost.append(e)
            continue
        best = min(cands, key=lambda i: (sum(differs(e, got[i], f) for f in fields_of(e)), i))
        cands.remove(best)
        pairs.append((e, best))
    extra = sorted(i for v in pool.values() for i in v)
    return pairs, lost, extra


def scale_check(ex, pairs, raw, scaled, bad, rules):
    """SCALED = RAW x the sampling rate tshark's sampler gives, counters only."""
    for e, i in pairs:
        r, s = raw[i], scaled[i]
        k = e.get("_scale", 1)
        for f in COLS:
            want = r[f] * k if f in COUNTERS else r[f]
            if s[f] != want:
                bad["scaled:" + f] += 1
                bad.setdefault("first:scaled:" + f, "%s: tshark-derived %r, bitarc %r" % (ex, want, s[f]))
        if k != 1:
            rules["sampling-scaled"] += 1


STORE_COLS = ("first_ns", "last_ns", "src", "dst", "sport", "dport", "proto", "flags", "tos", "packets", "bytes",
              "src_as", "dst_as", "in_if", "out_if", "vlan")
NDJSON = {"src": "src_addr", "dst": "dst_addr", "sport": "src_port", "dport": "dst_port", "flags": "tcp_flags"}


def read_store(path):
    out = collections.defaultdict(collections.Counter)
    for line in open(path):
        o = json.loads(line)
        if o.get("type") != "FLOW":
            continue
        fl = 0
        for i, ch in enumerate(o["tcp_flags"][-8:]):
            fl |= (ch != ".") << (7 - i)
        o["tcp_flags"] = fl
        out[o["exporter"]][tuple(o[NDJSON.get(c, c)] for c in STORE_COLS)] += 1
    return out


def store_check(store, scaled, ex):
    want = collections.Counter(tuple(r[c] for c in STORE_COLS) for r in scaled.get(ex, []))
    got = store.get(ex, collections.Counter())
    return sum((want - got).values()) + sum((got - want).values())


def main():
    tj, raw_p, scaled_p, rep_p, map_p = sys.argv[1:6]
    store = read_store(sys.argv[6]) if len(sys.argv) > 6 else None
    ts = cflow_tshark.records(json.load(open(tj)))
    raw, scaled, rep = read_csv(raw_p), read_csv(scaled_p), read_report(rep_p)
    groups = [line.split() for line in open(map_p) if line.strip()]
    fail, total_ok, tot = 0, 0, collections.Counter()
    by_field = collections.Counter()
    for name, ex in groups:
        t = ts.get(ex, cflow_tshark.Exporter())
        got, sc = raw.get(ex, []), scaled.get(ex, [])
        bad, rules = collections.Counter(), collections.Counter()
        for e in t.flows:
            rules.update(e["_rules"])
        pairs, lost, extra = pair(t.flows, got)
        nfields = 0
        for e, i in pairs:
            for f in fields_of(e):
                nfields += 1
                by_field[f] += 1
                if differs(e, got[i], f):
                    bad[f] += 1
                    bad.setdefault("first:" + f, "tshark %r, bitarc %r (%s %s:%s > %s:%s)" % (
                        e[f], got[i][f], e.get("proto"), e.get("src"), e.get("sport"), e.get("dst"), e.get("dport")))
        if len(sc) != len(got):
            bad["scaled:records"] += 1
        else:
            scale_check(ex, pairs, got, sc, bad, rules)
        r = rep.get(ex, {"options-records": 0, "unknown-template": 0})
        if r["options-records"] != t.options:
            bad["options-records"] += 1
            bad["first:options-records"] = "tshark %d, bitarc %d" % (t.options, r["options-records"])
        if r["unknown-template"] != t.no_template:
            bad["no-template"] += 1
            bad["first:no-template"] = "tshark %d, bitarc %d" % (t.no_template, r["unknown-template"])
        if t.options:
            rules["options-records"] += t.options
        if t.no_template:
            rules["no-template"] += t.no_template
        if t.ambiguous:
            bad["ambiguous"] += len(t.ambiguous)
            bad["first:ambiguous"] = t.ambiguous[0]
        if store is not None:
            n = store_check(store, scaled, ex)
            if n:
                bad["store"] += n
                bad["first:store"] = "records of the store that differ from the decoder's"
        if t.unreadable and len(extra) == t.unreadable:
            rules["tshark-malformed-set"] += t.unreadable
            extra = []
        keys = sorted(k for k in bad if not k.startswith("first:"))
        ok = not keys and not lost and not extra
        fail |= not ok
        total_ok += ok and len(t.flows) > 0
        tot["tshark"] += len(t.flows)
        tot["bitarc"] += len(got)
        tot["fields"] += nfields
        tot["diffs"] += sum(bad[k] for k in keys) + len(lost) + len(extra)
        print("%s %s %s: tshark %d records, bitarc %d; fields compared %d; differences %d%s; rules: %s" % (
            "ok" if ok else "FAIL", name, ex, len(t.flows), len(got), nfields,
            sum(bad[k] for k in keys) + len(lost) + len(extra),
            "".join("; %s %d (first: %s)" % (k, bad[k], bad.get("first:" + k, "")) for k in keys)
            + ("; lost %d (first: %r)" % (len(lost), {k: v for k, v in lost[0].items() if k != "_rules"})
               if lost else "")
            + ("; bitarc only %d (first: %r)" % (len(extra), got[extra[0]]) if extra else ""),
            " ".join("%s=%d" % kv for kv in sorted(rules.items())) or "-"))
    print("TOTAL: tshark %d records, bitarc %d; fields compared %d; differences %d; exporters with records and no "
          "difference %d" % (tot["tshark"], tot["bitarc"], tot["fields"], tot["diffs"], total_ok))
    print("values compared per field: " + " ".join("%s=%d" % kv for kv in sorted(by_field.items())))
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
