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


@pytest.mark.parametrize(
    ("torch_default", "cpus", "want"),
    [
        (2, 2, 1),  # the shared 2-core machine: leave one core to the rest
        (1, 1, 1),  # a single CPU still records
        (16, 16, 15),
        (8, 16, 8),  # torch's own count (OMP_NUM_THREADS) is the ceiling
        (4, 0, 1),  # an unknown CPU count never means zero threads
    ],
)
def test_recording_threads(torch_default: int, cpus: int, want: int) -> None:
    assert threads.recording_threads(torch_default, cpus) == want


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
    assert limited["torch_threads"] == threads.recording_threads(torch.get_num_threads(), cpus)
    assert limited["torch_threads"] < max(2, cpus)

    # torch's own default (one thread per core), as before the limit existed.
    monkeypatch.setattr(threads, "recording_threads", lambda torch_default, cpus: torch_default)
    default = _record(model_dir, tmp_path / "default")
    assert default["torch_threads"] == torch.get_num_threads()
    assert default["tensors_sha256"] == limited["tensors_sha256"]
