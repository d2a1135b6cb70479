"""The Config object handed to the reference runner, and generated-module import."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any



@dataclass
class ShimConfig:
    """Config with the fields upstream's ``LlamaConfig`` carries, built from Go's extraction."""

    n_layers: int
    emb_dim: int
    n_heads: int
    head_dim: int
    n_kv_heads: int
    hidden_dim: int
    vocab_size: int
    rope_base: float
    rms_norm_eps: float
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    qk_norm: bool = False
    rope_scaling: dict[str, Any] | None = None
    # Upstream's Config carries ml_dtypes.bfloat16 here; nothing on the baseline
    # path reads it, so the name is kept and the (slow) ml_dtypes import avoided.
    dtype: Any = "bfloat16"


_REQUIRED_INT = ("n_layers", "emb_dim", "n_heads", "n_kv_heads", "head_dim", "hidden_dim", "vocab_size")


def build_config(cfg: dict[str, Any]) -> ShimConfig:
    """Build a ShimConfig from the config dict Go extracted from config.json."""
    missing = [k for k in (*_REQUIRED_INT, "rope_base", "rms_norm_eps") if cfg.get(k) is None]
    if missing:
        raise ValueError(f"config is missing {', '.join(missing)} (got keys {sorted(cfg)})")
    for key in _REQUIRED_INT:
        value = cfg[key]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"config.{key} must be a positive integer, got {value!r}")
    rope_scaling = cfg.get("rope_scaling")
    if rope_scaling is not None and not isinstance(rope_scaling, dict):
        raise ValueError(f"config.rope_scaling must be an object or null, got {rope_scaling!r}")
    return ShimConfig(
        n_layers=cfg["n_layers"],
        emb_dim=cfg["emb_dim"],
        n_heads=cfg["n_heads"],
        head_dim=cfg["head_dim"],
        n_kv_heads=cfg["n_kv_heads"],
        hidden_dim=cfg["hidden_dim"],
        vocab_size=cfg["vocab_size"],
        rope_base=float(cfg["rope_base"]),
        rms_norm_eps=float(cfg["rms_norm_eps"]),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        qkv_bias=bool(cfg.get("qkv_bias", False)),
        qk_norm=bool(cfg.get("qk_norm", False)),
        rope_scaling=rope_scaling,
        dtype="bfloat16",
    )


def import_module_from_path(path: Path | str) -> ModuleType:
    """Import a generated ``<name>_weights.py`` by file path.

    Each file gets its own module name (derived from its resolved path and
    contents), so two workspaces -- or an edited file -- never collide in
    ``sys.modules``. Registering the module before executing it is what
    dataclasses need to resolve annotations.
    """
    file = Path(path).resolve()
    if not file.is_file():
        raise FileNotFoundError(f"weights module {file} does not exist")
    digest = hashlib.sha256(str(file).encode() + b"\0" + file.read_bytes()).hexdigest()[:16]
    name = f"phase0_generated_{file.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def generated_config(weights_module: Path | str) -> Any:
    """``LlamaConfig()`` from a generated weights module."""
    module = import_module_from_path(weights_module)
    config_cls = getattr(module, "LlamaConfig", None)
    if config_cls is None:
        raise AttributeError(f"{weights_module} defines no LlamaConfig")
    return config_cls()
