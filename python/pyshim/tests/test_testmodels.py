from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from safetensors import safe_open

from phase0_testmodels import SPECIAL_TOKENS, VOCAB_SIZE, main, make_tiny_model, training


def tensor_names(model_dir: Path) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for f in sorted(model_dir.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as st:
            for name in st.keys():
                shapes[name] = tuple(st.get_slice(name).get_shape())
    return shapes


def digest(model_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(model_dir.iterdir())}


def test_build_is_deterministic(tmp_path: Path, tiny_model) -> None:  # type: ignore[no-untyped-def]
    again = make_tiny_model("qwen3", tmp_path / "again")
    assert digest(again) == digest(tiny_model("qwen3"))


@pytest.mark.parametrize(
    ("family", "head_dim", "has_bias", "has_qk_norm"),
    [("llama", 16, False, False), ("mistral", 16, False, False), ("qwen2", 16, True, False), ("qwen3", 32, False, True)],
)
def test_family_shapes(tiny_model, family: str, head_dim: int, has_bias: bool, has_qk_norm: bool) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model(family)
    raw = json.loads((model_dir / "config.json").read_text())
    assert raw["model_type"] == family
    assert raw["vocab_size"] == VOCAB_SIZE
    assert raw["dtype"] == "bfloat16"
    assert raw.get("sliding_window") is None or raw.get("use_sliding_window") is False
    shapes = tensor_names(model_dir)
    assert shapes["model.layers.0.self_attn.q_proj.weight"] == (4 * head_dim, 64)
    assert shapes["model.layers.1.self_attn.k_proj.weight"] == (2 * head_dim, 64)
    assert ("model.layers.0.self_attn.q_proj.bias" in shapes) is has_bias
    assert ("model.layers.0.self_attn.q_norm.weight" in shapes) is has_qk_norm
    assert shapes["model.embed_tokens.weight"] == (VOCAB_SIZE, 64)
    assert not list(model_dir.glob("*.bin"))


def test_tokenizer_is_real_and_sized_to_the_model(tiny_model) -> None:  # type: ignore[no-untyped-def]
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model("llama")))
    assert len(tok) == VOCAB_SIZE
    assert tok.convert_ids_to_tokens(list(range(len(SPECIAL_TOKENS)))) == SPECIAL_TOKENS
    ids = tok.encode("The capital of France is Paris.")
    assert ids[0] == tok.bos_token_id
    assert len(ids) < len("The capital of France is Paris.") // 2  # merges were learned, not bytes
    assert tok.decode(ids, skip_special_tokens=True) == "The capital of France is Paris."


def test_sharded_tied_and_scaled(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama", sharded=True, tied=True)
    index = json.loads((model_dir / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    assert "lm_head.weight" not in index["weight_map"]
    assert json.loads((model_dir / "config.json").read_text())["tie_word_embeddings"] is True

    untied = tensor_names(tiny_model("qwen3", tied=False))
    assert "lm_head.weight" in untied

    scaled = json.loads((tiny_model("llama", rope_scaling="llama3") / "config.json").read_text())
    assert scaled["rope_parameters"]["rope_type"] == "llama3"
    assert scaled["rope_parameters"]["factor"] == 32.0


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    assert main(["--family", "mistral", "--out", str(out), "--nan-in", "model.norm.weight", "--untied"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    with safe_open(str(out / "model.safetensors"), framework="pt") as st:
        assert st.get_tensor("model.norm.weight").float().isnan().all()
        assert not st.get_tensor("model.layers.0.input_layernorm.weight").float().isnan().any()

    assert main(["--family", "llama", "--out", str(tmp_path / "x"), "--nan-in", "model.nope"]) == 2
    assert "no such tensor" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--family", "gpt2", "--out", str(tmp_path / "y")])


def test_runs_as_a_module(tmp_path: Path) -> None:
    """``python -m phase0_testmodels`` is how make bench builds its model: the
    module runs as a program (its arguments are checked before torch loads;
    ``main`` builds the model in the tests below and in the Go tests)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "phase0_testmodels", "--family", "gpt2", "--out", str(tmp_path / "m")],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--family: invalid choice: 'gpt2'" in done.stderr
    assert not (tmp_path / "m").exists()


def test_training_is_deterministic_and_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A short training (the cache is this test's own): determinism does not
    # depend on how many steps are taken, and 150 steps twice cost 18 s.
    monkeypatch.setattr(training, "STEPS", 12)
    monkeypatch.setenv("PHASE0_CACHE", str(tmp_path / "cache"))
    first = make_tiny_model("mistral", tmp_path / "a")
    cached = list((tmp_path / "cache" / "trained-tiny").glob("*.safetensors"))
    assert len(cached) == 1
    assert digest(make_tiny_model("mistral", tmp_path / "reused")) == digest(first)
    cached[0].unlink()  # train again from scratch: same bytes
    again = make_tiny_model("mistral", tmp_path / "b")
    assert digest(again) == digest(first)
    untrained = make_tiny_model("mistral", tmp_path / "c", trained=False)
    assert digest(untrained)["model.safetensors"] != digest(first)["model.safetensors"]


def test_random_model_options(tmp_path: Path, tiny_model) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="trained=False"):
        make_tiny_model("llama", tmp_path / "x", init_std=0.3)
    donor = tiny_model("qwen2")
    assert main(["--family", "qwen3", "--out", str(tmp_path / "r"), "--untrained", "--init-std", "1.0", "--tokenizer-from", str(donor)]) == 0
    raw = json.loads((tmp_path / "r" / "config.json").read_text())
    assert raw["initializer_range"] == 1.0 and raw["vocab_size"] == VOCAB_SIZE
    from transformers import AutoTokenizer

    got, want = (AutoTokenizer.from_pretrained(str(d)) for d in (tmp_path / "r", donor))
    assert got.get_vocab() == want.get_vocab()
