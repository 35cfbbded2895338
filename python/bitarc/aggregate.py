"""Exact merging of partial aggregates (numpy): groups of several runs with
the same key become one group whose counters are the sums and whose time
range is the union, which is what one run over all the records gives. Sorting
follows the library's ba_query_agg_result: the counter descending, ties by
source address, destination address, source port, destination port,
protocol (bytes compared as unsigned, ports as numbers)."""

import numpy as np

from .records import AGG_ROW, concat, take

def _key_words(groups):
    """The group keys as five uint64 columns, most significant first, whose
    order is the C key order: source and destination address bytes read big
    endian (memcmp order), then source port, destination port, protocol; the
    last byte, ipver, only separates keys the C comparison calls equal."""
    k = groups["key"]
    n = len(groups)
    src = np.ascontiguousarray(k["src"]).view(">u8").reshape(n, 2).astype(np.uint64)
    dst = np.ascontiguousarray(k["dst"]).view(">u8").reshape(n, 2).astype(np.uint64)
    tail = (k["src_port"].astype(np.uint64) << np.uint64(32)) | (k["dst_port"].astype(np.uint64) << np.uint64(16)) | \
        (k["proto"].astype(np.uint64) << np.uint64(8)) | k["ipver"].astype(np.uint64)
    return [src[:, 0], src[:, 1], dst[:, 0], dst[:, 1], tail]


def merge_groups(parts):
    """One AGG_ROW array with a group per distinct key of the given partial
    AGG_ROW arrays (any order in, key order out)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.empty(0, AGG_ROW)
    g = concat(parts)
    words = _key_words(g)
    order = np.lexsort(words[::-1])  # stable: each key's partials keep their order
    g = take(g, order)
    words = [w[order] for w in words]
    new = np.zeros(len(g), bool)
    new[0] = True
    for w in words:
        new[1:] |= w[1:] != w[:-1]
    starts = np.flatnonzero(new)
    out = take(g, starts)  # key fields and kind of the group's first partial
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
    idx = np.lexsort(_key_words(groups)[::-1] + [inv])
    return take(groups, idx)
