#!/usr/bin/env python3
"""Sends IPFIX flows with every extended field set (next hops, masks, VLANs,
MACs, MPLS labels, NAT addresses/ports/event, VRFs, flow direction, adjacent
ASes, engine ids via the observation domain) to one or more loopback UDP ports,
so the same datagrams reach bitarc collect and nfcapd.
Usage: ipfix_allfields.py --flows N --seed S PORT [PORT...]"""
import random, socket, struct, sys, time

# (IE id, length)
FIELDS = [(152, 8), (153, 8), (8, 4), (12, 4), (7, 2), (11, 2), (4, 1), (6, 1),
          (5, 1), (55, 1), (2, 8), (1, 8), (24, 8), (23, 8), (10, 4), (14, 4),
          (16, 4), (17, 4), (9, 1), (13, 1), (15, 4), (18, 4), (58, 2), (59, 2),
          (56, 6), (80, 6), (81, 6), (57, 6), (70, 3), (71, 3), (72, 3), (61, 1),
          (225, 4), (226, 4), (227, 2), (228, 2), (230, 1), (234, 4), (235, 4),
          (128, 4), (129, 4)]
TID = 300


def record(rng, t0):
    f = {}
    start = t0 + rng.randrange(0, 3600 * 1000)
    f[152] = start
    f[153] = start + rng.randrange(0, 60000)
    f[8] = 0x0A040000 | rng.randrange(0, 64)
    f[12] = 0xC0A80000 | rng.randrange(0, 64)
    f[7] = rng.choice([53, 80, 443, 1024 + rng.randrange(0, 100)])
    f[11] = rng.choice([53, 80, 443, 1024 + rng.randrange(0, 100)])
    f[4] = rng.choice([6, 17])
    f[6] = rng.randrange(0, 64) if f[4] == 6 else 0
    f[5] = rng.choice([0, 32, 46])
    f[55] = rng.choice([0, 8, 46])
    f[2] = rng.randrange(1, 1000)
    f[1] = f[2] * rng.randrange(40, 1500)
    f[24] = rng.randrange(0, 500)
    f[23] = f[24] * rng.randrange(40, 1500)
    f[10] = rng.randrange(1, 8)
    f[14] = rng.randrange(1, 8)
    f[16] = rng.randrange(1, 10)
    f[17] = rng.randrange(60000, 60010)
    f[9] = rng.choice([8, 16, 24])
    f[13] = rng.choice([16, 24, 32])
    f[15] = 0x0A000001 + rng.randrange(0, 4)
    f[18] = 0xAC100001 + rng.randrange(0, 4)
    f[58] = rng.randrange(1, 5)
    f[59] = rng.randrange(10, 15)
    for k in (56, 80, 81, 57):
        f[k] = bytes([0, 0x11, 0x22, 0, k, rng.randrange(0, 4)])
    for k in (70, 71, 72):
        label = rng.randrange(16, 20) + (k - 70) * 100
        f[k] = ((label << 4) | (rng.randrange(0, 8) << 1) | (1 if k == 72 else 0)).to_bytes(3, "big")
    f[61] = rng.randrange(0, 2)
    f[225] = 0x64400000 | rng.randrange(0, 16)
    f[226] = 0x08080800 | rng.randrange(0, 4)
    f[227] = 40000 + rng.randrange(0, 8)
    f[228] = rng.choice([53, 443])
    f[230] = rng.randrange(1, 3)
    f[234] = rng.randrange(0, 3)
    f[235] = rng.randrange(0, 3)
    f[128] = rng.randrange(100, 103)
    f[129] = rng.randrange(200, 203)
    out = b""
    for ie, ln in FIELDS:
        v = f[ie]
        out += v if isinstance(v, bytes) else v.to_bytes(ln, "big")
    return out


def main():
    a = sys.argv[1:]
    n = int(a[a.index("--flows") + 1]); seed = int(a[a.index("--seed") + 1])
    ports = [int(p) for i, p in enumerate(a) if i >= 4]
    rng = random.Random(seed)
    t0 = 1720656000 * 1000
    tmpl = struct.pack("!HH", TID, len(FIELDS)) + b"".join(struct.pack("!HH", i, l) for i, l in FIELDS)
    tset = struct.pack("!HH", 2, 4 + len(tmpl)) + tmpl
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seq = 0
    per = 10
    for i in range(0, n, per):
        recs = b"".join(record(rng, t0) for _ in range(min(per, n - i)))
        dset = struct.pack("!HH", TID, 4 + len(recs)) + recs
        body = tset + dset
        msg = struct.pack("!HHIII", 10, 16 + len(body), t0 // 1000 + 7200, seq, 7) + body
        seq += min(per, n - i)
        for p in ports:
            s.sendto(msg, ("127.0.0.1", p))
        time.sleep(0.002)
    print(n)


main()
