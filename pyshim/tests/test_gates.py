"""Gates 1 and 3 through ops, on tiny checkpoints and the tests/data/tiny_weights.py fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import FAMILY_DEFAULTS
from phase0_shim import ops
from phase0_shim.config_gate import normalise_rope_scaling, read_config_json


def weights_gate(module: Path, model_dir: Path) -> dict[str, Any]:
    return json.loads(ops.weights_gate(json.dumps({"weights_module": str(module), "model_dir": str(model_dir)})))


def config_gate(module: Path, model_dir: Path) -> dict[str, Any]:
    return json.loads(ops.config_gate(json.dumps({"weights_module": str(module), "model_dir": str(model_dir)})))


def fields(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["field"]: f for f in report["fields"]}


def test_gates_pass_for_every_family(tiny_model, weights_module, family: str) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model(family)
    module = weights_module(**FAMILY_DEFAULTS[family])

    w = weights_gate(module, model_dir)
    assert w["problems"] == []
    assert w["status"] == "PASS"
    assert w["layers"] == 2
    per_layer = 9 + (3 if family == "qwen2" else 0) + (2 if family == "qwen3" else 0)
    assert w["tensors"] == 3 + 2 * per_layer

    c = config_gate(module, model_dir)
    assert c["mismatches"] == []
    assert c["status"] == "PASS"
    assert c["model_type"] == family
    assert c["layout"] == "transformers5"
    assert c["checkpoint_dtype"] == "bfloat16"
    got = fields(c)
    assert got["qkv_bias"]["config_json"] is (family == "qwen2")
    assert got["qk_norm"]["config_json"] is (family == "qwen3")
    assert got["head_dim"]["config_json"] == (32 if family == "qwen3" else 16)


def test_gates_pass_sharded_and_tied(tiny_model, weights_module) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama", sharded=True, tied=True)
    assert (model_dir / "model.safetensors.index.json").is_file()
    module = weights_module(tie_word_embeddings=True)
    assert weights_gate(module, model_dir)["status"] == "PASS"
    assert config_gate(module, model_dir)["status"] == "PASS"
    # The untied fixture disagrees with the tied checkpoint on exactly one field.
    c = config_gate(weights_module(), model_dir)
    assert c["mismatches"] == ["tie_word_embeddings"]


@pytest.mark.parametrize(
    ("defaults", "problem"),
    [
        ({"n_kv_heads": 4}, "layer 0 wk: shape (64, 32), expected (64, 64)"),
        ({"hidden_dim": 96}, "layer 0 w_gate: shape (64, 128), expected (64, 96)"),
        ({"n_layers": 3}, "load_weights failed: KeyError"),
        ({"qkv_bias": True}, "missing weight: model.layers.0.self_attn.q_proj.bias"),
        ({"vocab_size": 500}, "embed_table: shape (512, 64), expected (500, 64)"),
    ],
)
def test_weights_gate_reports_problems(tiny_model, weights_module, defaults: dict[str, Any], problem: str) -> None:  # type: ignore[no-untyped-def]
    report = weights_gate(weights_module(**defaults), tiny_model("llama"))
    assert report["status"] == "FAIL"
    assert any(problem in p for p in report["problems"]), report["problems"]


def test_weights_gate_checks_dtype_and_extra_tensors(tmp_path: Path, tiny_model, weights_module) -> None:  # type: ignore[no-untyped-def]
    module = weights_module()
    text = module.read_text()
    # A loader that upcasts to float32 and keeps a bias the config says is not there.
    text = text.replace("t = tensors[name].astype(dtype)", "t = tensors[name].astype(np.float32)")
    text = text.replace(
        "        layers.append(LayerWeights(**fields))",
        "        fields['bq'] = np.zeros(config.emb_dim, dtype=bfloat16)\n        layers.append(LayerWeights(**fields))",
    )
    broken = tmp_path / "broken_weights.py"
    broken.write_text(text)
    report = weights_gate(broken, tiny_model("llama"))
    assert report["status"] == "FAIL"
    assert "layer 0 wq: dtype float32, expected bfloat16" in report["problems"]
    assert "layer 1 bq: loaded, but config.qkv_bias is False" in report["problems"]


def test_weights_gate_reports_import_errors(tmp_path: Path, tiny_model) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad_weights.py"
    bad.write_text("raise ImportError('no such helper module')\n")
    report = weights_gate(bad, tiny_model("llama"))
    assert report["status"] == "FAIL"
    assert report["problems"] == ["load_weights failed: ImportError: no such helper module"]


@pytest.mark.parametrize(
    ("defaults", "mismatch"),
    [
        ({"n_layers": 3}, "n_layers"),
        ({"head_dim": 32, "n_heads": 2}, "n_heads"),
        ({"rope_base": 10000.0}, "rope_base"),
        ({"rms_norm_eps": 1e-06}, "rms_norm_eps"),
        ({"qkv_bias": True}, "qkv_bias"),
        ({"qk_norm": True}, "qk_norm"),
        ({"rope_scaling": {"rope_type": "linear", "factor": 2.0}}, "rope_scaling"),
        ({"n_layers": 2.0}, "n_layers"),  # a float where config.json has an int
        ({"tie_word_embeddings": 0}, "tie_word_embeddings"),  # an int is not a bool
    ],
)
def test_config_gate_mismatches(tiny_model, weights_module, defaults: dict[str, Any], mismatch: str) -> None:  # type: ignore[no-untyped-def]
    report = config_gate(weights_module(**defaults), tiny_model("llama"))
    assert report["status"] == "FAIL"
    assert mismatch in report["mismatches"]
    entry = fields(report)[mismatch]
    assert entry["ok"] is False


def test_config_gate_rope_scaling(tiny_model, weights_module) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama", rope_scaling="llama3")
    scaling = {
        "type": "llama3",  # legacy key name, normalised to rope_type
        "factor": 32.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
    }
    assert config_gate(weights_module(rope_scaling=scaling), model_dir)["status"] == "PASS"
    report = config_gate(weights_module(), model_dir)  # rope_scaling None: the hand process's bug
    assert report["mismatches"] == ["rope_scaling"]
    assert fields(report)["rope_scaling"]["config_json"]["rope_type"] == "llama3"


def test_config_gate_transformers4_layout_and_defaults(tmp_path: Path, tiny_model, weights_module) -> None:  # type: ignore[no-untyped-def]
    source = tiny_model("llama")
    raw = json.loads((source / "config.json").read_text())
    # Rewrite in the transformers-4 layout, dropping keys that have defaults.
    rope = raw.pop("rope_parameters")
    raw["rope_theta"] = rope["rope_theta"]
    raw["rope_scaling"] = None
    raw["torch_dtype"] = raw.pop("dtype")
    del raw["tie_word_embeddings"], raw["head_dim"], raw["attention_bias"]
    model_dir = tmp_path / "t4"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(raw))

    report = config_gate(weights_module(), model_dir)
    assert report["mismatches"] == []
    assert report["layout"] == "transformers4"
    assert report["checkpoint_dtype"] == "bfloat16"
    got = fields(report)
    assert got["head_dim"]["config_json"] == 16 and "hidden_size // num_attention_heads" in got["head_dim"]["note"]
    assert got["tie_word_embeddings"]["config_json"] is False
    assert "transformers default" in got["tie_word_embeddings"]["note"]

    # No rope_theta anywhere: upstream's 10000.0 default, which the fixture does not have.
    del raw["rope_theta"]
    (model_dir / "config.json").write_text(json.dumps(raw))
    report = config_gate(weights_module(), model_dir)
    assert report["mismatches"] == ["rope_base"]
    assert fields(report)["rope_base"]["config_json"] == 10000.0


def test_config_gate_absent_generated_fields(tmp_path: Path, tiny_model, weights_module) -> None:  # type: ignore[no-untyped-def]
    text = weights_module().read_text()
    for line in ("    rms_norm_eps: float = 1e-05\n", "    qkv_bias: bool = False\n", "    rope_scaling: Optional[dict] = None\n"):
        assert line in text
        text = text.replace(line, "")
    module = tmp_path / "upstream_style_weights.py"
    module.write_text(text)
    report = config_gate(module, tiny_model("llama"))
    # Absent bias / scaling mean "none" (upstream's Llama template); an absent eps is a finding.
    assert report["mismatches"] == ["rms_norm_eps"]
    assert fields(report)["rms_norm_eps"]["generated"] is None
    assert "implied" in fields(report)["qkv_bias"]["note"]


@pytest.mark.parametrize(
    ("value", "normalised"),
    [
        (None, None),
        ({"rope_type": "default", "rope_theta": 10000.0}, None),
        ({"type": "linear", "factor": 2.0}, {"rope_type": "linear", "factor": 2.0}),
        ({"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}, {"rope_type": "llama3", "factor": 8.0}),
    ],
)
def test_normalise_rope_scaling(value: Any, normalised: Any) -> None:
    assert normalise_rope_scaling(value) == normalised


def test_read_config_json_qwen2_bias_without_key(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("qwen2")
    raw = json.loads((model_dir / "config.json").read_text())
    assert "attention_bias" not in raw
    hf = read_config_json(model_dir)
    assert hf.values["qkv_bias"] is True
