"""bitarc on Dask: one query over the stores of many workers.

Workers announce their stores (bitarc.dask.worker: a worker resource
"bitarc:NAME" per store plus its segment catalogue in the scheduler's
metadata); ClusterQuery plans by time, sends each store's share to a worker
holding it and merges exactly. CLI: python3 -m bitarc.dask query."""

from .execute import ClusterError, ClusterQuery
from .plan import cluster_view, forget
from .worker import StorePlugin, attach_stores


def attach(client, by_address, refresh=10.0):
    """Attaches stores to running workers once: {worker address: {store: dir}}
    (a worker that restarts does not get them back; StorePlugin does that)."""
    for addr, stores in by_address.items():
        client.run(_attach_here, stores=dict(stores), refresh=refresh, workers=[addr])


async def _attach_here(dask_worker, stores, refresh):
    await attach_stores(dask_worker, stores, refresh)


def wait_for_stores(client, names, timeout=30.0):
    """Blocks until every store in `names` has a live holder with its
    catalogue announced; returns the cluster view."""
    import time
    end = time.monotonic() + timeout
    while True:
        v = cluster_view(client)
        ready = [n for n in names if n in v and v[n]["holders"] and v[n]["catalogue"] is not None]
        if len(ready) == len(names):
            return v
        if time.monotonic() > end:
            raise TimeoutError(f"stores not announced within {timeout}s: "
                               f"{sorted(set(names) - set(ready))}")
        time.sleep(0.05)


__all__ = ["ClusterError", "ClusterQuery", "StorePlugin", "attach", "attach_stores", "cluster_view", "forget",
           "wait_for_stores"]
