"""Benchmark flows as numpy RECORD arrays (vectorized; 10 M in seconds) and
stores written through the binding's StoreWriter: one store of all flows and
the same flows split over k stores (flow i goes to site i % k, each site its
own exporter address), so a k-worker cluster and the local store hold exactly
the same records.

Skew as bench/query/bench_query_gen.c: 60% of sources in 10.4.0.0/16
(Zipf), 20% in 192.168.0.0/20, the rest random; destinations Zipf; service
ports Zipf over a short list, else random; 70% TCP with realistic flag sets;
Zipf packets and bytes."""

import numpy as np

import bitarc

SVC = np.array([80, 443, 53, 137, 445, 22, 8080, 25, 123, 3389, 993, 1194, 5060], np.uint16)
FLAGS = np.array([0x02, 0x12, 0x18, 0x1B, 0x10, 0x11, 0x04, 0x14, 0x1F], np.uint8)
BASE_S = 1720656000  # 2024-07-11T00:00:00Z


def zipf(rng, n, s, size):
    """Zipf-like integers in [0, n): continuous inverse CDF."""
    u = rng.random(size)
    if s == 1.0:
        v = np.exp(u * np.log(n + 1.0)) - 1.0
    else:
        v = (u * ((n + 1.0) ** (1.0 - s) - 1.0) + 1.0) ** (1.0 / (1.0 - s)) - 1.0
    return np.minimum(v.astype(np.int64), n - 1)


def _v4(col, addr):
    col[:, 10] = 0xFF
    col[:, 11] = 0xFF
    for i in range(4):
        col[:, 12 + i] = (addr >> (24 - 8 * i)) & 0xFF


def flows(n, seed=1, hours=24, start_s=BASE_S):
    """n flow records in first_ns order (unique times) over `hours`."""
    rng = np.random.default_rng(seed)
    r = np.zeros(n, bitarc.RECORD)
    span = hours * 3600 * 1000
    first_ms = np.sort(rng.integers(0, span, n)) + start_s * 1000
    r["first_ns"] = first_ms.astype(np.uint64) * 1000000 + (np.arange(n) % 1000000).astype(np.uint64)
    r["last_ns"] = r["first_ns"] + zipf(rng, 600000, 1.3, n).astype(np.uint64) * 1000000
    r["kind"] = 1
    r["ipver"] = 4
    k = rng.integers(0, 10, n)
    src = np.where(k < 6, 0x0A040000 | zipf(rng, 65536, 1.1, n),
                   np.where(k < 8, 0xC0A80000 | zipf(rng, 4096, 1.0, n), rng.integers(0, 1 << 32, n)))
    dst = np.where(rng.integers(0, 4, n) == 0, 0x0A050500 | zipf(rng, 256, 1.0, n), zipf(rng, 1 << 31, 0.9, n) * 2 + 1)
    _v4(r["src"], src.astype(np.uint64))
    _v4(r["dst"], dst.astype(np.uint64))
    pk = rng.integers(0, 10, n)
    proto = np.where(pk < 7, 6, np.where(pk < 9, 17, 1)).astype(np.uint8)
    r["proto"] = proto
    l4 = proto != 1
    dport = np.where(rng.integers(0, 4, n) > 0, SVC[zipf(rng, len(SVC), 1.0, n)], rng.integers(0, 65536, n))
    r["dst_port"] = np.where(l4, dport, 0x0800).astype(np.uint16)
    r["src_port"] = np.where(l4, 1024 + rng.integers(0, 64512, n), 0).astype(np.uint16)
    r["icmp_type"] = np.where(l4, 0, 8)
    r["tcp_flags"] = np.where(proto == 6, FLAGS[zipf(rng, len(FLAGS), 1.0, n)], 0)
    r["packets"] = 1 + zipf(rng, 100000, 1.2, n)
    r["bytes"] = r["packets"] * (40 + rng.integers(0, 1460, n)).astype(np.uint64)
    r["src_as"] = zipf(rng, 65536, 1.0, n)
    r["dst_as"] = zipf(rng, 65536, 1.0, n)
    r["in_if"] = rng.integers(0, 16, n)
    r["out_if"] = rng.integers(0, 16, n)
    return r


def write_stores(recs, dirs, batch=1 << 20):
    """Writes recs split round-robin over len(dirs) stores (flow i to store
    i % k; its exporter is 192.0.2.(i % 4 + 1) whatever k, so every layout
    holds the same records); returns the writers' counters."""
    k = len(dirs)
    writers = [bitarc.StoreWriter(d) for d in dirs]
    try:
        for lo in range(0, len(recs), batch):
            part = recs[lo:lo + batch].copy()
            idx = np.arange(lo, lo + len(part))
            _v4(part["exporter"], (0xC0000201 + idx % 4).astype(np.uint64))
            site = idx % k
            for j, w in enumerate(writers):
                w.append(part[site == j])
    finally:
        stats = [w.close() for w in writers]
    return stats
