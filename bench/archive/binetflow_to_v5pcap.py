#!/usr/bin/env python3
"""Turns Argus bidirectional flow records (.binetflow CSV, as the CTU-13 data
set ships them; optionally xz-compressed) into NetFlow v5 export datagrams
inside a pcap, so the same real flows can be ingested by `bitarc ingest` and
replayed to nfcapd. One v5 record per CSV row (IPv4 only; v5 cannot carry
IPv6: such rows are counted and skipped), 30 records per datagram, times
relative to the datagram's sysUptime as an exporter sends them.
Usage: binetflow_to_v5pcap.py IN.binetflow[.xz] OUT.pcap [max_rows]"""
import lzma
import socket
import struct
import sys
from datetime import datetime, timezone

PROTOS = {"tcp": 6, "udp": 17, "icmp": 1, "igmp": 2, "gre": 47, "esp": 50, "ipv6-icmp": 58,
          "rtp": 17, "rtcp": 17, "udt": 17, "pim": 103, "ipnip": 4, "ipv6": 41, "arp": None,
          "llc": None, "ipx/spx": None, "rarp": None}
FLAGS = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, "A": 0x10, "U": 0x20, "E": 0x40, "C": 0x80}


def port(s):
    s = s.strip()
    if not s:
        return 0
    return int(s, 16) & 0xFFFF if s.startswith("0x") else int(s) & 0xFFFF


def flags(state):
    f = 0
    for half in state.split("_"):
        for ch in half:
            f |= FLAGS.get(ch, 0)
    return f


def main():
    src, dst = sys.argv[1], sys.argv[2]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
    fh = lzma.open(src, "rt") if src.endswith(".xz") else open(src)
    out = open(dst, "wb")
    out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    header = fh.readline().strip().split(",")
    col = {n: i for i, n in enumerate(header)}
    recs, seq, ndg, kept, skipped = [], 0, 0, 0, 0
    boot = None

    def flush():
        nonlocal recs, seq, ndg
        if not recs:
            return
        now_ms = max(r[0] for r in recs)
        unix = now_ms // 1000
        uptime = (now_ms - boot) & 0xFFFFFFFF
        body = b""
        for (end_ms, start_ms, sa, da, sp, dp, pr, fl, tos, pk, by) in recs:
            first = (start_ms - boot) & 0xFFFFFFFF
            last = (end_ms - boot) & 0xFFFFFFFF
            body += struct.pack(">4s4s4sHHIIIIHHBBBBHHBBH", sa, da, b"\0\0\0\0", 0, 0, pk & 0xFFFFFFFF,
                                by & 0xFFFFFFFF, first, last, sp, dp, 0, fl, pr, tos, 0, 0, 0, 0, 0)
        dg = struct.pack(">HHIIIIBBH", 5, len(recs), uptime, unix, (now_ms % 1000) * 1000000, seq, 0, 0, 0) + body
        seq += len(recs)
        udp = struct.pack(">HHHH", 40000, 2055, 8 + len(dg), 0) + dg
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), ndg & 0xFFFF, 0, 64, 17, 0,
                         socket.inet_aton("192.0.2.10"), socket.inet_aton("192.0.2.200")) + udp
        frame = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip
        out.write(struct.pack("<IIII", unix, (now_ms % 1000) * 1000, len(frame), len(frame)) + frame)
        ndg += 1
        recs = []

    for line in fh:
        if limit is not None and kept >= limit:
            break
        f = line.rstrip("\n").split(",")
        try:
            pr = PROTOS.get(f[col["Proto"]].strip().lower(), -1)
            sa = socket.inet_aton(f[col["SrcAddr"]].strip())
            da = socket.inet_aton(f[col["DstAddr"]].strip())
            t = datetime.strptime(f[col["StartTime"]].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
        except (OSError, ValueError):
            skipped += 1
            continue
        if pr is None or pr < 0:
            skipped += 1
            continue
        start_ms = int(t.timestamp() * 1000)
        end_ms = start_ms + int(float(f[col["Dur"]] or 0) * 1000)
        if boot is None:
            boot = start_ms - 1000
        tos = int(f[col["sTos"]] or 0) if f[col["sTos"]].strip().isdigit() else 0
        recs.append((end_ms, start_ms, sa, da, port(f[col["Sport"]]), port(f[col["Dport"]]), pr,
                     flags(f[col["State"]]) if pr == 6 else 0, tos, int(f[col["TotPkts"]]), int(f[col["TotBytes"]])))
        kept += 1
        if len(recs) == 30:
            flush()
    flush()
    sys.stderr.write("%d flows in %d datagrams, %d rows skipped (non-IPv4 or unparsable)\n" % (kept, ndg, skipped))


main()
