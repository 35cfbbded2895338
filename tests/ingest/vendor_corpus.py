#!/usr/bin/env python3
"""Real export datagrams of many vendors (data/logstash/*.dat, one UDP payload
each, grouped per exporter in data/logstash/GROUPS).

  vendor_corpus.py groups                  list the group names
  vendor_corpus.py pcap OUT [GROUP...]     write a pcap: group i is sent from
                                           127.0.0.(i+2) to 127.0.0.1:2055
  vendor_corpus.py send PORT [GROUP...]    send the same datagrams from the same
                                           source addresses to 127.0.0.1:PORT
  vendor_corpus.py file2pcap IN OUT        datagrams recorded by udp_sink.py (2-byte
                                           length prefixed) into a pcap from 127.0.0.2
  vendor_corpus.py file2udp IN PORT        the same datagrams sent from 127.0.0.2
"""
import os
import socket
import struct
import sys
import time

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "logstash")


def groups():
    out = []
    for line in open(os.path.join(HERE, "GROUPS")):
        line = line.strip()
        if line and not line.startswith("#"):
            w = line.split()
            out.append((w[0], w[1:]))
    return out


def selected(names):
    g = groups()
    idx = {name: i for i, (name, _) in enumerate(g)}
    names = names or [n for n, _ in g]
    return [(idx[n], n, dict(g)[n]) for n in names]


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(src_ip, payload):
    udp = struct.pack("!HHHH", 5000, 2055, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton("127.0.0.1"))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    eth = b"\x02\0\0\0\0\x01" + b"\x02\0\0\0\0\x02" + b"\x08\x00"
    return eth + ip + udp


def write_pcap(out, names):
    t0 = 1767225600  # 2026-01-01 00:00:00 UTC, the "receive" time
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        k = 0
        for i, _, files in selected(names):
            for fn in files:
                p = frame("127.0.0.%d" % (i + 2), open(os.path.join(HERE, fn), "rb").read())
                f.write(struct.pack("<IIII", t0 + k // 1000, (k % 1000) * 1000, len(p), len(p)) + p)
                k += 1


def send(port, names):
    for i, _, files in selected(names):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.%d" % (i + 2), 0))
        for fn in files:
            s.sendto(open(os.path.join(HERE, fn), "rb").read(), ("127.0.0.1", port))
            time.sleep(0.005)
        s.close()


def read_sink(path):
    data, off, out = open(path, "rb").read(), 0, []
    while off + 2 <= len(data):
        n = struct.unpack("!H", data[off:off + 2])[0]
        out.append(data[off + 2:off + 2 + n])
        off += 2 + n
    return out


def file2pcap(src, out):
    t0 = 1767225600
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for k, d in enumerate(read_sink(src)):
            p = frame("127.0.0.2", d)
            f.write(struct.pack("<IIII", t0 + k // 1000, (k % 1000) * 1000, len(p), len(p)) + p)


def file2udp(src, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.2", 0))
    for d in read_sink(src):
        s.sendto(d, ("127.0.0.1", port))
        time.sleep(0.002)


if __name__ == "__main__":
    if sys.argv[1] == "groups":
        print("\n".join(n for n, _ in groups()))
    elif sys.argv[1] == "pcap":
        write_pcap(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "send":
        send(int(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1] == "file2pcap":
        file2pcap(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "file2udp":
        file2udp(sys.argv[2], int(sys.argv[3]))
