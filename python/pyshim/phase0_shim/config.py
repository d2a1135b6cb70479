"""The Config object handed to the reference runner, and generated-module import."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any



def runner_config(cfg: dict[str, Any]) -> SimpleNamespace:
    """The Config object handed to the reference runner when there is no
    generated module: Go's model.Config, attribute by attribute, as upstream's
    ``LlamaConfig`` names them. Go validated every value; nothing is re-checked
    or defaulted here, so there is no second copy of the field list."""
    if not cfg:
        raise ValueError("no config was passed for the reference runner")
    # Upstream's Config carries ml_dtypes.bfloat16 here; nothing on the
    # reference path reads it, so the name is kept and the slow import avoided.
    return SimpleNamespace(**{**cfg, "dtype": "bfloat16"})


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
