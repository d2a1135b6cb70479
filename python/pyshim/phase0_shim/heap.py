"""The worker's C heap: the memory of freed arrays handed back to the
operating system (:func:`release`), and large NumPy temporaries reused
instead of mapped afresh while a folder's loader runs (:func:`reusing`).

The worker runs the generated loader and then the HF model in one process,
and phase0's memory preflight sizes its peak as the larger of the two, not
their sum. Freeing the loader's arrays is not enough for that: glibc keeps
the freed chunks of its heaps (one per loading thread) for later mallocs.
On the Llama-3.2-3B shape that was ~390 MiB still resident when the HF model
loaded beside it, 3.4 % over the estimate; ``malloc_trim`` returns those
pages and the HF stage then peaks where a plain transformers script does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any


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


class Reuse:
    """What :func:`reusing` did: the blocks handed back to a new array
    (hits) and those the cache had none for (misses), with the bytes of
    each: reused, carved out of the arena, or fresh from the C library.
    All zero where phase0's allocator was not available."""

    def __init__(self, native: Any | None) -> None:
        self._native = native
        self.hits = self.misses = self.reused_bytes = self.fresh_bytes = self.carved_bytes = 0

    @property
    def active(self) -> bool:
        return self._native is not None

    def age(self) -> None:
        """Drop the blocks not freed again since the last call: sizes the
        code stopped using (a loader's head, once it reads the layers)."""
        if self._native is not None:
            self._native.age()

    def held(self) -> int:
        """The bytes the cache holds now (0 when not active)."""
        return int(self._native.held()) if self._native is not None else 0

    def arena(self, room: int) -> None:
        """Keep, of the blocks the cache lets go of, up to ``room`` bytes
        not carved yet, to carve the arrays the cache has no block for."""
        if self._native is not None:
            self._native.arena(room)

    def next_layer(self, layer: int, n_layers: int) -> None:
        """A loader moved on to ``layer``: drop the sizes it stopped making
        (age), or, at the last layer, stop. Nothing of the same size follows
        the last layer, and it ends where the caller holds the most."""
        if layer == n_layers - 1:
            self.stop()
        else:
            self.age()

    @contextmanager
    def carving(self) -> Iterator[None]:
        """Within the block, NumPy arrays made on the calling thread go
        through the allocator too (the cache, then the arena), while it is
        active: for another thread's copies of what the work keeps, which
        NumPy would otherwise map afresh (each thread has its own context,
        and a new one starts with NumPy's own allocator)."""
        native = self._native  # once: stop() may run on another thread meanwhile (the handler stays valid)
        set_handler = _numpy_set_handler() if native is not None else None
        if set_handler is None or native is None:
            yield
            return
        previous = set_handler(native.handler)
        try:
            yield
        finally:
            set_handler(previous)

    def stop(self) -> None:
        """Empty the cache, close the arena and keep nothing more (arrays
        are then made and freed as by NumPy's own allocator): for the last
        part of the work, where what the cache would hold adds to the peak
        and nothing of the same size follows. What the cache did is read
        here. Arrays carved from the arena live on; each arena block is
        freed with its last array."""
        if self._native is not None:
            self.hits, self.misses, self.reused_bytes, self.fresh_bytes, self.carved_bytes = self._native.end()
            self._native = None


@contextmanager
def reusing(cap: int) -> Iterator[Reuse]:
    """Within the block, NumPy arrays of 4 MiB or more made on this thread
    take the memory of arrays of the same size freed before them, up to
    ``cap`` bytes kept, instead of a fresh mapping whose pages the kernel
    zeroes again (phase0's worker provides the allocator: reuse.c in package
    bridge); with :meth:`Reuse.arena`, what the cache lets go of (a size no
    longer made) is kept too, and arrays the cache has no block for are
    carved out of it. A no-op under a plain python. The cache is emptied,
    the arena closed and the heap trimmed on the way out; arrays made
    inside may outlive the block.
    """
    native = sys.modules.get("_phase0_reuse")
    set_handler = _numpy_set_handler() if native is not None else None
    if native is None or set_handler is None:
        try:
            yield Reuse(None)
        finally:
            release()
        return
    native.begin(cap)
    previous = set_handler(native.handler)
    reuse = Reuse(native)
    try:
        if _umath().get_handler_name() != "phase0_reuse":
            reuse._native = None  # not this NumPy's handler API: left as it was
        yield reuse
    finally:
        set_handler(previous)
        if reuse._native is not None:
            reuse.stop()
        else:
            native.end()  # stopped already, or not this NumPy's handler API
        release()


def _umath() -> Any:
    import importlib

    return importlib.import_module("numpy._core._multiarray_umath")  # NumPy 2's C module


@cache
def _numpy_set_handler() -> Callable[[object], object] | None:
    """NumPy's PyDataMem_SetHandler (NEP 49, NumPy >= 1.22; entry 304 of its
    C-API table, fixed by its ABI), which sets this context's allocator and
    returns the previous one. None without ctypes or NumPy 2."""
    try:
        import ctypes

        api = _umath()._ARRAY_API
    except (ImportError, AttributeError):
        return None
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    try:
        table = get_pointer(api, None)
    except ValueError:
        return None
    entry = ctypes.cast(table, ctypes.POINTER(ctypes.c_void_p))[304]
    return ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(entry)
