#!/usr/bin/env python3
"""Sends NetFlow v9 or IPFIX datagrams whose templates set nearly every field
nfcapd keeps (in/out counters, masks, interfaces, AS, next hops, VLANs, MACs,
MPLS stack, direction, engine, adjacent AS, NAT, firewall events, VRFs,
observation domain) with random values, IPv4 and IPv6 flows, ICMP among them,
to 127.0.0.1 only. Used by import_vs_nfdump.sh to make nfcapd files with
many fields set.

  nf_richgen.py --port P --proto v9|ipfix --flows N [--seed S]
"""
import argparse
import random
import socket
import struct
import time

V9_COMMON = [  # (id, length)
    (1, 8), (2, 8), (3, 4), (4, 1), (5, 1), (6, 1), (7, 2), (10, 4), (11, 2), (14, 4), (16, 4), (17, 4),
    (21, 4), (22, 4), (23, 8), (24, 8), (55, 1), (56, 6), (57, 6), (58, 2), (59, 2), (61, 1),
    (70, 3), (71, 3), (72, 3), (73, 3), (74, 3), (75, 3), (76, 3), (77, 3), (78, 3), (79, 3),
    (80, 6), (81, 6), (128, 4), (129, 4), (38, 1), (39, 1), (234, 4), (235, 4),
]
V4_ADDR = [(8, 4), (12, 4), (9, 1), (13, 1), (15, 4), (18, 4)]
V6_ADDR = [(27, 16), (28, 16), (29, 1), (30, 1), (62, 16), (63, 16)]
# v9 carries the firewall event, IPFIX the NAT event: nfdump prints both from
# one field, so a record with both could not be checked against it
NAT_V9 = [(225, 4), (226, 4), (227, 2), (228, 2), (233, 1), (33002, 2)]
NAT_IPFIX = [(225, 4), (226, 4), (227, 2), (228, 2), (230, 1)]


def ipfix_fields(fields):
    # IPFIX: absolute millisecond times instead of sysUptime offsets; no
    # adjacent AS, firewall events; the observation domain comes from the header
    out = []
    for f in fields:
        if f[0] == 21:
            out.append((153, 8))
        elif f[0] == 22:
            out.append((152, 8))
        elif f[0] in (128, 129):
            continue
        else:
            out.append(f)
    return out


def value(rng, fid, length, flow):
    if fid in flow:
        v = flow[fid]
    elif fid in (70, 71, 72, 73, 74, 75, 76, 77, 78, 79):
        v = (rng.randrange(1 << 20) << 4) | (rng.randrange(8) << 1) | (1 if fid == 79 else 0)
    else:
        v = rng.randrange(1 << (8 * min(length, 4)))
        if fid in (56, 57, 80, 81):
            v = rng.randrange(1 << 48)
    if isinstance(v, bytes):
        return v
    return v.to_bytes(length, "big")


def make_flow(rng, v6, now_ms, uptime_ms, ipfix):
    proto = rng.choice([6, 6, 17, 17, 1, 58 if v6 else 1, 47])
    last = now_ms - rng.randrange(1000, 600000)
    first = last - rng.randrange(0, 300000)
    f = {4: proto, 6: rng.randrange(256) if proto == 6 else 0, 7: rng.randrange(65536)}
    if proto in (1, 58):
        f[7] = 0
        f[11] = (rng.choice([0, 3, 8, 11]) << 8) | rng.randrange(4)
    else:
        f[11] = rng.randrange(65536)
    f[1] = rng.randrange(1, 1 << 40)
    f[2] = rng.randrange(1, 1 << 32)
    f[23] = rng.randrange(0, 1 << 40)
    f[24] = rng.randrange(0, 1 << 32)
    f[3] = rng.randrange(1, 1000)
    f[58] = rng.randrange(4096)
    f[59] = rng.randrange(4096)
    f[61] = rng.randrange(2)
    f[9] = f[29] = rng.randrange(33)
    f[13] = f[30] = rng.randrange(33)
    if ipfix:
        f[152] = first
        f[153] = last
    else:
        f[22] = uptime_ms - (now_ms - first)
        f[21] = uptime_ms - (now_ms - last)
    if v6:
        for k in (27, 28, 62, 63):
            f[k] = bytes([0x20, 0x01, 0x0d, 0xb8]) + rng.randbytes(12)
    else:
        for k in (8, 12, 15, 18, 225, 226):
            f[k] = rng.randrange(1, 1 << 32)
    f[230] = rng.randrange(1, 20)
    f[233] = rng.randrange(1, 6)
    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--proto", choices=["v9", "ipfix"], required=True)
    ap.add_argument("--flows", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--domain", type=int, default=77)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    ipfix = a.proto == "ipfix"
    nat = NAT_IPFIX if ipfix else NAT_V9
    tpl = {256: V4_ADDR + V9_COMMON + nat, 257: V6_ADDR + V9_COMMON}
    if ipfix:
        tpl = {k: ipfix_fields(v) for k, v in tpl.items()}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dest = ("127.0.0.1", a.port)
    uptime_ms = 4000000000
    seq = 0
    sent = 0
    per = 10
    while sent < a.flows:
        now = int(time.time())
        now_ms = now * 1000
        sets = b""
        if seq % 8 == 0:  # templates first and every 8 datagrams
            body = b""
            for tid, fields in tpl.items():
                body += struct.pack("!HH", tid, len(fields))
                body += b"".join(struct.pack("!HH", f, l) for f, l in fields)
            sid = 2 if ipfix else 0
            sets += struct.pack("!HH", sid, 4 + len(body)) + body
        count = 0
        for tid, fields in tpl.items():
            recs = b""
            for _ in range(per // 2):
                if sent >= a.flows:
                    break
                fl = make_flow(rng, tid == 257, now_ms, uptime_ms, ipfix)
                recs += b"".join(value(rng, f, l, fl) for f, l in fields)
                sent += 1
                count += 1
            if recs:
                pad = (-len(recs)) % 4
                sets += struct.pack("!HH", tid, 4 + len(recs) + pad) + recs + b"\0" * pad
        if ipfix:  # sequence = data records sent before this message
            hdr = struct.pack("!HHIII", 10, 16 + len(sets), now, sent - count, a.domain)
        else:
            hdr = struct.pack("!HHIIII", 9, count + (len(tpl) if seq % 8 == 0 else 0), uptime_ms, now, seq, a.domain)
        sock.sendto(hdr + sets, dest)
        seq += 1
        time.sleep(0.002)
    print(sent)


if __name__ == "__main__":
    main()
