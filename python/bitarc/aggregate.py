"""Exact merging of partial aggregates (numpy): groups of several runs with
the same key become one group whose counters are the sums and whose time
range is the union, which is what one run over all the records gives. Sorting
follows the library's ba_query_agg_result: the counter descending, ties by
source address, destination address, source port, destination port,
protocol (bytes compared as unsigned, ports as numbers)."""

import numpy as np

from .records import AGG_ROW

_KEYLEN = 16 + 16 + 2 + 2 + 1 + 1


def _key_bytes(groups):
    """One S38 string per group whose byte order is the C key order; the
    last byte (ipver) only separates keys the C comparison calls equal."""
    k = groups["key"]
    n = len(groups)
    b = np.empty((n, _KEYLEN), np.uint8)
    b[:, 0:16] = k["src"]
    b[:, 16:32] = k["dst"]
    b[:, 32:34] = k["src_port"].astype(">u2").view(np.uint8).reshape(n, 2)
    b[:, 34:36] = k["dst_port"].astype(">u2").view(np.uint8).reshape(n, 2)
    b[:, 36] = k["proto"]
    b[:, 37] = k["ipver"]
    return b.view(f"S{_KEYLEN}").reshape(n)


def merge_groups(parts):
    """One AGG_ROW array with a group per distinct key of the given partial
    AGG_ROW arrays (any order in, key order out)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.empty(0, AGG_ROW)
    g = np.concatenate(parts)
    keys = _key_bytes(g)
    order = np.argsort(keys, kind="stable")
    g, keys = g[order], keys[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    out = g[starts].copy()  # key fields and kind of the group's first partial
    for f in ("flows", "packets", "bytes"):
        out[f] = np.add.reduceat(g[f], starts)
    out["key"]["first_ns"] = np.minimum.reduceat(g["key"]["first_ns"], starts)
    out["key"]["last_ns"] = np.maximum.reduceat(g["key"]["last_ns"], starts)
    return out


def sort_groups(groups, order):
    """Groups sorted by counter `order` (0 flows, 1 packets, 2 bytes)
    descending, ties by key ascending."""
    if len(groups) == 0:
        return groups
    v = groups[("flows", "packets", "bytes")[order]].astype(np.uint64)
    inv = np.iinfo(np.uint64).max - v
    idx = np.lexsort((_key_bytes(groups), inv))
    return groups[idx]
