#!/usr/bin/env python3
"""Ingest benchmark (issue 3): records/s into a store (archive + index) for
NetFlow v9 flows and pcap packets, 1 and 2 threads, index bytes per record per
codec, and bitarc collect beside nfcapd (-z LZO, -y LZ4) fed the same
datagrams over loopback in the same run.

Usage (from the source tree, after a Release build in BUILD):
  python3 bench/ingest/run.py --build build-rel [--flows 3000000] [--dir /dev/shm/x]

Method for the collector comparison: one replayer sends every datagram to
both collectors (bitarc collect and nfcapd), paced at --rate datagrams/s so
that neither loses any; each collector is a child of this script and its CPU
time (user + system, all threads, from wait4 rusage) is read when it exits
after SIGTERM, i.e. including the final flush. The fair figure is flows per
CPU-second (what one fully used core would sustain); the wall-clock rate is
set by the pacing and is the same for both. A second, unpaced run ("blast")
shows how many of the datagrams each collector stored when the sender goes as
fast as it can (the three processes then share 2 cores)."""
import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def sh(cmd, **kw):
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def timed(cmd):
    """Runs cmd, returns (wall s, cpu s of the child, stdout, stderr)."""
    print("$ " + " ".join(cmd), flush=True)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        sys.stderr.write(p.stderr)
        raise SystemExit("failed: %s" % cmd)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, p.stdout, p.stderr


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def stat_json(bitarc, store):
    p = subprocess.run([bitarc, "stat", "--store", store, "-o", "json"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def index_bytes(st):
    """(records, archive bytes, index bytes) from `bitarc stat -o json`."""
    txt = json.dumps(st)
    rec = st.get("records") or sum(s.get("records", s.get("rows", 0)) for s in st.get("segments", []))
    arch = st.get("bytes_archive") or sum(s.get("bytes_archive", 0) for s in st.get("segments", []))
    idx = st.get("bytes_index") or sum(s.get("bytes_index", 0) for s in st.get("segments", []))
    if not rec:
        m = re.search(r'"records":\s*(\d+)', txt)
        rec = int(m.group(1)) if m else 0
    return rec, arch, idx


def collector_run(a, build, datagrams, ndg, rate, nfcapd_flag, bitarc_compress, tag):
    bitarc = os.path.join(build, "bitarc")
    replay = os.path.join(build, "bench", "ingest", "bench_replay")
    st = os.path.join(a.dir, "col-" + tag)
    nd = os.path.join(a.dir, "nfcapd-" + tag)
    shutil.rmtree(st, ignore_errors=True)
    shutil.rmtree(nd, ignore_errors=True)
    os.makedirs(nd)
    bport, nport = free_port(), free_port()
    bcmd = [bitarc, "collect", "--store", st, "--listen", "127.0.0.1:%d" % bport, "--report", "json",
            "--report-every", "0", "--compress", bitarc_compress, "--codec", a.codec]
    ncmd = ["nfcapd", "-w", nd, "-p", str(nport), "-b", "127.0.0.1", "-t", "3600", "-B", str(64 << 20), nfcapd_flag]
    print("$ " + " ".join(bcmd) + " &", flush=True)
    print("$ " + " ".join(ncmd) + " &", flush=True)
    bp = subprocess.Popen(bcmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    npp = subprocess.Popen(ncmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    t0 = time.monotonic()
    sh([replay, datagrams, str(rate), str(bport), str(nport)])
    send = time.monotonic() - t0
    time.sleep(2.0)
    res = {}
    for name, p in (("bitarc", bp), ("nfcapd", npp)):
        p.send_signal(signal.SIGTERM)
        _, status, ru = os.wait4(p.pid, 0)
        res[name] = ru.ru_utime + ru.ru_stime
    out = bp.stdout.read()
    rep = json.loads(out)
    nf = subprocess.run(["nfdump", "-R", nd, "-I"], capture_output=True, text=True).stdout
    m = re.search(r"^Flows:\s*(\d+)", nf, re.M)
    nflows = int(m.group(1)) if m else 0
    nbytes = sum(os.path.getsize(os.path.join(nd, f)) for f in os.listdir(nd))
    bbytes = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(st) for f in fs)
    return {"tag": tag, "rate": rate, "send_s": send, "datagrams": ndg, "bitarc_stored": rep["stored"],
            "bitarc_cpu": res["bitarc"], "bitarc_kernel_drops": rep["kernel_drops"],
            "bitarc_queue_dropped": rep["queue_dropped"], "bitarc_bytes": bbytes,
            "nfcapd_stored": nflows, "nfcapd_cpu": res["nfcapd"], "nfcapd_bytes": nbytes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-rel")
    ap.add_argument("--flows", type=int, default=3000000)
    ap.add_argument("--dir", default="/dev/shm/bitarc-bench-ingest")
    ap.add_argument("--codec", default="plwah")
    ap.add_argument("--rate", type=int, default=4000, help="paced datagrams/s for the collector comparison")
    ap.add_argument("--skip-collect", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    bitarc = os.path.join(build, "bitarc")
    os.makedirs(a.dir, exist_ok=True)
    cpu = "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    print("machine: nproc=%d, %s, load %s, %s" % (os.cpu_count(), cpu, os.getloadavg(), platform.platform()))
    print("command: " + " ".join([sys.executable] + sys.argv))
    dg = os.path.join(a.dir, "v9.bin")
    pcap = os.path.join(a.dir, "v9.pcap")
    sh([os.path.join(build, "bench", "ingest", "bench_gen_v9"), str(a.flows), dg])
    sh([sys.executable, os.path.join(HERE, "datagrams_to_pcap.py"), dg, pcap])
    ndg = sum(1 for _ in open(pcap, "rb")) and 0
    with open(dg, "rb") as f:
        data = f.read()
    off = 0
    while off + 2 <= len(data):
        off += 2 + (data[off] << 8 | data[off + 1])
        ndg += 1
    del data
    rows = []
    # 1) decode only, and into a store with 1 and 2 threads
    w, c, _, err = timed([bitarc, "ingest", "--dry-run", "--report", "text", pcap])
    rows.append(("flows, NetFlow v9 pcap, decode only (--dry-run)", a.flows, w, c, "-", "-"))
    for t in (1, 2):
        st = os.path.join(a.dir, "st-flows-%d" % t)
        shutil.rmtree(st, ignore_errors=True)
        w, c, _, err = timed([bitarc, "ingest", "--store", st, "--threads", str(t), "--codec", a.codec, pcap])
        rec, arch, idx = index_bytes(stat_json(bitarc, st))
        rows.append(("flows, NetFlow v9 pcap -> store, %d thread%s" % (t, "s" if t > 1 else ""), a.flows, w, c,
                     "%.2f" % (arch / max(rec, 1)), "%.2f" % (idx / max(rec, 1))))
        shutil.rmtree(st, ignore_errors=True)
    # 2) packets: every shared capture
    traces = os.path.join(os.path.dirname(SRC), "shared", "data", "traces")
    files = []
    for dp, _, fs in os.walk(traces):
        files += [os.path.join(dp, f) for f in fs if f.endswith((".pcap", ".pcapng"))]
    files.sort()
    if files:
        p = subprocess.run([bitarc, "ingest", "--dry-run", "--as", "packets", "--report", "json", "-q"] + files,
                           capture_output=True, text=True)
        npk = json.loads(p.stdout)["stored"]
        print("$ bitarc ingest --dry-run --as packets ... (%d shared captures)" % len(files))
        for t in (1, 2):
            st = os.path.join(a.dir, "st-pk-%d" % t)
            shutil.rmtree(st, ignore_errors=True)
            cmd = [bitarc, "ingest", "--store", st, "--threads", str(t), "--codec", a.codec, "--as", "packets", "-q"]
            print("$ " + " ".join(cmd) + " <%d shared captures>" % len(files), flush=True)
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            subprocess.run(cmd + files, capture_output=True)
            w = time.monotonic() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            c = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            rec, arch, idx = index_bytes(stat_json(bitarc, st))
            rows.append(("packets, %d shared captures -> store, %d thread%s" % (len(files), t, "s" if t > 1 else ""),
                         npk, w, c, "%.2f" % (arch / max(rec, 1)), "%.2f" % (idx / max(rec, 1))))
            shutil.rmtree(st, ignore_errors=True)
    print("\n| input | records | wall s | records/s wall | CPU s | CPU ns/record | archive B/rec | index B/rec |")
    print("|---|---|---|---|---|---|---|---|")
    for name, n, w, c, ab, ib in rows:
        print("| %s | %d | %.2f | %.0f | %.2f | %.0f | %s | %s |" % (name, n, w, n / w, c, 1e9 * c / n, ab, ib))
    # 3) index bytes per record per codec (flows, 2 threads)
    print("\n| codec | index B/rec (flows) | archive B/rec | records/s wall |")
    print("|---|---|---|---|")
    for codec in ("wah32", "wah64", "plwah", "compax", "masc"):
        st = os.path.join(a.dir, "st-codec")
        shutil.rmtree(st, ignore_errors=True)
        w, c, _, _ = timed([bitarc, "ingest", "--store", st, "--codec", codec, "-q", pcap])
        rec, arch, idx = index_bytes(stat_json(bitarc, st))
        print("| %s | %.2f | %.2f | %.0f |" % (codec, idx / max(rec, 1), arch / max(rec, 1), a.flows / w))
        shutil.rmtree(st, ignore_errors=True)
    if a.skip_collect or not shutil.which("nfcapd"):
        return
    # 4) collectors side by side
    runs = []
    for flag, comp, tag in (("-z", "lzo", "lzo"), ("-y", "lz4", "lz4")):
        runs.append(collector_run(a, build, dg, ndg, a.rate, flag, comp, tag + "-paced"))
    runs.append(collector_run(a, build, dg, ndg, 0, "-z", "lzo", "lzo-blast"))
    print("\n| run | datagrams | sender s | bitarc stored | bitarc CPU s | bitarc flows/CPU-s | nfcapd stored |"
          " nfcapd CPU s | nfcapd flows/CPU-s | ratio bitarc/nfcapd | bitarc B/flow on disk | nfcapd B/flow |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        bf = r["bitarc_stored"] / max(r["bitarc_cpu"], 1e-9)
        nf = r["nfcapd_stored"] / max(r["nfcapd_cpu"], 1e-9)
        print("| %s | %d | %.1f | %d | %.2f | %.0f | %d | %.2f | %.0f | %.2f | %.1f | %.1f |" % (
            r["tag"], r["datagrams"], r["send_s"], r["bitarc_stored"], r["bitarc_cpu"], bf, r["nfcapd_stored"],
            r["nfcapd_cpu"], nf, bf / max(nf, 1e-9), r["bitarc_bytes"] / max(r["bitarc_stored"], 1),
            r["nfcapd_bytes"] / max(r["nfcapd_stored"], 1)))
        print("  (bitarc kernel drops %s, queue drops %s)" % (r["bitarc_kernel_drops"], r["bitarc_queue_dropped"]))


main()
