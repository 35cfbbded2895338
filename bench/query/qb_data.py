"""Flow sets for the query comparison: the same flows reach bitarc collect and
nfcapd as NetFlow v5 over loopback, and ClickHouse as tab-separated values.

Generated flows come from bench_query_gen (deterministic for a seed: it sends
each datagram to both collectors, then a second pass writes the same flows as
TSV). Real flows are the CTU-13 Argus export (xz CSV), read here the way
bench/reorder/bench_olsh.c --flow-csv reads it, turned into v5 records by this
module and sent the same way. TSV columns (one line per flow, the values a v5
record carries): first_ms last_ms src dst src_port dst_port proto tcp_flags
tos packets bytes in_if out_if src_as dst_as."""

import calendar
import collections
import json
import lzma
import os
import shutil
import signal
import socket
import struct
import subprocess
import time

V5_MAX = 30  # records per v5 datagram


class LoadError(Exception):
    pass


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Collectors:
    """bitarc collect and nfcapd -y (LZ4), both on 127.0.0.1. With
    via_writer, bitarc collect is not started: the sender (bench_query_gen
    --store) writes the same flows through the store writer API."""

    def __init__(self, bitarc, work, tag, via_writer=False):
        self.bitarc = bitarc
        self.via_writer = via_writer
        self.store = os.path.join(work, "bitarc-" + tag)
        self.nf_lz4 = os.path.join(work, "nfdump-lz4-" + tag)
        self.nf_raw = os.path.join(work, "nfdump-raw-" + tag)
        self.log = os.path.join(work, "collect-" + tag)
        self.procs = []

    def start(self):
        for d in (self.store, self.nf_lz4, self.nf_raw):
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(self.nf_lz4)
        self.nf_port, self.ba_port = free_udp_port(), free_udp_port()
        nf_log = open(self.log + ".nfcapd.log", "w")
        self.nfcapd = subprocess.Popen(
            ["nfcapd", "-p", str(self.nf_port), "-b", "127.0.0.1", "-w", self.nf_lz4, "-t", "86400", "-y",
             "-B", "33554432"], stdout=nf_log, stderr=subprocess.STDOUT)
        self.report = self.log + ".bitarc.json"
        if self.via_writer:
            self.collect = None
            time.sleep(1.5)
            return [self.nf_port]
        self.collect = subprocess.Popen(
            [self.bitarc, "collect", "--store", self.store, "--listen", "127.0.0.1:%d" % self.ba_port,
             "--report", "json", "--report-every", "0"],
            stdout=open(self.report, "w"), stderr=open(self.log + ".bitarc.err", "w"))
        time.sleep(1.5)
        for p, name in ((self.nfcapd, "nfcapd"), (self.collect, "bitarc collect")):
            if p.poll() is not None:
                raise LoadError("%s exited at start (see %s.*)" % (name, self.log))
        return [self.nf_port, self.ba_port]

    def stop(self, flows):
        # both drain their sockets; give them time proportional to the load
        time.sleep(2 + flows / 2e6)
        procs = [self.nfcapd] + ([self.collect] if self.collect else [])
        if self.collect:
            self.collect.send_signal(signal.SIGINT)
        self.nfcapd.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=600)
            except subprocess.TimeoutExpired:
                p.kill()
                raise LoadError("a collector did not stop within 10 min (logs %s.*)" % self.log)
        if self.collect and self.collect.returncode != 0:
            raise LoadError("bitarc collect exited with %d (see %s.bitarc.err)" % (self.collect.returncode, self.log))

    def counts(self):
        env = dict(os.environ, TZ="UTC")
        out = subprocess.run([self.bitarc, "query", "-r", self.store, "-q", "--count", "any"], env=env,
                             capture_output=True, text=True, check=True).stdout
        ba = int(out.split()[0])
        out = subprocess.run(["nfdump", "-R", self.nf_lz4, "-s", "proto", "-n", "1", "any"], env=env,
                             capture_output=True, text=True).stdout
        nf = None
        for line in out.splitlines():
            if line.startswith("Summary: total flows:"):
                nf = int(line.split(":")[2].split(",")[0])
        return ba, nf

    def make_raw_copy(self):
        """An uncompressed copy of nfcapd's files (nfdump -J 0 rewrites in place)."""
        shutil.rmtree(self.nf_raw, ignore_errors=True)
        shutil.copytree(self.nf_lz4, self.nf_raw)
        subprocess.run(["nfdump", "-R", self.nf_raw, "-J", "0"], check=True, stdout=subprocess.DEVNULL)


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def send_to_collectors(col, flows, send):
    """Starts both collectors, calls send(ports), stops them and checks that
    each holds every flow (a loss means the pacing was too fast)."""
    ports = col.start()
    try:
        send(ports)
    finally:
        col.stop(flows)
    ba, nf = col.counts()
    if ba != flows or nf != flows:
        why = ""
        try:
            with open(col.report) as f:
                r = json.load(f)
            why = " (bitarc collect: %s datagrams dropped from its queue, %s by the kernel)" % (
                r.get("queue_dropped"), r.get("kernel_drops"))
        except (OSError, ValueError):
            pass
        raise LoadError("flows lost on loopback: sent %d, bitarc holds %s, nfdump %s%s (lower --pps)" %
                        (flows, ba, nf, why))
    col.make_raw_copy()


# ---------- generated flows ----------

def gen_send(gen, flows, hours, seed, pps, ports, log, store=None):
    cmd = [gen, "--flows", str(flows), "--hours", str(hours), "--seed", str(seed), "--pps", str(pps)]
    if store:
        cmd += ["--store", store]
    for p in ports:
        cmd += ["--nf-port", str(p)]
    with open(log, "w") as f:
        subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=True)


def gen_tsv_proc(gen, flows, hours, seed):
    """bench_query_gen writing the same flows as TSV on its stdout."""
    return subprocess.Popen([gen, "--flows", str(flows), "--hours", str(hours), "--seed", str(seed), "--tsv", "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def gen_pick_host(gen, flows, hours, seed, net_prefix, share, dst=False):
    """An exact source (dst: destination) host in NET_PREFIX (e.g. '10.4.')
    whose share of the flows is nearest SHARE (< 1 %), judged on the first
    1 M flows (a flow's addresses do not depend on --flows)."""
    n = min(flows, 1000000)
    p = gen_tsv_proc(gen, n, hours, seed)
    k = 3 if dst else 2
    cnt = collections.Counter(line.split(b"\t", k + 1)[k] for line in p.stdout)
    p.wait()
    return pick_host(((int(k), v) for k, v in cnt.items()), n, net_prefix, share)


def ip_text(v):
    return "%d.%d.%d.%d" % (v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255)


def pick_host(counts, n, net_prefix, share):
    best = None
    for addr, c in counts:
        t = ip_text(addr)
        if not t.startswith(net_prefix) or c >= 0.01 * n:
            continue
        d = abs(c / n - share)
        if best is None or d < best[0] or (d == best[0] and addr < best[1]):
            best = (d, addr)
    if best is None:
        raise LoadError("no source host in %s* under 1 %% of the flows" % net_prefix)
    return ip_text(best[1])


# ---------- CTU-13 (Argus .binetflow) ----------

PROTOS = {"tcp": 6, "udp": 17, "icmp": 1, "igmp": 2, "ipv6": 41, "gre": 47, "esp": 50, "ah": 51,
          "ipv6-icmp": 58, "icmp6": 58, "ipnip": 4, "pim": 103, "sctp": 132, "udt": 17, "rtp": 17, "rtcp": 17}
FLAG_BITS = {"F": 1, "S": 2, "R": 4, "P": 8, "A": 16, "U": 32, "E": 64, "C": 128}


def _ipv4(s):
    parts = s.split(".")
    if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
        return None
    a, b, c, d = (int(p) for p in parts)
    return a << 24 | b << 16 | c << 8 | d


def _epoch_us(s):
    # "2011/08/16 10:01:46.972101", read as UTC
    date, clock = s.split(" ")
    y, mo, d = (int(x) for x in date.replace("-", "/").split("/"))
    hms, _, frac = clock.partition(".")
    h, mi, sec = (int(x) for x in hms.split(":"))
    us = int((frac + "000000")[:6]) if frac else 0
    return calendar.timegm((y, mo, d, h, mi, sec)) * 1000000 + us


def _port(s):
    return int(s, 0) if s else 0


def read_ctu13(path):
    """Flows as TSV-ordered tuples; skipped rows (IPv6, non-IP) counted."""
    out, skipped = [], collections.Counter()
    with lzma.open(path, "rt") as f:
        head = f.readline().rstrip("\n").split(",")
        ix = {name: i for i, name in enumerate(head)}
        for k in ("StartTime", "Dur", "Proto", "SrcAddr", "Sport", "DstAddr", "Dport", "State", "sTos",
                  "TotPkts", "TotBytes"):
            if k not in ix:
                raise LoadError("%s: no column %s in the header" % (path, k))
        for lineno, line in enumerate(f, 2):
            c = line.rstrip("\n").split(",")
            proto = PROTOS.get(c[ix["Proto"]].lower())
            if proto is None:
                skipped["non-IP " + c[ix["Proto"]]] += 1
                continue
            sa, da = _ipv4(c[ix["SrcAddr"]]), _ipv4(c[ix["DstAddr"]])
            if sa is None or da is None:
                skipped["IPv6"] += 1
                continue
            try:
                first_us = _epoch_us(c[ix["StartTime"]])
                dur_us = round(float(c[ix["Dur"]]) * 1e6)
                sp, dp = _port(c[ix["Sport"]].strip()), _port(c[ix["Dport"]].strip())
                pkts, byts = int(c[ix["TotPkts"]]), int(c[ix["TotBytes"]])
                tos = int(c[ix["sTos"]]) if c[ix["sTos"]] else 0
            except ValueError as e:
                raise LoadError("%s:%d: %s" % (path, lineno, e))
            if proto == 1:  # Argus: Sport holds the ICMP type/code, kept in dst_port as nfdump does
                sp, dp = 0, sp
            elif proto not in (6, 17, 132):
                sp = dp = 0  # Argus puts other things there (the ESP SPI)
            if sp > 0xFFFF or dp > 0xFFFF:
                raise LoadError("%s:%d: port out of range in %r" % (path, lineno, line[:120]))
            flags = 0
            if proto == 6:
                for ch in c[ix["State"]]:
                    flags |= FLAG_BITS.get(ch, 0)
            first_ms = first_us // 1000
            last_ms = (first_us + dur_us) // 1000
            out.append((first_ms, last_ms, sa, da, sp, dp, proto, flags, tos & 255,
                        min(pkts, 0xFFFFFFFF), min(byts, 0xFFFFFFFF), 0, 0, 0, 0))
    return out, skipped


def v5_send(flows, ports, pps):
    """Sends the flows as NetFlow v5 datagrams of 30 records to every port,
    at most PPS datagrams per second."""
    boot_ms = flows[0][0] - 1000
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t0, seq = time.monotonic(), 0
    rec = struct.Struct("!IIIHHIIIIHHBBBBHHBBH")
    for k, i in enumerate(range(0, len(flows), V5_MAX)):
        batch = flows[i:i + V5_MAX]
        now = max(f[1] for f in batch)
        up = now - boot_ms
        pkt = [struct.pack("!HHIIIIBBH", 5, len(batch), up, now // 1000, (now % 1000) * 1000000, seq, 0, 0, 0)]
        for f in batch:
            pkt.append(rec.pack(f[2], f[3], 0, f[11], f[12], f[9], f[10], f[0] - boot_ms, f[1] - boot_ms,
                                f[4], f[5], 0, f[7], f[6], f[8], f[13], f[14], 0, 0, 0))
        seq += len(batch)
        data = b"".join(pkt)
        for p in ports:
            sock.sendto(data, ("127.0.0.1", p))
        due = t0 + (k + 1) / pps
        wait = due - time.monotonic()
        if wait > 0.001:
            time.sleep(wait)
    sock.close()


def tsv_bytes(flows):
    return "".join("\t".join(map(str, f)) + "\n" for f in flows).encode()
