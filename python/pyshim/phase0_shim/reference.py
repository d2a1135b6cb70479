"""The recorded reference (and any candidate) on disk: a writer, and the recorder.

A recording is a folder holding ``reference.safetensors`` (tensors) and
``reference.json`` (metadata). The same format serves phase0's HF bf16
reference and any candidate runner (an fp32 self-check, the NPU runner):
``phase0 compare REFERENCE CANDIDATE`` judges one against the other in Go.
This module only records facts -- token ids, top-k ids and log-probabilities,
intermediates -- and never decides whether a candidate passes.

Runner authors record a candidate with::

    from phase0_shim.reference import record_candidate
    record_candidate(my_runner, "<ws>/reference", "out/npu", full_runner=my_full_runner)

``my_runner`` has upstream's ``prefill(tokens) -> PrefillRecord`` and
``decode_step(token, pos) -> DecodeStepRecord``; ``full_runner`` (optional)
is the same model with ``lite_mode=False`` for the per-layer intermediates.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

FORMAT = "phase0-reference/1"
META_FILE = "reference.json"
TENSORS_FILE = "reference.safetensors"
DEFAULT_STEPS = 32  # upstream verify's GATE_N_TOKENS
DEFAULT_TOP_K = 5  # upstream verify's GATE_K
PROBE = "ffn_out"  # upstream diagnosis' per-layer probe

# Files that define a tokenizer, hashed (when present) in this order.
TOKENIZER_FILES = (
    "added_tokens.json",
    "merges.txt",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer.model",
    "tokenizer_config.json",
    "vocab.json",
)


class _Prefill(Protocol):
    layer_intermediates: list[dict[str, np.ndarray]]
    final_hidden_normed: np.ndarray
    logits_at_pred: np.ndarray
    top1_token: int


class _Step(Protocol):
    lm_head_logits: np.ndarray
    top1_token: int


class Runner(Protocol):
    """What the recorder calls: upstream verify's runner API."""

    def prefill(self, prompt_tokens: np.ndarray) -> Any: ...

    def decode_step(self, input_token: int, current_pos: int) -> Any: ...


def tokenizer_sha256(model_dir: Path | str) -> str:
    """SHA-256 over the tokenizer files present in ``model_dir``.

    For each name of TOKENIZER_FILES that exists, in that order, the hash is
    fed ``name``, a newline, the byte length in decimal, a newline, and the
    bytes. phase0's Go side computes the same digest.
    """
    h = hashlib.sha256()
    for name in TOKENIZER_FILES:
        path = Path(model_dir) / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        h.update(f"{name}\n{len(data)}\n".encode())
        h.update(data)
    return h.hexdigest()


def top_k(logits: np.ndarray, k: int) -> tuple[list[int], list[float], int]:
    """The k best ids (ties: lower id first, NaN last), their log-probabilities,
    and how many logits are not finite.

    Log-probabilities come from a float64 log-softmax over the whole vocabulary;
    with any non-finite logit they are NaN, which the JSON-free tensor keeps.
    """
    z = np.asarray(logits, dtype=np.float32).reshape(-1)
    if z.size < k:
        raise ValueError(f"top-{k} of a {z.size}-entry logit vector")
    nonfinite = int(z.size - np.count_nonzero(np.isfinite(z)))
    order = _best_k(z, k) if nonfinite == 0 else np.argsort(-z, kind="stable")[:k]
    z64 = z.astype(np.float64)
    if nonfinite:
        logprobs = np.full(k, np.nan)
    else:
        shifted = z64 - float(np.max(z64))
        logprobs = shifted[order] - np.log(np.exp(shifted).sum())
    return [int(i) for i in order], [float(x) for x in logprobs], nonfinite


def _best_k(z: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-z, kind="stable")[:k]`` for finite ``z``, without sorting
    the whole vocabulary (a full sort was ~10% of a decode step).

    Every id whose logit reaches the k-th largest value is a candidate, in id
    order; a stable sort of the candidates then keeps the lowest ids among
    ties, exactly as the full stable sort does.
    """
    kth = np.partition(z, z.size - k)[z.size - k]
    candidates = np.flatnonzero(z >= kth)
    return candidates[np.argsort(-z[candidates], kind="stable")[:k]]


@dataclass
class Generation:
    """One prompt's greedy continuation: the runner's chosen token per step and
    the top-k of that step's logits."""

    text: str
    tokens: list[int]
    chosen: list[int] = field(default_factory=list)
    topk_ids: list[list[int]] = field(default_factory=list)
    topk_logprobs: list[list[float]] = field(default_factory=list)
    nonfinite: list[int] = field(default_factory=list)

    def add(self, chosen: int, logits: np.ndarray, k: int) -> None:
        ids, logprobs, bad = top_k(logits, k)
        self.chosen.append(int(chosen))
        self.topk_ids.append(ids)
        self.topk_logprobs.append(logprobs)
        self.nonfinite.append(bad)


def generate(
    runner: Runner,
    text: str,
    tokens: list[int],
    steps: int,
    k: int,
    on_step: Callable[[int], None] | None = None,
) -> Generation:
    """Greedy-decode ``steps`` tokens as upstream verify does: the prefill's top-1
    is step 0, then each chosen token is fed back at the next position.
    ``on_step(j)`` is called once step j is recorded (progress)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    gen = Generation(text=text, tokens=list(tokens))
    pf = runner.prefill(np.asarray(tokens, dtype=np.int64))
    gen.add(pf.top1_token, pf.logits_at_pred, k)
    if on_step is not None:
        on_step(0)
    pos = len(tokens)
    for step in range(1, steps):
        ds = runner.decode_step(gen.chosen[-1], pos)
        gen.add(ds.top1_token, ds.lm_head_logits, k)
        pos += 1
        if on_step is not None:
            on_step(step)
    return gen


def diagnosis_tensors(full_runner: Runner, tokens: list[int]) -> dict[str, np.ndarray]:
    """The lite_mode=False prefill's intermediates for one prompt.

    ``diagnosis.layer.<i>.ffn_out`` for every layer that exposes it (HF: 0..n-2),
    ``diagnosis.final_hidden_normed`` and ``diagnosis.logits`` (last position).
    """
    pf = full_runner.prefill(np.asarray(tokens, dtype=np.int64))
    out: dict[str, np.ndarray] = {}
    for i, layer in enumerate(pf.layer_intermediates):
        probe = layer.get(PROBE)
        if probe is not None and np.asarray(probe).size:
            out[f"diagnosis.layer.{i}.{PROBE}"] = _f32(probe)
    if np.asarray(pf.final_hidden_normed).size:
        out["diagnosis.final_hidden_normed"] = _f32(pf.final_hidden_normed)
    out["diagnosis.logits"] = _f32(pf.logits_at_pred).reshape(-1)
    return out


def _f32(a: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float32))


def tensors_of(gens: list[Generation], diagnosis: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The safetensors content of a recording (names are the documented format)."""
    out: dict[str, np.ndarray] = {}
    for i, g in enumerate(gens):
        out[f"prompt.{i}.tokens"] = np.asarray(g.tokens, dtype=np.int64)
        out[f"prompt.{i}.chosen"] = np.asarray(g.chosen, dtype=np.int64)
        out[f"prompt.{i}.topk_ids"] = np.asarray(g.topk_ids, dtype=np.int64)
        out[f"prompt.{i}.topk_logprobs"] = np.asarray(g.topk_logprobs, dtype=np.float32)
        out[f"prompt.{i}.nonfinite"] = np.asarray(g.nonfinite, dtype=np.int64)
    out.update(diagnosis)
    return out


class RecordingWriteError(OSError):
    """A file of a recording could not be written (a full disk, a folder
    that refuses a file): the tree's or the machine's fault, never the
    model's; Go reports it as "could not evaluate" (docs/reference.md)."""


def _write_failed(path: Path, e: BaseException) -> RecordingWriteError:
    """The error naming ``path`` and the OS error (a full disk raised inside
    a writer often names no file at all)."""
    err = RecordingWriteError(f"cannot write {path}: {getattr(e, 'strerror', None) or e}")
    err.errno = getattr(e, "errno", None)
    return err


def _writing_failed(e: BaseException) -> bool:
    """Whether ``e`` says a write failed: an OSError, or safetensors' own
    I/O error (SafetensorError "I/O error: No space left on device")."""
    return isinstance(e, OSError) or type(e).__name__ == "SafetensorError"


def _write_temp(path: Path, fill: Callable[[str], Any]) -> str:
    """Write ``path``'s bytes into a synced temporary beside it and return
    its name; on any error no temporary is left, and a failed write is a
    RecordingWriteError naming ``path``."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.tmp-")
    except OSError as e:
        raise _write_failed(path, e) from e
    os.close(fd)
    try:
        fill(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if _writing_failed(e):
            raise _write_failed(path, e) from e
        raise
    return tmp


def write(
    out_dir: Path | str,
    gens: list[Generation],
    diagnosis: dict[str, np.ndarray],
    meta: dict[str, Any],
) -> dict[str, Any]:
    """Write a recording: the tensors and the metadata naming their SHA-256
    into synced temporaries first, then each renamed into place, so a
    failed write (a full disk) leaves the folder's old recording whole.
    Returns the metadata written."""
    from safetensors.numpy import save_file

    if not gens:
        raise ValueError("a recording needs at least one prompt")
    steps, k = len(gens[0].chosen), len(gens[0].topk_ids[0])
    for g in gens:
        if len(g.chosen) != steps or any(len(row) != k for row in g.topk_ids):
            raise ValueError(f"prompt {g.text!r}: {len(g.chosen)} steps, want {steps} of top-{k}")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _write_failed(out, e) from e
    tensors_path, meta_path = out / TENSORS_FILE, out / META_FILE
    tensors = tensors_of(gens, diagnosis)
    tensors_tmp = _write_temp(tensors_path, lambda tmp: save_file(tensors, tmp, metadata={"format": FORMAT}))
    staged = [tensors_tmp]
    try:
        data = Path(tensors_tmp).read_bytes()
        full = {
            **meta,
            "format": FORMAT,
            "decode_steps": steps,
            "top_k": k,
            "prompts": [g.text for g in gens],
            "tensors_file": TENSORS_FILE,
            "tensors_sha256": hashlib.sha256(data).hexdigest(),
            "tensors_bytes": len(data),
            "created": meta.get("created") or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        text = json.dumps(full, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
        staged.append(_write_temp(meta_path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8")))
        for tmp, path in zip(staged, (tensors_path, meta_path)):
            try:
                os.replace(tmp, path)
            except OSError as e:
                raise _write_failed(path, e) from e
    finally:
        for tmp in staged:
            Path(tmp).unlink(missing_ok=True)
    return full


def read_prompts(reference_dir: Path | str) -> tuple[dict[str, Any], list[tuple[str, list[int]]]]:
    """A recording's metadata and its (prompt text, token ids) pairs."""
    from safetensors.numpy import load_file

    ref = Path(reference_dir)
    meta = json.loads((ref / META_FILE).read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT:
        raise ValueError(f"{ref / META_FILE}: format {meta.get('format')!r}, want {FORMAT!r}")
    tensors = load_file(str(ref / TENSORS_FILE))
    prompts = [(str(t), [int(x) for x in tensors[f"prompt.{i}.tokens"]]) for i, t in enumerate(meta["prompts"])]
    return meta, prompts


def versions() -> dict[str, str]:
    from importlib import metadata

    out: dict[str, str] = {}
    for package in ("torch", "transformers"):
        try:
            out[package + "_version"] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package + "_version"] = ""
    return out


def record_candidate(
    runner: Runner,
    reference_dir: Path | str,
    out_dir: Path | str,
    *,
    full_runner: Runner | None = None,
    runner_name: str = "",
    dtype: str = "",
    model_dir: Path | str | None = None,
) -> dict[str, Any]:
    """Record ``runner`` on the reference's own prompt token ids, steps and k.

    ``model_dir`` names the tokenizer the candidate used (its checksum is
    recorded so compare can refuse a candidate tokenized differently); without
    it the reference's checksum is copied, since the reference's token ids are
    replayed as they are.
    """
    meta, prompts = read_prompts(reference_dir)
    steps, k = int(meta["decode_steps"]), int(meta["top_k"])
    start = time.perf_counter()
    gens = [generate(runner, text, tokens, steps, k) for text, tokens in prompts]
    seconds_decode = time.perf_counter() - start
    diag: dict[str, np.ndarray] = {}
    if full_runner is not None:
        canonical = int(meta.get("canonical_prompt", 0))
        diag = diagnosis_tensors(full_runner, prompts[canonical][1])
    tok = tokenizer_sha256(model_dir) if model_dir is not None else str(meta.get("tokenizer_sha256", ""))
    return write(
        out_dir,
        gens,
        diag,
        {
            "role": "candidate",
            "runner": runner_name or getattr(runner, "name", type(runner).__name__),
            "dtype": dtype,
            "tokenizer_sha256": tok,
            "canonical_prompt": int(meta.get("canonical_prompt", 0)),
            "prompt_style": meta.get("prompt_style", ""),
            "seconds": {"decode": seconds_decode},
            **versions(),
        },
    )
