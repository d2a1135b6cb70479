"""Progress lines: rate-limited, on the stream given (stderr in the worker), with an ETA."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
import torch

from phase0_shim import progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_rate_limited_with_eta_and_a_final_line() -> None:
    clock, out = Clock(), io.StringIO()
    p = progress.Progress("reference", every=2.0, stream=out, clock=clock)
    for step in range(1, 11):
        clock.now += 0.5  # 0.5 s per step: 10 steps in 5 s
        p.update(step, 10, f"step {step}/10")
    p.finish("10 steps decoded")
    # Nothing before the first 2 s, then at most one line per 2 s, then the final line.
    assert lines(out) == [
        "phase0: reference: step 4/10 (2 s, ETA 3 s)",
        "phase0: reference: step 8/10 (4 s, ETA 1 s)",
        "phase0: reference: 10 steps decoded in 5 s",
    ]


def test_a_short_task_prints_nothing() -> None:
    clock, out = Clock(), io.StringIO()
    p = progress.Progress("hf_baseline", every=2.0, stream=out, clock=clock)
    clock.now += 1.9
    p.update(1, 2, "layer 1/2")
    p.finish("done")
    assert out.getvalue() == ""


def test_unknown_total_shows_the_time_only() -> None:
    clock, out = Clock(), io.StringIO()
    p = progress.Progress("config_facts", every=10.0, stream=out, clock=clock)
    clock.now += 75
    p.update(0, 0, "importing")
    assert lines(out) == ["phase0: config_facts: importing (1m15s)"]


@pytest.mark.parametrize(
    ("value", "want"),
    [("", 2.0), ("0", 0.0), ("0.5", 0.5), ("-1", 2.0), ("nan", 2.0), ("soon", 2.0)],
)
def test_interval_from_the_environment(monkeypatch: pytest.MonkeyPatch, value: str, want: float) -> None:
    monkeypatch.setenv(progress.INTERVAL_ENV, value)
    assert progress.interval() == want


class TwoLayers(torch.nn.Module):
    """The shape progress.layers follows: model.layers, as HF causal LMs have."""

    def __init__(self) -> None:
        super().__init__()
        self.model = torch.nn.Module()
        self.model.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.model.layers:
            x = layer(x)
        return x


def test_layers_follow_a_forward_and_leave_no_hook(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(progress.INTERVAL_ENV, "0")
    model = TwoLayers()
    x = torch.ones(1, 4)
    want = model(x)
    with progress.layers("hf_baseline", model, "calibration passage"):
        got = model(x)
    assert torch.equal(got, want)
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in err] == [
        "phase0: hf_baseline: calibration passage, layer 1/2",
        "phase0: hf_baseline: calibration passage, layer 2/2",
        "phase0: hf_baseline: calibration passage, 2 layers in 0 s",
    ]
    assert all(not layer._forward_hooks for layer in model.model.layers)


def test_reading_counts_the_bytes_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    if progress.bytes_read() is None:
        pytest.skip("no /proc/self/io here")
    monkeypatch.setenv(progress.INTERVAL_ENV, "0")
    data = tmp_path / "model.safetensors"
    data.write_bytes(b"\0" * 4_000_000)
    total = progress.checkpoint_bytes(tmp_path)
    assert total == 4_000_000
    with progress.reading("python_weights", "m_weights.load_weights", total):
        with open(data, "rb") as f:
            f.read(2_000_000)
            time.sleep(0.3)
            f.read()
            time.sleep(0.3)
    err = capsys.readouterr().err
    assert "phase0: python_weights: m_weights.load_weights: " in err and " MB of 4.0 MB read (" in err
    assert err.splitlines()[-1].startswith("phase0: python_weights: m_weights.load_weights in ")


def test_a_loader_that_maps_the_files_shows_the_time_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Upstream's modules map the checkpoint (safe_open): the few bytes they
    read (config.json, headers) are no measure of progress, so no "of … read"
    and no ETA (which read 587m26s for a 3 s load)."""
    import mmap

    if progress.bytes_read() is None:
        pytest.skip("no /proc/self/io here")
    monkeypatch.setenv(progress.INTERVAL_ENV, "0")
    data = tmp_path / "model.safetensors"
    data.write_bytes(b"\1" * 4_000_000)
    total = progress.checkpoint_bytes(tmp_path)
    with progress.reading("python_weights", "m_weights.load_weights", total, tmp_path):
        with open(data, "rb") as f:
            f.read(100_000)  # a header, a config
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                checksum = sum(m[i] for i in range(0, len(m), 4096))
                time.sleep(0.3)
                time.sleep(0.3)
    assert checksum > 0
    err = capsys.readouterr().err
    assert "phase0: python_weights: m_weights.load_weights (" in err, err
    assert " read (" not in err and "ETA" not in err, err
    assert err.splitlines()[-1].startswith("phase0: python_weights: m_weights.load_weights in ")


def test_loading_a_model_draws_no_transformers_bar(tiny_model, capfd: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    import transformers
    from transformers.utils import logging as hf_logging

    model_dir = tiny_model("llama")
    transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    bare = capfd.readouterr().err
    with progress.loading_model("hf_baseline", "loading the HF bf16 model"):
        transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    inside = capfd.readouterr().err
    if int(transformers.__version__.split(".")[0]) >= 5:
        assert "Loading weights" in bare, "transformers 5 draws its bar on a plain load: the check below would prove nothing"
    assert "Loading weights" not in inside and "it/s" not in inside
    assert hf_logging.is_progress_bar_enabled(), "the bars are on again after the load"


def test_loading_a_model_keeps_bars_the_user_turned_off() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        with progress.loading_model("hf_baseline", "loading"):
            pass
        assert not hf_logging.is_progress_bar_enabled()
    finally:
        hf_logging.enable_progress_bar()
