#!/usr/bin/env python3
"""Compares the flows nfcapd stored (`nfdump -o csv`, with its header, run
with TZ=UTC) with the flows bitarc decoded from the same datagrams
(`ingest_dump` CSV), exporter by exporter (nfdump's `ra` column, bitarc's
exporter column):

  nfdump_compare.py NFDUMP.csv BITARC.csv [KNOWN]

Per exporter: flows, packets (in + out) and bytes (in + out) totals, then the
records paired by (src, dst, sport, dport, proto, start second) and checked
field by field: addresses, ports, protocol, flags, ToS, in/out counters,
interfaces, AS, masks, dst ToS, direction, next hops, VLANs, MACs, MPLS
labels, engine type/id, start/end second. KNOWN lists deliberate differences
as "exporter field reason" lines (doc/decoders.md): a mismatch of a listed
field on that exporter ("*" = any) is reported as known, not as a failure.
Exit status 1 if any total or unlisted field differs.

  nfdump_compare.py --sfcapd NFDUMP.csv BITARC.csv [KNOWN]

reads NFDUMP.csv as written by sfcapd, whose conventions differ from
nfcapd's and bitarc's in two ways that are not decoding errors: an ICMP
sample's type is its source port and its code the destination port (bitarc,
nfcapd and every NetFlow exporter: destination port = type * 256 + code;
ICMPv6 types sfcapd does not decode at all), and an unknown VLAN (sFlow's
0xffffffff) is 65535 (bitarc: 0, no VLAN; ids above 4095 do not exist).
Those fields are brought to bitarc's convention before the comparison; an
ICMPv6 sample's ports are not compared."""
import calendar
import collections
import sys
import time

PROTO = {"ICMP": 1, "IGMP": 2, "TCP": 6, "UDP": 17, "GRE": 47, "ESP": 50, "AH": 51, "ICMP6": 58, "SCTP": 132,
         "IPIP": 4, "IPv6": 41, "OSPF": 89, "PIM": 103, "VRRP": 112, "L2TP": 115}
FLAGS = "CEUAPRSF"
FIELDS = ["sa", "da", "sp", "dp", "pr", "flg", "stos", "ipkt", "ibyt", "opkt", "obyt", "in", "out", "sas", "das",
          "smk", "dmk", "dtos", "dir", "nh", "nhb", "svln", "dvln", "ismc", "odmc", "idmc", "osmc", "mpls", "eng",
          "ts", "te"]


def zero_addr(a):
    return "" if a in ("0.0.0.0", "::", "") else a


def flags_num(s):
    s = s.strip()
    if s.startswith("0x"):
        return int(s, 16)
    v = 0
    for i, ch in enumerate(s[-8:].rjust(8, ".")):
        if ch != ".":
            v |= 1 << (7 - i)
    return v


def mac_num(s):
    return int(s.replace(":", ""), 16) if s else 0


def mpls_num(s):
    lab, exp, bos = (int(x) for x in s.split("-"))
    return (lab << 4) | (exp << 1) | bos


def nf_secs(s):
    return calendar.timegm(time.strptime(s.split(".")[0], "%Y-%m-%d %H:%M:%S"))


def read_nfdump(path):
    out = collections.defaultdict(list)
    with open(path) as f:
        hdr = None
        for line in f:
            w = [x.strip() for x in line.rstrip("\n").split(",")]
            if hdr is None:
                if w and w[0] == "ts":
                    hdr = w
                continue
            if len(w) != len(hdr):
                break  # "Summary" lines
            r = dict(zip(hdr, w))
            pr = r["pr"]
            pr = int(pr) if pr.isdigit() else PROTO.get(pr, pr)
            mpls = "/".join(str(mpls_num(r["mpls%d" % i])) for i in range(1, 11) if mpls_num(r["mpls%d" % i]))
            et, ei = r["eng"].split("/")
            rec = {"sa": r["sa"], "da": r["da"], "sp": int(r["sp"]), "dp": int(float(r["dp"])), "pr": pr,
                   "flg": flags_num(r["flg"]), "stos": int(r["stos"]), "ipkt": int(r["ipkt"]),
                   "ibyt": int(r["ibyt"]), "opkt": int(r["opkt"]), "obyt": int(r["obyt"]), "in": int(r["in"]),
                   "out": int(r["out"]), "sas": int(r["sas"]), "das": int(r["das"]), "smk": int(r["smk"]),
                   "dmk": int(r["dmk"]), "dtos": int(r["dtos"]), "dir": int(r["dir"]),
                   "nh": zero_addr(r["nh"]), "nhb": zero_addr(r["nhb"]), "svln": int(r["svln"]),
                   "dvln": int(r["dvln"]), "ismc": mac_num(r["ismc"]), "odmc": mac_num(r["odmc"]),
                   "idmc": mac_num(r["idmc"]), "osmc": mac_num(r["osmc"]), "mpls": mpls,
                   "eng": "%s/%s" % (et, ei), "ts": nf_secs(r["ts"]), "te": nf_secs(r["te"])}
            out[r["ra"]].append(rec)
    return out


def read_bitarc(path):
    out = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            w = line.rstrip("\n").split(",")
            if w[0] != "flow":
                continue
            rec = {"sa": w[3], "da": w[4], "sp": int(w[5]), "dp": int(w[6]), "pr": int(w[7]), "flg": int(w[8]),
                   "stos": int(w[9]), "ipkt": int(w[10]), "ibyt": int(w[11]), "in": int(w[12]),
                   "out": int(w[13]), "sas": int(w[14]), "das": int(w[15]), "svln": int(w[16]),
                   "opkt": int(w[24]), "obyt": int(w[25]), "nh": zero_addr(w[27]), "nhb": zero_addr(w[28]),
                   "smk": int(w[29]), "dmk": int(w[30]), "dtos": int(w[31]), "dvln": int(w[32]),
                   "eng": "%s/%s" % (w[34], w[35]), "mpls": w[47], "ismc": int(w[48], 16),
                   "odmc": int(w[49], 16), "idmc": int(w[50], 16), "osmc": int(w[51], 16), "dir": int(w[54]),
                   "ts": int(w[1]) // 10**9, "te": int(w[2]) // 10**9}
            out[w[17]].append(rec)
    return out


def key(r):
    return (r["sa"], r["da"], r["sp"], r["dp"], r["pr"], r["ts"], r["ipkt"], r["ibyt"])


def loose_key(r):
    return (r["sa"], r["da"], r["sp"], r["pr"])


def read_known(path):
    known = collections.defaultdict(set)
    if path:
        for line in open(path):
            line = line.strip()
            if line and not line.startswith("#"):
                ex, field = line.split()[:2]
                known[ex].add(field)
    return known


def sfcapd_conventions(nf, ba):
    for recs in nf.values():
        for r in recs:
            if r["pr"] == 1:
                r["sp"], r["dp"] = 0, r["sp"] << 8 | r["dp"]
            for f in ("svln", "dvln"):
                if r[f] == 65535:
                    r[f] = 0
    for recs in list(nf.values()) + list(ba.values()):
        for r in recs:
            if r["pr"] == 58:
                r["sp"] = r["dp"] = -1


def main():
    args = sys.argv[1:]
    sfcapd = args[:1] == ["--sfcapd"]
    if sfcapd:
        args = args[1:]
    nf, ba = read_nfdump(args[0]), read_bitarc(args[1])
    if sfcapd:
        sfcapd_conventions(nf, ba)
    known = read_known(args[2] if len(args) > 2 else None)
    fail = 0
    for ex in sorted(set(nf) | set(ba), key=lambda a: tuple(int(x) for x in a.split(".")) if "." in a else (0,)):
        a, b = nf.get(ex, []), ba.get(ex, [])
        ta = (len(a), sum(r["ipkt"] + r["opkt"] for r in a), sum(r["ibyt"] + r["obyt"] for r in a))
        tb = (len(b), sum(r["ipkt"] + r["opkt"] for r in b), sum(r["ibyt"] + r["obyt"] for r in b))
        ok_tot = ta == tb
        kn = known.get(ex, set()) | known.get("*", set())
        if not ok_tot and "totals" not in kn:
            fail = 1
        a = sorted(a, key=key)
        b = sorted(b, key=key)
        bad = collections.Counter()
        rest = []
        pool = collections.defaultdict(list)
        for r in b:
            pool[loose_key(r)].append(r)
        for r in a:
            cands = pool.get(loose_key(r))
            if not cands:
                rest.append(r)
                continue
            # the candidate with the fewest differing fields
            best = min(cands, key=lambda c: sum(c[f] != r[f] for f in FIELDS))
            cands.remove(best)
            for f in FIELDS:
                if best[f] != r[f]:
                    bad[f] += 1
                    if bad[f] == 1:
                        bad[f + "!"] = "%r vs %r" % (r[f], best[f])
        unmatched = len(rest) + sum(len(v) for v in pool.values())
        fields = sorted(f for f in bad if not f.endswith("!"))
        unknown = [f for f in fields if f not in kn]
        tot_ok = ok_tot or "totals" in kn
        pair_ok = not unmatched or "unpaired" in kn
        if unknown or not pair_ok:
            fail = 1
        status = "ok" if tot_ok and not unknown and pair_ok else "FAIL"
        print("%s %s: nfdump %d flows %d packets %d bytes, bitarc %d flows %d packets %d bytes; unpaired %d%s" %
              (status, ex, ta[0], ta[1], ta[2], tb[0], tb[1], tb[2], unmatched,
               "".join("; %s%s differs in %d (first: nfdump %s, bitarc)" %
                       ("known " if f in kn else "", f, bad[f], bad[f + "!"]) for f in fields)))
    return fail


if __name__ == "__main__":
    sys.exit(main())
