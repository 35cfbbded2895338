"""The worker side: which stores this Dask worker holds, how it tells the
scheduler, and the tasks that run next to the data.

A worker announces each store NAME in two ways the scheduler already keeps:
  - a worker resource "bitarc:NAME" (quantity 1). Tasks for the store are
    submitted with resources={"bitarc:NAME": 1}, so Dask's own placement sends
    them to a worker holding it (and, when the worker leaves, the resource
    leaves with it);
  - scheduler metadata ["bitarc", "stores", NAME, WORKER_ADDRESS] = the store's
    catalogue (its segments with their time ranges, from the segment headers),
    re-sent when the segments change (checked every `refresh` seconds), which
    the planner uses to prune stores and segments by time before sending tasks.

Three ways to attach stores to workers:
  dask-worker tcp://SCHED:8786 --preload bitarc.dask.worker --bitarc-store NAME=DIR
  client.register_worker_plugin(StorePlugin({"worker-name": {"NAME": "DIR"}}))
  bitarc.dask.attach(client, {"tcp://worker:port": {"NAME": "DIR"}})   (once, not after a restart)
"""

import asyncio
import logging
import threading
import time

import click
from distributed.core import Status
from distributed.diagnostics.plugin import WorkerPlugin

from ..core import COL_ALL, AggSpec, Query, Store

logger = logging.getLogger("bitarc.dask")

RESOURCE_PREFIX = "bitarc:"
METADATA_KEY = ("bitarc", "stores")

_stores = {}      # store name -> directory, in this worker process
_handles = {}     # (store name, thread id) -> Store: handles are per thread
_lock = threading.Lock()


class StoreMissing(LookupError):
    """A task reached a worker that does not hold its store."""


def resource_name(store):
    return RESOURCE_PREFIX + store


def catalogue(directory):
    """What a worker announces about one store: its segments (name, slice,
    first_ns range, rows), ordered by start."""
    with Store(directory) as st:
        segs = [s for s in st.segments() if "error" not in s]
    return {"dir": str(directory), "segments": segs}


def _store(name):
    """This thread's handle on store `name`, refreshed (new segments)."""
    key = (name, threading.get_ident())
    with _lock:
        st = _handles.get(key)
        directory = _stores.get(name)
    if directory is None:
        raise StoreMissing(f"this worker holds no store '{name}'")
    if st is None or st.path != directory:
        st = Store(directory)
        with _lock:
            _handles[key] = st
    else:
        st.refresh()
    return st


# ---------- tasks (run on the worker holding the store) ----------

def task_rows(store, text, now, start_ns, end_ns, limit, columns=COL_ALL):
    """Matching records of one time window of a store, in store order (and,
    as every task, the run's stats and its time on the worker)."""
    t0 = time.perf_counter()
    res = _store(store).query(Query(text, now), start_ns=start_ns, end_ns=end_ns, limit=limit, columns=columns)
    return {"rows": res.rows, "stats": res.stats, "warnings": res.warnings, "seconds": time.perf_counter() - t0}


def task_count(store, text, now, start_ns, end_ns):
    t0 = time.perf_counter()
    res = _store(store).count(Query(text, now), start_ns=start_ns, end_ns=end_ns)
    return {"stats": res.stats, "warnings": res.warnings, "seconds": time.perf_counter() - t0}


def task_aggregate(store, text, now, start_ns, end_ns, spec):
    """Every group of the store (a partial aggregate, never a top N); spec:
    an AggSpec as a plain tuple."""
    t0 = time.perf_counter()
    groups, res = _store(store).aggregate(Query(text, now), AggSpec(*spec), start_ns=start_ns, end_ns=end_ns)
    return {"groups": groups.rows, "stats": res.stats, "warnings": res.warnings, "seconds": time.perf_counter() - t0}


# ---------- announcing ----------

async def _announce_loop(worker, stores, refresh):
    """Sends each store's catalogue to the scheduler when it changes."""
    last = {}
    loop = asyncio.get_running_loop()
    while worker.status not in (Status.closing, Status.closed, Status.failed):
        if worker.status == Status.running:
            for name, directory in stores.items():
                try:
                    cat = await loop.run_in_executor(None, catalogue, directory)
                except Exception as e:  # a store that cannot be read now: say so, keep the last
                    logger.warning("bitarc store '%s' (%s): %s", name, directory, e)
                    continue
                if cat != last.get(name):
                    cat["worker_name"] = str(worker.name)
                    await worker.scheduler.set_metadata(keys=[*METADATA_KEY, name, worker.address], value=cat)
                    cat.pop("worker_name")
                    last[name] = cat
        await asyncio.sleep(refresh if len(last) == len(stores) else 0.05)


def keep_heap():
    """A query reads each segment's index directory and bitmaps into buffers
    of up to a few MB, freed when the next segment starts. Dask's nanny starts
    workers with MALLOC_TRIM_THRESHOLD_=65536, so glibc gave every such buffer
    back and the next segment faulted its pages in again: a warm selective
    count took 200-400 ms in a worker against 2 ms in a plain process. Buffers
    up to 32 MB now stay in the heap and up to 256 MB of free heap is kept
    (the bitarc CLI does the same, process-wide)."""
    import cffi
    ffi = cffi.FFI()
    ffi.cdef("int mallopt(int param, int value);")
    try:
        libc = ffi.dlopen(None)
        libc.mallopt(-3, 32 << 20)   # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


async def attach_stores(worker, stores, refresh=10.0):
    """Makes this worker the holder of `stores` ({name: directory}): checks
    each opens, adds the resources and starts announcing."""
    keep_heap()
    for name, directory in stores.items():
        Store(directory).close()  # a store that does not open is an error now, not at query time
    with _lock:
        _stores.update({n: str(d) for n, d in stores.items()})
    res = {resource_name(n): 1 for n in stores}
    if worker.status == Status.running:
        await worker.set_resources(**res)
    else:  # not registered yet (preload): the registration carries them
        for r, q in res.items():
            worker.state.total_resources[r] = q
            worker.state.available_resources[r] = q
    task = asyncio.ensure_future(_announce_loop(worker, dict(stores), refresh))
    worker._bitarc_announce = getattr(worker, "_bitarc_announce", []) + [task]
    logger.info("bitarc stores on this worker: %s", ", ".join(f"{n}={d}" for n, d in stores.items()))


class StorePlugin(WorkerPlugin):
    """Attaches stores to workers by worker name ({worker name: {store: dir}});
    Dask re-applies it to a worker that restarts, which then serves again."""

    name = "bitarc-stores"

    def __init__(self, by_worker, refresh=10.0):
        self.by_worker = {str(k): dict(v) for k, v in by_worker.items()}
        self.refresh = refresh

    async def setup(self, worker):
        stores = self.by_worker.get(str(worker.name))
        if stores:
            await attach_stores(worker, stores, self.refresh)


def _parse_store(value):
    name, sep, directory = value.partition("=")
    if not sep or not name or not directory:
        raise click.BadParameter(f"'{value}': want NAME=DIR")
    return name, directory


@click.command()
@click.option("--bitarc-store", "store_specs", multiple=True, metavar="NAME=DIR",
              help="a bitarc store this worker holds (repeatable)")
@click.option("--bitarc-refresh", default=10.0, show_default=True, help="seconds between catalogue checks")
async def dask_setup(worker, store_specs, bitarc_refresh):
    """dask-worker --preload bitarc.dask.worker --bitarc-store NAME=DIR"""
    stores = dict(_parse_store(s) for s in store_specs)
    if not stores:
        raise click.UsageError("--preload bitarc.dask.worker wants at least one --bitarc-store NAME=DIR")
    await attach_stores(worker, stores, bitarc_refresh)
