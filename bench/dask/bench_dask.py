"""bitarc.dask against the local CLI: the same flows in one local store and
split over 1, 2 and 4 Dask workers (LocalCluster, one process and one thread
each, loopback) on this machine.

    python3 bench/dask/bench_dask.py --flows 10000000 --dir /tmp/bd [--workers 1,2,4] [--reps 5]

Per query and worker count: the local CLI on the store of all flows
(`bitarc query -q`, process wall time), the cluster query through a connected
client (bitarc.dask.cli.query_main, the CLI's code without the interpreter's
start-up), the slowest worker's local time (the CLI on that worker's store),
and the engine overhead = cluster wall - the slowest store's time inside its
tasks (the library's own run on the worker). Medians of --reps runs; the
outputs of the cluster and local runs are compared byte for byte.
Environment: BITARC (the CLI), BITARC_LIBRARY (libbitarc.so), PYTHONPATH
with python/ of the source tree."""

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import gen  # noqa: E402

QUERIES = [
    ("selective rows", ["-o", "csv", "src ip 10.4.3.7 and dst port 445"]),
    ("selective count", ["--count", "src net 10.4.3.0/24 and dst port 445"]),
    ("count", ["--count", "proto udp and dst port 53"]),
    ("top 10 (-s)", ["-s", "srcip/bytes", "-n", "10", "dst port 443"]),
    ("aggregate (-A)", ["-o", "csv", "-A", "proto,dstport", "dst net 10.5.5.0/24 and bytes > 1M"]),
    ("first 100 rows (-c)", ["-o", "csv", "-c", "100", "proto tcp and flags S"]),
]
BITARC = os.environ.get("BITARC", "bitarc")


def local(store, args):
    t0 = time.perf_counter()
    p = subprocess.run([BITARC, "query", "-r", store, "-q", "--threads", "1", *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - t0, p.stdout


def cluster(client, args, keep):
    from bitarc.dask.cli import query_main
    out = io.BytesIO()
    t0 = time.perf_counter()
    rc = query_main(["--scheduler", "-", "-q", *args], client=client, out=out, keep=keep)
    wall = time.perf_counter() - t0
    assert rc == 0, (args, rc)
    return wall, out.getvalue()


def _noop():
    return 0


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def med(xs):
    return statistics.median(xs)


def run_k(k, stores, all_store, reps, results):
    from distributed import Client, LocalCluster
    from bitarc.dask import attach, cluster_view, wait_for_stores
    with LocalCluster(n_workers=k, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0",
                      worker_dashboard_address="127.0.0.1:0") as lc, Client(lc) as client:
        client.wait_for_workers(k)
        addrs = sorted(client.scheduler_info()["workers"])
        names = [f"site{j}" for j in range(k)]
        attach(client, {addrs[j]: {names[j]: stores[j]} for j in range(k)})
        wait_for_stores(client, names, timeout=300)
        # Dask's own floor on this machine: an empty task's round trip, and the planner's scheduler call
        client.submit(_noop, pure=False).result()
        rt = med([_timed(lambda: client.submit(_noop, pure=False).result()) for _ in range(20)])
        vw = med([_timed(lambda: cluster_view(client)) for _ in range(20)])
        results.append({"query": "empty dask task", "workers": k, "roundtrip_s": rt, "cluster_view_s": vw})
        print(f"{k} workers | empty Dask task round trip {rt * 1e3:.1f} ms | planner's scheduler call {vw * 1e3:.1f} ms",
              flush=True)
        for qname, args in QUERIES:
            cluster(client, args, [])  # warm: store handles opened, code paths loaded
            lt, lo = zip(*[local(all_store, args) for _ in range(reps)])
            cq_list = []
            ct, co = zip(*[cluster(client, args, cq_list) for _ in range(reps)])
            if co[0] != lo[0]:
                raise SystemExit(f"{qname} with {k} workers: cluster output differs from the local CLI")
            slowest = max(med([local(s, args)[0] for _ in range(reps)]) for s in stores)
            task = [max(cq.task_seconds.values(), default=0.0) for cq in cq_list]
            over = [c - t for c, t in zip(ct, task)]
            r = {"query": qname, "args": args, "workers": k, "local_s": med(lt), "cluster_s": med(ct),
                 "slowest_worker_local_s": slowest, "slowest_task_s": med(task), "overhead_s": med(over),
                 "tasks": cq_list[0].tasks, "rows_moved": cq_list[0].rows_moved, "out_bytes": len(co[0])}
            results.append(r)
            print(f"{k} workers | {qname:22s} | local {r['local_s'] * 1e3:8.1f} ms | cluster {r['cluster_s'] * 1e3:8.1f} ms"
                  f" | x{r['cluster_s'] / r['local_s']:.2f} | slowest worker local {slowest * 1e3:8.1f} ms"
                  f" | in tasks {r['slowest_task_s'] * 1e3:8.1f} ms | overhead {r['overhead_s'] * 1e3:6.1f} ms"
                  f" | tasks {r['tasks']} rows moved {r['rows_moved']}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flows", type=int, default=10_000_000)
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    ks = [int(x) for x in a.workers.split(",")]
    os.makedirs(a.dir, exist_ok=True)
    all_store = os.path.join(a.dir, "all")
    layout = {k: [os.path.join(a.dir, f"k{k}-{j}") for j in range(k)] for k in ks if k > 1}
    if not os.path.exists(all_store):
        t0 = time.perf_counter()
        recs = gen.flows(a.flows, hours=a.hours)
        print(f"generated {len(recs)} flows in {time.perf_counter() - t0:.1f}s", flush=True)
        t0 = time.perf_counter()
        gen.write_stores(recs, [all_store])
        for k, dirs in layout.items():
            gen.write_stores(recs, dirs)
        print(f"stores written in {time.perf_counter() - t0:.1f}s", flush=True)
        del recs
    results = []
    for k in ks:
        run_k(k, layout.get(k, [all_store]), all_store, a.reps, results)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"flows": a.flows, "cpus": os.cpu_count(), "load": os.getloadavg(), "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
