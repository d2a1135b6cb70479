"""Facts about a model that Go judges; nothing here decides PASS or FAIL.

* ``loader_facts``: what the generated (or existing) ``<name>_weights.py``
  loaded: every array's shape, dtype and a few sampled values, and how its
  lm_head relates to its embed_table.
* ``generated_config_facts``: the generated ``LlamaConfig()`` as a dict.
* ``transformers_facts``: what transformers itself resolved for the folder:
  ``AutoConfig.from_pretrained`` (class defaults, both config layouts) and
  the parameters of the model it would build, instantiated on the meta
  device (no memory, no weights read).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim.config import generated_config, import_module_from_path
from phase0_shim.optypes import ArrayFacts, ArraySample, GeneratedFacts, LoaderFactsResult, TieFacts, TransformersFacts

# LlamaWeights' whole-model arrays, and the per-layer fields a loader may fill.
GLOBAL_FIELDS = ("embed_table", "final_norm", "lm_head")
LAYER_FIELDS = (
    "attn_norm",
    "wq",
    "wk",
    "wv",
    "wo",
    "ffn_norm",
    "w_gate",
    "w_up",
    "w_down",
    "bq",
    "bk",
    "bv",
    "q_norm",
    "k_norm",
)

# transformers config attributes reported as they are (None when absent).
CONFIG_ATTRIBUTES = (
    "model_type",
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "tie_word_embeddings",
    "rms_norm_eps",
    "attention_bias",
    "mlp_bias",
    "hidden_act",
)


def jsonable(value: Any) -> Any:
    """Plain JSON values; NumPy scalars unwrapped, anything else by its name."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else repr(value)
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    try:
        return str(np.dtype(value))
    except TypeError:
        return repr(value)


def _probe_indices(n: int) -> list[int]:
    return sorted({i for i in (0, 1, n // 2, n - 1) if 0 <= i < n})


def array_facts(value: Any) -> ArrayFacts:
    """Shape, dtype and sampled values of one loaded array.

    Samples are taken at the first, second, middle and last index of each
    dimension (1-D and 2-D arrays). bfloat16 values travel as their 16-bit
    patterns so NaN and rounding compare exactly; other dtypes as numbers.
    """
    if not isinstance(value, np.ndarray):
        return {"type": type(value).__name__}
    out: ArrayFacts = {"type": "ndarray", "shape": list(value.shape), "dtype": str(value.dtype)}
    if value.ndim not in (1, 2) or value.size == 0:
        out["samples"] = []
        return out
    grids = [_probe_indices(n) for n in value.shape]
    points = [[i] for i in grids[0]] if value.ndim == 1 else [[i, j] for i in grids[0] for j in grids[1]]
    samples: list[ArraySample] = []
    bits = value.view(np.uint16) if value.dtype.name == "bfloat16" else None
    for p in points:
        at = tuple(p)
        if bits is not None:
            samples.append({"index": p, "bits": int(bits[at])})
        else:
            samples.append({"index": p, "value": jsonable(float(value[at]))})
    out["samples"] = samples
    return out


# Rows compared at a time between lm_head and embed_table: bounds the
# temporary to a few MiB whatever the vocabulary.
TIE_ROWS = 1024


def tie_facts(weights: Any) -> TieFacts | None:
    """How the loaded lm_head relates to embed_table: the same array object,
    and how many elements differ (bf16 by bit pattern). None when either is
    not an array; ``differing`` is None when the shapes differ."""
    emb = getattr(weights, "embed_table", None)
    head = getattr(weights, "lm_head", None)
    if not isinstance(emb, np.ndarray) or not isinstance(head, np.ndarray):
        return None
    out: TieFacts = {"same_object": head is emb, "elements": int(head.size), "differing": None}
    if head.shape != emb.shape or head.ndim == 0:
        return out
    bf16 = head.dtype.name == emb.dtype.name == "bfloat16"
    a = head.view(np.uint16) if bf16 else head
    b = emb.view(np.uint16) if bf16 else emb
    differing = 0
    for start in range(0, head.shape[0], TIE_ROWS):
        differing += int(np.count_nonzero(a[start : start + TIE_ROWS] != b[start : start + TIE_ROWS]))
    out["differing"] = differing
    return out


def loader_facts(weights_module: Path | str, model_dir: Path | str) -> LoaderFactsResult:
    """Import the weights module, call load_weights, describe what came back."""
    module = import_module_from_path(weights_module)
    config = module.LlamaConfig()
    weights = module.load_weights(str(model_dir), config=config)
    layers = getattr(weights, "layers", None)
    return {
        "tie": tie_facts(weights),
        "globals": {name: array_facts(getattr(weights, name, None)) for name in GLOBAL_FIELDS if hasattr(weights, name)},
        "layers": None
        if layers is None
        else [
            {name: array_facts(getattr(layer, name)) for name in LAYER_FIELDS if getattr(layer, name, None) is not None}
            for layer in layers
        ],
    }


def generated_config_facts(weights_module: Path | str) -> GeneratedFacts:
    """Every field of the module's LlamaConfig(), as it is (types kept)."""
    config = generated_config(weights_module)
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    else:
        values = {k: v for k, v in vars(config).items() if not k.startswith("_")}
    return {"class": type(config).__name__, "fields": {k: jsonable(v) for k, v in values.items()}}


def transformers_facts(model_dir: Path | str) -> TransformersFacts:
    """What transformers resolves for the folder, without reading any weight."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(model_dir))
    attributes = {name: jsonable(getattr(config, name, None)) for name in CONFIG_ATTRIBUTES}
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    # named_parameters() drops the tied lm_head, as a checkpoint does.
    parameters = {name: list(p.shape) for name, p in model.named_parameters()}
    return {
        "class": type(model).__name__,
        "attributes": attributes,
        "parameters": parameters,
        "transformers_version": transformers.__version__,
    }
