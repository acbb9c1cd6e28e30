"""Thread pools at query time.

On a small machine, numpy's BLAS pool and torch's OpenMP pool fight over the same cores: after
a BLAS call its threads keep spinning for a while, so the next torch call (MiniLM encoding the
query) waits for them.  Measured here on 2 cores (``benchmarks/bench_sprout.py``): a SproutRAG
query took 103-112 ms p50 with both pools at 2 threads and 8-15 ms with BLAS at 1 thread.
The query path's BLAS work is a handful of small matrix-vector products, which gain nothing
from threads, so every process that answers queries caps BLAS at one thread; torch keeps its
own setting (``torch.set_num_threads``) for the encoder.
"""

from __future__ import annotations

_applied = False


def limit_blas_threads(n: int | None = None) -> None:
    """Cap the BLAS thread pools loaded in this process (numpy's OpenBLAS/MKL) at ``n`` threads
    (default: the ``blas_threads`` setting, ``VECTREE_BLAS_THREADS``, 1 unless set), for the rest
    of the process.  Idempotent; ``0`` leaves the pools alone."""
    global _applied
    if _applied:
        return
    if n is None:
        from vectree.retrieval.config import load_settings

        n = load_settings().blas_threads
    _applied = True
    if n <= 0:
        return
    import numpy  # noqa: F401  (loads the BLAS library, so threadpoolctl can find it)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n, user_api="blas")
