"""The recording format from Python's side: top-k facts, the writer, and a
candidate recorded by a runner that is not HF (a NumPy stand-in with upstream's
prefill/decode_step API)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import TinyModelFactory
from helpers import baseline_args
from phase0_shim import reference


def test_top_k_ties_lower_id_first_and_nan_facts() -> None:
    ids, logprobs, bad = reference.top_k(np.array([1.0, 3.0, 3.0, 2.0, 0.0], dtype=np.float32), 3)
    assert ids == [1, 2, 3]
    assert bad == 0
    full = np.log(np.exp([1.0, 3.0, 3.0, 2.0, 0.0]).sum())
    assert logprobs == pytest.approx([3.0 - full, 3.0 - full, 2.0 - full])

    ids, logprobs, bad = reference.top_k(np.array([1.0, np.nan, 2.0, np.inf], dtype=np.float32), 2)
    assert bad == 2
    assert all(np.isnan(logprobs))


def _full_sort_top_k(z: np.ndarray, k: int) -> list[int]:
    """The definition top_k must keep: a stable sort of the whole vector."""
    return [int(i) for i in np.argsort(-np.asarray(z, dtype=np.float32), kind="stable")[:k]]


@pytest.mark.parametrize(
    ("logits", "k"),
    [
        ([1.0, 3.0, 3.0, 2.0, 0.0], 2),  # a tie inside the top-k
        ([5.0, 1.0, 2.0, 2.0, 2.0, 0.0], 2),  # a tie across the k-th place: lower ids win
        ([2.0] * 7, 3),  # all equal
        ([0.0, -0.0, 0.0, -1.0], 2),  # signed zeros are equal
        ([4.0, 3.0, 2.0], 3),  # k = vocabulary size
        ([-1.0, -3.0, -2.0], 1),
    ],
)
def test_top_k_is_the_full_stable_sort(logits: list[float], k: int) -> None:
    z = np.array(logits, dtype=np.float32)
    assert reference.top_k(z, k)[0] == _full_sort_top_k(z, k)


def test_top_k_is_the_full_stable_sort_on_vocab_sized_logits() -> None:
    rng = np.random.default_rng(14)
    for trial in range(200):
        if trial % 2:
            z = rng.integers(-4, 5, size=1000).astype(np.float32)  # many ties
        else:
            z = (rng.standard_normal(49152) * 5).astype(np.float32)
        for k in (1, 5, 10):
            assert reference.top_k(z, k)[0] == _full_sort_top_k(z, k)


def test_tokenizer_sha256_covers_present_files_only(tmp_path: Path) -> None:
    empty = reference.tokenizer_sha256(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "config.json").write_text("{}")
    one = reference.tokenizer_sha256(tmp_path)
    assert one != empty
    (tmp_path / "config.json").write_text('{"changed": 1}')
    assert reference.tokenizer_sha256(tmp_path) == one


@dataclass
class _Prefill:
    layer_intermediates: list[dict[str, np.ndarray]]
    final_hidden_normed: np.ndarray
    logits_at_pred: np.ndarray
    top1_token: int


@dataclass
class _Step:
    lm_head_logits: np.ndarray
    top1_token: int


class CountingRunner:
    """Logits peak at (last token + shift) mod 16: a deterministic 'model'."""

    name = "numpy_counter"

    def __init__(self, shift: int = 1) -> None:
        self.shift = shift
        self.pos = 0

    def _logits(self, last: int) -> np.ndarray:
        z = np.zeros(16, dtype=np.float32)
        z[(last + self.shift) % 16] = 5.0
        z[(last + self.shift + 1) % 16] = 4.0
        return z

    def prefill(self, prompt_tokens: np.ndarray) -> _Prefill:
        self.pos = len(prompt_tokens)
        z = self._logits(int(prompt_tokens[-1]))
        hidden = np.arange(len(prompt_tokens) * 4, dtype=np.float32).reshape(-1, 4)
        return _Prefill([{"ffn_out": hidden}, {}], hidden + 1, z, int(np.argmax(z)))

    def decode_step(self, input_token: int, current_pos: int) -> _Step:
        assert current_pos == self.pos, "the recorder feeds positions in order"
        self.pos += 1
        z = self._logits(input_token)
        return _Step(z, int(np.argmax(z)))


def test_record_candidate_replays_the_reference_prompts(tmp_path: Path) -> None:
    runner = CountingRunner()
    gens = [reference.generate(runner, "a b", [1, 2], 4, 3), reference.generate(runner, "c", [7], 4, 3)]
    assert gens[0].chosen == [3, 4, 5, 6]
    assert gens[0].topk_ids[0] == [3, 4, 0]
    diag = reference.diagnosis_tensors(runner, [1, 2])
    assert sorted(diag) == ["diagnosis.final_hidden_normed", "diagnosis.layer.0.ffn_out", "diagnosis.logits"]
    meta = reference.write(
        tmp_path / "ref",
        gens,
        diag,
        {"role": "reference", "runner": "counter", "dtype": "float32", "tokenizer_sha256": "t"},
    )
    assert meta["decode_steps"] == 4 and meta["top_k"] == 3 and meta["prompts"] == ["a b", "c"]

    written = reference.record_candidate(
        CountingRunner(shift=2), tmp_path / "ref", tmp_path / "cand", full_runner=CountingRunner(shift=2)
    )
    on_disk = json.loads((tmp_path / "cand" / reference.META_FILE).read_text())
    assert on_disk == written
    assert (
        on_disk["role"] == "candidate" and on_disk["tokenizer_sha256"] == "t" and on_disk["runner"] == "numpy_counter"
    )
    tensors = load_file(str(tmp_path / "cand" / reference.TENSORS_FILE))
    assert tensors["prompt.1.tokens"].tolist() == [7]
    assert tensors["prompt.0.chosen"].tolist() == [4, 6, 8, 10]
    assert tensors["prompt.0.topk_ids"].shape == (4, 3)
    assert tensors["prompt.0.nonfinite"].tolist() == [0, 0, 0, 0]


def test_write_refuses_ragged_generations(tmp_path: Path) -> None:
    runner = CountingRunner()
    gens = [reference.generate(runner, "a", [1], 3, 2), reference.generate(runner, "b", [1], 2, 2)]
    with pytest.raises(ValueError, match="2 steps, want 3"):
        reference.write(tmp_path, gens, {}, {})
    assert not (tmp_path / reference.META_FILE).exists()


def test_reference_plan_prompt_set_and_key_facts(tmp_path: Path, llms_dir: Path) -> None:
    from phase0_shim import ops

    (tmp_path / "tokenizer.json").write_text("{}")
    plan = json.loads(ops.reference_plan(json.dumps(baseline_args(tmp_path, model_id="org/Tiny-Base"))))
    assert plan["runner"] == "bundled" and plan["prompt_style"] == "base" and plan["canonical_prompt"] == 0
    assert plan["prompts"][0] == "The capital of France is" and len(plan["prompts"]) == 5
    assert plan["tokenizer_sha256"] == reference.tokenizer_sha256(tmp_path)

    custom = json.loads(
        ops.reference_plan(json.dumps(baseline_args(tmp_path, prompt="Hello there", llms_dir=str(llms_dir))))
    )
    assert custom["runner"] == "verify" and custom["prompts"][0] == "Hello there" and custom["canonical_prompt"] == 0
    assert custom["prompts_file"] == str((llms_dir / "verify" / "prompts" / "base.txt").resolve())

    with pytest.raises(FileNotFoundError, match="is not an mlir-air programming_examples/llms tree"):
        ops.reference_plan(json.dumps(baseline_args(tmp_path, llms_dir=str(tmp_path))))


def test_prompt_tokens_counts_the_canonical_prompt_without_a_model(tiny_model: TinyModelFactory) -> None:
    # Go judges the count against max_seq before the model loads (issue 36: a
    # prompt longer than max_seq was a gate-2 FAIL with a traceback).
    from transformers import AutoTokenizer

    from phase0_shim import ops

    model = tiny_model("qwen3")
    tokenizer = AutoTokenizer.from_pretrained(str(model))
    long = " ".join(["word"] * 300)
    got = json.loads(ops.prompt_tokens(json.dumps(baseline_args(model, prompt=long))))
    assert got == {"prompt": long, "tokens": len(tokenizer.encode(long))} and got["tokens"] >= 300
    first = json.loads(ops.prompt_tokens(json.dumps(baseline_args(model, model_id="org/Tiny-Base"))))
    assert first == {"prompt": "The capital of France is", "tokens": len(tokenizer.encode("The capital of France is"))}


_WRITE_UNDER_A_FILE_SIZE_LIMIT = """
import json, resource, signal, sys
sys.path.insert(0, sys.argv[1])
from phase0_shim import reference
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
gens = [reference.Generation("a b", [1, 2], [3] * 4, [[3, 4, 0]] * 4, [[-0.5, -1.5, -2.5]] * 4, [0] * 4)]
limit, notes = int(sys.argv[3]), int(sys.argv[4])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    reference.write(sys.argv[2], gens, {}, {"role": "reference", "notes": "n" * notes})
except reference.RecordingWriteError as e:
    print(json.dumps(str(e)))
"""


@pytest.mark.parametrize("failing", [reference.TENSORS_FILE, reference.META_FILE])
def test_a_failed_write_keeps_the_old_recording_whole(tmp_path: Path, failing: str) -> None:
    """A write the OS refuses (here EFBIG under a real RLIMIT_FSIZE, as a full
    disk refuses it) is a RecordingWriteError naming the file and the OS
    error; the folder keeps the previous recording byte for byte and holds
    no temporary."""
    import subprocess
    import sys

    out = tmp_path / "ref"
    gens = [reference.generate(CountingRunner(shift=1), "old", [5], 4, 3)]
    reference.write(out, gens, {}, {"role": "reference"})
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    tensors = len(before[reference.TENSORS_FILE])
    # The tensors (~1 KiB) fail under a 64-byte limit; the metadata, made
    # larger than any tensors file, fails alone under a limit between.
    limit, notes = (64, 0) if failing == reference.TENSORS_FILE else (tensors + 512, 64 << 10)
    shim = Path(reference.__file__).parent.parent
    run = subprocess.run(
        [sys.executable, "-c", _WRITE_UNDER_A_FILE_SIZE_LIMIT, str(shim), str(out), str(limit), str(notes)],
        capture_output=True,
        text=True,
        check=True,
    )
    message = json.loads(run.stdout)
    assert message.startswith(f"cannot write {out / failing}: ") and "too large" in message.lower(), message
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
