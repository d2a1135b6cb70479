"""heap.reusing under a plain python (no phase0 worker, so no _phase0_reuse):
NumPy's own allocator stays, the handle's calls do nothing, and the heap is
still trimmed once on the way out, as gate 1 relies on. Under the worker
the allocator itself is tested by package bridge (TestReuseAllocator)."""

from __future__ import annotations

import ctypes
import importlib
import sys

import numpy as np
import pytest

from phase0_shim import heap


def test_reusing_without_the_worker_leaves_numpy_alone_and_trims_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "_phase0_reuse" not in sys.modules
    trims: list[int] = []
    monkeypatch.setattr(heap, "release", lambda: trims.append(1) or True)
    umath = importlib.import_module("numpy._core._multiarray_umath")
    with heap.reusing(1 << 30) as reuse:
        assert not reuse.active
        a = np.ones(1 << 21, dtype=np.float32)
        assert umath.get_handler_name(a) == "default_allocator"
        reuse.age()
        assert reuse.held() == 0
        reuse.arena(1 << 30)
        with reuse.carving():
            assert umath.get_handler_name(np.ones(1 << 21, dtype=np.float32)) == "default_allocator"
        reuse.stop()
        assert trims == []
    assert trims == [1]
    assert (reuse.hits, reuse.misses, reuse.reused_bytes, reuse.fresh_bytes, reuse.carved_bytes) == (0, 0, 0, 0, 0)


def test_numpys_set_handler_installs_a_handler_and_returns_the_previous_one() -> None:
    """Entry 304 of NumPy's C-API table is PyDataMem_SetHandler: a handler
    made here from libc's malloc (ctypes callbacks) is what arrays are made
    with until the previous one, which it returned, is set back."""
    set_handler = heap._numpy_set_handler()
    assert set_handler is not None
    umath = importlib.import_module("numpy._core._multiarray_umath")
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.calloc.restype, libc.calloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]
    libc.realloc.restype, libc.realloc.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    class Allocator(ctypes.Structure):
        _fields_ = [
            ("ctx", ctypes.c_void_p),
            ("malloc", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)),
            ("calloc", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)),
            ("realloc", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)),
            ("free", ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)),
        ]

    class Handler(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8), ("allocator", Allocator)]

    frees: list[int] = []
    handler = Handler(
        b"test_libc",
        1,
        Allocator(
            None,
            Allocator._fields_[1][1](lambda _, n: libc.malloc(max(n, 1))),
            Allocator._fields_[2][1](lambda _, k, n: libc.calloc(max(k, 1), max(n, 1))),
            Allocator._fields_[3][1](lambda _, p, n: libc.realloc(p, max(n, 1))),
            Allocator._fields_[4][1](lambda _, p, n: frees.append(n) or libc.free(p)),
        ),
    )
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    previous = set_handler(new_capsule(ctypes.addressof(handler), b"mem_handler", None))
    try:
        a = np.arange(1000, dtype=np.float32)
        assert umath.get_handler_name(a) == "test_libc" and a.sum() == 499500
    finally:
        set_handler(previous)
    assert umath.get_handler_name() == "default_allocator"
    del a
    assert 4000 in frees  # the array, freed through the handler it was made with
