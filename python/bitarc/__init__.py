"""bitarc for Python: a thin cffi binding of libbitarc's public API (stores,
filters, output formats, aggregates; rows as numpy structured arrays) and
bitarc.dask, the same queries over many stores on a Dask cluster."""

from .core import (COL_AGG, COL_ALL, FMT_LOCAL, FMT_PLAIN, FMT_V6LONG, ORDERS, AggSpec, Aggregator, Error,
                   FilterError, Formatter, Groups, Query, Result, Store, StoreWriter, agg_title, agg_value,
                   format_number, now_ns, order_name, parse_agg_fields, parse_order, parse_window, proto_name,
                   sort_records)
from .records import AGG_ROW, RECORD

__all__ = ["AGG_ROW", "RECORD", "COL_AGG", "COL_ALL", "FMT_LOCAL", "FMT_PLAIN", "FMT_V6LONG", "ORDERS", "AggSpec",
           "Aggregator", "Error", "FilterError", "Formatter", "Groups", "Query", "Result", "Store", "StoreWriter",
           "agg_title", "agg_value", "format_number", "now_ns", "order_name", "parse_agg_fields", "parse_order",
           "parse_window", "proto_name", "sort_records"]
