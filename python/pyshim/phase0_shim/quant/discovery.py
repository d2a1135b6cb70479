"""A quantized folder's module: importing it, finding its loader (a
``load_*weights*`` function returning the bf16 loaders' ``LlamaWeights``
structure, else a class with ``layer_weights(k)`` / ``layer_rms(k)`` /
``embed_norm_lmhead()``, read one layer at a time) and its config.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from phase0_shim.config import import_module_from_path
from phase0_shim.optypes import QuantImportFailure
from phase0_shim.quant.families import rms_fields
from phase0_shim.quant.reading import Reference
from phase0_shim.quant.vocab import GLOBALS, KEPT, PROJECTIONS

class Fallback:
    """Why the loader judged is the module's per-layer class and not its
    load_*weights* function: the function could not import what it imports
    (upstream's newer qwen3_4b_q4nx: load_q4nx_weights imports
    qwen3_4b_weights before anything puts llms/qwen3_4b on sys.path, and its
    drivers read through Q4nxModel). Empty when the function ran."""

    def __init__(self) -> None:
        self.why = ""
        self.loader = ""


def _layer_class(module: Any) -> tuple[str, Any] | None:
    """The module's per-layer reader: a class of its own first (upstream's
    qwen3_4b_q4nx imports the 8B reader under another name and subclasses it),
    else the first it imports."""
    found = [(n, v) for n, v in vars(module).items() if isinstance(v, type) and callable(getattr(v, "layer_weights", None))]
    own = [(n, v) for n, v in found if v.__module__ == module.__name__]
    return (own or found)[0] if found else None


def find_loader(
    module: Any, source: str, n_layers: int, ref: Reference, fallback: Fallback | None = None
) -> tuple[str, Iterator[tuple[int, str, Any]]]:
    """The loader's name and its tensors, one layer at a time where its API
    allows: (layer, LlamaWeights field, array), layer -1 for the whole-model arrays.
    A function that cannot import what it imports gives way to the module's
    per-layer class, if it has one, saying why in fallback."""
    funcs = sorted(n for n in vars(module) if re.fullmatch(r"load_\w*weights\w*", n) and callable(getattr(module, n)))
    cls = _layer_class(module)
    if funcs:
        klass = None if cls is None else (f"class {cls[0]}", lambda: _from_class(cls[1], source, n_layers, ref))
        return f"{funcs[0]}()", _from_function(getattr(module, funcs[0]), source, klass, fallback)
    if cls is not None:
        return f"class {cls[0]}", _from_class(cls[1], source, n_layers, ref)
    raise AttributeError(f"{module.__file__} defines no load_*weights* function and no class with layer_weights(k)")


def _from_function(
    fn: Any,
    source: str,
    klass: tuple[str, Callable[[], Iterator[tuple[int, str, Any]]]] | None = None,
    fallback: Fallback | None = None,
) -> Iterator[tuple[int, str, Any]]:
    try:
        with contextlib.redirect_stdout(sys.stderr):
            w = fn(source)
    except ModuleNotFoundError as e:
        if klass is None or fallback is None:
            raise
        fallback.loader = klass[0]
        fallback.why = f"{fn.__name__}() raised {type(e).__name__}: {e}; judged through {klass[0]}, the module's per-layer reader"
        yield from klass[1]()
        return
    for field in GLOBALS:
        yield -1, field, getattr(w, field, None)
    for k, layer in enumerate(w.layers):
        for field in (*PROJECTIONS, *KEPT):
            value = getattr(layer, field, None)
            if value is not None:
                yield k, field, value
                # Taken: the loader's structure lets go of it, so a caller
                # that copies it (gate 2's contiguous weights) holds one
                # copy, not two, of a loader that returned the whole model.
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(layer, field, None)
                del value


def _from_class(cls: Any, source: str, n_layers: int, ref: Reference) -> Iterator[tuple[int, str, Any]]:
    import inspect

    # layer_weights(k, dims=None) defaults to the module's own model's dims;
    # an I8 header does not carry them, so they come from the reference.
    takes_dims = "dims" in inspect.signature(cls.layer_weights).parameters
    with contextlib.redirect_stdout(sys.stderr):
        model = cls(source)
        embed, norm, lm_head = model.embed_norm_lmhead()
    yield -1, "embed_table", embed
    yield -1, "final_norm", norm
    yield -1, "lm_head", lm_head
    del embed, norm, lm_head
    by_key = {key: field for field, (key, _) in PROJECTIONS.items()}
    for k in range(n_layers):
        dims = {key: tuple(ref.shape(f"model.layers.{k}.{hf}.weight")) for key, hf in PROJECTIONS.values()}
        with contextlib.redirect_stdout(sys.stderr):
            w = model.layer_weights(k, dims) if takes_dims else model.layer_weights(k)
        for key, value in w.items():
            if key in by_key:
                yield k, by_key[key], value
        del w
        rms = tuple(model.layer_rms(k))
        for field, value in zip(rms_fields(getattr(ref, "family", ""), len(rms)), rms):
            yield k, field, value
        del rms
        if callable(getattr(model, "layer_qk_norm", None)):
            qn, kn = model.layer_qk_norm(k)
            yield k, "q_norm", qn
            yield k, "k_norm", kn
        bias = getattr(model, "layer_qkv_bias", None) or getattr(model, "layer_bias", None)
        if callable(bias):
            for field, value in zip(("bq", "bk", "bv"), bias(k)):
                yield k, field, value


def import_module(module_path: Path) -> tuple[Any, QuantImportFailure | None]:
    """The module, or why it could not be imported when what it imports is
    missing (a --llms-dir holding an extracted llms/ without the folders
    beside it: ../../fused_decode, matrix_vector_multiplication/int4_awq)."""
    before = list(sys.path)
    try:
        return import_module_from_path(module_path), None
    except ModuleNotFoundError as e:
        added = [p for p in sys.path if p not in before]
        missing = [p for p in added if not Path(p).is_dir()]
        return None, {"module": e.name or "", "missing_paths": missing, "message": str(e)}



def config_functions(module: Any) -> list[str]:
    """Top-level ``*_config`` functions of the module itself taking no required argument."""
    import inspect

    out = []
    for name, fn in vars(module).items():
        if not (name.endswith("_config") and inspect.isfunction(fn) and fn.__module__ == module.__name__):
            continue
        params = inspect.signature(fn).parameters.values()
        if all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            out.append(name)
    return sorted(out)


def config_classes(module: Any) -> list[str]:
    """Config dataclasses in the module's namespace (its own or imported
    from the tree, e.g. upstream's llama32_3b_q4nx uses llama32_3b's
    LlamaConfig) that take no required argument: what its loader defaults
    to. A class from outside the tree (transformers' LlamaConfig is a
    dataclass too, with Llama-2 defaults) is not the folder's config."""
    import dataclasses
    import inspect

    parents = Path(module.__file__ or ".").resolve().parents
    tree = parents[min(2, len(parents) - 1)]  # programming_examples, above llms/<folder>/
    out = []
    for name, cls in vars(module).items():
        if not (isinstance(cls, type) and name.endswith("Config") and dataclasses.is_dataclass(cls)):
            continue
        home = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if home is None or tree not in Path(home).resolve().parents:
            continue
        params = inspect.signature(cls).parameters.values()
        if all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            out.append(name)
    return sorted(out)
