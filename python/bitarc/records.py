"""numpy dtypes laid out exactly as the C structs, so an array of records can be
handed to libbitarc (ffi.from_buffer) and a C buffer viewed as an array
without converting field by field."""

import numpy as np

from ._ffi import ffi

_SCALARS = {
    "uint8_t": "u1", "uint16_t": "<u2", "uint32_t": "<u4", "uint64_t": "<u8",
}


def _dtype_of(ctype_name):
    ct = ffi.typeof(ctype_name)
    names, formats, offsets = [], [], []
    for name, field in ct.fields:
        t = field.type
        if t.kind == "primitive" or t.kind == "enum":
            fmt = _SCALARS.get(t.cname, "<i4" if t.kind == "enum" else None)
        elif t.kind == "array":
            fmt = (_SCALARS[t.item.cname], t.length)
        elif t.kind == "pointer":
            fmt = "<u8"  # a borrowed pointer: meaningless outside the call, zeroed when copied
        elif t.kind == "struct":
            fmt = _dtype_of(t.cname)
        else:
            raise TypeError(f"{ctype_name}.{name}: no numpy type for {t.cname}")
        if fmt is None:
            raise TypeError(f"{ctype_name}.{name}: no numpy type for {t.cname}")
        names.append(name)
        formats.append(fmt)
        offsets.append(field.offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": ffi.sizeof(ct)})


#: one ba_record_t (flow or packet record; addresses are 16 bytes, IPv4-mapped)
RECORD = _dtype_of("ba_record_t")
#: one ba_query_agg_row_t: the group key record and its counters
AGG_ROW = _dtype_of("ba_query_agg_row_t")


def _gaps(dt, base=0):
    """The padding bytes [start, end) of a struct dtype (C leaves them
    undefined; copies of C structs get them zeroed so equal records compare
    equal as bytes)."""
    out, pos = [], 0
    for off, sub in sorted((f[1], f[0]) for f in dt.fields.values()):
        if off > pos:
            out.append((base + pos, base + off))
        if sub.fields:
            out += _gaps(sub, base + off)
        pos = off + sub.itemsize
    if dt.itemsize > pos:
        out.append((base + pos, base + dt.itemsize))
    return out


_GAPS = {RECORD: _gaps(RECORD), AGG_ROW: _gaps(AGG_ROW)}


def from_c(ptr, n, dt):
    """A copy of n C structs at ptr as an array of dtype dt (RECORD or
    AGG_ROW): frame pointers and padding bytes zeroed."""
    if n == 0:
        return np.empty(0, dt)
    a = np.frombuffer(ffi.buffer(ptr, n * dt.itemsize), dt).copy()
    b = _rows(a)
    for s, e in _GAPS[dt]:
        b[:, s:e] = 0
    if dt is RECORD:
        a["frame"] = 0
    else:
        a["key"]["frame"] = 0
    return a


def records_from_c(ptr, n):
    """A copy of n C records at ptr as a RECORD array (frame pointers and
    padding zeroed)."""
    return from_c(ptr, n, RECORD)


def as_c_records(arr):
    """A zero-copy `const ba_record_t *` view of a contiguous RECORD array
    (the array must stay alive while the pointer is used)."""
    arr = np.ascontiguousarray(arr, RECORD)
    return ffi.from_buffer("ba_record_t[]", arr), arr


def ipv4(arr_addr):
    """The IPv4 address (host order uint32) of 16-byte IPv4-mapped addresses."""
    b = np.asarray(arr_addr, np.uint8)
    return (b[..., 12].astype(np.uint32) << 24) | (b[..., 13].astype(np.uint32) << 16) | \
        (b[..., 14].astype(np.uint32) << 8) | b[..., 15].astype(np.uint32)


def _rows(arr):
    return arr.view(np.uint8).reshape(len(arr), arr.dtype.itemsize)


def take(arr, idx):
    """arr[idx] (indices or a boolean mask) for a RECORD/AGG_ROW array,
    copied as whole rows of bytes (numpy's per-field copy of these offset
    dtypes is far slower)."""
    if len(arr) == 0:
        return arr[idx]
    idx = np.asarray(idx)
    if idx.dtype == bool:
        idx = np.flatnonzero(idx)
    return np.take(_rows(np.ascontiguousarray(arr)), idx, axis=0).view(arr.dtype).reshape(len(idx))


def concat(arrs):
    """np.concatenate of arrays of one struct dtype, copied as whole rows."""
    dt = arrs[0].dtype
    return np.concatenate([_rows(np.ascontiguousarray(a)) for a in arrs if len(a)] or
                          [np.empty((0, dt.itemsize), np.uint8)]).view(dt).reshape(-1)
