#!/usr/bin/env python3
"""Compares bitarc's packet records (ingest_dump --as packets CSV on argv[2])
with tshark's dissection of the same capture (tshark -T fields TSV on argv[1],
fields: frame.len frame.cap_len ip.src ip.dst ipv6.src ipv6.dst ip.proto
tcp.srcport tcp.dstport udp.srcport udp.dstport vlan.id, first occurrence =
outermost header). Per packet: lengths; addresses (outer IPv4/IPv6); IPv4
protocol; TCP/UDP ports when bitarc saw TCP/UDP as the outer transport; the
outer VLAN id. Prints one line per mismatch and a summary; exit 1 on any."""
import sys


def main():
    want = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
    got = [l.rstrip("\n").split(",") for l in open(sys.argv[2])]
    name = sys.argv[3] if len(sys.argv) > 3 else "?"
    bad = 0
    if len(want) != len(got):
        print("%s: tshark %d packets, bitarc %d" % (name, len(want), len(got)))
        return 1
    for i, (w, g) in enumerate(zip(want, got)):
        w += [""] * (12 - len(w))
        flen, clen, s4, d4, s6, d6, proto, tsp, tdp, usp, udp, vlan = w[:12]
        src, dst, sp, dp, pr, vl, ipver, caplen, wirelen = g[3], g[4], g[5], g[6], g[7], g[16], g[18], g[19], g[20]
        errs = []
        if flen != wirelen or clen != caplen:
            errs.append("len %s/%s vs %s/%s" % (clen, flen, caplen, wirelen))
        if s4 and ipver == "4":
            if (s4, d4) != (src, dst):
                errs.append("v4 %s>%s vs %s>%s" % (s4, d4, src, dst))
            if proto and proto != pr:
                errs.append("proto %s vs %s" % (proto, pr))
        elif s6 and ipver == "6":
            if (s6, d6) != (src, dst):
                errs.append("v6 %s>%s vs %s>%s" % (s6, d6, src, dst))
        elif (s4 or s6) and ipver == "0":
            errs.append("tshark sees IP %s%s, bitarc none" % (s4, s6))
        if pr == "6" and tsp and (tsp, tdp) != (sp, dp) and ipver != "0":
            errs.append("tcp ports %s>%s vs %s>%s" % (tsp, tdp, sp, dp))
        if pr == "17" and usp and (usp, udp) != (sp, dp) and ipver != "0":
            errs.append("udp ports %s>%s vs %s>%s" % (usp, udp, sp, dp))
        if vlan and vlan != vl:
            errs.append("vlan %s vs %s" % (vlan, vl))
        if errs:
            bad += 1
            if bad <= 5:
                print("%s: packet %d: %s" % (name, i + 1, "; ".join(errs)))
    if bad:
        print("%s: %d of %d packets differ" % (name, bad, len(got)))
    return 1 if bad else 0


sys.exit(main())
