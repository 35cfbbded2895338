#!/usr/bin/env python3
"""IPv6 host and prefix queries with and without the IPv6 attributes
(doc/format.md §7.4): the same generated flows (half of them IPv6) written by
two builds' libraries, then `bitarc query` of each build on its own store.

  PYTHONPATH=python python3 bench/query/v6_index.py --before DIR_A --after DIR_B \\
      --work OUT [--flows 2000000] [--reps 5]

DIR_A/DIR_B: build directories (bitarc, libbitarc.so.0). Prints, per query,
the matching rows and each build's median wall and CPU time of the whole
process (count and -o csv), and the stores' index bytes per flow
(`bitarc stat -o json`). Answers must be equal, or the script stops."""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dask"))


def v6_flows(n, frac, seed=7):
    from gen import flows, zipf
    r = flows(n, seed=seed)
    rng = np.random.default_rng(seed + 1)
    six = rng.random(n) < frac
    m = int(six.sum())
    r["ipver"][six] = 6
    for col, nets, hosts in (("src", 2000, 50000), ("dst", 500, 20000)):
        net = zipf(rng, nets, 1.1, m)
        host = zipf(rng, hosts, 1.0, m)
        a = np.zeros((m, 16), np.uint8)
        a[:, 0], a[:, 1], a[:, 2], a[:, 3] = 0x20, 0x01, 0x0d, 0xb8  # 2001:db8::/32
        a[:, 4], a[:, 5] = net >> 8, net & 0xFF                         # the /48
        a[:, 7] = host % 7                                              # a /64 of it
        for i in range(4):
            a[:, 12 + i] = (host >> (24 - 8 * i)) & 0xFF
        r[col][six] = a
    return r


def write(build, store, recs):
    env = dict(os.environ, BITARC_LIBRARY=os.path.join(build, "libbitarc.so.0"))
    code = ("import sys, numpy as np, bitarc\n"
            "r = np.load(sys.argv[1])\n"
            "w = bitarc.StoreWriter(sys.argv[2])\n"
            "for lo in range(0, len(r), 1 << 20): w.append(r[lo:lo + (1 << 20)])\n"
            "w.close()\n")
    npy = store + ".npy"
    np.save(npy, recs)
    subprocess.run([sys.executable, "-c", code, npy, store], env=env, check=True)
    os.unlink(npy)


def run(cmd, reps):
    walls, cpus, out = [], [], None
    for _ in range(reps):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, check=True)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        out = p.stdout
    return sorted(walls)[reps // 2], sorted(cpus)[reps // 2], out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--flows", type=int, default=2000000)
    ap.add_argument("--v6", type=float, default=0.5, help="fraction of IPv6 flows")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    recs = v6_flows(a.flows, a.v6)
    stores = {}
    for tag, build in (("before", a.before), ("after", a.after)):
        st = os.path.join(a.work, f"v6-{tag}-{a.flows}")
        if not os.path.isdir(st):
            write(build, st, recs)
        stores[tag] = st
        s = json.loads(subprocess.run([os.path.join(build, "bitarc"), "stat", "--store", st, "-o", "json"],
                                      stdout=subprocess.PIPE, check=True).stdout)
        print(f"{tag}: {json.dumps({k: v for k, v in s.items() if 'index' in k or 'archive' in k})[:400]}")
    six = recs[recs["ipver"] == 6]
    import ipaddress
    host = str(ipaddress.IPv6Address(bytes(six["src"][0])))
    net48 = str(ipaddress.IPv6Network((bytes(six["src"][0][:6]) + bytes(10), 48)))
    net64 = str(ipaddress.IPv6Network((bytes(six["src"][0][:8]) + bytes(8), 64)))
    queries = [f"src ip {host}", f"src net {net48}", f"src net {net64}", f"src net {net48} and dst port 443",
               "src net 2001:db8::/32"]
    print(f"flows {a.flows}, IPv6 {len(six)}; load {os.getloadavg()[0]:.1f}")
    print("| filter | rows | mode | before wall s (CPU s) | after wall s (CPU s) | before / after CPU |")
    print("|---|---:|---|---:|---:|---:|")
    for q in queries:
        for mode in (["--count"], ["-q", "-o", "csv"]):
            res = {}
            for tag, build in (("before", a.before), ("after", a.after)):
                res[tag] = run([os.path.join(build, "bitarc"), "query", "-r", stores[tag]] + mode + [q], a.reps)
            if res["before"][2] != res["after"][2]:
                sys.exit(f"answers differ: {q} {mode}")
            rows = res["after"][2].decode().strip() if mode[0] == "--count" else str(res["after"][2].count(b"\n"))
            b, f = res["before"], res["after"]
            print(f"| `{q}` | {rows} | `{' '.join(mode)}` | {b[0]:.3f} ({b[1]:.3f}) | {f[0]:.3f} ({f[1]:.3f}) | "
                  f"{b[1] / f[1] if f[1] else 0:.1f}x |")


if __name__ == "__main__":
    main()
