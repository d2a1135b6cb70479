"""The golden generated <name>_weights.py / <name>_cpu_helpers.py against transformers."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from ml_dtypes import bfloat16
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig as HfLlamaConfig
from transformers.models.llama.modeling_llama import LlamaRMSNorm, LlamaRotaryEmbedding
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm

from conftest import FAMILIES, Generated, hf_rope_parameters, load_generated, save_tiny_model

PROJECTIONS = {"wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"}


def read_checkpoint(path: Path) -> Dict[str, torch.Tensor]:
    """Every tensor of a (possibly sharded) checkpoint, read by the safetensors library."""
    tensors: Dict[str, torch.Tensor] = {}
    for shard in sorted(path.glob("*.safetensors")):
        tensors.update(load_file(shard))
    return tensors


def as_f32(t: torch.Tensor) -> np.ndarray:
    return t.float().numpy()


def assert_weights_match_checkpoint(gen: Generated, weights: Any, tensors: Dict[str, torch.Tensor]) -> None:
    """Bit-exact: bf16 -> float32 is exact, so any difference is a loader bug."""
    w = gen.weights
    np.testing.assert_array_equal(weights.embed_table.astype(np.float32), as_f32(tensors[w.EMBED_TOKENS]))
    np.testing.assert_array_equal(weights.final_norm.astype(np.float32), as_f32(tensors[w.FINAL_NORM]))
    if gen.spec["tie_word_embeddings"]:
        assert w.LM_HEAD not in tensors
        assert weights.lm_head is weights.embed_table
    else:
        np.testing.assert_array_equal(weights.lm_head.astype(np.float32), as_f32(tensors[w.LM_HEAD]))
    assert len(weights.layers) == gen.spec["n_layers"]
    for i, layer in enumerate(weights.layers):
        for field in dataclasses.fields(layer):
            ours = getattr(layer, field.name)
            assert ours.dtype == bfloat16, field.name
            theirs = as_f32(tensors[w.hf_layer_tensor_name(i, field.name)])
            if field.name in PROJECTIONS:
                theirs = theirs.T
                assert ours.flags.c_contiguous, f"{field.name} must be contiguous for NPU DMA"
            np.testing.assert_array_equal(ours.astype(np.float32), theirs, err_msg=f"layer {i} {field.name}")


def test_config_defaults_are_the_spec(generated: Generated) -> None:
    config = generated.weights.LlamaConfig()
    spec = generated.spec
    for name in ("n_layers", "emb_dim", "n_heads", "head_dim", "n_kv_heads", "hidden_dim", "vocab_size",
                 "rope_base", "rms_norm_eps", "qkv_bias", "qk_norm", "tie_word_embeddings"):
        assert getattr(config, name) == spec[name], name
    assert config.dtype is bfloat16
    if spec.get("rope_scaling") is None:
        assert config.rope_scaling is None
    else:
        expected = {("rope_type" if k == "type" else k): v for k, v in spec["rope_scaling"].items()}
        assert config.rope_scaling == expected
        assert generated.weights.LlamaConfig().rope_scaling is not config.rope_scaling  # no shared mutable default
    assert generated.helpers.RMS_NORM_EPS == spec["rms_norm_eps"]


def test_layer_fields_follow_the_model(generated: Generated) -> None:
    names = [f.name for f in dataclasses.fields(generated.weights.LayerWeights)]
    base = ["attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down"]
    expected = base + (["bq", "bk", "bv"] if generated.spec["qkv_bias"] else []) + (
        ["q_norm", "k_norm"] if generated.spec["qk_norm"] else []
    )
    assert names == expected


def test_load_weights_matches_checkpoint(generated: Generated, checkpoint: Path) -> None:
    weights = generated.weights.load_weights(str(checkpoint))
    assert_weights_match_checkpoint(generated, weights, read_checkpoint(checkpoint))


def test_load_weights_float32(checkpoint: Path, generated: Generated) -> None:
    weights = generated.weights.load_weights(str(checkpoint), dtype=np.float32)
    tensors = read_checkpoint(checkpoint)
    assert weights.layers[0].wq.dtype == np.float32
    np.testing.assert_array_equal(weights.layers[0].wq, as_f32(tensors["model.layers.0.self_attn.q_proj.weight"]).T)


def test_sharded_checkpoint(tmp_path: Path) -> None:
    gen = load_generated("qwen3")
    path = save_tiny_model(gen.spec, tmp_path, max_shard_size="40KB")
    index = json.loads((path / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1, "the checkpoint should be sharded"
    assert_weights_match_checkpoint(gen, gen.weights.load_weights(str(path)), read_checkpoint(path))


def test_shard_outside_checkpoint_is_refused(tmp_path: Path) -> None:
    gen = load_generated("qwen3")
    path = save_tiny_model(gen.spec, tmp_path / "model")
    index = {"metadata": {}, "weight_map": {gen.weights.EMBED_TOKENS: "../elsewhere.safetensors"}}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="outside"):
        gen.weights.load_weights(str(path))


def test_untied_config_without_lm_head_raises(tmp_path: Path) -> None:
    gen = load_generated("llama")  # a tied checkpoint: no lm_head.weight
    path = save_tiny_model(gen.spec, tmp_path)
    config = gen.weights.LlamaConfig(tie_word_embeddings=False)
    with pytest.raises(ValueError, match="tie_word_embeddings is False but the checkpoint has no lm_head.weight"):
        gen.weights.load_weights(str(path), config=config)


def test_tied_config_with_separate_lm_head_raises(tmp_path: Path) -> None:
    gen = load_generated("mistral")  # an untied checkpoint
    path = save_tiny_model(gen.spec, tmp_path)
    config = gen.weights.LlamaConfig(tie_word_embeddings=True)
    with pytest.raises(ValueError, match="lm_head.weight differs from model.embed_tokens.weight"):
        gen.weights.load_weights(str(path), config=config)


def test_tied_config_accepts_identical_lm_head(tmp_path: Path) -> None:
    gen = load_generated("qwen2")
    path = save_tiny_model(gen.spec, tmp_path)
    tensors = read_checkpoint(path)
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].clone()
    (path / "model.safetensors").unlink()
    save_file(tensors, str(path / "model.safetensors"))
    weights = gen.weights.load_weights(str(path))
    np.testing.assert_array_equal(weights.lm_head.astype(np.float32), as_f32(tensors["lm_head.weight"]))


def test_shape_mismatch_names_tensor(checkpoint: Path, generated: Generated) -> None:
    spec = generated.spec
    config = generated.weights.LlamaConfig(hidden_dim=spec["hidden_dim"] + 32)
    expected = (
        rf"model\.layers\.0\.mlp\.gate_proj\.weight: expected shape \({spec['hidden_dim'] + 32}, {spec['emb_dim']}\), "
        rf"found \({spec['hidden_dim']}, {spec['emb_dim']}\)"
    )
    with pytest.raises(ValueError, match=expected):
        generated.weights.load_weights(str(checkpoint), config=config)


def test_missing_layer_raises(checkpoint: Path, generated: Generated) -> None:
    config = generated.weights.LlamaConfig(n_layers=generated.spec["n_layers"] + 1)
    with pytest.raises(KeyError, match=rf"model\.layers\.{generated.spec['n_layers']}\.input_layernorm\.weight"):
        generated.weights.load_weights(str(checkpoint), config=config)


def test_main_prints_shapes(tmp_path: Path) -> None:
    gen = load_generated("qwen2")
    path = save_tiny_model(gen.spec, tmp_path)
    script = Path(gen.weights.__file__)
    result = subprocess.run(
        [sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "bq          (64,)" in result.stdout
    assert "rope_lut    (2048, 16)" in result.stdout


# ---------------------------------------------------------------------------
# CPU helpers
# ---------------------------------------------------------------------------


def test_rms_norm_matches_hf(generated: Generated) -> None:
    rng = np.random.default_rng(1)
    emb = generated.spec["emb_dim"]
    x = (rng.standard_normal((7, emb)) * 3).astype(np.float32)
    weight = rng.standard_normal(emb).astype(np.float32)
    hf = LlamaRMSNorm(emb, eps=generated.spec["rms_norm_eps"])
    with torch.no_grad():
        hf.weight.copy_(torch.from_numpy(weight))
        expected = hf(torch.from_numpy(x)).numpy()
    # The default eps must be the model's; float32 on both sides, so only rounding differs.
    np.testing.assert_allclose(generated.helpers.rms_norm(x, weight), expected, rtol=1e-5, atol=1e-6)
    # bf16 input is upcast: the result is float32 of the same math.
    x_bf16 = x.astype(bfloat16)
    out = generated.helpers.rms_norm(x_bf16, weight)
    assert out.dtype == np.float32
    with torch.no_grad():
        expected_bf16 = hf(torch.from_numpy(x_bf16.astype(np.float32))).numpy()
    np.testing.assert_allclose(out, expected_bf16, rtol=1e-5, atol=1e-6)


def test_helpers_kept(generated: Generated) -> None:
    names = {"softmax", "attention_reference", "qk_norm_per_head"}
    present = {n for n in names if hasattr(generated.helpers, n)}
    expected = set()
    if generated.spec["attention_fallback"]:
        expected |= {"softmax", "attention_reference"}
    if generated.spec["qk_norm"]:
        expected.add("qk_norm_per_head")
    assert present == expected


@pytest.mark.parametrize("seq_len", [1, 37])
def test_attention_reference_matches_sdpa(with_attention: Generated, seq_len: int) -> None:
    generated = with_attention
    n_heads, n_kv, hd = generated.spec["n_heads"], generated.spec["n_kv_heads"], generated.spec["head_dim"]
    rng = np.random.default_rng(2)
    q = rng.standard_normal((seq_len, n_heads * hd)).astype(np.float32)
    k = rng.standard_normal((seq_len, n_kv * hd)).astype(np.float32)
    v = rng.standard_normal((seq_len, n_kv * hd)).astype(np.float32)

    def heads(a: np.ndarray, n: int) -> torch.Tensor:  # (seq, n*hd) -> (1, n, seq, hd)
        return torch.from_numpy(a).reshape(seq_len, n, hd).transpose(0, 1)[None]

    group = n_heads // n_kv
    expected = F.scaled_dot_product_attention(
        heads(q, n_heads),
        heads(k, n_kv).repeat_interleave(group, dim=1),
        heads(v, n_kv).repeat_interleave(group, dim=1),
        is_causal=True,
    )[0].transpose(0, 1).reshape(seq_len, n_heads * hd).numpy()
    out = generated.helpers.attention_reference(q, k, v, n_heads, n_kv)
    assert out.dtype == np.float32 and out.shape == (seq_len, n_heads * hd)
    # float32 on both sides; summation order differs.
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_softmax_is_stable(with_attention: Generated) -> None:
    generated = with_attention
    out = generated.helpers.softmax(np.array([[1000.0, 1001.0, -np.inf]], dtype=np.float32))
    expected = torch.softmax(torch.tensor([[1000.0, 1001.0, -float("inf")]]), dim=-1).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)


def test_qk_norm_per_head_matches_qwen3(with_qk_norm: Generated) -> None:
    generated = with_qk_norm
    hd, eps = generated.spec["head_dim"], generated.spec["rms_norm_eps"]
    rng = np.random.default_rng(3)
    norm = Qwen3RMSNorm(hd, eps=eps)
    weight = rng.standard_normal(hd).astype(np.float32)
    with torch.no_grad():
        norm.weight.copy_(torch.from_numpy(weight))
    for n in (generated.spec["n_heads"], generated.spec["n_kv_heads"]):
        x = (rng.standard_normal((11, n * hd)) * 2).astype(np.float32)
        with torch.no_grad():
            # Qwen3Attention: q_norm(q_proj(x).view(*shape, -1, head_dim))
            expected = norm(torch.from_numpy(x).view(11, n, hd)).reshape(11, n * hd).numpy()
        np.testing.assert_allclose(generated.helpers.qk_norm_per_head(x, weight, n, hd), expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# RoPE
# ---------------------------------------------------------------------------

LLAMA3 = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}
LLAMA31 = {**LLAMA3, "factor": 8.0}
LINEAR = {"rope_type": "linear", "factor": 4.0}

# (rope_base, head_dim, rope_scaling): the real models' settings besides the tiny specs'.
ROPE_CASES = [
    (500000.0, 64, LLAMA3),  # Llama-3.2-1B
    (500000.0, 128, LLAMA31),  # Llama-3.1-8B
    (1000000.0, 128, None),  # Qwen3-0.6B
    (10000.0, 64, None),
    (10000.0, 64, LINEAR),
    (100000.0, 128, LINEAR),
]


def hf_rope_table(rope_base: float, head_dim: int, scaling: Dict[str, Any] | None, seq_len: int) -> np.ndarray:
    config = HfLlamaConfig(
        hidden_size=4 * head_dim,
        num_attention_heads=4,
        head_dim=head_dim,
        max_position_embeddings=131072,
        rope_parameters=hf_rope_parameters(rope_base, scaling),
    )
    rotary = LlamaRotaryEmbedding(config)
    with torch.no_grad():
        cos, sin = rotary(torch.zeros(1, seq_len, head_dim), torch.arange(seq_len)[None])
    half = head_dim // 2
    # HF repeats the angles: cos = [c, c]; the LUT keeps one half of each.
    assert torch.equal(cos[0, :, :half], cos[0, :, half:])
    return torch.cat([cos[0, :, :half], sin[0, :, :half]], dim=1).numpy()


def spec_rope_cases() -> list:
    cases = []
    for family in FAMILIES:
        spec = json.loads((Path(__file__).resolve().parent.parent / "testdata" / family / "spec.json").read_text())
        for scaling in (None, LLAMA3 | {"original_max_position_embeddings": 128}, LINEAR):
            cases.append((spec["rope_base"], spec["head_dim"], scaling))
    return cases


@pytest.mark.parametrize("rope_base,head_dim,scaling", ROPE_CASES + spec_rope_cases())
def test_rope_lut_matches_hf(rope_base: float, head_dim: int, scaling: Dict[str, Any] | None) -> None:
    weights = load_generated("llama").weights
    config = weights.LlamaConfig(head_dim=head_dim, rope_base=rope_base, rope_scaling=scaling)
    expected = hf_rope_table(rope_base, head_dim, scaling, 2048)
    lut = weights.generate_rope_lut(config, seq_len=2048, dtype=np.float32)
    assert lut.shape == (2048, head_dim) and lut.dtype == np.float32
    # Same float32 inv_freq and angle products as HF; cos/sin rounding differs by
    # about 1 ulp (6e-8). torch's float32 pow may put inv_freq 1 ulp off ours,
    # worth at most pos * 1.2e-7 * inv_freq -- only ever seen on low-frequency pairs.
    np.testing.assert_allclose(lut, expected, rtol=0, atol=1e-5)


def test_rope_lut_llama3_differs_from_unscaled() -> None:
    """The bug this guards against: ignoring rope_scaling goes unnoticed at short range."""
    weights = load_generated("llama").weights
    scaled = weights.generate_rope_lut(weights.LlamaConfig(head_dim=64, rope_base=500000.0, rope_scaling=LLAMA3),
                                       dtype=np.float32)
    plain = weights.generate_rope_lut(weights.LlamaConfig(head_dim=64, rope_base=500000.0, rope_scaling=None),
                                      dtype=np.float32)
    assert np.max(np.abs(scaled[2047] - plain[2047])) > 0.5


def test_rope_lut_default_dtype_is_bf16_of_float32() -> None:
    weights = load_generated("llama").weights
    config = weights.LlamaConfig()
    lut = weights.generate_rope_lut(config)
    assert lut.dtype == bfloat16
    np.testing.assert_array_equal(lut, weights.generate_rope_lut(config, dtype=np.float32).astype(bfloat16))


def test_rope_lut_rejects_unknown_scaling() -> None:
    weights = load_generated("llama").weights
    config = weights.LlamaConfig(rope_scaling={"rope_type": "yarn", "factor": 4.0})
    with pytest.raises(ValueError, match="'yarn' is not supported"):
        weights.generate_rope_lut(config)
