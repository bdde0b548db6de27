"""Just enough of PNG to read a browser screenshot's pixels (8-bit RGB or RGBA, not interlaced)."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np


def _paeth_row(line: np.ndarray, prev: np.ndarray, bpp: int) -> np.ndarray:
    out = line.astype(np.int32)
    up = prev.astype(np.int32)
    for x in range(len(out)):
        a = out[x - bpp] if x >= bpp else 0
        b = up[x]
        c = up[x - bpp] if x >= bpp else 0
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        out[x] = (out[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    return out.astype(np.uint8)


def read_png(path: Path) -> np.ndarray:
    """The image as an (height, width, channels) uint8 array."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and not interlace, f"unsupported PNG {header}"
    bpp = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, 1 + width * bpp)
    rows = np.zeros((height, width * bpp), dtype=np.uint8)
    prev = np.zeros(width * bpp, dtype=np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            cur = line.copy()
        elif kind == 1:  # Sub: a running sum per channel
            cur = (np.cumsum(line.reshape(width, bpp).astype(np.int64), axis=0) & 255).astype(np.uint8).reshape(-1)
        elif kind == 2:
            cur = line + prev
        elif kind == 3:
            cur = line.astype(np.int32)
            for x in range(len(cur)):
                left = cur[x - bpp] if x >= bpp else 0
                cur[x] = (cur[x] + (left + int(prev[x])) // 2) & 255
            cur = cur.astype(np.uint8)
        else:
            cur = _paeth_row(line, prev, bpp)
        rows[y], prev = cur, cur
    return rows.reshape(height, width, bpp)
