#!/usr/bin/env python3
"""Real export datagrams of many vendors (data/logstash/*.dat, one UDP payload
each, grouped per exporter in data/logstash/GROUPS).

  vendor_corpus.py groups                  list the group names
  vendor_corpus.py pcap OUT [GROUP...]     write a pcap: group i is sent from
                                           127.0.0.(i+2) to 127.0.0.1:2055
  vendor_corpus.py splitpcap OUT [GROUP...] the same, each NetFlow v5 message and each
                                           v9 / IPFIX set in a frame of its own (tshark
                                           decodes only a datagram's first message and
                                           stops at a field it cannot read)
  vendor_corpus.py send PORT [GROUP...]    send the same datagrams from the same
                                           source addresses to 127.0.0.1:PORT
  vendor_corpus.py file2pcap IN OUT [split] datagrams recorded by udp_sink.py (2-byte
                                           length prefixed) into a pcap from 127.0.0.2
                                           (split: messages and sets as splitpcap)
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


def sets(m, hlen, fix):
    """A message cut into one message per set (the header copied, its length
    fixed by fix(header, new length)); a message whose sets do not add up to
    its length stays whole."""
    out, off = [], hlen
    while off + 4 <= len(m):
        n = struct.unpack("!H", m[off + 2:off + 4])[0]
        if n < 4 or off + n > len(m):
            return [m]
        out.append(fix(m[:hlen], hlen + n) + m[off:off + n])
        off += n
    return out if out and off == len(m) else [m]


def messages(d, per_set=False):
    """A datagram's NetFlow v5 / IPFIX messages by their headers' count or
    length (v9 has neither: one message); bytes no header accounts for stay
    with the last message. per_set: each v9 / IPFIX set in a message of its
    own (tshark gives up on the rest of a datagram after a malformed field)."""
    out, off = [], 0
    while len(d) - off >= 4:
        ver = struct.unpack("!H", d[off:off + 2])[0]
        if ver == 5:
            n = 24 + 48 * struct.unpack("!H", d[off + 2:off + 4])[0]
        elif ver == 10:
            n = struct.unpack("!H", d[off + 2:off + 4])[0]
        else:
            break
        if n < 16 or off + n > len(d):
            break
        out.append(d[off:off + n])
        off += n
    if not out:
        out = [d]
    else:
        out[-1] += d[off:]
    if not per_set:
        return out
    res = []
    for m in out:
        ver = struct.unpack("!H", m[:2])[0] if len(m) >= 2 else 0
        if ver == 9 and len(m) > 20:
            res += sets(m, 20, lambda h, n: h)
        elif ver == 10 and len(m) > 16 and struct.unpack("!H", m[2:4])[0] == len(m):
            res += sets(m, 16, lambda h, n: h[:2] + struct.pack("!H", n) + h[4:])
        else:
            res.append(m)
    return res


def write_pcap(out, names, split=False):
    t0 = 1767225600  # 2026-01-01 00:00:00 UTC, the "receive" time
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        k = 0
        for i, _, files in selected(names):
            for fn in files:
                d = open(os.path.join(HERE, fn), "rb").read()
                for m in messages(d, per_set=True) if split else [d]:
                    p = frame("127.0.0.%d" % (i + 2), m)
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


def file2pcap(src, out, split=False):
    t0 = 1767225600
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        k = 0
        for d in read_sink(src):
            for m in messages(d, per_set=True) if split else [d]:
                p = frame("127.0.0.2", m)
                f.write(struct.pack("<IIII", t0 + k // 1000, (k % 1000) * 1000, len(p), len(p)) + p)
                k += 1


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
    elif sys.argv[1] == "splitpcap":
        write_pcap(sys.argv[2], sys.argv[3:], split=True)
    elif sys.argv[1] == "send":
        send(int(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1] == "file2pcap":
        file2pcap(sys.argv[2], sys.argv[3], sys.argv[4:] == ["split"])
    elif sys.argv[1] == "file2udp":
        file2udp(sys.argv[2], int(sys.argv[3]))
