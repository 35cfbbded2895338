"""Shared by the Python tests: the bitarc CLI, stores built with
`bitarc ingest` from IPFIX captures, and the local query oracle.

Environment (set by CTest): BITARC (the CLI), BITARC_LIBRARY (libbitarc.so),
BA_SHARED_DATA (real data; the CTU-13 flows are used when present)."""

import os
import subprocess

import flowgen

BITARC = os.environ.get("BITARC", "bitarc")
CTU = os.path.join(os.environ.get("BA_SHARED_DATA", ""), "flows", "ctu13-s6", "ctu13-s6.binetflow.xz")
BASE_S = 1720656000  # 2024-07-11T00:00:00Z
EXPORTERS = ("192.0.2.1", "192.0.2.2", "192.0.2.3")


def bitarc(*args, check=True):
    """Runs the CLI; returns (exit status, stdout bytes, stderr text)."""
    p = subprocess.run([BITARC, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and p.returncode != 0:
        raise AssertionError(f"bitarc {' '.join(args)}: exit {p.returncode}: {p.stderr.decode()}")
    return p.returncode, p.stdout, p.stderr.decode()


def ingest(store, pcap):
    bitarc("ingest", "--store", store, "-q", pcap)


def flow_sets(n_gen=12000, n_real=15000):
    """Three different flow lists: two generated (seeds 1, 2; 8 hours of
    2024-07-11) and the first real CTU-13 flows (2011-08-16), or a third
    generated set of that day when the real file is absent."""
    a = flowgen.generated(n_gen, 1, BASE_S, 8)
    b = flowgen.generated(n_gen, 2, BASE_S, 8)
    if os.path.exists(CTU):
        c = flowgen.ctu13(CTU, n_real)
    else:
        print(f"note: {CTU} absent, the third store has generated flows")
        c = flowgen.generated(n_real, 3, 1313488800, 2)
    return [a, b, c]


def build_stores(tmp, sets, names=("a", "b", "c")):
    """One store per flow set (exporter EXPORTERS[i]) and the oracle store
    "all" holding every flow, ingested in (start time, set) order. Returns
    {name: dir} and the oracle's dir."""
    dirs = {}
    tagged = []
    for i, (name, flows) in enumerate(zip(names, sets)):
        pcap = os.path.join(tmp, f"{name}.pcap")
        flowgen.write_ipfix_pcap(pcap, flows, EXPORTERS[i])
        dirs[name] = os.path.join(tmp, name)
        ingest(dirs[name], pcap)
        tagged += [(f[0], i, EXPORTERS[i], f) for f in flows]
    tagged.sort(key=lambda t: (t[0], t[1]))  # stable: each set keeps its order
    pcap = os.path.join(tmp, "all.pcap")
    flowgen.write_ipfix_pcap(pcap, [(t[2], t[3]) for t in tagged], exporter=None)
    oracle = os.path.join(tmp, "all")
    ingest(oracle, pcap)
    return dirs, oracle
