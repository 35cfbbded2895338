#!/usr/bin/env python3
"""Wraps flow-export datagrams into a pcap (Ethernet/IPv4/UDP), one packet each.
Input: a file of datagrams each prefixed by a 2-byte big-endian length (what
tests/ingest/udp_sink.py writes). Usage: datagrams_to_pcap.py IN OUT [dport] [exporter]"""
import socket
import struct
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    dport = int(sys.argv[3]) if len(sys.argv) > 3 else 2055
    exporter = socket.inet_aton(sys.argv[4] if len(sys.argv) > 4 else "192.0.2.10")
    data = open(src, "rb").read()
    out = open(dst, "wb")
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    off, n, ts = 0, 0, 1700000000
    while off + 2 <= len(data):
        ln = struct.unpack(">H", data[off:off + 2])[0]
        dg = data[off + 2:off + 2 + ln]
        off += 2 + ln
        udp = struct.pack(">HHHH", 40000, dport, 8 + len(dg), 0) + dg
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), n & 0xFFFF, 0, 64, 17, 0, exporter,
                         socket.inet_aton("192.0.2.200")) + udp
        frame = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip
        out.write(struct.pack("<IIII", ts + n // 1000, (n % 1000) * 1000, len(frame), len(frame)))
        out.write(frame)
        n += 1
    sys.stderr.write("%d datagrams\n" % n)


main()
