"""Hand the memory of freed arrays back to the operating system.

The worker runs the generated loader and then the HF model in one process,
and phase0's memory preflight sizes its peak as the larger of the two, not
their sum. Freeing the loader's arrays is not enough for that: glibc keeps
the freed chunks of its heaps (one per loading thread) for later mallocs.
On the Llama-3.2-3B shape that was ~390 MiB still resident when the HF model
loaded beside it, 3.4 % over the estimate; ``malloc_trim`` returns those
pages and the HF stage then peaks where a plain transformers script does.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        import ctypes  # absent from a CPython built without libffi

        trim = ctypes.CDLL(None).malloc_trim  # glibc; musl and macOS have none
    except (ImportError, AttributeError, OSError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release() -> bool:
    """Return the C heap's free pages to the OS; whether anything was returned.

    A no-op (False) where the C library has no ``malloc_trim``.
    """
    trim = _malloc_trim()
    return trim is not None and trim(0) == 1
