"""Facts for gates 1 and 3, through ops, on tiny checkpoints: reported as they are, never judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file

from conftest import FAMILY_DEFAULTS
from phase0_shim import ops
from phase0_shim.facts import array_facts


def loader_facts(module: Path, model_dir: Path) -> dict[str, Any]:
    return json.loads(ops.loader_facts(json.dumps({"weights_module": str(module), "model_dir": str(model_dir)})))


def config_facts(module: Path | None, model_dir: Path) -> dict[str, Any]:
    args = {"weights_module": str(module) if module else None, "model_dir": str(model_dir)}
    return json.loads(ops.config_facts(json.dumps(args)))


def checkpoint(model_dir: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for f in sorted(model_dir.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


def test_loader_facts_describe_every_array(tiny_model, weights_module, family: str) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model(family)
    facts = loader_facts(weights_module(**FAMILY_DEFAULTS[family]), model_dir)
    assert set(facts["globals"]) == {"embed_table", "final_norm", "lm_head"}
    assert len(facts["layers"]) == 2
    fields = set(facts["layers"][0])
    assert {"wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down", "attn_norm", "ffn_norm"} <= fields
    assert ("bq" in fields) is (family == "qwen2")
    assert ("q_norm" in fields) is (family == "qwen3")
    wq = facts["layers"][0]["wq"]
    assert wq["dtype"] == "bfloat16" and wq["shape"][0] == 64
    # Samples are the loaded values, bit for bit: wq is q_proj transposed.
    hf = checkpoint(model_dir)["model.layers.0.self_attn.q_proj.weight"]
    for s in wq["samples"]:
        i, j = s["index"]
        assert s["bits"] == int(hf.view(np.uint16)[j, i])


def test_loader_facts_keep_what_a_broken_loader_returns(tmp_path: Path, tiny_model, weights_module) -> None:  # type: ignore[no-untyped-def]
    text = weights_module().read_text()
    # A loader that upcasts to float32 and keeps a bias the config does not have.
    text = text.replace("t = tensors[name].astype(dtype)", "t = tensors[name].astype(np.float32)")
    text = text.replace(
        "        layers.append(LayerWeights(**fields))",
        "        fields['bq'] = np.zeros(config.emb_dim, dtype=bfloat16)\n        layers.append(LayerWeights(**fields))",
    )
    broken = tmp_path / "broken_weights.py"
    broken.write_text(text)
    facts = loader_facts(broken, tiny_model("llama"))
    assert facts["layers"][0]["wq"]["dtype"] == "float32"
    assert "value" in facts["layers"][0]["wq"]["samples"][0]
    assert facts["layers"][1]["bq"]["shape"] == [64]


def test_loader_facts_raise_what_the_module_raises(tmp_path: Path, tiny_model) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad_weights.py"
    bad.write_text("raise ImportError('no such helper module')\n")
    with pytest.raises(ImportError, match="no such helper module"):
        loader_facts(bad, tiny_model("llama"))


def test_array_facts_samples_and_non_arrays() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4).astype(ml_dtypes.bfloat16)
    f = array_facts(a)
    assert f["shape"] == [3, 4] and f["dtype"] == "bfloat16"
    assert [s["index"] for s in f["samples"]][:3] == [[0, 0], [0, 1], [0, 2]]
    last = f["samples"][-1]
    assert last["index"] == [2, 3] and last["bits"] == int(np.array([11.0], dtype=ml_dtypes.bfloat16).view(np.uint16)[0])
    assert array_facts([1, 2]) == {"type": "list"}
    nan = array_facts(np.array([np.nan, 1.0], dtype=np.float32))
    assert nan["samples"][0]["value"] == "nan"


def test_config_facts_report_generated_fields_as_written(tiny_model, weights_module) -> None:  # type: ignore[no-untyped-def]
    facts = config_facts(weights_module(n_layers=2.0, tie_word_embeddings=0), tiny_model("llama"))
    gen = facts["generated"]
    assert gen["class"] == "LlamaConfig"
    # Types survive: a float count and an int flag are facts for Go to refuse.
    assert gen["fields"]["n_layers"] == 2.0 and isinstance(gen["fields"]["n_layers"], float)
    assert gen["fields"]["tie_word_embeddings"] == 0 and not isinstance(gen["fields"]["tie_word_embeddings"], bool)
    assert gen["fields"]["dtype"] == "bfloat16"


def test_config_facts_transformers_resolution(tiny_model, family: str) -> None:  # type: ignore[no-untyped-def]
    facts = config_facts(None, tiny_model(family))
    assert facts["generated"] is None
    tf = facts["transformers"]
    attrs = tf["attributes"]
    assert attrs["model_type"] == family
    assert attrs["num_hidden_layers"] == 2
    params = tf["parameters"]
    assert params["model.embed_tokens.weight"] == [512, 64]
    assert ("model.layers.0.self_attn.q_proj.bias" in params) is (family == "qwen2")
    assert ("model.layers.0.self_attn.q_norm.weight" in params) is (family == "qwen3")
    assert "model.layers.0.self_attn.o_proj.bias" not in params


def test_config_facts_class_defaults(tmp_path: Path, tiny_model) -> None:  # type: ignore[no-untyped-def]
    """The two drift cases: what transformers resolves when config.json is silent or says too much."""
    import shutil

    qwen3 = tmp_path / "qwen3"
    shutil.copytree(tiny_model("qwen3"), qwen3)
    raw = json.loads((qwen3 / "config.json").read_text())
    del raw["head_dim"]
    (qwen3 / "config.json").write_text(json.dumps(raw))
    attrs = config_facts(None, qwen3)["transformers"]["attributes"]
    assert attrs["head_dim"] == 128  # Qwen3Config's class default, not hidden_size // heads

    mistral = tmp_path / "mistral"
    shutil.copytree(tiny_model("mistral"), mistral)
    raw = json.loads((mistral / "config.json").read_text())
    raw["attention_bias"] = True
    (mistral / "config.json").write_text(json.dumps(raw))
    params = config_facts(None, mistral)["transformers"]["parameters"]
    assert "model.layers.0.self_attn.q_proj.bias" not in params  # Mistral's modelling code has no bias
