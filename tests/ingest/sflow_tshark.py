#!/usr/bin/env python3
"""Reads `tshark -T json --no-duplicate-keys` of sFlow v5 datagrams on stdin
and prints one line per flow sample, the fields bitarc stores for it:
src,dst,sport,dport,proto,packets,bytes,in_if,out_if,vlan,dst_vlan,src_as,
dst_as,src_mask,dst_mask,next_hop,bgp_next_hop,tcp_flags
(packets = sampling rate, bytes = rate x frame length, as sfcapd; ICMP:
sport 0, dport type<<8|code)."""
import json
import sys


def first(v):
    return v[0] if isinstance(v, list) else v


def num(v, default=0):
    if v is None:
        return default
    v = first(v)
    try:
        return int(v, 0)
    except ValueError:
        return default


def find(o, key):
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


def find_all(o, pred, out):
    if isinstance(o, dict):
        if pred(o):
            out.append(o)
            return out
        for v in o.values():
            find_all(v, pred, out)
    elif isinstance(o, list):
        for v in o:
            find_all(v, pred, out)
    return out


def records_of(sample):
    """The flow records of a sample: dicts with a flow_record_format."""
    return find_all(sample, lambda d: "sflow_245.flow_record_format" in d, [])


def sample_line(s):
    rate = num(s.get("sflow.flow_sample.sampling_rate"))
    inv = find(s, "sflow.flow_sample.input_interface_value")
    in_if = num(inv) if inv is not None else num(s.get("sflow.flow_sample.input_interface")) & 0x3fffffff
    out_if = num(find(s, "sflow.flow_sample.output_interface_value"))
    f = {"src": "0.0.0.0", "dst": "0.0.0.0", "sport": 0, "dport": 0, "proto": 0, "flen": 0, "vlan": 0, "dvlan": 0,
         "sas": 0, "das": 0, "smk": 0, "dmk": 0, "nh": "", "bnh": "", "flags": 0}
    for r in records_of(s):
        fmt = num(r["sflow_245.flow_record_format"])
        if fmt == 1:
            f["flen"] = num(r.get("sflow_245.header.frame_length"))
            t = r.get("sflow_245.header_tree", {})
            ip = t.get("ip") or t.get("ipv6") or find(t, "ip") or find(t, "ipv6")
            if ip is None:
                continue
            v6 = "ipv6.src" in ip
            f["src"] = first(ip["ipv6.src" if v6 else "ip.src"])
            f["dst"] = first(ip["ipv6.dst" if v6 else "ip.dst"])
            f["proto"] = num(ip.get("ipv6.nxt" if v6 else "ip.proto"))
            l4 = t.get("tcp") or t.get("udp") or t.get("icmp") or t.get("icmpv6") or {}
            if "tcp.srcport" in l4:
                f["sport"], f["dport"] = num(l4["tcp.srcport"]), num(l4["tcp.dstport"])
                f["flags"] = num(l4.get("tcp.flags")) & 0xff
            elif "udp.srcport" in l4:
                f["sport"], f["dport"] = num(l4["udp.srcport"]), num(l4["udp.dstport"])
            elif "icmp.type" in l4 or "icmpv6.type" in l4:
                p = "icmp." if "icmp.type" in l4 else "icmpv6."
                f["dport"] = num(l4[p + "type"]) << 8 | num(l4.get(p + "code"))
            vl = t.get("vlan")  # Q-in-Q: the innermost tag (sfcapd, akvorado)
            if vl:
                ids = [num(x) for x in (vl if isinstance(vl, list) else [vl]) for x in [find(x, "vlan.id")] if x]
                if ids and ids[-1]:
                    f["vlan"] = ids[-1]
        elif fmt in (3, 4):
            f["flen"] = num(r.get("sflow_245.ip.length"))
            v = "4" if fmt == 3 else "6"
            f["src"] = first(r.get("sflow_245.ipv%s_src" % v, f["src"]))
            f["dst"] = first(r.get("sflow_245.ipv%s_dst" % v, f["dst"]))
            f["proto"] = num(r.get("sflow.ip_protocol"))
            f["sport"] = num(r.get("sflow_245.ip.source_port"))
            f["dport"] = num(r.get("sflow.ip.destination_port"))
            bits = ["fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr"]
            f["flags"] = sum(1 << i for i, b in enumerate(bits) if num(r.get("sflow_245.ip.tcp_flag." + b)))
            if f["proto"] in (1, 58):  # type and code in the port fields
                f["dport"] = f["sport"] << 8 | f["dport"]
        elif fmt == 1001:
            f["vlan"] = num(r.get("sflow_245.vlan.in"))
            f["dvlan"] = num(r.get("sflow_245.vlan.out"))
        elif fmt == 1002:
            f["nh"] = first(r.get("sflow_245.nexthop", ""))
            f["smk"] = num(find(r, "sflow_245.nexthop.src_mask"))
            f["dmk"] = num(find(r, "sflow_245.nexthop.dst_mask"))
        elif fmt == 1003:
            f["bnh"] = first(r.get("sflow_245.nexthop", ""))
            f["sas"] = num(r.get("sflow_245.srcAS"))
            d = find(r, "sflow_245.dstAS")
            f["das"] = num(d[-1] if isinstance(d, list) and d else d)
    if f["proto"] in (1, 58):
        f["sport"] = 0
    for k in ("vlan", "dvlan"):  # 0xffffffff: unknown VLAN, stored as none
        if f[k] > 4095:
            f[k] = 0
    for k in ("nh", "bnh"):
        if f[k] in ("0.0.0.0", "::"):
            f[k] = ""
    return "%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%s,%d" % (
        f["src"], f["dst"], f["sport"], f["dport"], f["proto"], rate, rate * f["flen"], in_if, out_if, f["vlan"],
        f["dvlan"], f["sas"], f["das"], f["smk"], f["dmk"], f["nh"], f["bnh"], f["flags"])


def main():
    for pkt in json.load(sys.stdin):
        sf = pkt["_source"]["layers"].get("sflow")
        if not sf:
            continue
        for s in find_all(sf, lambda d: "sflow.flow_sample.sampling_rate" in d, []):
            print(sample_line(s))


if __name__ == "__main__":
    main()
