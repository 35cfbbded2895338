#!/usr/bin/python3
"""Two or more builds of one command, alternated run by run (issue 13).

  bench/query/ab_time.py N COLD OUT BIN_A BIN_B [...] -- ARGS...

Runs each binary with ARGS N times (plus an untimed first round when warm),
in alternating order, stdout to OUT (truncated before each run, as
compare.py does), and prints per binary the median, minimum and quartiles of
the whole process's wall time, then the load average. COLD=1 drops the page
cache before every run (sync; echo 3 > /proc/sys/vm/drop_caches; root).
Python 3 standard library only.
"""
import os
import statistics
import sys
import time


def main():
    if len(sys.argv) < 6 or "--" not in sys.argv:
        sys.exit(__doc__)
    n, cold, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rest = sys.argv[4:]
    i = rest.index("--")
    bins, args = rest[:i], rest[i + 1:]
    res = {b: [] for b in bins}
    for r in range(n + (0 if cold else 1)):
        for b in bins if r % 2 == 0 else bins[::-1]:
            if cold:
                os.sync()
                with open("/proc/sys/vm/drop_caches", "w") as f:
                    f.write("3\n")
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            t = time.perf_counter()
            pid = os.posix_spawn(b, [b] + args, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, fd, 1)])
            os.waitpid(pid, 0)
            d = time.perf_counter() - t
            os.close(fd)
            if cold or r > 0:
                res[b].append(d)
    for b in bins:
        v = sorted(res[b])
        print("%-45s med %.4f min %.4f q1 %.4f q3 %.4f n=%d" % (b, statistics.median(v), v[0], v[len(v) // 4],
                                                              v[3 * len(v) // 4], len(v)))
    with open("/proc/loadavg") as f:
        print("load", f.read().strip())


if __name__ == "__main__":
    main()
