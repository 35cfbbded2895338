#!/usr/bin/env python3
"""Time windows and a range predicate on two oLSH stores of the same flows,
each with its own bitarc (e.g. before/after zone maps), interleaved; answers
checked against a third, arrival-order store. Prints a markdown table.

  olsh_windows.py --a BITARC STORE --b BITARC STORE --ref BITARC STORE [--reps 7]

Windows are those compare.py --queries ranges uses on CTU-13 scenario 6."""
import argparse
import os
import statistics
import subprocess
import time

QUERIES = [("-t 2011/08/16.10:53:26-2011/08/16.11:03:26", "any"),
           ("-t 2011/08/16.11:32:11-2011/08/16.11:33:11", "proto tcp"),
           ("", "first seen > 2011-08-16T12:05:00"), ("", "bytes > 1000000")]


def run(bitarc, store, tw, mode, flt):
    cmd = [bitarc, "query", "-r", store, "-q"] + (tw.split() if tw else []) + mode + [flt]
    t = time.time()
    out = subprocess.run(cmd, capture_output=True, env=dict(os.environ, TZ="UTC")).stdout
    return time.time() - t, out.strip() if mode[0] == "--count" else str(len(out.splitlines())).encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", nargs=2, required=True)
    ap.add_argument("--b", nargs=2, required=True)
    ap.add_argument("--ref", nargs=2, required=True)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    print("| query | rows | a s | b s | a / b |\n| --- | ---: | ---: | ---: | ---: |")
    for tw, flt in QUERIES:
        for mode in (["--count"], ["-o", "csv"]):
            ta, tb = [], []
            for _ in range(a.reps):
                t, oa = run(*a.a, tw, mode, flt)
                ta.append(t)
                t, ob = run(*a.b, tw, mode, flt)
                tb.append(t)
            _, ref = run(*a.ref, tw, ["--count"], flt)
            if oa != ref or ob != ref:
                raise SystemExit("MISMATCH %s %s: %s %s, reference %s" % (tw, flt, oa, ob, ref))
            ma, mb = statistics.median(ta), statistics.median(tb)
            print("| `%s %s %s` | %s | %.3f | %.3f | %.1fx |" % (tw, " ".join(mode), flt, ref.decode(), ma, mb, ma / mb))


if __name__ == "__main__":
    main()
