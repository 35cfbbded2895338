"""bitarc for Python: a thin cffi binding of libbitarc's public API (stores,
filters, output formats, aggregates; rows as numpy structured arrays) and
bitarc.dask, the same queries over many stores on a Dask cluster."""

from .core import (COL_AGG, COL_ALL, ORDERS, Aggregator, Error, FilterError, Formatter, Groups, Query,
                   Result, Store, StoreWriter, now_ns, parse_agg_fields, parse_window)
from .records import AGG_ROW, RECORD

__all__ = ["AGG_ROW", "RECORD", "COL_AGG", "COL_ALL", "ORDERS", "Aggregator", "Error", "FilterError",
           "Formatter", "Groups", "Query", "Result", "Store", "StoreWriter", "now_ns", "parse_agg_fields", "parse_window"]
