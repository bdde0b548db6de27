"""Vectors of the excerpt units, kept in the sidecar beside the graph (never in ST-BME's fields).

`graph.meta.extra["excerptVectors"]` = {"model", "dimension", "keys": [unit keys],
"vectors": base64 of little-endian float16, row-major}. Half precision: a cosine needs no
more, and 10,000 units of 512 dimensions take 10 MB instead of 20. A unit's key changes
with its text (excerpts.Unit.key), so an edited message is embedded again and keys of
units no longer in the chat are dropped on the next embedding. Vectors of another model
than the embedder's are dropped whole, never mixed.
"""
from __future__ import annotations

import base64
import binascii
from typing import Iterable

import numpy as np

from ..errors import ProviderError
from ..graph.model import Graph
from ..providers.base import Embedder
from .excerpts import Unit

VECTORS_KEY = "excerptVectors"
BATCH = 256


class _VectorDoc(dict):
    """The stored document as the sidecar writes it, with what it decodes to kept beside it
    (attributes are not serialized), so a batch does not decode and re-encode every vector."""

    decoded: dict[str, np.ndarray]
    raw: bytearray
    encoded: str     # base64 of raw[:len(raw) // 3 * 3]: the next append encodes only what follows
    written: tuple

    def intact(self) -> bool:
        """Still what _store made (nothing assigned over its fields since)."""
        return (self.get("vectors") is self.written[0] and self.get("keys") is self.written[1]
                and self.get("dimension") == self.written[2])


def stored_vectors(graph: Graph, model_id: str | None = None) -> dict[str, np.ndarray]:
    """Unit key -> float32 vector ({} when none are stored, they are unreadable, or of another model)."""
    doc = graph.meta.extra.get(VECTORS_KEY)
    if not isinstance(doc, dict) or (model_id is not None and doc.get("model") != model_id):
        return {}
    if isinstance(doc, _VectorDoc) and doc.intact():
        return dict(doc.decoded)
    keys, dim = doc.get("keys"), doc.get("dimension")
    try:
        raw = base64.b64decode(doc.get("vectors") or "", validate=True)
        matrix = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    except (binascii.Error, TypeError, ValueError):
        return {}
    if not isinstance(keys, list) or not isinstance(dim, int) or dim <= 0 or matrix.size != len(keys) * dim:
        return {}
    matrix = matrix.reshape(len(keys), dim)
    if not np.isfinite(matrix).all():
        return {}
    return {str(k): matrix[i] for i, k in enumerate(keys)}


def _store(graph: Graph, model_id: str, vectors: dict[str, np.ndarray]) -> None:
    if not vectors:
        graph.meta.extra.pop(VECTORS_KEY, None)
        return
    keys = list(vectors)
    prev = graph.meta.extra.get(VECTORS_KEY)
    if (isinstance(prev, _VectorDoc) and prev.intact() and prev["model"] == model_id and len(prev.decoded) <= len(keys)
            and list(prev.decoded) == keys[:len(prev.decoded)]):  # only appended: encode the new rows
        head, encoded, decoded, new = prev.raw, prev.encoded, dict(prev.decoded), keys[len(prev.decoded):]
    else:
        head, encoded, decoded, new = b"", "", {}, keys
    rows = np.stack([vectors[k] for k in new]).astype("<f2") if new else None
    doc = _VectorDoc(model=model_id, dimension=int(rows.shape[1] if new else prev["dimension"]), keys=keys)
    doc.decoded, doc.raw, doc.encoded = decoded, bytearray(head), encoded
    _append_rows(doc, new, rows)
    graph.meta.extra[VECTORS_KEY] = doc


def _append_rows(doc: _VectorDoc, keys: list[str], rows: np.ndarray | None) -> None:
    """Add rows (float16, one per new key, already in doc["keys"]) and write the base64 again."""
    if rows is not None and len(keys):
        doc.raw += rows.tobytes()
        doc.decoded.update(zip(keys, rows.astype(np.float32)))  # as a reload would read them
    # base64 of whole 3-byte groups does not depend on what follows them: encode only the rest
    done = len(doc.encoded) // 4 * 3
    whole = len(doc.raw) // 3 * 3
    doc.encoded += base64.b64encode(doc.raw[done:whole]).decode("ascii")
    doc["vectors"] = doc.encoded + base64.b64encode(doc.raw[whole:]).decode("ascii")
    doc.written = (doc["vectors"], doc["keys"], doc["dimension"])


def _append(doc: _VectorDoc, vectors: dict[str, np.ndarray]) -> None:
    """Store the vectors of new keys in an intact document of the same model, in place: what
    _store would make of the old vectors and these, without copying the old ones (a long chat's
    batches each add a few rows to thousands)."""
    keys = list(vectors)
    doc["keys"].extend(keys)
    _append_rows(doc, keys, np.stack([vectors[k] for k in keys]).astype("<f2"))


def embed_units(graph: Graph, units: Iterable[Unit], embedder: Embedder | None, *,
                keep_others: bool = True) -> int:
    """Embed the units that have no vector yet and store them; returns how many were embedded.

    With keep_others=False, stored vectors of units not in `units` are dropped (a whole-chat pass).
    An embedding failure raises ProviderError with what was embedded before it kept.
    """
    if embedder is None:
        return 0
    todo = list(units)
    doc = graph.meta.extra.get(VECTORS_KEY)
    if keep_others and isinstance(doc, _VectorDoc) and doc.intact() and doc.get("model") == embedder.model_id:
        return _embed_appending(doc, todo, embedder)   # an ingest batch: few units, or none, are new
    have = stored_vectors(graph, embedder.model_id)
    wanted = {u.key for u in todo}
    if not keep_others:
        have = {k: v for k, v in have.items() if k in wanted}
    missing = list({u.key: u for u in todo if u.key not in have}.values())
    done = 0
    try:
        for start in range(0, len(missing), BATCH):
            chunk = missing[start:start + BATCH]
            have.update(zip((u.key for u in chunk), _embedded(embedder, chunk)))
            done += len(chunk)
    finally:
        if done or not keep_others:
            _store(graph, embedder.model_id, have)
    return done


def _embedded(embedder: Embedder, chunk: list[Unit]) -> np.ndarray:
    """One vector per unit (float32), or ProviderError for a reply of another shape or with NaNs."""
    rows = np.asarray(embedder.embed([u.text for u in chunk]), dtype=np.float32)
    if rows.ndim != 2 or rows.shape[0] != len(chunk) or not np.isfinite(rows).all():
        raise ProviderError(f"the embedder returned {rows.shape} vectors for {len(chunk)} excerpts")
    return rows


def _embed_appending(doc: _VectorDoc, todo: list[Unit], embedder: Embedder) -> int:
    """embed_units for a document it can append to: only the missing units are embedded and added."""
    missing = list({u.key: u for u in todo if u.key not in doc.decoded}.values())
    done = 0
    for start in range(0, len(missing), BATCH):
        chunk = missing[start:start + BATCH]
        rows = _embedded(embedder, chunk)
        if rows.shape[1] != doc["dimension"]:
            raise ProviderError(f"the embedder returned {rows.shape[1]}-dimensional vectors for excerpts "
                                f"stored with {doc['dimension']}")
        _append(doc, {u.key: row for u, row in zip(chunk, rows)})   # kept, as _store keeps what came before a failure
        done += len(chunk)
    return done


def drop_vectors_from(graph: Graph, seq: int) -> None:
    """Forget the vectors of units of messages >= seq (a rebuild extracts them again)."""
    doc = graph.meta.extra.get(VECTORS_KEY)
    if not isinstance(doc, dict):
        return
    model = str(doc.get("model"))
    kept = {k: v for k, v in stored_vectors(graph).items() if int(k.split(":", 1)[0]) < seq}
    _store(graph, model, kept)


def clear_vectors(graph: Graph) -> None:
    """Drop every excerpt vector (before re-embedding with another model)."""
    graph.meta.extra.pop(VECTORS_KEY, None)
