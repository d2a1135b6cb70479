"""The thread count a recording runs with, and that it does not change what
is recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from helpers import baseline_args, go_config
from phase0_shim import ops, reference, threads


SMALL = threads.LARGE_MODEL_PARAMETERS - 1
LARGE = threads.LARGE_MODEL_PARAMETERS


@pytest.mark.parametrize(
    ("torch_default", "cpus", "parameters", "want"),
    [
        # Small models leave one CPU free.
        (2, 2, SMALL, 1),  # the shared 2-core machine: leave one core to the rest
        (1, 1, SMALL, 1),  # a single CPU still records
        (16, 16, SMALL, 15),
        (8, 16, SMALL, 8),  # torch's own count (OMP_NUM_THREADS) is the ceiling
        (4, 0, SMALL, 1),  # an unknown CPU count never means zero threads
        (2, 2, 135_000_000, 1),  # SmolLM2-135M
        # Large models use torch's own count.
        (2, 2, LARGE, 2),
        (2, 2, 3_212_749_824, 2),  # the Llama-3.2-3B shape
        (1, 1, LARGE, 1),
        (16, 16, LARGE, 16),
        (8, 16, LARGE, 8),  # OMP_NUM_THREADS=8 still caps it
        (1, 16, LARGE, 1),  # OMP_NUM_THREADS=1 too
        (16, 4, LARGE, 4),  # never more threads than the process's CPUs
        (4, 0, LARGE, 1),
    ],
)
def test_recording_threads(torch_default: int, cpus: int, parameters: int, want: int) -> None:
    assert threads.recording_threads(torch_default, cpus, parameters) == want


def test_the_threshold_is_the_only_step() -> None:
    """The count changes at LARGE_MODEL_PARAMETERS and nowhere else."""
    for torch_default, cpus in [(2, 2), (8, 8), (4, 16)]:
        small = {threads.recording_threads(torch_default, cpus, p) for p in (0, 1, SMALL)}
        large = {threads.recording_threads(torch_default, cpus, p) for p in (LARGE, 10 * LARGE)}
        assert small == {max(1, min(torch_default, cpus - 1))}
        assert large == {min(torch_default, cpus)}


def test_torch_threads_sets_and_restores() -> None:
    before = torch.get_num_threads()
    with threads.torch_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError, match="boom"), threads.torch_threads(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="got 0"), threads.torch_threads(0):
        pass


def _record(model_dir: Path, out: Path) -> dict[str, Any]:
    args = baseline_args(
        model_dir,
        model_id="example/Tiny-Llama",
        config=go_config(model_dir),
        steps=4,
        top_k=5,
        dtype="bfloat16",
        out_dir=str(out),
        meta={},
    )
    assert json.loads(ops.record_reference(json.dumps(args))) == {}
    meta: dict[str, Any] = json.loads((out / reference.META_FILE).read_text(encoding="utf-8"))
    return meta


def test_recording_is_the_same_with_torch_default_threads(
    tiny_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    model_dir = tiny_model("llama")
    cpus = threads.usable_cpus()
    limited = _record(model_dir, tmp_path / "limited")
    # A tiny model is small: one CPU is left free.
    assert limited["torch_threads"] == max(1, min(torch.get_num_threads(), cpus - 1))
    assert limited["torch_threads"] < max(2, cpus)

    # The same model counted as large: torch's own count, as for a 3B model.
    monkeypatch.setattr(threads, "LARGE_MODEL_PARAMETERS", 1)
    default = _record(model_dir, tmp_path / "default")
    assert default["torch_threads"] == min(torch.get_num_threads(), cpus)
    assert default["tensors_sha256"] == limited["tensors_sha256"]
