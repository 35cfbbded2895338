#!/usr/bin/env python3
"""Process start-up of bitarc commands, two binaries side by side (issue 13).

  bench/startup/startup_ab.py --a OLD_BITARC --b NEW_BITARC --store STORE \\
      [--nfdump-dir NFCAPD_DIR] [--runs 50] [--filter F ...]

Every case runs under `perf stat -r RUNS` (stdout to /dev/null), A and B
interleaved per case so both see the same load: `--version`, then for each
filter `query --count` and `query -o csv`; with --nfdump-dir also nfdump's
`-q -o csv` and `-s proto -n 1` on the same flows for context. Prints a
markdown table: task-clock (CPU ms) and wall ms (mean, perf's +- in %), and the
number of shared objects each binary loads for `--version` and for a count
query (LD_DEBUG=files). Python 3 standard library only; needs perf."""

import argparse
import os
import re
import subprocess
import sys

FILTERS = ["src ip 10.4.0.81", "src net 10.4.0.0/16 and dst port 137", "proto udp and dst port 53"]


def perf(cmd, runs):
    """(task-clock ms, wall ms, wall +- %) of cmd over runs runs."""
    p = subprocess.run(["perf", "stat", "-r", str(runs), "--"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    tc = re.search(r"([\d.,]+)\s+msec task-clock", p.stderr)
    wall = re.search(r"([\d.,]+) \+- ([\d.,]+) seconds time elapsed\s+\(\s*\+-\s*([\d.,]+)%", p.stderr)
    if not tc or not wall:
        sys.exit("perf stat gave no task-clock/elapsed for %s:\n%s" % (cmd, p.stderr))
    f = lambda s: float(s.replace(",", ""))  # noqa: E731
    return f(tc.group(1)), f(wall.group(1)) * 1e3, f(wall.group(3))


def dsos(cmd):
    """Shared objects loaded (LD_DEBUG=files: one 'file=' line per object, dlopen included)."""
    env = dict(os.environ, LD_DEBUG="files")
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    return len(set(re.findall(r"\bfile=(\S+)", p.stderr)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="bitarc binary A (before)")
    ap.add_argument("--b", required=True, help="bitarc binary B (after)")
    ap.add_argument("--store", required=True)
    ap.add_argument("--nfdump-dir", help="nfcapd files of the same flows (nfdump -R)")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--filter", action="append", help="filters (default: %s)" % FILTERS)
    a = ap.parse_args()
    filters = a.filter or FILTERS
    print("load average before: %s" % open("/proc/loadavg").read().split()[:3])
    print()
    print("| case | A task-clock ms | B task-clock ms | A wall ms | B wall ms | B/A CPU |")
    print("|---|---:|---:|---:|---:|---:|")
    cases = [("--version", ["--version"])]
    for flt in filters:
        cases.append(("count `%s`" % flt, ["query", "-r", a.store, "--count", flt]))
        cases.append(("-o csv `%s`" % flt, ["query", "-r", a.store, "-o", "csv", flt]))
    for name, args in cases:
        ra = perf([a.a] + args, a.runs)
        rb = perf([a.b] + args, a.runs)
        print("| %s | %.2f | %.2f | %.2f (+-%.0f%%) | %.2f (+-%.0f%%) | %.2f |" %
              (name, ra[0], rb[0], ra[1], ra[2], rb[1], rb[2], rb[0] / ra[0]), flush=True)
    if a.nfdump_dir:
        print()
        print("| nfdump (same flows) | task-clock ms | wall ms |")
        print("|---|---:|---:|")
        for flt in filters:
            for label, args in (("-q -o csv", ["-q", "-o", "csv"]), ("-s proto -n 1", ["-s", "proto", "-n", "1"])):
                r = perf(["nfdump", "-R", a.nfdump_dir] + args + [flt], max(3, a.runs // 10))
                print("| nfdump %s `%s` | %.1f | %.1f (+-%.0f%%) |" % (label, flt, r[0], r[1], r[2]), flush=True)
    print()
    cnt = ["query", "-r", a.store, "--count", filters[0]]
    print("shared objects loaded: A --version %d, B --version %d; A count %d, B count %d" %
          (dsos([a.a, "--version"]), dsos([a.b, "--version"]), dsos([a.a] + cnt), dsos([a.b] + cnt)))
    print("load average after: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
