"""A file of named numpy arrays plus a JSON header, read back memory-mapped without a copy.

Used for caches that must load in milliseconds (bme_cli/index_cache.py). Layout:

    b"BMEARRS1"                      8 bytes: magic and layout version
    <u8 header length>               8 bytes, little-endian
    header                           UTF-8 JSON: {"meta": {...}, "arrays": [[name, dtype, shape,
                                     offset, nbytes], ...]}
    array bytes                      each at a 64-byte aligned offset, C order, little-endian

`read_arrays` maps the file read-only and returns arrays that are views of the map (the
map lives as long as any of them); every offset, size and dtype is checked first, and any
file that is not laid out exactly so reads as None: a cache is rebuilt, never trusted
half-way. `write_arrays` writes atomically (graph.files). No numpy objects are pickled.
"""
from __future__ import annotations

import json
import mmap
import os
import struct
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .files import atomic_write

MAGIC = b"BMEARRS1"
ALIGN = 64
# Plain little-endian numbers and bools only: nothing that needs pickling to read back.
DTYPES = frozenset({"|b1", "|u1", "|i1", "<i2", "<i4", "<i8", "<u4", "<u8", "<f2", "<f4", "<f8"})


def _pad(n: int) -> int:
    return -n % ALIGN


def write_arrays(path: Path, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
    """Write `meta` (JSON-able) and the arrays to `path` atomically (StoreError on failure)."""
    table, chunks, offset = [], [], 0
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        if a.dtype.byteorder == ">":  # a big-endian machine: the file is little-endian everywhere
            a = a.astype(a.dtype.newbyteorder("<"))
        if a.dtype.str not in DTYPES:
            raise ValueError(f"array {name!r} has dtype {a.dtype.str}, not a plain number type")
        table.append([name, a.dtype.str, list(a.shape), offset, a.nbytes])
        chunks.append(memoryview(a).cast("B") if a.nbytes else b"")
        chunks.append(b"\0" * _pad(a.nbytes))
        offset += a.nbytes + _pad(a.nbytes)
    header = json.dumps({"meta": meta, "arrays": table}, ensure_ascii=False,
                        separators=(",", ":")).encode("utf-8")
    head = MAGIC + struct.pack("<Q", len(header)) + header
    atomic_write(Path(path), [head, b"\0" * _pad(len(head)), *chunks], mode=0o600)


def read_arrays(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """(meta, arrays) of a file `write_arrays` wrote; None if it is missing or not laid out so."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < len(MAGIC) + 8:
                return None
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        return _parse(data, size)
    except (ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError, struct.error, OverflowError):
        return None


def _parse(data: mmap.mmap, size: int) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    if data[:len(MAGIC)] != MAGIC:
        return None
    (length,) = struct.unpack_from("<Q", data, len(MAGIC))
    start = len(MAGIC) + 8
    if start + length > size:
        return None
    header = json.loads(bytes(data[start:start + length]).decode("utf-8"))
    base = start + length + _pad(start + length)
    meta, arrays = header["meta"], {}
    if not isinstance(meta, dict):
        return None
    for name, dtype, shape, offset, nbytes in header["arrays"]:
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if (dtype not in DTYPES or offset < 0 or offset % ALIGN or nbytes != count * dt.itemsize
                or base + offset + nbytes > size or any(type(s) is not int or s < 0 for s in shape)):
            return None
        arrays[str(name)] = np.frombuffer(data, dtype=dt, count=count, offset=base + offset).reshape(shape)
    return meta, arrays
