#!/usr/bin/env python3
"""Seeds for the flow-path fuzz targets (fuzz_flow_paths.h input format:
[2-byte length][selector][bytes] chunks) and for fuzz_sflow (datagrams with a
2-byte length prefix: a generated sFlow v5 datagram, plus the sFlow datagrams
of captures given as arguments, e.g. akvorado's real ones for a local run;
those are AGPL-licensed and are not committed).

  gen_flow_seeds.py CORPUS_DIR [SFLOW.pcap ...]"""
import os
import struct
import sys

out = sys.argv[1]


def chunk(sel, body):
    return struct.pack("!HB", len(body), sel) + body


def varlen(s):
    s = s.encode() if isinstance(s, str) else s
    return bytes([len(s)]) + s if len(s) < 255 else b"\xff" + struct.pack("!H", len(s)) + s


def save(name, i, data):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "gen-%d" % i), "wb").write(data)


ip = struct.pack("!I", 0x0a000001)
frame = bytes(12) + b"\x08\x00" + bytes([0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0]) + ip + ip + bytes(20)
r256 = ip + varlen("eth0") + ip + struct.pack("!II", 500, 5) + varlen(frame)
r256b = ip + varlen("x" * 300) + ip + struct.pack("!II", 1, 1) + varlen(b"")
sub = struct.pack("!B", 3) + struct.pack("!HH", 258, 16) + bytes(range(12))
r257 = varlen(sub) + varlen(struct.pack("!BH", 3, 258) + bytes(12)) + struct.pack("!H", 80)
r259 = struct.pack("!H", 9) + bytes(15) + b"\x01" + varlen("descr")
for i, v9 in enumerate((0, 0x80)):
    save("flow_varlen", i, chunk(v9 | 0, r256 + r256b) + chunk(v9 | 1, r257) + chunk(v9 | 2, bytes(range(24))) +
         chunk(v9 | 3, r259))

o300 = struct.pack("!II", 1, 3) + struct.pack("!IBBBI", 100, 2, 1, 1, 100) + b"ge-0/0/0".ljust(16, b"\0") + \
    struct.pack("!Q", 1699990000000)
o301 = struct.pack("!IIIB", 7, 1, 99, 2)
o302 = struct.pack("!I", 3) + varlen("ge-0/0/1") + varlen("uplink")
o303 = struct.pack("!IQIB", 0, 1699990000000, 1000, 1)
d310 = ip + ip + struct.pack("!BIIIIII", 1, 7, 10, 1, 9000, 9500, 0) + struct.pack("!II", 5, 1)
save("flow_options", 0, chunk(0x80 | 0, o300) + chunk(0x80 | 4, d310 * 3))
save("flow_options", 1, chunk(1, o301) + chunk(2, o302) + chunk(3, o303) + chunk(4, d310 * 2))

bi = ip + ip + b"\x06" + struct.pack("!QQH", 1000, 10, 0x12) + struct.pack("!QIBQ", 5000, 20, 0x10, 5000) + \
    struct.pack("!II", 7, 8) + struct.pack("!QQ", 1699999999000, 1700000000000) + b"\x20"
asa = ip + ip + b"\x11" + struct.pack("!IIIIBH", 4444, 8888, 4, 8, 2, 2030) + ip + ip + struct.pack("!HH", 1, 2) + \
    ip + ip + struct.pack("!HH", 3, 4) + bytes(32) + struct.pack("!QQB", 1699999999000, 1699999998000, 7)
ext = bytes(range(32)) + bytes([24, 16]) + ip + bytes(16) + ip + bytes(16) + b"\xb8" + bytes(range(24)) + \
    struct.pack("!HHB", 10, 20, 1) + bytes([0x3e, 0x80, 0x01]) * 3 + struct.pack("!IIIIBBI", 1, 2, 3, 4, 5, 6, 7) + \
    struct.pack("!IIQI", 8, 1000, 0xe8f3c0a800000000, 5000)
save("flow_biflow", 0, chunk(0, bi) + chunk(1, asa) + chunk(2, ext))
save("flow_biflow", 1, chunk(0x80, bi * 2) + chunk(0x81, asa) + chunk(0x82, ext))


def pcap_udp_payloads(path):
    data = open(path, "rb").read()
    le = data[:4] == b"\xd4\xc3\xb2\xa1" or data[:4] == b"\x4d\x3c\xb2\xa1"
    e = "<" if le else ">"
    off, res = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack(e + "I", data[off + 8:off + 12])[0]
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(pkt) > 42 and pkt[12:14] == b"\x08\x00" and pkt[23] == 17:
            ihl = (pkt[14] & 15) * 4
            res.append(pkt[14 + ihl + 8:])
    return res


def w(*v):
    return b"".join(struct.pack("!I", x) for x in v)


def rec(fmt, body):
    return w(fmt, len(body)) + body


eth = bytes.fromhex("020000000001" "020000000002" "0800")
ip4 = bytes([0x45, 0x10, 0x03, 0xd6, 0, 0, 0, 0, 64, 6, 0, 0]) + struct.pack("!II", 0x0a010101, 0x0a020202)
tcp = struct.pack("!HHIIBBHHH", 1234, 80, 0, 0, 0x50, 0x18, 1000, 0, 0)
raw = eth + ip4 + tcp
raw_rec = rec(1, w(1, 1000, 4, len(raw)) + raw + bytes(-len(raw) % 4))
switch = rec(1001, w(10, 0, 20, 0))
router = rec(1002, w(1, 0x0a090909, 24, 16))
gateway = rec(1003, w(1, 0x0a080808, 65000, 65001, 65002, 1, 2, 2, 65010, 65020, 0, 100))
fs = w(1, 5, 512, 10000, 0, 7, 8, 4) + raw_rec + switch + router + gateway
ip6 = rec(4, w(500, 17) + bytes(15) + b"\x01" + bytes(15) + b"\x02" + w(53, 5353, 0, 0))
efs = w(2, 0, 5, 100, 5000, 0, 0, 1000000, 0, 2000000, 1) + ip6
dgram = w(5, 1, 0x0a000001, 3, 1, 1000, 3) + rec(1, fs) + rec(2, w(1, 5)) + rec(3, efs)
save("sflow", 0, struct.pack("!H", len(dgram)) + dgram)
save("sflow", 1, struct.pack("!H", len(dgram)) + dgram + struct.pack("!H", 60) + dgram[:60])

for i, p in enumerate(sys.argv[2:]):
    seed = b"".join(struct.pack("!H", len(d)) + d for d in pcap_udp_payloads(p))
    if seed:
        save("sflow", 10 + i, seed)
