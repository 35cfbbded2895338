"""The planner: which live workers hold which stores (from the scheduler's
worker resources and the catalogues they announced), which stores a time
window needs at all, and the time windows ("chunks") a store's share of a
row query is cut into so rows can stream back in time order.

A store's segments hold slices [start_ns, end_ns) of first_ns (a record is in
the slice of its first_ns), so windows cut at slice starts split the store's
rows without overlap: each row is in exactly one chunk, and every row of a
later chunk starts no earlier than the end of the one before."""

from .worker import METADATA_KEY, RESOURCE_PREFIX


def _scheduler_view(dask_scheduler, stores=None):
    """Runs on the scheduler: {store: {"holders": [(address, name)] of live
    workers holding it, "gone": [(address, name)] of workers that announced it
    and are no longer there, "catalogue": the newest announcement}}. A store
    whose holders are all gone stays listed (with no holders) so that a query
    reports it missing instead of silently leaving it out; announcements of
    gone workers are dropped once a live worker holds the store again."""
    meta = dask_scheduler.get_metadata(keys=list(METADATA_KEY), default={}) or {}
    out = {}

    def entry(name):
        return out.setdefault(name, {"holders": [], "gone": [], "catalogue": None})

    for ws in dask_scheduler.workers.values():
        for r, q in (ws.resources or {}).items():
            if r.startswith(RESOURCE_PREFIX) and q:
                name = r[len(RESOURCE_PREFIX):]
                if stores is None or name in stores:
                    entry(name)["holders"].append((ws.address, str(ws.name)))
    for name, by_addr in meta.items():
        if stores is not None and name not in stores:
            continue
        e = entry(name)
        live = {a for a, _ in e["holders"]}
        for addr, cat in list(by_addr.items()):
            if addr not in live:
                if live:
                    del by_addr[addr]
                else:
                    e["gone"].append((addr, cat.get("worker_name", addr)))
                continue
            if e["catalogue"] is None or len(cat["segments"]) > len(e["catalogue"]["segments"]):
                e["catalogue"] = cat
        if not live and e["gone"]:  # what the store held when last seen, to plan (and report) it
            e["catalogue"] = max(by_addr.values(), key=lambda c: len(c["segments"]))
    return out


def forget(client, store):
    """Drops a store that is gone for good from the scheduler's catalogue, so
    queries stop reporting it missing."""
    def drop(dask_scheduler, store):
        meta = dask_scheduler.get_metadata(keys=list(METADATA_KEY), default={}) or {}
        meta.pop(store, None)
    client.run_on_scheduler(drop, store=store)


def cluster_view(client, stores=None):
    """The live stores of the cluster (one round trip to the scheduler)."""
    return client.run_on_scheduler(_scheduler_view, stores=None if stores is None else list(stores))


def live_holders(client, names):
    """{store: [(address, name)]} for the given stores, now."""
    v = cluster_view(client, names)
    return {n: v.get(n, {}).get("holders", []) for n in names}


class StorePlan:
    """One store's share: its holders at plan time (or, when none is left,
    the workers that held it: `gone`), the segments the window needs, and the
    chunk windows [(start_ns, end_ns)] (end 0 = no end)."""

    def __init__(self, name, holders, segments, chunks, gone=()):
        self.name, self.holders, self.segments, self.chunks = name, holders, segments, chunks
        self.gone = list(gone)

    @property
    def rows(self):
        return sum(s["rows"] for s in self.segments)

    def __repr__(self):
        return f"StorePlan({self.name!r}, holders={self.holders}, segments={len(self.segments)}, chunks={self.chunks})"


def overlaps(seg, start_ns, end_ns):
    """Whether a segment can hold a record with start_ns <= first_ns < end_ns
    (end 0 = no end)."""
    if seg["rows"] == 0:
        return False
    if end_ns and seg["min_first_ns"] >= end_ns:
        return False
    return seg["max_first_ns"] >= start_ns


def chunk_windows(segments, start_ns, end_ns, chunk_rows):
    """Cuts [start_ns, end_ns) at slice starts into windows of about
    chunk_rows stored rows (at least one slice each). The first window begins
    at start_ns and the last ends at end_ns, so records of segments written
    after the catalogue was sent are still covered."""
    slices = {}
    for s in segments:
        slices[s["start_ns"]] = slices.get(s["start_ns"], 0) + s["rows"]
    cuts, acc = [], 0
    for t in sorted(slices):
        if acc >= chunk_rows and t > start_ns:
            cuts.append(t)
            acc = 0
        acc += slices[t]
    bounds = [start_ns] + cuts + [end_ns]
    return list(zip(bounds[:-1], bounds[1:]))


def plan(view, start_ns=0, end_ns=0, chunk_rows=1 << 20, stores=None):
    """StorePlans (sorted by store name) of the stores with a segment in the
    window, and the names of those pruned (no segment in it)."""
    plans, pruned = [], []
    for name in sorted(view):
        if stores is not None and name not in stores:
            continue
        e = view[name]
        cat = e["catalogue"]
        if cat is None:  # holder registered, catalogue not yet sent: cannot prune, ask for everything
            plans.append(StorePlan(name, e["holders"], [], [(start_ns, end_ns)], e.get("gone", ())))
            continue
        segs = [s for s in cat["segments"] if overlaps(s, start_ns, end_ns)]
        if not segs:
            pruned.append(name)
            continue
        plans.append(StorePlan(name, e["holders"], segs, chunk_windows(segs, start_ns, end_ns, chunk_rows),
                               e.get("gone", ())))
    return plans, pruned
