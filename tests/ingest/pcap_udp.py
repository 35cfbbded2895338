#!/usr/bin/env python3
"""The UDP payloads of captures (classic pcap, Ethernet, VLAN tags, IPv4 or
IPv6), replayed as the datagrams an exporter sent:

  pcap_udp.py send PORT PCAP...   sends each payload to 127.0.0.1:PORT from
                                  127.0.0.2, in capture order
  pcap_udp.py pcap OUT PCAP...    writes them to OUT as datagrams from
                                  127.0.0.2 (what `send` puts on the wire), so
                                  a decoder reading OUT sees the same exporter
                                  address as a collector fed by `send`"""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vendor_corpus import frame  # noqa: E402

SRC = "127.0.0.2"


def payloads(path):
    d = open(path, "rb").read()
    if d[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif d[:4] in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        sys.exit("%s: not a classic pcap file" % path)
    if struct.unpack(e + "I", d[20:24])[0] != 1:
        sys.exit("%s: link type is not Ethernet" % path)
    off = 24
    while off + 16 <= len(d):
        incl = struct.unpack(e + "I", d[off + 8:off + 12])[0]
        p = d[off + 16:off + 16 + incl]
        off += 16 + incl
        et, i = struct.unpack("!H", p[12:14])[0], 14
        while et in (0x8100, 0x88A8):
            et, i = struct.unpack("!H", p[i + 2:i + 4])[0], i + 4
        if et == 0x0800:
            proto, i = p[i + 9], i + (p[i] & 15) * 4
        elif et == 0x86DD:
            proto, i = p[i + 6], i + 40
        else:
            continue
        if proto == 17:
            yield p[i + 8:]


def send(port, files):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((SRC, 0))
    for f in files:
        for pl in payloads(f):
            s.sendto(pl, ("127.0.0.1", port))
            time.sleep(0.002)


def write_pcap(out, files):
    t0 = 1767225600  # 2026-01-01 00:00:00 UTC
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        k = 0
        for fn in files:
            for pl in payloads(fn):
                p = frame(SRC, pl)
                f.write(struct.pack("<IIII", t0 + k // 1000, (k % 1000) * 1000, len(p), len(p)) + p)
                k += 1


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("send", "pcap"):
        sys.exit(__doc__)
    if sys.argv[1] == "send":
        send(int(sys.argv[2]), sys.argv[3:])
    else:
        write_pcap(sys.argv[2], sys.argv[3:])
