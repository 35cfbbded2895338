"""bitarc.dask on a real distributed.LocalCluster of three worker processes
(loopback only), each holding its own store built by `bitarc ingest` from
different flows (two generated sets, real CTU-13 flows). The oracle is one
local store holding all the flows, asked with the `bitarc query` CLI: for
every filter of the list, the cluster's records (csv, with and without -n),
count, -s statistics and -A aggregates are byte for byte the local ones.
Then: time windows prune stores before any task is sent, -n does not fetch
everything, a worker killed mid-query gives an answer marked partial that
names it and its store, and the worker serves again once it is back."""

import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
from distributed import Client, LocalCluster

import bitarc
from bitarc.dask import ClusterQuery, attach, wait_for_stores
from bitarc.dask.cli import query_main

import support

FILTERS = [
    "any", "ipv6", "src ip 10.4.*.*", "ip 10.4.0-3.*", "dst net 10.5.5.0/24", "ip in [10.5.0.1, 2001:db8::/48]",
    "port 53", "dst port in [80 443 1024-2048]", "portrange 1-1023", "proto udp", "flags S and not flags AFRPU",
    "not flags SA", "bytes > 10k and src ip 10.4.*.*", "not (port 80 or proto icmp)", "icmp-type 8",
    "first seen > 2024-07-11T01:00", "src as 5 or in if 2", "net 2001:db8:0:1::/64", "tos 32",
    "net 147.32.0.0/16", "host 147.32.84.165", "proto tcp and packets > 100", "dst port 0",
]
STATS = ["srcip", "dstip/bytes", "ip/packets", "srcport", "dstport/bytes", "port", "proto/packets", "srcip4/24/pps",
         "record/bytes", "dstip/tstart:flows"]
AGGS = ["srcip,dstport", "proto", "dstip,srcport,proto", "srcip,dstip", "srcip4/16,dstport"]


def no_tr(csv):
    """csv records without their last column, the time the exporter's packet
    was received (tr): each store was ingested from its own capture, whose
    export times differ from those of the oracle's capture."""
    return b"".join(ln.rsplit(b",", 1)[0] + b"\n" for ln in csv.splitlines())


class Cluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t0 = time.monotonic()
        cls.sets = support.flow_sets()
        cls.dirs, cls.oracle = support.build_stores(cls.tmp.name, cls.sets)
        print(f"stores built in {time.monotonic() - t0:.1f}s", file=sys.stderr)
        cls.cluster = LocalCluster(n_workers=3, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0")
        cls.client = Client(cls.cluster)
        cls.client.wait_for_workers(3)
        addrs = sorted(cls.client.scheduler_info()["workers"])
        cls.holder = dict(zip(("a", "b", "c"), addrs))
        attach(cls.client, {cls.holder[n]: {n: cls.dirs[n]} for n in ("a", "b", "c")})
        wait_for_stores(cls.client, ["a", "b", "c"])
        print(f"cluster up in {time.monotonic() - t0:.1f}s", file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.cluster.close()
        cls.tmp.cleanup()

    def local(self, *args):
        return support.bitarc("query", "-r", self.oracle, "-q", *args)[1]

    def cluster_cli(self, *args):
        out = io.BytesIO()
        rc = query_main(["--scheduler", self.cluster.scheduler_address, "-q", *args], client=self.client, out=out)
        self.assertEqual(rc, 0, args)
        return out.getvalue()

    def test_1_every_filter_gives_the_local_answer(self):
        for i, f in enumerate(FILTERS):
            want = self.local("-o", "csv", f)
            self.assertGreater(len(want), 0)
            # odd filters: many small tasks per store, rows merged across chunk boundaries
            chunk = ["--chunk-rows", "700"] if i % 2 else []
            self.assertEqual(no_tr(self.cluster_cli("-o", "csv", *chunk, f)), no_tr(want), f"{chunk} {f}")
            self.assertEqual(self.cluster_cli("--count", f), self.local("--count", f), f)
            lim = ("-c", str(1 + 37 * i % 200))
            self.assertEqual(self.cluster_cli("-o", "ndjson", "--chunk-rows", "900", *lim, f),
                             self.local("-o", "ndjson", *lim, f), f"{lim} {f}")
            s = STATS[i % len(STATS)]
            top = ["-n", "3"] if i % 3 == 0 else []
            self.assertEqual(self.cluster_cli("-s", s, *top, f), self.local("-s", s, *top, f), f"-s {s} {top} {f}")
            a = AGGS[i % len(AGGS)]
            self.assertEqual(self.cluster_cli("-o", "csv", "-A", a, f), self.local("-o", "csv", "-A", a, f),
                             f"-A {a} {f}")
            if i % 4 == 0:
                self.assertEqual(self.cluster_cli("-o", "csv", "-s", s, f), self.local("-o", "csv", "-s", s, f),
                                 f"-o csv -s {s} {f}")
                self.assertEqual(self.cluster_cli("-A", a, "-O", "bytes", f), self.local("-A", a, "-O", "bytes", f),
                                 f"-A {a} -O bytes {f}")

    def test_2_windows_prune_stores_before_tasks(self):
        cases = [("2011/08/16.10:00-2011/08/16.12:00", {"c"}), ("2024/07/11.02:00-2024/07/11.03:30", {"a", "b"}),
                 ("2024/07/11.02:00-2024/07/11.02:30", {"a", "b"}), ("2030/01/01.00:00-2030/01/02.00:00", set())]
        for win, stores in cases:
            cq = ClusterQuery(self.client, "proto tcp", window=win)
            n = cq.count()
            self.assertEqual({sp.name for sp in cq.plans}, stores, win)
            self.assertEqual(set(cq.pruned), {"a", "b", "c"} - stores, win)
            self.assertEqual(cq.tasks, len(stores), win)
            self.assertEqual(n, int(self.local("--count", "--window-start", "-t", win, "proto tcp")), win)
            self.assertEqual(no_tr(self.cluster_cli("-o", "csv", "-t", win, "proto tcp")),
                             no_tr(self.local("-o", "csv", "--window-start", "-t", win, "proto tcp")), win)

    def test_3_limit_does_not_fetch_everything(self):
        total = int(self.local("--count", "any"))
        cq = ClusterQuery(self.client, "any", chunk_rows=500, prefetch=2)
        rows = np.concatenate(list(cq.rows(limit=20)))
        self.assertEqual(len(rows), 20)
        self.assertLessEqual(cq.rows_moved, 3 * 3 * 20)
        self.assertLess(cq.tasks, sum(len(sp.chunks) for sp in cq.plans))
        self.assertLess(cq.rows_moved, total)
        fmt = bitarc.Formatter("csv")
        self.assertEqual(no_tr(fmt.records(rows)), no_tr(self.local("-o", "csv", "-c", "20", "any")))

    def test_4_syntax_error_before_any_task(self):
        with self.assertRaises(bitarc.FilterError):
            ClusterQuery(self.client, "src ip 10.4.*.* and dst prot 137")
        rc = query_main(["--scheduler", "tcp://127.0.0.1:1", "src ip 10.4.*.* and dst prot 137"])
        self.assertEqual(rc, 2)

    def test_5_command_line(self):
        cmd = [sys.executable, "-m", "bitarc.dask", "query", "--scheduler", self.cluster.scheduler_address]
        p = subprocess.run(cmd + ["-q", "-o", "csv", "proto udp and port 53"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(no_tr(p.stdout), no_tr(self.local("-o", "csv", "proto udp and port 53")))
        bad = "src ip 10.4.*.* and\n dst prot 137"
        p = subprocess.run(cmd + [bad], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        rc, _, want = support.bitarc("query", "-r", self.oracle, bad, check=False)
        self.assertEqual((p.returncode, p.stderr.decode()), (rc, want))
        self.assertEqual(rc, 2)

    def test_9_killed_worker_gives_a_partial_answer_naming_it(self):
        victim = self.holder["b"]
        info = self.client.scheduler_info()["workers"][victim]
        vname = str(info["name"])
        pid = self.client.run(os.getpid, workers=[victim])[victim]
        cq = ClusterQuery(self.client, "any", chunk_rows=500, prefetch=1, grace=0.0)
        it = cq.rows()
        got = [next(it)]
        os.kill(pid, signal.SIGKILL)
        got += list(it)
        rows = np.concatenate(got)
        self.assertTrue(cq.partial)
        self.assertEqual(cq.missing, {f"{vname} ({victim})": ["b"]})
        # the other stores' rows are all there, b's are a strict subset of its own
        oracle = bitarc.Store(self.oracle).query("any").rows
        exp_b = np.frombuffer(bytes(oracle["exporter"][0]), np.uint8).copy()
        exp_b[12:16] = [192, 0, 2, 2]
        is_b = (rows["exporter"] == exp_b).all(axis=1)
        o_is_b = (oracle["exporter"] == exp_b).all(axis=1)
        self.assertTrue(np.array_equal(np.sort(rows[~is_b]["first_ns"]), np.sort(oracle[~o_is_b]["first_ns"])))
        self.assertLess(is_b.sum(), o_is_b.sum())
        self.assertTrue(np.isin(rows[is_b]["first_ns"], oracle[o_is_b]["first_ns"]).all())
        # until it is back, b is reported missing (it was announced), not silently left out
        cq = ClusterQuery(self.client, "any", grace=0.0)
        self.assertEqual(cq.count(), int(self.local("--count", "any")) - o_is_b.sum())
        self.assertTrue(cq.partial)
        self.assertEqual(cq.missing, {f"{vname} ({victim})": ["b"]})
        out = io.BytesIO()
        rc = query_main(["--scheduler", "x", "-q", "--count", "--grace", "0", "any"], client=self.client, out=out)
        self.assertEqual(rc, 3)
        self.assertEqual(int(out.getvalue()), cq.count())
        # b comes back on a worker started the way the README says (dask-worker --preload)
        # and serves again: the answer is whole
        log = open(os.path.join(self.tmp.name, "worker-b.log"), "wb")
        self.extra = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", self.cluster.scheduler_address, "--name", "b-again",
             "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1", "--local-directory", self.tmp.name,
             "--preload", "bitarc.dask.worker", "--bitarc-store", f"b={self.dirs['b']}"], stdout=log, stderr=log)
        try:
            wait_for_stores(self.client, ["a", "b", "c"], timeout=120)
            cq = ClusterQuery(self.client, "any", grace=0.0)
            self.assertEqual(cq.count(), int(self.local("--count", "any")))
            self.assertFalse(cq.partial, cq.missing)
            self.assertEqual(no_tr(self.cluster_cli("-o", "csv", "proto udp")), no_tr(self.local("-o", "csv", "proto udp")))
            self.assertEqual(self.cluster_cli("-s", "dstport/bytes", "any"), self.local("-s", "dstport/bytes", "any"))
        finally:
            self.extra.terminate()
            self.extra.wait(60)
            log.close()


if __name__ == "__main__":
    sys.exit(unittest.main(verbosity=2))
