"""The worker never holds the generated loader's arrays and the HF model at once.

phase0 runs gate 1 (loader_facts) and gate 2 (baseline) one after the other in
one worker process, and its memory preflight sizes the peak as the larger of
the two stages, not their sum (preflight.EstimateMemory). That holds only while
each op lets go of everything it loaded before it returns: these tests keep
weak references to what was loaded and find them dead once the op has
answered, with the cyclic garbage collector off, so a reference cycle that
would survive until some later collection fails the test too.
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import json
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from helpers import baseline_args, go_config
from phase0_shim import facts, heap, ops, runner

# A loader phase0 generated (scaffold's golden workspace) for the tiny tied llama's shape.
GOLDEN_WEIGHTS = Path(__file__).resolve().parents[3] / "output" / "scaffold" / "testdata" / "golden" / "llama" / "tiny_llama_weights.py"


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def loaded_arrays(weights: Any) -> list[np.ndarray]:
    arrays = [getattr(weights, name, None) for name in facts.GLOBAL_FIELDS]
    for layer in weights.layers:
        arrays += [getattr(layer, name, None) for name in facts.LAYER_FIELDS]
    return [a for a in arrays if isinstance(a, np.ndarray)]


def test_loader_facts_release_the_loaders_arrays(tiny_model, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    refs: list[weakref.ref[np.ndarray]] = []
    real_import = facts.import_module_from_path

    def tracking_import(path: Path | str) -> ModuleType:
        module = real_import(path)
        real_load = module.load_weights

        def load_weights(*args: Any, **kwargs: Any) -> Any:
            weights = real_load(*args, **kwargs)
            refs.extend(weakref.ref(a) for a in loaded_arrays(weights))
            return weights

        monkeypatch.setattr(module, "load_weights", load_weights)
        return module

    monkeypatch.setattr(facts, "import_module_from_path", tracking_import)
    with no_cyclic_gc():
        answer = json.loads(ops.loader_facts(json.dumps({"weights_module": str(GOLDEN_WEIGHTS), "model_dir": str(tiny_model("llama", tied=True))})))
        alive = sum(r() is not None for r in refs)
    # 3 global fields (a tied lm_head is the embedding array) and 9 per layer.
    assert len(answer["layers"]) == 2 and len(refs) == 3 + 2 * 9
    assert alive == 0, f"{alive} of the loader's {len(refs)} arrays outlive loader_facts: the HF model would load beside them"


def test_baseline_releases_the_hf_model(tiny_model, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # The reference stage loads the model again, in the same worker: the
    # baseline's copy must be gone by then.
    models: list[weakref.ref[Any]] = []
    real_resolve = runner.resolve_runner

    def tracking_resolve(llms_dir: Any) -> Any:
        resolved = real_resolve(llms_dir)
        cls = resolved.runner_cls

        class Tracked(cls):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                models.append(weakref.ref(self.model))

        return dataclasses.replace(resolved, runner_cls=Tracked)

    monkeypatch.setattr(runner, "resolve_runner", tracking_resolve)
    model_dir = tiny_model("llama")
    with no_cyclic_gc():
        ops.baseline(json.dumps(baseline_args(model_dir, config=go_config(model_dir))))
        alive = sum(r() is not None for r in models)
    assert len(models) == 1
    assert alive == 0, "the baseline's HF model outlives the op: the reference would load a second copy beside it"


def test_loader_facts_hand_the_freed_pages_back(tiny_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # Freed is not enough: glibc keeps a loader's freed chunks resident
    # (~390 MiB at the 3B shape) unless told to return them, after the
    # arrays are dead and before the op answers.
    calls: list[str] = []
    real_load = facts.loader_facts

    def load(*args: Any) -> Any:
        calls.append("load")
        return real_load(*args)

    def release() -> bool:
        calls.append("release")
        return True

    monkeypatch.setattr(facts, "loader_facts", load)
    monkeypatch.setattr(heap, "release", release)
    ops.loader_facts(json.dumps({"weights_module": str(GOLDEN_WEIGHTS), "model_dir": str(tiny_model("llama", tied=True))}))
    assert calls == ["load", "release"]
    with pytest.raises(FileNotFoundError):  # a folder without the checkpoint
        ops.loader_facts(json.dumps({"weights_module": str(GOLDEN_WEIGHTS), "model_dir": str(tmp_path)}))
    assert calls == ["load", "release"] * 2, "a loader that failed half-way must hand its pages back too"


def resident_anonymous_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/self/status")


@pytest.mark.skipif(heap._malloc_trim() is None or not Path("/proc/self/status").exists(), reason="needs glibc's malloc_trim and /proc")
def test_release_returns_free_heap_pages_to_the_os() -> None:
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    chunk, count = 64 << 10, 4096  # 256 MiB in chunks below glibc's mmap threshold: heap memory
    heap.release()
    before = resident_anonymous_kib()
    chunks = [libc.malloc(chunk) for _ in range(count)]
    assert all(chunks)
    for c in chunks:
        ctypes.memset(c, 1, chunk)
    for c in chunks[:-1]:  # the last stays: the heap's top is in use, so free alone returns nothing
        libc.free(c)
    try:
        kept = resident_anonymous_kib() - before
        assert kept > 200 << 10, f"freed chunks should still be resident before release (+{kept} KiB)"
        assert heap.release()
        left = resident_anonymous_kib() - before
        assert left < 32 << 10, f"{left} KiB of 256 MiB freed still resident after release"
    finally:
        libc.free(chunks[-1])


@pytest.mark.parametrize("missing", ["ctypes", "malloc_trim"])
def test_release_without_ctypes_or_malloc_trim_is_a_no_op(missing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A CPython built without libffi has no ctypes; musl and macOS have no
    # malloc_trim. The loader op must work there all the same.
    if missing == "ctypes":
        monkeypatch.setitem(sys.modules, "ctypes", None)  # import ctypes raises ImportError
    else:
        monkeypatch.setattr(ctypes, "CDLL", lambda _: object())  # a C library without the symbol
    heap._malloc_trim.cache_clear()
    try:
        assert heap.release() is False
    finally:
        heap._malloc_trim.cache_clear()
