"""Gate 3: every field of the generated LlamaConfig equals config.json exactly.

config.json is read here with ``json`` on purpose, independently of the Go
extraction and of transformers' own parsing, in both the transformers-4 layout
(``rope_theta``, ``rope_scaling``, ``torch_dtype``) and the transformers-5
layout (``rope_parameters``, ``dtype``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from phase0_shim.config import generated_config

_MISSING = object()

# Fields whose absence from a generated config has a meaning (upstream's Llama
# template has none of them): no bias, no QK norm, plain RoPE.
_IMPLIED_WHEN_ABSENT: dict[str, Any] = {"qkv_bias": False, "qk_norm": False, "rope_scaling": None}

# Counts are compared as integers: 28.0 is not a layer count.
_INT_FIELDS = frozenset({"n_layers", "emb_dim", "n_heads", "n_kv_heads", "head_dim", "hidden_dim", "vocab_size"})


@dataclass
class FieldCheck:
    field: str
    generated: Any
    config_json: Any
    ok: bool
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {"field": self.field, "generated": self.generated, "config_json": self.config_json, "ok": self.ok}
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class ConfigGateResult:
    status: str
    fields: list[FieldCheck] = field(default_factory=list)
    model_type: str | None = None
    layout: str = "transformers4"
    checkpoint_dtype: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def mismatches(self) -> list[str]:
        return [f.field for f in self.fields if not f.ok]

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "fields": [f.to_json() for f in self.fields],
            "mismatches": self.mismatches,
            "model_type": self.model_type,
            "layout": self.layout,
            "checkpoint_dtype": self.checkpoint_dtype,
            "problems": self.problems,
        }


def normalise_rope_scaling(value: Any) -> dict[str, Any] | None:
    """rope_scaling / rope_parameters as one comparable dict, None for plain RoPE."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"rope scaling must be an object or null, got {value!r}")
    out = {k: v for k, v in value.items() if k != "rope_theta"}
    legacy = out.pop("type", None)
    if "rope_type" not in out and legacy is not None:
        out["rope_type"] = legacy
    if out.get("rope_type", "default") == "default" and set(out) <= {"rope_type"}:
        return None
    return out


def class_default(model_type: str | None, name: str) -> Any:
    """A transformers config class default (e.g. tie_word_embeddings), without any weights."""
    if model_type is None:
        return _MISSING
    from transformers import AutoConfig

    try:
        return getattr(AutoConfig.for_model(model_type), name, _MISSING)
    except (ValueError, KeyError):
        return _MISSING


@dataclass
class HfFields:
    """What config.json says, with upstream's defaults applied."""

    values: dict[str, Any]
    notes: dict[str, str]
    model_type: str | None
    layout: str
    checkpoint_dtype: str | None


def read_config_json(model_dir: Path | str) -> HfFields:
    raw = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError(f"{model_dir}/config.json is not a JSON object")
    model_type = raw.get("model_type")
    rope_parameters = raw.get("rope_parameters")
    layout = "transformers5" if isinstance(rope_parameters, dict) else "transformers4"
    notes: dict[str, str] = {}
    values: dict[str, Any] = {}

    def take(name: str, key: str, default: Callable[[], Any] | None = None, why: str = "") -> None:
        if raw.get(key) is not None:
            values[name] = raw[key]
        elif default is not None:
            values[name] = default()
            notes[name] = why or f"{key} absent: default"
        else:
            values[name] = None
            notes[name] = f"{key} absent from config.json"

    take("n_layers", "num_hidden_layers")
    take("emb_dim", "hidden_size")
    take("n_heads", "num_attention_heads")
    take("n_kv_heads", "num_key_value_heads", lambda: values["n_heads"], "num_key_value_heads absent: n_heads (MHA)")

    def head_dim_default() -> Any:
        if isinstance(values["emb_dim"], int) and isinstance(values["n_heads"], int) and values["n_heads"]:
            return values["emb_dim"] // values["n_heads"]
        return None

    take("head_dim", "head_dim", head_dim_default, "head_dim absent: hidden_size // num_attention_heads")
    take("hidden_dim", "intermediate_size")
    take("vocab_size", "vocab_size")

    if layout == "transformers5":
        assert isinstance(rope_parameters, dict)
        theta = rope_parameters.get("rope_theta")
        scaling_source: Any = rope_parameters
    else:
        theta = raw.get("rope_theta")
        scaling_source = raw.get("rope_scaling")
    if theta is None:
        values["rope_base"] = 10000.0
        notes["rope_base"] = "rope_theta absent: 10000.0"
    else:
        values["rope_base"] = theta
    values["rope_scaling"] = normalise_rope_scaling(scaling_source)

    def class_default_of(name: str) -> Callable[[], Any]:
        def get() -> Any:
            value = class_default(model_type, name)
            return None if value is _MISSING else value

        return get

    take(
        "tie_word_embeddings",
        "tie_word_embeddings",
        class_default_of("tie_word_embeddings"),
        f"tie_word_embeddings absent: transformers default for model_type {model_type!r}",
    )
    take(
        "rms_norm_eps",
        "rms_norm_eps",
        class_default_of("rms_norm_eps"),
        f"rms_norm_eps absent: transformers default for model_type {model_type!r}",
    )
    if model_type == "qwen2":
        # Qwen2's q/k/v bias is hard-wired in its modeling code; config.json has no key.
        values["qkv_bias"] = True
        notes["qkv_bias"] = "qwen2 family: q/k/v bias is always on"
    else:
        values["qkv_bias"] = raw.get("attention_bias", False)
    values["qk_norm"] = model_type == "qwen3"

    dtype = raw.get("dtype", raw.get("torch_dtype"))
    return HfFields(values, notes, model_type, layout, dtype if isinstance(dtype, str) else None)


def _same(name: str, generated: Any, expected: Any) -> bool:
    """Exact equality, with bools and numbers kept apart (True is not 1)."""
    if expected is None or generated is None:
        return generated is None and expected is None
    if name == "rope_scaling":
        try:
            return bool(normalise_rope_scaling(generated) == expected)
        except ValueError:
            return False
    if isinstance(expected, bool) or isinstance(generated, bool):
        return isinstance(expected, bool) and isinstance(generated, bool) and generated == expected
    if name in _INT_FIELDS:
        return isinstance(generated, int) and isinstance(expected, int) and generated == expected
    if isinstance(expected, (int, float)) and isinstance(generated, (int, float)):
        return float(generated) == float(expected)
    return bool(generated == expected)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


FIELDS = (
    "n_layers",
    "emb_dim",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "hidden_dim",
    "vocab_size",
    "rope_base",
    "tie_word_embeddings",
    "rms_norm_eps",
    "rope_scaling",
    "qkv_bias",
    "qk_norm",
)


def run_config_gate(weights_module: Path | str, model_dir: Path | str) -> ConfigGateResult:
    try:
        config = generated_config(weights_module)
    except Exception as exc:
        return ConfigGateResult("FAIL", problems=[f"LlamaConfig() failed: {type(exc).__name__}: {exc}"])
    try:
        hf = read_config_json(model_dir)
    except Exception as exc:
        return ConfigGateResult("FAIL", problems=[f"reading config.json failed: {type(exc).__name__}: {exc}"])

    checks: list[FieldCheck] = []
    for name in FIELDS:
        expected = hf.values[name]
        note = hf.notes.get(name, "")
        generated = getattr(config, name, _MISSING)
        if generated is _MISSING:
            if name in _IMPLIED_WHEN_ABSENT:
                generated = _IMPLIED_WHEN_ABSENT[name]
                note = "; ".join(filter(None, [note, f"absent from LlamaConfig: {generated!r} implied"]))
            else:
                checks.append(FieldCheck(name, None, _jsonable(expected), False, "absent from LlamaConfig"))
                continue
        checks.append(FieldCheck(name, _jsonable(generated), _jsonable(expected), _same(name, generated, expected), note))

    result = ConfigGateResult(
        status="PASS",
        fields=checks,
        model_type=hf.model_type,
        layout=hf.layout,
        checkpoint_dtype=hf.checkpoint_dtype,
    )
    if result.mismatches:
        result.status = "FAIL"
    return result
