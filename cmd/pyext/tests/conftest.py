"""Fixtures for the phase0 package tests.

These run in a plain venv holding only pytest and the installed wheel (make
test-python-package does that for two Python minors). The tiny checkpoints are
written once by transformers itself, in make's torch venv ($PHASE0_PYTHON), as
a subprocess: torch never enters the test process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Folder name -> (family, make_tiny_model keyword arguments as Python source).
MODELS: dict[str, tuple[str, str]] = {
    "llama": ("llama", 'rope_scaling="llama3"'),
    "mistral": ("mistral", ""),
    "qwen2": ("qwen2", "tied=True"),
    "qwen3": ("qwen3", ""),
}
FAMILIES = tuple(MODELS)
# The families a whole run is tested on. A run's family logic is the same Go
# code in every Python minor, so `make test` runs all four in the first minor
# and, in the others, only those PHASE0_PYEXT_RUN_FAMILIES names (the
# extension's own boundary — threads, signals, the GIL — is tested in full
# in every minor).
RUN_FAMILIES = tuple(os.environ.get("PHASE0_PYEXT_RUN_FAMILIES", " ".join(FAMILIES)).split())
if not RUN_FAMILIES or not set(RUN_FAMILIES) <= set(FAMILIES):
    raise ValueError(f"PHASE0_PYEXT_RUN_FAMILIES={RUN_FAMILIES!r}: name one or more of {FAMILIES}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "first_minor: compares whole runs through the API with the CLI, or crashes or interrupts the worker child; make "
        "test runs it in the first Python minor only (-m 'not first_minor' in the others), like the "
        "families beyond one",
    )


def repo() -> Path:
    r = os.environ.get("PHASE0_REPO")
    if not r:
        pytest.skip("PHASE0_REPO is not set (make test-python-package sets it)")
    return Path(r)


@pytest.fixture(scope="session")
def torch_python() -> str:
    py = os.environ.get("PHASE0_PYTHON", "")
    if not py or not Path(py).is_file():
        pytest.skip("PHASE0_PYTHON names no python with torch + transformers (make test-python-package sets it)")
    return py


def _cache_root() -> Path:
    c = os.environ.get("PHASE0_CACHE")
    return Path(c) if c else Path.home() / ".cache" / "phase0"


@pytest.fixture(scope="session")
def tiny_models(torch_python: str) -> Path:
    """Every model in MODELS, built once per content of phase0_testmodels and torch venv."""
    pyshim = repo() / "python" / "pyshim"
    h = hashlib.sha256()
    for f in ("phase0_testmodels/__init__.py", "phase0_testmodels/data/tokenizer_corpus.txt"):
        h.update((pyshim / f).read_bytes())
    h.update(json.dumps(MODELS, sort_keys=True).encode())
    h.update(torch_python.encode())
    root = _cache_root() / f"pyext-testmodels-{h.hexdigest()[:12]}"
    if (root / "complete").is_file():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".pyext-testmodels-", dir=root.parent))
    try:
        script = "from phase0_testmodels import make_tiny_model\n" + "".join(
            f"make_tiny_model({fam!r}, {str(tmp / name)!r}{', ' + args if args else ''})\n"
            for name, (fam, args) in MODELS.items()
        )
        subprocess.run([torch_python, "-c", script], cwd=pyshim, check=True, capture_output=True, text=True)
        (tmp / "complete").write_text("")
        try:
            tmp.rename(root)  # atomic: a concurrent builder's copy is as good
        except OSError:
            if not (root / "complete").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def copy_model(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def drop_tensor(model_dir: Path, name: str) -> None:
    """Remove one tensor (header entry and bytes) from a single-file safetensors checkpoint."""
    path = model_dir / "model.safetensors"
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header: dict[str, Any] = json.loads(blob[8 : 8 + n])
    data = blob[8 + n :]
    del header[name]
    tensors = sorted(((k, v) for k, v in header.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"][0])
    out = bytearray()
    for _, v in tensors:
        begin, end = v["data_offsets"]
        v["data_offsets"] = [len(out), len(out) + end - begin]
        out += data[begin:end]
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(out))


@pytest.fixture
def fake_verify(tmp_path: Path) -> Iterator[Path]:
    """An upstream-like llms folder whose verify/ runner is replaced by the test (write hf_runner.py)."""
    llms = tmp_path / "llms"
    shutil.copytree(repo() / "python" / "pyshim" / "tests" / "data" / "llms" / "verify", llms / "verify")
    yield llms


def runner_source(prefill_body: str) -> str:
    return (
        "from runners._records import PrefillRecord, DecodeStepRecord\n\n\n"
        "class HfRunner:\n"
        "    def __init__(self, model_name, config, max_seq, lite_mode=False, model=None):\n"
        "        self.config = config\n\n"
        "    def prefill(self, tokens):\n" + prefill_body + "\n\n"
        "    def decode_step(self, token, pos):\n"
        "        raise NotImplementedError\n"
    )


# Timings, the machine section, and the reference recording's size (its JSON
# holds timings too).
VOLATILE = {"started", "seconds", "seconds_load", "seconds_prefill", "seconds_calibration", "seconds_decode",
            "seconds_diagnosis", "preflight", "bytes"}
# Readings of the moment in stage details: a throughput, the free memory.
_READINGS = re.compile(r"[0-9.]+ ([KMGT]i?B)(/s| available)")


def normalise(v: Any, replace: dict[str, str] | None = None) -> Any:
    """A report without its timings and machine readings, with paths renamed, for comparing two runs."""
    if isinstance(v, dict):
        return {k: normalise(x, replace) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [normalise(x, replace) for x in v]
    if isinstance(v, str):
        v = _READINGS.sub(r"N \1\2", v)
        for old, new in (replace or {}).items():
            v = v.replace(old, new)
    return v
