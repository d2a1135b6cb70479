"""reset_session: a lent worker forgets the code a run imported from outside the interpreter."""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import sys
from pathlib import Path

import pytest
import torch

from phase0_shim import session
from phase0_shim.config import import_module_from_path


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_edited_helper_runs_its_new_code_after_a_reset(tmp_path: Path) -> None:
    tree = tmp_path / "llms"
    # A package name of its own: the tests' bundled tree already imported `runners`.
    helper = _write(tree / "verify" / "p0runners" / "lib" / "scale.py", "SCALE = 1.0\n")
    _write(tree / "verify" / "p0runners" / "__init__.py", "")
    _write(tree / "verify" / "p0runners" / "lib" / "__init__.py", "")
    sys.path.insert(0, str(tree / "verify"))
    try:
        assert importlib.import_module("p0runners.lib.scale").SCALE == 1.0
        # The same size and a new value: only forgetting the module shows it.
        helper.write_text("SCALE = 2.0\n")
        result = json.loads(session.reset_session("{}"))
        assert {"p0runners", "p0runners.lib", "p0runners.lib.scale"} <= set(result["forgotten"])
        assert str(tree / "verify") not in sys.path
        sys.path.insert(0, str(tree / "verify"))
        assert importlib.import_module("p0runners.lib.scale").SCALE == 2.0
    finally:
        if str(tree / "verify") in sys.path:
            sys.path.remove(str(tree / "verify"))
        session.forget_foreign_modules()


def test_generated_module_and_namespace_package_are_forgotten(tmp_path: Path) -> None:
    module = import_module_from_path(_write(tmp_path / "ws" / "m_weights.py", "X = 1\n"))
    _write(tmp_path / "ns" / "nspkg" / "inner.py", "Y = 2\n")
    sys.path.insert(0, str(tmp_path / "ns"))
    try:
        importlib.import_module("nspkg.inner")
        forgotten = session.forget_foreign_modules()
        assert module.__name__ in forgotten
        assert {"nspkg", "nspkg.inner"} <= set(forgotten)
        assert module.__name__ not in sys.modules and "nspkg" not in sys.modules
    finally:
        sys.path.remove(str(tmp_path / "ns"))


def test_installed_and_standard_modules_stay() -> None:
    forgotten = session.forget_foreign_modules()
    for name in ("torch", "json", "numpy", "phase0_shim.ops", "phase0_shim.session"):
        importlib.import_module(name)
        assert name not in forgotten
        assert name in sys.modules


def test_a_kept_name_rebound_to_foreign_code_is_forgotten(tmp_path: Path) -> None:
    # The first reset judged json the interpreter's own; a run that puts a
    # foreign module under that name must not ride on that judgement.
    session.forget_foreign_modules()
    real = sys.modules["json"]
    shadow = import_module_from_path(_write(tmp_path / "json.py", "SHADOW = True\n"))
    sys.modules["json"] = shadow
    try:
        assert "json" in session.forget_foreign_modules()
        assert "json" not in sys.modules
    finally:
        sys.modules["json"] = real
    assert "json" not in session.forget_foreign_modules()


def test_torch_defaults_are_restored() -> None:
    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)
    try:
        session.reset_session("{}")
        assert torch.get_default_dtype() == torch.float32
        assert torch.is_grad_enabled()
    finally:
        torch.set_default_dtype(torch.float32)
        torch.set_grad_enabled(True)


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        session.reset_session("[]")
    with pytest.raises(ValueError, match="unknown argument"):
        session.reset_session('{"all": true}')


def test_linked_venv_packages_and_extensions_stay(tmp_path: Path) -> None:
    """A venv whose site folder links to another's keeps those packages (the
    reuse tests clone the venv so), and a compiled extension is never forgotten."""
    real = _write(tmp_path / "real" / "linkedpkg" / "__init__.py", "Z = 3\n").parent
    site = tmp_path / "site"
    site.mkdir()
    (site / "linkedpkg").symlink_to(real)
    roots = [site.resolve(), site]
    assert session._is_kept([site / "linkedpkg" / "__init__.py"], roots)
    extension = "ext" + importlib.machinery.EXTENSION_SUFFIXES[0]
    assert session._is_kept([tmp_path / "elsewhere" / extension], roots)
    assert not session._is_kept([tmp_path / "elsewhere" / "plain.py"], roots)
