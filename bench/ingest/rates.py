#!/usr/bin/env python3
"""Collector rate steps (issue 14): `bitarc collect` and `nfcapd -y` fed the
same generated NetFlow v5 and v9 streams over loopback (127.0.0.1 only) at
stepped rates, one collector after the other at each step (the two never
share the machine with each other, only with the sender).

Per protocol and rate: flows sent (replay counts datagrams; every datagram
holds 30 flows), flows stored by each collector (bitarc: `bitarc query
--count`; nfcapd: `nfdump -R DIR -I`), CPU seconds of each collector (user +
system of all its threads, from wait4 after it exited, the final flush
included) per million flows stored, its peak RSS, and for bitarc the queue
peak and drops by reason from its --stats file. Then the highest rate each
stored every flow at.

Both collectors get a 64 MiB socket buffer (bitarc's default; nfcapd -B)
and their default everything else (bitarc: 256 MiB queue, 2 writer threads,
plwah index of every attribute).

Usage (after a Release build in BUILD):
  python3 bench/ingest/rates.py --build build-rel                # ~10 s bursts
  python3 bench/ingest/rates.py --build build-rel --sustained    # 60 s each
Options: --rates 1,2,3,4,6,8 (M flows/s) --protocols v5,v9 --seconds S
--flows N (flows in the generated file, replayed in a loop) --dir DIR.

--live-every 0,1s runs bitarc once per listed `collect --live-every` value at
each step (the cost of writing row groups early for live queries: CPU s per
M flows and store bytes per flow, beside nfcapd in the same run)."""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

FLOWS_PER_DG = 30


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def udp_bound(port):
    want = ":%04X" % port
    for f in ("/proc/net/udp",):
        for line in open(f).read().splitlines()[1:]:
            if line.split()[1].endswith(want):
                return True
    return False


def wait_for(cond, timeout, step=0.1):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if cond():
            return True
        time.sleep(step)
    return False


def stop(p, sig):
    p.send_signal(sig)
    _, status, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, status


def replay(a, dgfile, rate_dg, port):
    cmd = [os.path.join(a.build, "bench", "ingest", "bench_replay"), "--seconds", str(a.seconds), dgfile,
           "%.0f" % rate_dg, str(port)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"sent (\d+) datagrams in ([\d.]+) s", out)
    return int(m.group(1)), float(m.group(2))


def run_nfcapd(a, dgfile, rate_dg, tag):
    d = os.path.join(a.dir, "nfcapd-" + tag)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    port = free_port()
    cmd = ["nfcapd", "-y", "-w", d, "-p", str(port), "-b", "127.0.0.1", "-t", "3600", "-B", str(64 << 20)]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_for(lambda: udp_bound(port), 10):
        stop(p, signal.SIGKILL)
        raise SystemExit("nfcapd did not bind 127.0.0.1:%d" % port)
    dg, secs = replay(a, dgfile, rate_dg, port)
    time.sleep(2.0)  # nfcapd drains its socket; its files are written at exit
    cpu, rss, _ = stop(p, signal.SIGTERM)
    info = subprocess.run(["nfdump", "-R", d, "-I"], capture_output=True, text=True).stdout
    m = re.search(r"^Flows:\s*(\d+)", info, re.M)
    shutil.rmtree(d, ignore_errors=True)
    return {"sent": dg * FLOWS_PER_DG, "send_s": secs, "stored": int(m.group(1)) if m else 0, "cpu": cpu,
            "rss": rss, "cmd": " ".join(cmd)}


def run_bitarc(a, dgfile, rate_dg, tag, live=None):
    bitarc = os.path.join(a.build, "bitarc")
    st = os.path.join(a.dir, "bitarc-" + tag)
    stats = st + ".stats.json"
    shutil.rmtree(st, ignore_errors=True)
    cmd = [bitarc, "collect", "--store", st, "--listen", "127.0.0.1:0", "--stats", stats, "--stats-every", "1s",
           "--status-every", "0", "--report", "json"] + (["--live-every", live] if live is not None else [])
    err = open(st + ".err", "w+")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    port = None

    def bound():
        nonlocal port
        err.seek(0)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+) ", err.read())
        port = int(m.group(1)) if m else None
        return port is not None

    if not wait_for(bound, 10):
        stop(p, signal.SIGKILL)
        raise SystemExit("bitarc collect did not start: " + open(st + ".err").read())
    dg, secs = replay(a, dgfile, rate_dg, port)

    def drained():  # every datagram taken from the socket and decoded
        try:
            s = json.load(open(stats))
        except (OSError, ValueError):
            return False
        return s["queue"]["bytes"] == 0 and s["received"] + max(s["kernel_drops"], 0) >= dg

    wait_for(drained, 120, 0.5)
    cpu, rss, _ = stop(p, signal.SIGINT)
    rep = json.loads(p.stdout.read())
    counted = int(subprocess.run([bitarc, "query", "--store", st, "--count", "--quiet", "any"], capture_output=True,
                                 text=True, check=True).stdout.strip() or 0)
    if counted != rep["stored"]:
        raise SystemExit("bitarc reported %d stored, the store holds %d" % (rep["stored"], counted))
    store_bytes = sum(os.path.getsize(os.path.join(st, f)) for f in os.listdir(st))
    shutil.rmtree(st, ignore_errors=True)
    return {"sent": dg * FLOWS_PER_DG, "send_s": secs, "stored": counted, "cpu": cpu, "rss": rss,
            "store_bytes": store_bytes,
            "queue_peak": rep["queue"]["peak"], "queue_dropped": rep["queue_dropped"],
            "kernel_drops": rep["kernel_drops"], "cmd": " ".join(cmd)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build-rel")
    ap.add_argument("--rates", default="1,2,3,4,6,8", help="M flows/s, comma list")
    ap.add_argument("--protocols", default="v5,v9")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--sustained", action="store_true", help="60 s per step")
    ap.add_argument("--flows", type=int, default=3000000)
    ap.add_argument("--dir", default="/dev/shm/bitarc-bench-rates")
    ap.add_argument("--live-every", default=None, help="comma list of collect --live-every values to compare")
    a = ap.parse_args()
    if a.sustained:
        a.seconds = 60.0
    a.build = os.path.abspath(a.build)
    os.makedirs(a.dir, exist_ok=True)
    if not shutil.which("nfcapd") or not shutil.which("nfdump"):
        raise SystemExit("needs nfcapd and nfdump (Debian package nfdump; scripts/deps.sh installs it)")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    nfv = subprocess.run(["nfcapd", "-V"], capture_output=True, text=True).stdout.strip()
    print("machine: nproc=%d, %s, %s, load average at start %s" % (os.cpu_count(), cpu, platform.platform(),
                                                                  " ".join("%.1f" % x for x in os.getloadavg())))
    print("command: " + " ".join([sys.executable] + sys.argv))
    print("peer: " + nfv)
    rates = [float(x) for x in a.rates.split(",")]
    live_results = {}
    flows = a.flows - a.flows % FLOWS_PER_DG
    results = {}
    for proto in a.protocols.split(","):
        dgfile = os.path.join(a.dir, "%s.bin" % proto)
        subprocess.run([os.path.join(a.build, "bench", "ingest", "bench_gen_v9"), str(flows), dgfile, "1", proto],
                       check=True, capture_output=True)
        for i, r in enumerate(rates):
            rate_dg = r * 1e6 / FLOWS_PER_DG
            tag = "%s-%g" % (proto, r)
            order = ("nfcapd", "bitarc") if i % 2 == 0 else ("bitarc", "nfcapd")
            lives = a.live_every.split(",") if a.live_every else []
            if lives:
                order = ("nfcapd",) + tuple("bitarc live=" + v for v in (lives if i % 2 == 0 else lives[::-1]))
            for who in order:
                if who.startswith("bitarc live="):
                    res = run_bitarc(a, dgfile, rate_dg, tag, who.split("=", 1)[1])
                    live_results[(proto, r, who.split("=", 1)[1])] = res
                    print("%s %g M/s %s: sent %d, stored %d, CPU %.3f s = %.3f s per M flows, store %.1f bytes/flow"
                          % (proto, r, who, res["sent"], res["stored"], res["cpu"],
                             res["cpu"] / max(res["stored"], 1) * 1e6, res["store_bytes"] / max(res["stored"], 1)),
                          flush=True)
                    continue
                res = (run_nfcapd if who == "nfcapd" else run_bitarc)(a, dgfile, rate_dg, tag)
                results[(proto, r, who)] = res
                if lives:
                    print("%s %g M/s nfcapd: sent %d, stored %d, CPU %.3f s = %.3f s per M flows" % (
                        proto, r, res["sent"], res["stored"], res["cpu"], res["cpu"] / max(res["stored"], 1) * 1e6),
                        flush=True)
                    continue
                print("%s %g M/s %s: sent %d in %.1f s, stored %d (%.2f %%), CPU %.2f s, RSS %.0f MiB%s" % (
                    proto, r, who, res["sent"], res["send_s"], res["stored"], 100.0 * res["stored"] / res["sent"],
                    res["cpu"], res["rss"] / 2**20,
                    ", queue peak %.0f MiB, queue-full drops %d dg, kernel drops %d dg" % (
                        res["queue_peak"] / 2**20, res["queue_dropped"], res["kernel_drops"])
                    if who == "bitarc" else ""), flush=True)
        os.remove(dgfile)
    if a.live_every:
        lives = a.live_every.split(",")
        for proto in a.protocols.split(","):
            print("\nNetFlow %s, %g s per step: bitarc collect --live-every %s (CPU s per M flows stored; store bytes"
                  " per flow; nfcapd -y CPU s per M flows in the same run)\n" % (proto, a.seconds, " / ".join(lives)))
            print("| rate asked (M flows/s) | " + " | ".join("bitarc %s CPU" % v for v in lives) + " | " +
                  " | ".join("bitarc %s bytes/flow" % v for v in lives) + " | nfcapd CPU | stored (all runs) |")
            print("|---" * (2 * len(lives) + 3) + "|")
            for r in rates:
                lr = [live_results[(proto, r, v)] for v in lives]
                n = results[(proto, r, "nfcapd")]
                print("| %g | " % r + " | ".join("%.2f" % (x["cpu"] / max(x["stored"], 1) * 1e6) for x in lr) + " | " +
                      " | ".join("%.1f" % (x["store_bytes"] / max(x["stored"], 1)) for x in lr) +
                      " | %.2f | %s |" % (n["cpu"] / max(n["stored"], 1) * 1e6,
                                          " / ".join("%d of %d" % (x["stored"], x["sent"]) for x in lr + [n])))
        return
    print("\ncommands: %s ; %s (the replayer: bench_replay --seconds %g FILE RATE PORT)" % (
        results[next(k for k in results if k[2] == "nfcapd")]["cmd"],
        results[next(k for k in results if k[2] == "bitarc")]["cmd"], a.seconds))
    for proto in a.protocols.split(","):
        print("\nNetFlow %s, %g s per step:\n" % (proto, a.seconds))
        print("| rate asked (M flows/s) | sent (M flows/s) nfcapd / bitarc | nfcapd stored | bitarc stored |"
              " nfcapd CPU s per M flows | bitarc CPU s per M flows | ratio | nfcapd RSS MiB | bitarc RSS MiB |"
              " bitarc queue peak MiB | bitarc drops (queue-full / kernel datagrams) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        best = {"nfcapd": 0, "bitarc": 0}
        sent_at = {"nfcapd": 0, "bitarc": 0}  # the rate the sender achieved at that step
        ok = {"nfcapd": True, "bitarc": True}
        for r in rates:
            n, b = results[(proto, r, "nfcapd")], results[(proto, r, "bitarc")]
            for who, x in (("nfcapd", n), ("bitarc", b)):
                ok[who] = ok[who] and x["stored"] == x["sent"]
                if ok[who]:
                    best[who] = r
                    sent_at[who] = x["sent"] / x["send_s"] / 1e6
            cn, cb = n["cpu"] / max(n["stored"], 1) * 1e6, b["cpu"] / max(b["stored"], 1) * 1e6
            print("| %g | %.2f / %.2f | %.2f %% | %.2f %% | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %d / %d |" % (
                r, n["sent"] / n["send_s"] / 1e6, b["sent"] / b["send_s"] / 1e6, 100.0 * n["stored"] / n["sent"],
                100.0 * b["stored"] / b["sent"], cn, cb, cb / max(cn, 1e-9), n["rss"] / 2**20, b["rss"] / 2**20,
                b["queue_peak"] / 2**20, b["queue_dropped"], b["kernel_drops"]))
        print("\nhighest step with every flow stored (each step up to it lossless too): nfcapd %s, bitarc %s" % tuple(
            "%g M flows/s asked (%.2f M/s achieved by the sender)" % (best[w], sent_at[w]) if best[w] else "none"
            for w in ("nfcapd", "bitarc")))


main()
