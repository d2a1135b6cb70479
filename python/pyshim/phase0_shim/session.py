"""Returning a worker to the state it started in, so one session serves many runs.

A run imports code from outside the interpreter: the generated
``<name>_weights.py``, upstream's ``verify/`` runner and its helpers, the
model folder's own modules. In a session that later serves another run (the
tests lend warm sessions so torch starts once), those modules must not
survive: an edited helper would otherwise run its old code. ``reset_session``
forgets every module that came from outside the standard library, the site
folders and the shim itself, and restores ``sys.path``; modules of installed
packages (torch, transformers) stay imported, which is what makes the session
worth keeping.
"""

from __future__ import annotations

import gc
import importlib
import importlib.machinery
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from phase0_shim.opargs import NoArgs, op
from phase0_shim.optypes import ResetResult
from phase0_shim.sources import imports

if TYPE_CHECKING:
    from phase0_shim.quant.run import QuantRun, RunKey

# sys.path as the worker started: the shim folder first, then the interpreter's own.
_STARTING_SYS_PATH = list(sys.path)
_SHIM_ROOT = Path(__file__).resolve().parent.parent


def _kept_roots() -> list[Path]:
    """The interpreter's own folders, each as given and as resolved: a venv
    made of links to another keeps its packages under either spelling."""
    found = imports()
    given = [Path(os.path.abspath(p)) for p in (*found["stdlib"], *found["site_dirs"])]
    given.append(_SHIM_ROOT)
    return sorted({*given, *(p.resolve() for p in given)})


def _module_paths(module: ModuleType) -> list[Path]:
    """Where a module's code lives: its file, or a namespace package's folders."""
    file = getattr(module, "__file__", None)
    if isinstance(file, str) and file:
        return [Path(file)]
    search = getattr(module, "__path__", None)
    if search is None:
        return []
    try:
        return [Path(p) for p in search]
    except TypeError:
        return []


def _is_kept(paths: Iterable[Path], roots: list[Path]) -> bool:
    """A module without a location (built-in, frozen) is the interpreter's own,
    and so is a compiled extension wherever it lies: CPython cannot load one
    twice in a process, so forgetting it would only break the next import."""
    prefixes = tuple(os.path.join(root, "") for root in map(str, roots))
    for path in paths:
        if path.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            continue
        # The path as given first (a string test); resolving links costs a
        # system call per folder and is needed only when that misses.
        given = os.path.join(os.path.abspath(path), "")
        if given.startswith(prefixes):
            continue
        if not os.path.join(path.resolve(), "").startswith(prefixes):
            return False
    return True


# Modules already judged the interpreter's own, by name, with the object
# judged: a kept module's file and the kept roots never change within a
# process, so a later reset judges only what was imported since (a session
# holding torch and transformers has some 3,000 modules).
_KEPT: dict[str, ModuleType] = {}


def forget_foreign_modules() -> list[str]:
    """Drop from ``sys.modules`` every module loaded from outside the kept roots."""
    roots = _kept_roots()
    forgotten = []
    for name, module in list(sys.modules.items()):
        if module is None or _KEPT.get(name) is module:
            continue
        if _is_kept(_module_paths(module), roots):
            _KEPT[name] = module
        else:
            forgotten.append(name)
    for name in forgotten:
        del sys.modules[name]
    return sorted(forgotten)


def _restore_torch_defaults() -> None:
    """Undo the global torch switches a runner may flip (only if torch is loaded)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)


class WorkerState:
    """What the worker holds between ops for the run it serves: a quantized
    run's state (:class:`phase0_shim.quant.run.QuantRun`), from quantized
    gate 1 to the op of gate 2 that takes it. Nothing else in the shim keeps
    a run's state across ops; ``reset_session`` drops it all."""

    def __init__(self) -> None:
        self._quant: QuantRun | None = None

    def hold_quant(self, run: QuantRun) -> None:
        """Keep ``run`` for a later op (any run held before is dropped)."""
        self._quant = run

    def quant(self) -> QuantRun | None:
        """The quantized run held, if any (it stays held)."""
        return self._quant

    def take_quant(self, key: RunKey) -> QuantRun | None:
        """The quantized run held for ``key``, handed over once; a run held
        for another loader, source or depth is dropped, never handed over."""
        run, self._quant = self._quant, None
        return run if run is not None and run.key == key else None

    def drop_quant(self) -> None:
        """Forget the quantized run held (its kept tensors: the whole model
        in bf16, 7.7 GB at Gemma 3 4B)."""
        self._quant = None


# The one place the worker keeps a run's state between ops.
STATE = WorkerState()


@op("reset_session", NoArgs, ResetResult)
def reset_session(_: NoArgs) -> ResetResult:
    """Forget the modules a run imported from outside the interpreter and restore sys.path."""
    STATE.drop_quant()  # a run's tensors never outlive its loan
    forgotten = forget_foreign_modules()
    sys.path[:] = _STARTING_SYS_PATH
    importlib.invalidate_caches()
    _restore_torch_defaults()
    # What survives the collection is the session's own (the packages it
    # imported, their caches): frozen, it is not scanned again at the next
    # reset, which then costs what the run allocated, not a 0.2 s walk over
    # torch's and transformers' objects.
    gc.collect()
    gc.freeze()
    return {"forgotten": forgotten, "sys_path": list(sys.path)}
