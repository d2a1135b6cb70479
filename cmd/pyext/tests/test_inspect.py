"""phase0.inspect and python -m phase0 against the shipped CLI, on real tiny checkpoints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FAMILIES, copy_model, drop_tensor, normalise

import phase0


def cli_json(*args: str) -> tuple[int, dict[str, Any]]:
    """The shipped phase0 binary's --json report and exit code."""
    p = subprocess.run([str(phase0.worker_binary()), *args, "--json"], capture_output=True, text=True)
    return p.returncode, json.loads(p.stdout)


def test_extension_is_installed_abi3_wheel() -> None:
    native = Path(phase0._native.__file__)
    assert native.name == "_native.abi3.so"
    assert "site-packages" in native.parts, "the tests must run against the installed wheel, not a source tree"
    assert phase0.worker_binary().is_file() and os.access(phase0.worker_binary(), os.X_OK)


@pytest.mark.parametrize("family", FAMILIES)
def test_inspect_each_family_equals_cli(tiny_models: Path, family: str) -> None:
    model = tiny_models / family
    r = phase0.inspect(model, scan=True)
    assert r.status == "PASS" and r.exit_code == 0 and r.passed
    assert r.family == family and r.command == "inspect"
    cfg = json.loads((model / "config.json").read_text())
    assert r.config is not None
    assert (r.config.n_layers, r.config.emb_dim, r.config.vocab_size) == (
        cfg["num_hidden_layers"], cfg["hidden_size"], cfg["vocab_size"])
    assert r.config.rms_norm_eps == cfg["rms_norm_eps"]
    assert r.gates.weights is not None and r.gates.weights.status == "PASS" and r.gates.weights.raw["scanned"] is True
    assert r.gates.config_consistency is not None and r.gates.config_consistency.passed
    if family == "llama":
        assert r.config.rope_scaling is not None and r.config.rope_scaling.rope_type == "llama3"
    if family == "qwen3":
        assert r.config.qk_norm and r.config.head_dim * r.config.n_heads != r.config.emb_dim

    code, want = cli_json("inspect", str(model), "--scan")
    assert code == r.exit_code
    assert normalise(r.raw) == normalise(want)


def test_rejected_model_shows_reason_codes(tiny_models: Path, tmp_path: Path) -> None:
    moe = copy_model(tiny_models / "mistral", tmp_path / "moe")
    cfg = json.loads((moe / "config.json").read_text())
    cfg["num_local_experts"] = 8
    (moe / "config.json").write_text(json.dumps(cfg))

    r = phase0.inspect(moe)
    assert r.status == "REJECTED" and r.rejected and r.exit_code == 1 and not r.passed
    assert r.rejections and any("num_local_experts" in x.message for x in r.rejections)
    assert all(x.code for x in r.rejections), r.rejections
    code, want = cli_json("inspect", str(moe))
    assert code == 1 and [x["code"] for x in want["rejections"]] == list(r.rejection_codes)


def test_malformed_checkpoint_fails_with_findings(tiny_models: Path, tmp_path: Path) -> None:
    broken = copy_model(tiny_models / "llama", tmp_path / "broken")
    drop_tensor(broken, "model.layers.1.mlp.down_proj.weight")

    r = phase0.inspect(broken)
    assert r.status == "FAIL" and r.exit_code == 1
    w = r.gates.weights
    assert w is not None and w.status == "FAIL"
    assert any("model.layers.1.mlp.down_proj.weight" in f for f in w.findings), w.findings
    assert "model.layers.1.mlp.down_proj.weight" in w.raw["missing"]

    truncated = copy_model(tiny_models / "llama", tmp_path / "truncated")
    st = truncated / "model.safetensors"
    st.write_bytes(st.read_bytes()[:-1000])
    r = phase0.inspect(truncated)
    w = r.gates.weights
    assert r.status == "FAIL" and w is not None and w.status == "FAIL"
    assert any("model.safetensors" in f for f in w.findings), w.findings


def test_missing_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(phase0.ModelNotFoundError) as e:
        phase0.inspect(tmp_path / "nothing-here")
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, phase0.Phase0Error)
    assert "no such folder" in str(e.value) and e.value.stage == "resolve"
    assert e.value.report is not None and e.value.report.status == "ERROR"


def test_unreadable_config_is_could_not_evaluate(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"architectures": [')
    with pytest.raises(phase0.CouldNotEvaluateError, match="not valid JSON"):
        phase0.inspect(tmp_path)


def test_options_are_the_settings(tiny_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(phase0.UsageError, match='unknown option "max_seqq"'):
        phase0.inspect(tiny_models / "qwen3", max_seqq=3)
    with pytest.raises(phase0.UsageError, match="option workers"):
        phase0.inspect(tiny_models / "qwen3", workers=-1)
    bad = tmp_path / "bad.yaml"
    bad.write_text("scann: true\n")
    with pytest.raises(phase0.UsageError, match='unknown setting "scann"'):
        phase0.inspect(tiny_models / "qwen3", config=bad)
    good = tmp_path / "good.yaml"
    good.write_text("scan: true\n")
    r = phase0.inspect(tiny_models / "qwen3", config=good)
    assert r.gates.weights is not None and r.gates.weights.raw["scanned"] is True
    # An option beats the file, as a flag does.
    r = phase0.inspect(tiny_models / "qwen3", config=good, scan=False)
    assert r.gates.weights is not None and r.gates.weights.raw["scanned"] is False
    # The environment set after import reaches the Go side.
    monkeypatch.setenv("PHASE0_SCAN", "true")
    r = phase0.inspect(tiny_models / "qwen3")
    assert r.gates.weights is not None and r.gates.weights.raw["scanned"] is True


def python_m(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phase0", *args], capture_output=True, text=True)


def test_python_m_behaves_like_the_cli(tiny_models: Path, tmp_path: Path) -> None:
    model = str(tiny_models / "qwen2")
    p = python_m("inspect", model, "--json")
    code, want = cli_json("inspect", model)
    assert p.returncode == code == 0
    assert normalise(json.loads(p.stdout)) == normalise(want)

    p = python_m("inspect", str(tmp_path / "absent"))
    assert p.returncode == 2 and "no such folder" in p.stdout + p.stderr
    p = python_m("inspect", model, "--no-such-flag")
    assert p.returncode == 2 and "unknown flag: --no-such-flag" in p.stderr
    p = subprocess.run([sys.executable, "-c", f"import phase0; phase0.inspect({model!r}, progress=True)"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "resolve" in p.stderr and p.stdout == ""
    assert "resolve" in phase0.inspect(model).log  # captured when not shown
    p = python_m("--version")
    assert p.returncode == 0 and phase0.__version__ in p.stdout
