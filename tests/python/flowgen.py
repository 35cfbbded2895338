"""Test and benchmark flows as captures of IPFIX exports, for `bitarc ingest`.

    flows = generated(n, seed, start_s, hours)        # skewed random flows, IPv4 and IPv6
    flows = ctu13(path, n)                             # the first n real flows of CTU-13 scenario 6
    write_ipfix_pcap(path, flows, exporter="192.0.2.1")

A flow is a tuple (first_ms, last_ms, src, dst, sport, dport, proto, flags,
tos, packets, bytes, in_if, out_if, src_as, dst_as, icmp) with addresses as
ipaddress objects. The capture holds Ethernet/IPv4/UDP datagrams to port 4739,
each an IPFIX message of at most 1400 bytes; the templates are sent in the
first message and every 64th."""

import ipaddress
import lzma
import random
import struct

F_IPV4 = [(152, 8), (153, 8), (8, 4), (12, 4), (7, 2), (11, 2), (4, 1), (6, 2), (5, 1), (2, 8), (1, 8),
          (10, 4), (14, 4), (16, 4), (17, 4), (32, 2)]
F_IPV6 = [(152, 8), (153, 8), (27, 16), (28, 16), (7, 2), (11, 2), (4, 1), (6, 2), (5, 1), (2, 8), (1, 8),
          (10, 4), (14, 4), (16, 4), (17, 4), (139, 2)]
REC4 = struct.Struct(">QQ4s4sHHBHBQQIIIIH")
REC6 = struct.Struct(">QQ16s16sHHBHBQQIIIIH")
SVC = [80, 443, 53, 137, 445, 22, 8080, 25, 123, 3389, 1024, 2048, 6000]
FLAGS = [0x02, 0x12, 0x18, 0x1B, 0x10, 0x11, 0x04, 0x14, 0x1F, 0xC2, 0x3F, 0x01]


def _zipf(r, n, s):
    """A Zipf-like index in [0, n): continuous inverse-CDF approximation."""
    u = r.random()
    if s == 1.0:
        import math
        v = math.exp(u * math.log(n + 1.0)) - 1.0
    else:
        v = (u * ((n + 1.0) ** (1.0 - s) - 1.0) + 1.0) ** (1.0 / (1.0 - s)) - 1.0
    return min(int(v), n - 1)


def generated(n, seed, start_s, hours):
    """n skewed flows with first times spread over `hours` from start_s (s)."""
    r = random.Random(seed)
    p6 = [ipaddress.ip_address(x) for x in ("2001:db8::", "2001:db8:0:1::", "fe80::", "2a00:1450:4001::")]
    out = []
    for _ in range(n):
        first = start_s * 1000 + r.randrange(hours * 3600 * 1000)
        last = first + _zipf(r, 100000, 1.1)
        if r.randrange(10) == 0:
            src = p6[_zipf(r, 4, 1.0)] + _zipf(r, 20, 1.0)
            dst = p6[_zipf(r, 4, 1.0)] + _zipf(r, 20, 1.0)
        else:
            k = r.randrange(10)
            if k < 6:
                s = 0x0A040000 | (_zipf(r, 64, 1.2) << 8) | _zipf(r, 256, 1.0)
            elif k < 8:
                s = 0xC0A80000 | _zipf(r, 4096, 1.1)
            else:
                s = r.getrandbits(32)
            k = r.randrange(4)
            d = (0x0A050500 | _zipf(r, 256, 1.0)) if k == 0 else \
                (0xAC100000 | _zipf(r, 1 << 20, 1.0)) if k == 1 else (_zipf(r, 1 << 31, 0.9) * 2 + 1)
            src, dst = ipaddress.IPv4Address(s), ipaddress.IPv4Address(d)
        pk = r.randrange(20)
        proto = 6 if pk < 14 else 17 if pk < 18 else (58 if src.version == 6 else 1) if pk == 18 else 47
        sport = dport = flags = icmp = 0
        if proto in (6, 17):
            dport = SVC[_zipf(r, len(SVC), 1.0)] if r.randrange(4) else r.randrange(65536)
            sport = 1024 + r.randrange(64512)
            if r.randrange(8) == 0:
                sport, dport = dport, sport
        elif proto in (1, 58):
            icmp = ((8 if r.randrange(2) else r.randrange(12)) << 8) | r.randrange(2)
        if proto == 6:
            flags = FLAGS[_zipf(r, len(FLAGS), 1.0)]
        packets = 1 + _zipf(r, 100000, 1.2)
        out.append((first, last, src, dst, sport, dport, proto, flags, 0x20 if r.randrange(8) == 0 else 0,
                    packets, packets * (40 + r.randrange(1460)), r.randrange(8), r.randrange(8),
                    _zipf(r, 70000, 1.0), _zipf(r, 70000, 1.0), icmp))
    out.sort(key=lambda f: f[0])
    return out


_PROTO = {"tcp": 6, "udp": 17, "icmp": 1, "igmp": 2, "ipv6-icmp": 58, "esp": 50, "rtp": 17, "rtcp": 17}


def _port(s):
    s = s.strip()
    return 0 if not s else int(s, 16) if s.startswith("0x") else int(s)


def ctu13(path, n):
    """The first n IP flows (in file order, which is start-time order) of the
    CTU-13 scenario 6 Argus file; times are read as UTC, TCP flags from the
    state letters, ICMP type/code from the port columns."""
    import calendar
    out = []
    with lzma.open(path, "rt") as f:
        next(f)
        for line in f:
            c = line.rstrip("\n").split(",")
            proto = _PROTO.get(c[2])
            if proto is None:
                continue
            try:
                src, dst = ipaddress.ip_address(c[3]), ipaddress.ip_address(c[6])
                sport, dport = _port(c[4]), _port(c[7])
            except ValueError:
                continue
            if src.version != dst.version:
                continue
            day, tod = c[0].split(" ")
            y, mo, d = (int(x) for x in day.split("/"))
            hh, mm, ss = tod.split(":")
            first = calendar.timegm((y, mo, d, int(hh), int(mm), 0)) * 1000 + int(float(ss) * 1000)
            last = first + int(float(c[1]) * 1000)
            flags, icmp = 0, 0
            if proto == 6:
                for ch in c[8]:
                    flags |= {"F": 1, "S": 2, "R": 4, "P": 8, "A": 16, "U": 32, "E": 64, "C": 128}.get(ch, 0)
            if proto in (1, 58):
                icmp = ((sport & 0xFF) << 8) | (dport & 0xFF)
                sport = dport = 0
            tos = int(c[9]) if c[9] else 0
            out.append((first, last, src, dst, sport & 0xFFFF, dport & 0xFFFF, proto, flags, tos & 0xFF,
                        int(c[11]), int(c[12]), 0, 0, 0, 0, icmp))
            if len(out) == n:
                break
    out.sort(key=lambda f: f[0])
    return out


def _template_set():
    body = b""
    for tid, fields in ((256, F_IPV4), (257, F_IPV6)):
        body += struct.pack(">HH", tid, len(fields)) + b"".join(struct.pack(">HH", i, ln) for i, ln in fields)
    return struct.pack(">HH", 2, 4 + len(body)) + body


def _record(f):
    first, last, src, dst, sport, dport, proto, flags, tos, pk, by, iif, oif, sas, das, icmp = f
    st = REC4 if src.version == 4 else REC6
    return (256 if src.version == 4 else 257), st.pack(first, last, src.packed, dst.packed, sport, dport, proto,
                                                       flags, tos, pk, by, iif, oif, sas, das, icmp)


def _checksum(b):
    s = sum(struct.unpack(f">{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _frame(exporter, payload):
    udp = struct.pack(">HHHH", 40000, 4739, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, exporter.packed,
                     ipaddress.IPv4Address("192.0.2.100").packed)
    ip = ip[:10] + struct.pack(">H", _checksum(ip)) + ip[12:]
    return b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00" + ip + udp


def write_ipfix_pcap(path, flows, exporter="192.0.2.1", domain=1):
    """Writes flows, in the given order, as IPFIX over UDP in a pcap. `flows`
    is a list of flows from `exporter`, or of (exporter, flow) pairs when
    exporter is None (a message never mixes exporters; each exporter has its
    own templates and sequence numbers)."""
    items = [(exporter, f) for f in flows] if exporter is not None else flows
    tset = _template_set()
    state = {}  # exporter -> [messages, sequence]
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        i = 0
        while i < len(items):
            exp = items[i][0]
            st = state.setdefault(exp, [0, 0])
            sets = [tset] if st[0] % 64 == 0 else []
            size = 16 + sum(len(s) for s in sets)
            cur_tid, cur, nrec, last_ms = None, [], 0, 0
            while i < len(items) and items[i][0] == exp:
                tid, rec = _record(items[i][1])
                extra = len(rec) + (4 if tid != cur_tid else 0)
                if size + extra > 1400:
                    break
                if tid != cur_tid:
                    if cur:
                        sets.append(struct.pack(">HH", cur_tid, 4 + sum(map(len, cur))) + b"".join(cur))
                    cur_tid, cur = tid, []
                cur.append(rec)
                size += extra
                nrec += 1
                last_ms = max(last_ms, items[i][1][1])
                i += 1
            if cur:
                sets.append(struct.pack(">HH", cur_tid, 4 + sum(map(len, cur))) + b"".join(cur))
            body = b"".join(sets)
            export_s = last_ms // 1000
            msg = struct.pack(">HHIII", 10, 16 + len(body), export_s, st[1], domain) + body
            st[0] += 1
            st[1] += nrec
            fr = _frame(ipaddress.IPv4Address(exp), msg)
            out.write(struct.pack("<IIII", export_s, 0, len(fr), len(fr)) + fr)
