#!/usr/bin/env python3
"""Reads `tshark -T json --no-duplicate-keys` of NetFlow/IPFIX datagrams on
stdin and prints one line per flow record tshark decoded:
src,dst,sport,dport,proto,bytes,packets,in_if,out_if
(for ICMP: 0,type<<8|code, as nfdump; exporters that put type/code in the
destination port are taken as they are)."""
import json
import sys


def first(v):
    return v[0] if isinstance(v, list) else v


def num(v, default="0"):
    if v is None:
        return default
    v = first(v)
    return str(int(v, 0))


def records(o, out):
    if isinstance(o, dict):
        if "cflow.data_link_frame_size" in o and "cflow.srcaddr" not in o:
            out.append(frame_record(o))
            return
        if "cflow.srcaddr" in o or "cflow.srcaddrv6" in o:
            out.append(o)
            return
        for v in o.values():
            records(v, out)
    elif isinstance(o, list):
        for v in o:
            records(v, out)


def find(o, key):
    """First value of key anywhere below o (depth first)."""
    if isinstance(o, dict):
        if key in o:
            return o[key]
        for v in o.values():
            r = find(v, key)
            if r is not None:
                return r
    elif isinstance(o, list):
        for v in o:
            r = find(v, key)
            if r is not None:
                return r
    return None


def frame_record(o):
    """A record carrying a sampled frame (IPFIX dataLinkFrameSection): take the
    headers tshark dissected inside it; bytes = frame size, packets = 1."""
    r = dict(o)
    r["cflow.srcaddr"] = find(o, "ip.src") or find(o, "ipv6.src") or "0.0.0.0"
    r["cflow.dstaddr"] = find(o, "ip.dst") or find(o, "ipv6.dst") or "0.0.0.0"
    r["cflow.protocol"] = find(o, "ip.proto") or find(o, "ipv6.nxt") or "0"
    r["cflow.srcport"] = find(o, "udp.srcport") or find(o, "tcp.srcport") or "0"
    r["cflow.dstport"] = find(o, "udp.dstport") or find(o, "tcp.dstport") or "0"
    r["cflow.octets"] = o["cflow.data_link_frame_size"]
    r["cflow.packets"] = "1"
    return r


def main():
    data = json.load(sys.stdin)
    recs = []
    records(data, recs)
    for r in recs:
        src = first(r.get("cflow.srcaddr", r.get("cflow.srcaddrv6")))
        dst = first(r.get("cflow.dstaddr", r.get("cflow.dstaddrv6")))
        proto = num(r.get("cflow.protocol"))
        sport, dport = num(r.get("cflow.srcport")), num(r.get("cflow.dstport"))
        if proto in ("1", "58"):
            t = r.get("cflow.icmp_type_code_ipv4", r.get("cflow.icmp_type_code_ipv6", r.get("cflow.icmp_type")))
            sport, dport = "0", (num(t) if t is not None else dport)
        octets = num(r.get("cflow.octets", r.get("cflow.octets64")))
        packets = num(r.get("cflow.packets", r.get("cflow.packets64")))
        print(",".join([src, dst, sport, dport, proto, octets, packets,
                        num(r.get("cflow.inputint")), num(r.get("cflow.outputint"))]))


main()
