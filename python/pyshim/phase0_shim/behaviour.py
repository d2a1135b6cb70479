"""What a weights module and its helpers *do*, for gate 3; nothing is judged here.

A hand-written module's Config may not carry ``rms_norm_eps``, ``rope_scaling``
or ``tie_word_embeddings`` (upstream's do not always): Go then judges what the
module does with them, from the numbers reported here.

* ``rope``: the module's ``generate_rope_lut(config=LlamaConfig(), seq_len=max_seq)``
  and transformers' own rotary embedding for the checkpoint's config at the
  same positions (the first half of its cos and sin, float32, before any cast),
  plus the same without rope scaling when the config has one;
* ``norms``: the helpers' ``rms_norm`` (and ``qk_norm_per_head`` when defined)
  on a probe whose first row has a mean square equal to the config's eps (where
  eps matters), and transformers' RMSNorm with the config's eps on the same probe.

Arrays travel as one float32 payload; ``arrays`` names each part and its shape,
in payload order.
"""

from __future__ import annotations

import copy
import inspect
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

from phase0_shim.config import import_module_from_path
from phase0_shim.facts import generated_config_facts
from phase0_shim.opargs import op_with_array, op
from phase0_shim.optypes import ArraySpec, BehaviourArgs, BehaviourFacts, ModuleConfigArgs, ModuleConfigResult, NormFacts, RopeFacts

# A table larger than this is reported by shape only (max_seq 131072 × head_dim 256).
MAX_TABLE = 1 << 25
PROBE_SEED = 0


class _Payload:
    """Named float32 arrays, concatenated in the order they were added."""

    def __init__(self) -> None:
        self.specs: list[ArraySpec] = []
        self.parts: list[np.ndarray] = []

    def add(self, name: str, value: Any) -> None:
        a = np.asarray(value, dtype=np.float32)
        self.specs.append({"name": name, "shape": list(a.shape)})
        self.parts.append(np.ascontiguousarray(a).reshape(-1))

    def array(self) -> np.ndarray:
        if not self.parts:
            return np.zeros(0, dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(self.parts), dtype=np.float32)


def _modeling_class(config: Any, suffix: str) -> Any:
    """The one ``<Family><suffix>`` class of the modelling module transformers uses for config."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    model_cls = MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    module = sys.modules[model_cls.__module__]
    found = [
        v
        for k, v in vars(module).items()
        if k.endswith(suffix) and isinstance(v, type) and v.__module__ == module.__name__
    ]
    if len(found) != 1:
        names = ", ".join(c.__name__ for c in found) or "none"
        raise LookupError(f"{module.__name__} has {len(found)} *{suffix} classes ({names}), expected one")
    return found[0]


def _head_dim(config: Any) -> int:
    return int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)


def _transformers_table(config: Any, seq_len: int) -> np.ndarray:
    """[cos | sin] of the first half, (seq_len, head_dim), float32, as the model computes them."""
    import torch

    rotary = _modeling_class(config, "RotaryEmbedding")(config)
    head_dim = _head_dim(config)
    half = head_dim // 2
    x = torch.zeros(1, seq_len, head_dim, dtype=torch.float32)
    positions = torch.arange(seq_len, dtype=torch.long)[None]
    with torch.no_grad():
        cos, sin = rotary(x, positions)
    return torch.cat([cos[0, :, :half], sin[0, :, :half]], dim=1).numpy()


def _rope_type(config: Any) -> str:
    params = getattr(config, "rope_parameters", None) or {}
    return str(params.get("rope_type") or "default")


def _unscaled(config: Any) -> Any:
    plain = copy.deepcopy(config)
    plain.rope_parameters = {"rope_type": "default", "rope_theta": config.rope_parameters["rope_theta"]}
    return plain


def _raised(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def rope_facts(module: Any, config: Any, seq_len: int, payload: _Payload, config_function: str = "LlamaConfig") -> RopeFacts:
    fn = getattr(module, "generate_rope_lut", None)
    out: RopeFacts = {"seq_len": seq_len, "head_dim": _head_dim(config), "rope_type": _rope_type(config), "defined": callable(fn)}
    payload.add("rope.transformers", _transformers_table(config, seq_len))
    if out["rope_type"] != "default":
        payload.add("rope.transformers_unscaled", _transformers_table(_unscaled(config), seq_len))
    if not callable(fn):
        return out
    try:
        table = fn(config=getattr(module, config_function)(), seq_len=seq_len)
    except Exception as e:  # reported as a fact; Go decides
        out["raised"] = _raised(e)
        return out
    out["type"] = type(table).__name__
    if isinstance(table, np.ndarray):
        out["dtype"] = str(table.dtype)
        out["shape"] = list(table.shape)
        numeric = table.dtype.kind in "fc" or table.dtype.name == "bfloat16"
        if table.ndim == 2 and table.size <= MAX_TABLE and numeric:
            payload.add("rope.module", table)
    return out


def _probe(config: Any, width: int, groups: int) -> tuple[np.ndarray, float]:
    """Two rows of width * groups: in row 0 every group's mean square is eps
    (the norm then divides by sqrt(2 eps), so another eps shows), row 1 is
    plain N(0, 1)."""
    eps = float(config.rms_norm_eps)
    rng = np.random.default_rng(PROBE_SEED)
    x = rng.standard_normal((2, groups, width))
    x[0] *= np.sqrt(eps / np.mean(x[0] ** 2, axis=-1, keepdims=True))
    return x.reshape(2, groups * width).astype(np.float32), eps


def _call(fn: Callable[..., Any], eps: float, *args: Any) -> tuple[Any, float | None]:
    """Call a helper as production does: with its own default eps when it has one."""
    param = inspect.signature(fn).parameters.get("eps")
    if param is not None and param.default is not inspect.Parameter.empty:
        return fn(*args), None
    return fn(*args, eps=eps), eps


def norm_facts(helpers: Any, config: Any, payload: _Payload) -> list[NormFacts]:
    import ml_dtypes
    import torch

    norm_cls = _modeling_class(config, "RMSNorm")
    emb, head_dim, heads = int(config.hidden_size), _head_dim(config), int(config.num_attention_heads)
    probes = [("rms_norm", emb, 1), ("qk_norm_per_head", head_dim, heads)]
    out: list[NormFacts] = []
    for name, width, groups in probes:
        fn = getattr(helpers, name, None) if helpers is not None else None
        if name != "rms_norm" and not callable(fn):
            continue
        fact: NormFacts = {"helper": name, "defined": callable(fn), "width": width, "groups": groups}
        out.append(fact)
        if not callable(fn):
            continue
        x, eps = _probe(config, width, groups)
        rng = np.random.default_rng(PROBE_SEED + 1)
        # The loaded norm weights are bf16 arrays; pass them as production does.
        w = (1.0 + 0.1 * rng.standard_normal(width)).astype(ml_dtypes.bfloat16)
        norm = norm_cls(width, eps=eps)
        with torch.no_grad():
            norm.weight.copy_(torch.from_numpy(w.astype(np.float32)))
            ref = norm(torch.from_numpy(x.reshape(2, groups, width))).reshape(2, groups * width).numpy()
        fact["eps"] = eps
        try:
            args = (x, w) if groups == 1 else (x, w, heads, head_dim)
            got, fact["eps_argument"] = _call(fn, eps, *args)
        except Exception as e:  # reported as a fact; Go decides
            fact["raised"] = _raised(e)
            continue
        prefix = f"norm.{name}."
        payload.add(prefix + "x", x)
        payload.add(prefix + "weight", w)
        payload.add(prefix + "transformers", ref)
        payload.add(prefix + "module", np.asarray(got, dtype=np.float32))
    return out


def collect(
    weights_module: Path | str,
    helpers_module: Path | str | None,
    model_dir: Path | str,
    max_seq: int,
    config_function: str = "LlamaConfig",
) -> tuple[BehaviourFacts, np.ndarray]:
    from transformers import AutoConfig

    if max_seq < 1:
        raise ValueError(f"max_seq must be >= 1, got {max_seq}")
    config = AutoConfig.from_pretrained(str(model_dir))
    module = import_module_from_path(weights_module)
    payload = _Payload()
    rope = rope_facts(module, config, max_seq, payload, config_function)
    helpers = None
    helpers_path = Path(helpers_module) if helpers_module else None
    found = helpers_path is not None and helpers_path.is_file()
    raised = None
    if helpers_path is not None and found:
        try:
            helpers = import_module_from_path(helpers_path)
        except Exception as e:  # reported as a fact; Go decides
            raised = _raised(e)
    facts: BehaviourFacts = {
        "rope": rope,
        "helpers_module": helpers_path.name if helpers_path else None,
        "helpers_found": found,
        "norms": norm_facts(helpers, config, payload) if raised is None else [],
        "arrays": payload.specs,
    }
    if raised is not None:
        facts["helpers_raised"] = raised
    return facts, payload.array()


@op_with_array("behaviour_facts", BehaviourArgs, BehaviourFacts, nonempty=("weights_module", "model_dir", "max_seq"))
def behaviour_facts(args: BehaviourArgs) -> tuple[BehaviourFacts, np.ndarray]:
    """Gate 3 behaviour: the facts and their float32 arrays."""
    return collect(
        args["weights_module"],
        args["helpers_module"],
        args["model_dir"],
        int(args["max_seq"]),
        args.get("config_function") or "LlamaConfig",
    )


@op("module_config", ModuleConfigArgs, ModuleConfigResult, nonempty=("weights_module",))
def module_config(args: ModuleConfigArgs) -> ModuleConfigResult:
    """The module's LlamaConfig() as written (no transformers)."""
    return {"generated": generated_config_facts(Path(args["weights_module"]))}
