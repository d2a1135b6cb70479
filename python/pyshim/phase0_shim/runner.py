"""Which reference runner phase0 uses: upstream verify's, or the bundled one."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from phase0_shim import hf_runner as bundled_runner
from phase0_shim.prompts import BUNDLED_PROMPTS_DIR

RunnerKind = Literal["verify", "bundled"]


@dataclass(frozen=True)
class ResolvedRunner:
    kind: RunnerKind
    path: Path  # the file that defines HfRunner
    runner_cls: Any  # HfRunner(model_name, config, max_seq, lite_mode=False, model=None)
    prompts_dir: Path


def verify_runner_path(llms_dir: Path | str) -> Path:
    return Path(llms_dir) / "verify" / "runners" / "hf_runner.py"


def resolve_runner(llms_dir: Path | str | None) -> ResolvedRunner:
    """Upstream's HfRunner from ``<llms>/verify/runners/hf_runner.py``; ours only without an llms dir.

    A given llms dir without the runner is an error, never a quiet fallback:
    the baseline must come from the tree the user named.
    """
    if llms_dir is not None:
        llms = Path(llms_dir).resolve()
        if not verify_runner_path(llms).is_file():
            raise FileNotFoundError(
                f"{verify_runner_path(llms)} does not exist: {llms} is not an mlir-air "
                "programming_examples/llms tree"
            )
        return _import_verify_runner(llms)
    return ResolvedRunner(
        kind="bundled",
        path=Path(bundled_runner.__file__).resolve(),
        runner_cls=bundled_runner.HfRunner,
        prompts_dir=BUNDLED_PROMPTS_DIR,
    )


def _import_verify_runner(llms: Path) -> ResolvedRunner:
    verify = llms / "verify"
    # Upstream hf_runner.py does `from runners._records import ...`, so both
    # <llms> (for `verify.…`) and <llms>/verify (for `runners.…`) must be
    # importable -- the same layout upstream's own scripts set up.
    for entry in (str(verify), str(llms)):
        if entry in sys.path:
            sys.path.remove(entry)
        sys.path.insert(0, entry)
    # The runner is the file upstream's README names, found by path: the
    # `runners` package is built from <llms>/verify/runners alone, so a
    # `runners` anywhere earlier on sys.path (the tree's root comes first),
    # or one imported earlier from another tree, cannot stand in for it.
    # (Go refuses such a tree before Python starts, naming both.)
    current = sys.modules.get("runners")
    if current is None or list(getattr(current, "__path__", [])) != [str(verify / "runners")]:
        for name in [n for n in sys.modules if n == "runners" or n.startswith("runners.")]:
            del sys.modules[name]
        importlib.invalidate_caches()
        _package_from(verify / "runners")
    module = importlib.import_module("runners.hf_runner")
    path = Path(module.__file__ or "").resolve()
    if path != verify_runner_path(llms).resolve():
        raise ImportError(f"runners.hf_runner resolved to {path}, not {verify_runner_path(llms)}")
    runner_cls = getattr(module, "HfRunner", None)
    if runner_cls is None:
        raise ImportError(f"{verify_runner_path(llms)} defines no HfRunner")
    return ResolvedRunner(
        kind="verify",
        path=path,
        runner_cls=runner_cls,
        prompts_dir=verify / "prompts",
    )


def _package_from(folder: Path) -> ModuleType:
    """The package ``runners`` whose only search folder is ``folder``.

    A regular package when ``folder/__init__.py`` exists, else a namespace
    package (upstream's layout may have either).
    """
    init = folder / "__init__.py"
    spec: ModuleSpec | None
    if init.is_file():
        spec = importlib.util.spec_from_file_location("runners", init, submodule_search_locations=[str(folder)])
    else:
        spec = ModuleSpec("runners", None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
    if spec is None:
        raise ImportError(f"cannot import {folder} as the package runners")
    package = importlib.util.module_from_spec(spec)
    sys.modules["runners"] = package
    try:
        if spec.loader is not None:
            spec.loader.exec_module(package)
    except BaseException:
        del sys.modules["runners"]
        raise
    return package
