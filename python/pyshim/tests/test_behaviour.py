"""Gate 3 behaviour facts through ops, on upstream-style modules and tiny checkpoints: reported, never judged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from conftest import DATA
from phase0_shim import ops

UPSTREAM = DATA / "upstream"


def module(name: str) -> tuple[Path, Path]:
    folder = UPSTREAM / name
    return folder / f"{name}_weights.py", folder / f"{name}_cpu_helpers.py"


def behaviour(weights: Path, helpers: Path | None, model_dir: Path, max_seq: int = 64) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    args = {"weights_module": str(weights), "helpers_module": str(helpers) if helpers else None, "model_dir": str(model_dir), "max_seq": max_seq}
    out = ops.behaviour_facts(json.dumps(args))
    assert isinstance(out, tuple) and len(out) == 2
    text, payload = out
    facts = json.loads(text)
    assert payload.dtype == np.float32 and payload.ndim == 1
    arrays, at = {}, 0
    for spec in facts["arrays"]:
        n = int(np.prod(spec["shape"]))
        arrays[spec["name"]] = payload[at : at + n].reshape(spec["shape"])
        at += n
    assert at == payload.size, "the specs describe the whole payload"
    return facts, arrays


def test_rope_and_norm_facts_of_a_qwen3_module(tiny_model) -> None:  # type: ignore[no-untyped-def]
    weights, helpers = module("qwen3_0_6b")
    facts, arrays = behaviour(weights, helpers, tiny_model("qwen3"))
    rope = facts["rope"]
    assert rope == {"seq_len": 64, "head_dim": 32, "rope_type": "default", "defined": True, "type": "ndarray", "dtype": "bfloat16", "shape": [64, 32]}
    assert arrays["rope.module"].shape == arrays["rope.transformers"].shape == (64, 32)
    # Row 0 is position 0: cos 1, sin 0, in both tables.
    assert np.all(arrays["rope.transformers"][0, :16] == 1) and np.all(arrays["rope.transformers"][0, 16:] == 0)
    assert "rope.transformers_unscaled" not in arrays
    assert [n["helper"] for n in facts["norms"]] == ["rms_norm", "qk_norm_per_head"]
    for n in facts["norms"]:
        assert n["eps"] == 1e-06 and n["eps_argument"] is None
        x = arrays[f"norm.{n['helper']}.x"]
        width = n["width"]
        # The probe's first row has mean square eps in every group: eps matters there.
        ms = np.mean(x[0].reshape(-1, width).astype(np.float64) ** 2, axis=-1)
        assert np.allclose(ms, 1e-06, rtol=1e-5)
        assert arrays[f"norm.{n['helper']}.module"].shape == arrays[f"norm.{n['helper']}.transformers"].shape


def test_llama3_scaling_gives_the_unscaled_table_too(tiny_model) -> None:  # type: ignore[no-untyped-def]
    weights, helpers = module("llama32_1b")
    facts, arrays = behaviour(weights, helpers, tiny_model("llama", rope_scaling="llama3"), max_seq=8)
    assert facts["rope"]["rope_type"] == "llama3"
    # The upstream-style table ignores the scaling: it is the unscaled one.
    assert np.allclose(arrays["rope.module"], arrays["rope.transformers_unscaled"], atol=1 / 256)
    assert not np.allclose(arrays["rope.module"], arrays["rope.transformers"], atol=1 / 256)


def test_what_a_module_raises_or_lacks_is_a_fact(tmp_path: Path, tiny_model) -> None:  # type: ignore[no-untyped-def]
    weights, helpers = module("qwen25_0_5b")
    broken = tmp_path / "broken_weights.py"
    broken.write_text(weights.read_text().replace("    head_dim = config.head_dim\n", "    raise ValueError('no table today')\n"))
    no_default = tmp_path / "broken_cpu_helpers.py"
    no_default.write_text(helpers.read_text().replace("def rms_norm(x, weight, eps=1e-6):", "def rms_norm(x, weight, eps):"))
    facts, arrays = behaviour(broken, no_default, tiny_model("qwen2", tied=True))
    assert facts["rope"]["raised"] == "ValueError: no table today"
    assert "rope.module" not in arrays and "rope.transformers" in arrays
    assert facts["norms"][0]["eps_argument"] == 1e-06

    lacking = tmp_path / "lacking_weights.py"
    lacking.write_text(weights.read_text().split("def generate_rope_lut(")[0])
    facts, _ = behaviour(lacking, tmp_path / "absent_cpu_helpers.py", tiny_model("qwen2", tied=True))
    assert facts["rope"]["defined"] is False
    assert facts["helpers_found"] is False and facts["norms"] == [{"helper": "rms_norm", "defined": False, "width": 64, "groups": 1}]


def test_loader_facts_tell_the_tie(tmp_path: Path, tiny_model) -> None:  # type: ignore[no-untyped-def]
    def tie(name: str, model_dir: Path) -> dict[str, Any]:
        weights, _ = module(name)
        copy = tmp_path / weights.name
        shutil.copy(weights, copy)
        facts = json.loads(ops.loader_facts(json.dumps({"weights_module": str(copy), "model_dir": str(model_dir)})))
        return dict(facts["tie"])

    assert tie("qwen25_0_5b", tiny_model("qwen2", tied=True)) == {"same_object": True, "elements": 512 * 64, "differing": 0}
    untied = tie("llama32_1b", tiny_model("llama", rope_scaling="llama3"))
    assert untied["same_object"] is False and untied["differing"] > 0
