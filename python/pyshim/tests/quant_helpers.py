"""Helpers of the quantized-format tests: the upstream-style fixture tree and module loading."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from unittest import mock

DATA = Path(__file__).resolve().parent / "data"
# The bf16 upstream-style folders the quantized modules import their containers from.
BF16_SIBLINGS = ("llama32_1b", "qwen3_0_6b", "qwen25_0_5b")


def assemble_tree(dest: Path) -> Path:
    """A programming_examples-like tree T: T/llms/{verify, bf16 folders, quantized folders}, T/fused_decode, ...

    Returns T/llms (what --llms-dir takes).
    """
    shutil.copytree(DATA / "quant", dest, dirs_exist_ok=True)
    llms = dest / "llms"
    shutil.copytree(DATA / "llms" / "verify", llms / "verify", dirs_exist_ok=True)
    for name in BF16_SIBLINGS:
        shutil.copytree(DATA / "upstream" / name, llms / name, dirs_exist_ok=True)
    return llms


def mlir_air() -> Path | None:
    """PHASE0_MLIR_AIR: a fetched tree's programming_examples, for the upstream read-back tests."""
    value = os.environ.get("PHASE0_MLIR_AIR")
    if not value:
        return None
    root = Path(value)
    # A checkout's root is taken too, as the Go real-tree test takes it.
    return root if (root / "llms").is_dir() or not (root / "programming_examples").is_dir() else root / "programming_examples"


@contextmanager
def imported(path: Path, extra_paths: tuple[Path, ...] = ()) -> Iterator[ModuleType]:
    """Import the module file ``path`` with its folder (and ``extra_paths``) on sys.path, then undo it.

    Upstream's modules import siblings by bare name (``proj_qmm_pack``,
    ``llama32_1b_weights``), so the names they pulled in are dropped afterwards
    to keep one tree's module from answering for another's.
    """
    before_path, before_mods = list(sys.path), set(sys.modules)
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True  # never leave __pycache__ in a fetched tree
    sys.path[:0] = [str(path.parent), *map(str, extra_paths)]
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path[:] = before_path
        for name in set(sys.modules) - before_mods:
            del sys.modules[name]
        sys.dont_write_bytecode = dont_write


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers every import under ``prefix`` with a permissive stand-in module."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.prefix or fullname.startswith(self.prefix + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = mock.MagicMock(name=spec.name)
        module.__path__ = []
        module.__spec__ = spec
        return module  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        pass


@contextmanager
def stubbed(prefix: str) -> Iterator[None]:
    """Let ``import prefix.*`` succeed with stand-ins: upstream's int4 module imports the
    mlir-air compiler (``air``) at import time, though its weight loading never uses it."""
    finder = _StubFinder(prefix)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")]:
            del sys.modules[name]
