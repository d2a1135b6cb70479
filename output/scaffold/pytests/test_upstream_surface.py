"""The generated loader below its public API: the private helpers other model
folders import from a base model's weights module.

upstream's int4 Llama loader imports LlamaConfig, LayerWeights, LlamaWeights,
_resolve_safetensor_files and _load_tensor from its base model's module and
drives them with safetensors.safe_open handles; other loaders iterate
_HF_LAYER_MAP and call synthetic_weights. The script below is written the same
way against a generated module and must load a real checkpoint bit-exactly.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from ml_dtypes import bfloat16

from conftest import TESTDATA, Generated, load_generated, save_tiny_model

# A derived loader in the style of upstream's llama32_1b_int4_weights.py: it
# imports the base module's private helpers by name and reads every tensor
# through safetensors.safe_open(framework="numpy") handles.
DERIVED_LOADER = textwrap.dedent(
    """
    import sys

    import numpy as np
    from ml_dtypes import bfloat16
    from safetensors import safe_open

    from {module} import (
        LayerWeights,
        LlamaConfig,
        LlamaWeights,
        _HF_LAYER_MAP,
        _load_tensor,
        _resolve_safetensor_files,
    )


    def load_derived(model_path, config=None):
        if config is None:
            config = LlamaConfig()
        key_to_file = {{}}
        for path in _resolve_safetensor_files(model_path):
            with safe_open(path, framework="numpy") as f:
                for key in f.keys():
                    key_to_file[key] = path

        def read(key):
            with safe_open(key_to_file[key], framework="numpy") as f:
                return _load_tensor(f, key, bfloat16)

        layers = []
        for i in range(config.n_layers):
            fields = {{}}
            for suffix, (name, transpose) in _HF_LAYER_MAP.items():
                tensor = read(f"model.layers.{{i}}.{{suffix}}")
                fields[name] = np.ascontiguousarray(tensor.T) if transpose else tensor
            layers.append(LayerWeights(**fields))
        weights = LlamaWeights(embed_table=read("model.embed_tokens.weight"))
        weights.layers = layers
        weights.final_norm = read("model.norm.weight")
        weights.lm_head = read("lm_head.weight") if "lm_head.weight" in key_to_file else weights.embed_table
        return weights


    weights = load_derived(sys.argv[1])
    arrays = {{"embed_table": weights.embed_table, "final_norm": weights.final_norm, "lm_head": weights.lm_head}}
    for i, layer in enumerate(weights.layers):
        for name, value in vars(layer).items():
            arrays[f"{{i}}.{{name}}"] = value
    np.savez(sys.argv[2], **{{k: v.astype(np.float32) for k, v in arrays.items()}})
    """
)


def golden_dir(gen: Generated) -> Path:
    return TESTDATA / "golden" / gen.family


def test_derived_loader_matches_load_weights(generated: Generated, checkpoint: Path, tmp_path: Path) -> None:
    module = f"{generated.spec['name']}_weights"
    script = tmp_path / "derived_loader.py"
    script.write_text(DERIVED_LOADER.format(module=module))
    out = tmp_path / "derived.npz"
    env = {**os.environ, "PYTHONPATH": str(golden_dir(generated))}
    result = subprocess.run(
        [sys.executable, str(script), str(checkpoint), str(out)],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert result.returncode == 0, result.stderr
    derived = np.load(out)
    ours = generated.weights.load_weights(str(checkpoint))
    expected = {"embed_table": ours.embed_table, "final_norm": ours.final_norm, "lm_head": ours.lm_head}
    for i, layer in enumerate(ours.layers):
        for f in dataclasses.fields(layer):
            expected[f"{i}.{f.name}"] = getattr(layer, f.name)
    assert sorted(derived.files) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(derived[name], value.astype(np.float32), err_msg=name)


def test_hf_layer_map_covers_layer_weights(generated: Generated) -> None:
    w = generated.weights
    mapped = sorted(name for name, _ in w._HF_LAYER_MAP.values())
    assert mapped == sorted(f.name for f in dataclasses.fields(w.LayerWeights))
    for suffix, (name, transpose) in w._HF_LAYER_MAP.items():
        assert w.hf_layer_tensor_name(3, name) == f"model.layers.3.{suffix}"
        assert transpose == (suffix.endswith("proj.weight")), suffix


def test_load_tensor_takes_both_handle_kinds(checkpoint: Path, generated: Generated) -> None:
    from safetensors import safe_open

    w = generated.weights
    (path,) = w._resolve_safetensor_files(str(checkpoint))
    key = "model.layers.0.mlp.up_proj.weight"
    with safe_open(path, framework="pt") as f:
        from_torch = w._load_tensor(f, key, np.float32)
    with safe_open(path, framework="numpy") as f:
        from_numpy = w._load_tensor(f, key, bfloat16)
    with w._SafetensorsFile(path) as f:
        from_ours = w._load_tensor(f, key, bfloat16)
        assert key in f.keys()
    assert from_numpy.dtype == bfloat16 and from_torch.dtype == np.float32
    np.testing.assert_array_equal(from_numpy.astype(np.float32), from_torch)
    np.testing.assert_array_equal(from_ours.astype(np.float32), from_torch)


def test_resolve_safetensor_files_follows_the_index(tmp_path: Path) -> None:
    gen = load_generated("qwen3")
    path = save_tiny_model(gen.spec, tmp_path / "model", max_shard_size="40KB")
    (path / "stray.safetensors").write_bytes((path / sorted(p.name for p in path.glob("model-*.safetensors"))[0]).read_bytes())
    files = gen.weights._resolve_safetensor_files(str(path))
    assert len(files) > 1 and all(Path(f).name.startswith("model-") for f in files)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no .safetensors files"):
        gen.weights._resolve_safetensor_files(str(empty))


def test_synthetic_weights(generated: Generated, checkpoint: Path) -> None:
    w = generated.weights
    a, b = w.synthetic_weights(seed=7), w.synthetic_weights(seed=7)
    real = w.load_weights(str(checkpoint))
    assert a.embed_table.dtype == bfloat16
    np.testing.assert_array_equal(a.embed_table, b.embed_table)
    assert not np.array_equal(a.embed_table, w.synthetic_weights(seed=8).embed_table)
    assert (a.lm_head is a.embed_table) == generated.spec["tie_word_embeddings"]
    assert a.lm_head.shape == real.lm_head.shape and a.final_norm.shape == real.final_norm.shape
    assert len(a.layers) == len(real.layers)
    for f in dataclasses.fields(w.LayerWeights):
        ours, theirs = getattr(a.layers[1], f.name), getattr(real.layers[1], f.name)
        assert ours.shape == theirs.shape and ours.dtype == bfloat16, f.name
        np.testing.assert_array_equal(ours, getattr(b.layers[1], f.name))
    # Projections N(0, scale), norms ones.
    assert abs(float(np.std(a.layers[0].w_up.astype(np.float32))) - 0.02) < 0.005
    assert np.all(a.layers[0].attn_norm.astype(np.float32) == 1.0)
    big = w.synthetic_weights(seed=7, scale=1.0)
    assert abs(float(np.std(big.layers[0].w_up.astype(np.float32))) - 1.0) < 0.2


def test_llama_weights_defaults(generated: Generated) -> None:
    w = generated.weights
    weights = w.LlamaWeights(embed_table=np.zeros((2, 2), dtype=bfloat16))
    assert weights.layers == [] and weights.final_norm is None and weights.lm_head is None
    assert w.LlamaWeights(embed_table=weights.embed_table).layers is not weights.layers


@dataclass
class UpstreamStyleConfig:
    """A config with only the fields upstream's llama32_1b LlamaConfig has."""

    n_layers: int
    emb_dim: int
    n_heads: int
    head_dim: int
    n_kv_heads: int
    hidden_dim: int
    vocab_size: int
    rope_base: float
    dtype: Any = bfloat16


def upstream_style(spec: dict[str, Any]) -> UpstreamStyleConfig:
    return UpstreamStyleConfig(
        spec["n_layers"], spec["emb_dim"], spec["n_heads"], spec["head_dim"], spec["n_kv_heads"],
        spec["hidden_dim"], spec["vocab_size"], spec["rope_base"],
    )


def test_config_without_optional_fields(generated: Generated, checkpoint: Path) -> None:
    w = generated.weights
    config = upstream_style(generated.spec)
    weights = w.load_weights(str(checkpoint), config=config)
    reference = w.load_weights(str(checkpoint))
    np.testing.assert_array_equal(weights.lm_head, reference.lm_head)
    assert (weights.lm_head is weights.embed_table) == generated.spec["tie_word_embeddings"]
    synthetic = w.synthetic_weights(config)
    assert (synthetic.lm_head is synthetic.embed_table) == generated.spec["tie_word_embeddings"]
    # No rope_scaling attribute means plain RoPE.
    plain = w.LlamaConfig(head_dim=config.head_dim, rope_base=config.rope_base, rope_scaling=None)
    for cfg in (config, SimpleNamespace(head_dim=config.head_dim, rope_base=config.rope_base)):
        np.testing.assert_array_equal(
            w.generate_rope_lut(cfg, seq_len=64, dtype=np.float32),
            w.generate_rope_lut(plain, seq_len=64, dtype=np.float32),
        )


# ---------------------------------------------------------------------------
# Reloading the validated checkpoint
# ---------------------------------------------------------------------------


def run_module(module: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PHASE0_MODEL_DIR", "PHASE0_CACHE", "XDG_CACHE_HOME")}
    return subprocess.run(
        [sys.executable, str(module), *args], capture_output=True, text=True, timeout=120,
        env={**clean, **env}, check=False,
    )


def copy_module(gen: Generated, dest: Path) -> Path:
    dest.mkdir(parents=True)
    name = f"{gen.spec['name']}_weights.py"
    target = dest / name
    target.write_bytes((golden_dir(gen) / name).read_bytes())
    return target


def test_local_checkpoint_reloads_relative_to_the_workspace(tmp_path: Path) -> None:
    gen = load_generated("mistral")  # recorded as ../../models/Tiny-Mistral
    assert gen.spec["checkpoint"] == {"root": "workspace", "path": "../../models/Tiny-Mistral"}
    module = copy_module(gen, tmp_path / "repo" / "llms" / "tiny_mistral")
    save_tiny_model(gen.spec, tmp_path / "repo" / "models" / "Tiny-Mistral")
    result = run_module(module, {})
    assert result.returncode == 0, result.stderr
    assert f"Loading {tmp_path / 'repo' / 'models' / 'Tiny-Mistral'} as bfloat16" in result.stdout
    assert "All weights loaded." in result.stdout
    # The env var wins; a folder that is not there fails naming it.
    result = run_module(module, {"PHASE0_MODEL_DIR": str(tmp_path / "elsewhere")})
    assert result.returncode != 0 and "elsewhere" in result.stderr


def test_cached_checkpoint_reloads_from_the_phase0_cache(tmp_path: Path) -> None:
    gen = load_generated("qwen3")  # the default model's shape: recorded under phase0's cache
    assert gen.spec["checkpoint"] == {"root": "phase0-cache", "path": "models/Tiny-Qwen3"}
    assert gen.weights.MODEL_REVISION is None and gen.weights.CHECKPOINT_SOURCE == gen.spec["source"]
    module = copy_module(gen, tmp_path / "llms" / "tiny_qwen3")
    save_tiny_model(gen.spec, tmp_path / "cache" / "phase0" / "models" / "Tiny-Qwen3")
    for env in ({"PHASE0_CACHE": str(tmp_path / "cache" / "phase0")}, {"XDG_CACHE_HOME": str(tmp_path / "cache")}):
        result = run_module(module, env)
        assert result.returncode == 0, (env, result.stderr)
        assert "All weights loaded." in result.stdout


def test_hub_checkpoint_defaults_to_the_hub_id(monkeypatch: pytest.MonkeyPatch) -> None:
    w = load_generated("llama").weights
    monkeypatch.delenv("PHASE0_MODEL_DIR", raising=False)
    assert w.default_checkpoint() == w.MODEL_ID == "phase0-test/Tiny-Llama"
    monkeypatch.setenv("PHASE0_MODEL_DIR", "/some/folder")
    assert w.default_checkpoint() == "/some/folder"


def test_no_absolute_paths_or_broken_links_in_goldens() -> None:
    for path in (TESTDATA / "golden").rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert "huggingface.co//" not in text, path
            assert "/tmp/" not in text and "/root/" not in text and "/home/" not in text, path
