#!/usr/bin/env python3
"""pcap_udp.py OUT PCAP...: the UDP payloads of captures (classic pcap,
Ethernet, VLAN tags, IPv4 or IPv6), in capture order, written to OUT in
udp_sink.py's format (a 2-byte big-endian length, then the datagram), so
that vendor_corpus.py file2udp / file2pcap replay them as udp_sink.py's
recordings are."""
import struct
import sys


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


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1], "wb") as out:
        for f in sys.argv[2:]:
            for pl in payloads(f):
                out.write(len(pl).to_bytes(2, "big") + pl)
