"""Running one query over the stores of a Dask cluster and merging exactly.

    from distributed import Client
    from bitarc.dask import ClusterQuery
    cq = ClusterQuery(Client("tcp://127.0.0.1:8786"), "dst port 445", window="2026/11/20.22:00-2026/11/21.06:00")
    n = cq.count()                        # counts add
    for batch in cq.rows(limit=100): ...  # RECORD arrays, time order, limit across all stores
    groups = cq.aggregate("srcip4/24")    # partial aggregates merged, then groups.top("bytes", 10)
    cq.partial, cq.missing                # {"worker-name (tcp://...)": ["store", ...]} when a worker died

Each store's share runs as a Dask task restricted (by the worker resource
"bitarc:STORE") to a worker holding the store. A worker that dies mid-query:
Dask re-runs its tasks on another holder of the store (a replica, or the
worker after a restart that announces it again); when no worker holds the
store for `grace` seconds, the store's share is given up and the answer is
marked partial, naming the worker and its stores. Never silently short."""

import asyncio
import threading
import time
import uuid
from collections import deque
from concurrent.futures import CancelledError

import numpy as np
from distributed.scheduler import KilledWorker

from ..aggregate import merge_groups
from ..core import COL_ALL, STAT_FIELDS, Query, as_spec, parse_window
from ..records import RECORD, concat, take
from .plan import cluster_view, live_holders, plan
from .worker import resource_name, task_aggregate, task_count, task_rows

INF = 1 << 64


class ClusterError(RuntimeError):
    """A store's task failed for a reason other than its worker leaving."""


class ClusterQuery:
    """One filter, asked of every store of the cluster that its window needs."""

    def __init__(self, client, text, *, window=None, start_ns=0, end_ns=0, now=None, local=False, stores=None,
                 grace=0.0, poll=0.2, chunk_rows=1 << 20, prefetch=2):
        self.client = client
        self.query = Query(text, now)  # a syntax error is raised here, before any task
        self.text, self.now = text, self.query.now
        if window:
            start_ns, end_ns = parse_window(window, self.now, local)
        self.start_ns, self.end_ns = start_ns, end_ns
        self.stores = None if stores is None else set(stores)
        self.grace, self.poll = grace, poll
        self.chunk_rows, self.prefetch = chunk_rows, max(1, prefetch)
        self._reset()

    def _reset(self):
        self.partial = False
        self.missing = {}        # "worker (address)" -> [stores]
        self.plans, self.pruned = [], []
        self.tasks = 0           # tasks sent
        self.rows_moved = 0      # rows that came back from workers
        self.warnings = []
        self.task_seconds = {}   # store -> seconds its tasks ran on the worker (the library's own time)
        self.stats = dict.fromkeys(STAT_FIELDS, 0)
        self._futures = []

    # ---------- planning and tasks ----------

    def plan(self):
        """Plans the query: live stores, time pruning, chunks (no task yet)."""
        self._reset()
        view = cluster_view(self.client, self.stores)
        if not view:
            raise ClusterError("no worker of the cluster holds a bitarc store (dask-worker --preload "
                               "bitarc.dask.worker --bitarc-store NAME=DIR)")
        if self.stores is not None:
            for name in sorted(self.stores - set(view)):
                self._give_up(name, [("no worker", "-")])
        plans, self.pruned = plan(view, self.start_ns, self.end_ns, self.chunk_rows, self.stores)
        for sp in plans:
            if not sp.holders:  # announced, in the window, and every holder gone: missing, not skipped
                self._give_up(sp.name, sp.gone)
        self.plans = [sp for sp in plans if sp.holders]
        self.stats["segments_total"] = sum(len(e["catalogue"]["segments"]) for e in view.values()
                                           if e["catalogue"] is not None)
        return self.plans

    def _submit(self, sp, fn, *args, priority=0):
        self.tasks += 1
        f = self.client.submit(fn, sp.name, self.text, self.now, *args,
                               key=f"bitarc-{fn.__name__[5:]}-{sp.name}-{uuid.uuid4().hex[:12]}",
                               resources={resource_name(sp.name): 1}, pure=False, priority=priority)
        self._futures.append(f)
        return f

    def _give_up(self, store, holders):
        self.partial = True
        for addr, name in holders:
            lst = self.missing.setdefault(f"{name} ({addr})", [])
            if store not in lst:
                lst.append(store)

    def _result(self, fut, sp):
        """The task's result, or None when the store's share is lost (no
        worker holds the store for `grace` seconds, or Dask gave the task up
        after its workers died). Waits for completion in steps of `poll`
        seconds, then fetches the data (with a timeout that doubles: a result
        held by a worker that dies before it is fetched goes back to pending
        and is waited for again)."""
        lost_since, fetch_timeout = None, 5.0
        done = threading.Event()
        fut.add_done_callback(lambda _f: done.set())
        while True:
            if not fut.done():
                done.wait(self.poll)
                done.clear()
            if fut.done():
                try:
                    r = fut.result(timeout=fetch_timeout)
                except (TimeoutError, asyncio.TimeoutError):
                    fetch_timeout *= 2
                    r = None
                except (KilledWorker, CancelledError, asyncio.CancelledError):
                    self._give_up(sp.name, sp.holders)
                    return None
                except Exception as exc:
                    who = ", ".join(f"{n} ({a})" for a, n in sp.holders)
                    raise ClusterError(f"store '{sp.name}' on {who}: {type(exc).__name__}: {exc}") from exc
                if r is not None:  # None: the fetch was cut because the worker holding the result died
                    break
                if fut.done():
                    continue
            if live_holders(self.client, [sp.name])[sp.name]:
                lost_since = None
                continue
            lost_since = lost_since or time.monotonic()
            if time.monotonic() - lost_since >= self.grace:
                fut.cancel()
                self._give_up(sp.name, sp.holders)
                return None
        self._add_stats(r["stats"])
        self.task_seconds[sp.name] = self.task_seconds.get(sp.name, 0.0) + r.get("seconds", 0.0)
        self.warnings.extend(f"{sp.name}: {w}" for w in r.get("warnings", ()))
        return r

    def _add_stats(self, s):
        st = self.stats
        if s["rows_matched"]:
            st["first_ns"] = s["first_ns"] if not st["rows_matched"] else min(st["first_ns"], s["first_ns"])
            st["last_ns"] = max(st["last_ns"], s["last_ns"])
        for k in STAT_FIELDS:
            if k not in ("first_ns", "last_ns", "segments_total"):
                st[k] += s[k]

    def _cancel(self):
        live = [f for f in self._futures if not f.done()]
        if live:
            self.client.cancel(live)
        self._futures = []

    # ---------- the three kinds of answer ----------

    def count(self):
        """The number of matching records over all stores."""
        plans = self.plan()
        futs = [(sp, self._submit(sp, task_count, self.start_ns, self.end_ns)) for sp in plans]
        for sp, f in futs:
            self._result(f, sp)
        self._futures = []
        return self.stats["rows_matched"]

    def aggregate(self, fields):
        """Every group over all stores (merged from each store's complete
        partial aggregate): a bitarc.Groups; .top(order, n) sorts as the CLI.
        `fields`: an AggSpec or its text ("srcip,dstport", "srcip4/24",
        "ip", "record"); -b/-B groups do not merge exactly and are refused."""
        spec = as_spec(fields)
        if spec.bidir:
            raise ValueError("bidirectional (-b/-B) aggregation is not supported on a cluster")
        plans = self.plan()
        futs = [(sp, self._submit(sp, task_aggregate, self.start_ns, self.end_ns, tuple(spec))) for sp in plans]
        parts = []
        for sp, f in futs:
            r = self._result(f, sp)
            if r is not None:
                parts.append(r["groups"])
                self.rows_moved += len(r["groups"])
        self._futures = []
        return merge_groups(parts, spec)

    def rows(self, limit=0, columns=COL_ALL):
        """Matching records of all stores as RECORD batches in first_ns order
        (ties: store name order, then each store's order), at most `limit` in
        all (0 = all). Each store's chunks are asked for `prefetch` ahead, with
        the limit left, so a limited query reads little from each store.
        Stores written in time order (what collect and ingest of a time-ordered
        source give) yield exactly the local CLI's records and order; a store
        whose rows are out of time order inside a slice has them sorted here,
        and with a limit its share is its first rows in store order."""
        plans = self.plan()
        streams = [_Stream(self, sp, limit, columns) for sp in plans]
        for s in streams:
            s.fill()
        pending = [[] for _ in streams]
        frontier = [0] * len(streams)  # every later row of stream i starts at or after frontier[i]
        emitted = 0
        try:
            while True:
                low = min(frontier, default=INF)
                for i, s in enumerate(streams):
                    if frontier[i] == low and low != INF:
                        rows, frontier[i] = s.fetch()
                        if len(rows):
                            pending[i].append(rows)
                bound = min(frontier, default=INF)
                out = _take_before(pending, bound)
                if len(out):
                    if limit:
                        out = out[:limit - emitted]
                    emitted += len(out)
                    yield out
                if (limit and emitted >= limit) or bound == INF:
                    break
        finally:
            self._cancel()


def _take_before(pending, bound):
    """Removes from each stream's pending rows those with first_ns < bound
    (all of them when bound is INF) and returns them sorted by first_ns,
    stable: stream order, then each stream's order, for equal times."""
    out = []
    for i, chunks in enumerate(pending):
        if not chunks:
            continue
        arr = concat(chunks) if len(chunks) > 1 else chunks[0]
        if bound == INF:
            out.append(arr)
            pending[i] = []
            continue
        m = arr["first_ns"] < np.uint64(bound)
        out.append(take(arr, m))
        pending[i] = [take(arr, ~m)] if not m.all() else []
    if not out:
        return np.empty(0, RECORD)
    cat = concat(out)
    return take(cat, np.argsort(cat["first_ns"], kind="stable"))


class _Stream:
    """One store's chunks, asked for in time order, `prefetch` ahead."""

    def __init__(self, cq, sp, limit, columns):
        self.cq, self.sp, self.limit, self.columns = cq, sp, limit, columns
        self.next = 0
        self.inflight = deque()  # (future, window end)
        self.got = 0
        self.done = False

    def fill(self):
        cq = self.cq
        while not self.done and len(self.inflight) < cq.prefetch and self.next < len(self.sp.chunks):
            a, b = self.sp.chunks[self.next]
            lim = self.limit - self.got if self.limit else 0
            f = cq._submit(self.sp, task_rows, a, b, lim, self.columns, priority=-self.next)
            self.inflight.append((f, b))
            self.next += 1

    def _stop(self):
        self.done = True
        live = [f for f, _ in self.inflight if not f.done()]
        if live:
            self.cq.client.cancel(live)
        self.inflight.clear()

    def fetch(self):
        """(rows of the next chunk, the stream's frontier: INF when it ends)."""
        self.fill()
        if not self.inflight:
            self.done = True
            return np.empty(0, RECORD), INF
        f, end = self.inflight.popleft()
        r = self.cq._result(f, self.sp)
        if r is None:
            self._stop()
            return np.empty(0, RECORD), INF
        rows = r["rows"]
        self.got += len(rows)
        self.cq.rows_moved += len(rows)
        if self.limit and self.got >= self.limit:
            self._stop()  # later rows of this store come after these: none can be in the first `limit`
        elif not self.inflight and self.next >= len(self.sp.chunks):
            self.done = True
        else:
            self.fill()
        return rows, INF if self.done or end == 0 else end
