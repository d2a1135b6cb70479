from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from phase0_shim import hf_runner
from phase0_shim.prompts import BUNDLED_PROMPTS_DIR, canonical_prompt
from phase0_shim.runner import resolve_runner
from phase0_testmodels import VOCAB_SIZE
from helpers import config_of, prompt_ids


def test_bundled_without_llms_dir() -> None:
    resolved = resolve_runner(None)
    assert resolved.kind == "bundled"
    assert resolved.runner_cls is hf_runner.HfRunner
    assert resolved.path == Path(hf_runner.__file__).resolve()
    assert resolved.prompts_dir == BUNDLED_PROMPTS_DIR


def test_llms_dir_without_runner_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "verify" / "runners").mkdir(parents=True)  # tree without hf_runner.py
    with pytest.raises(FileNotFoundError, match="verify/runners/hf_runner.py"):
        resolve_runner(tmp_path)


def test_verify_runner_from_upstream_layout(llms_dir: Path) -> None:
    resolved = resolve_runner(llms_dir)
    assert resolved.kind == "verify"
    assert resolved.path == (llms_dir / "verify" / "runners" / "hf_runner.py").resolve()
    assert resolved.prompts_dir == llms_dir.resolve() / "verify" / "prompts"
    assert resolved.runner_cls.__module__ == "runners.hf_runner"
    # hf_runner.py's own `from runners._records import ...` needs <llms>/verify,
    # `verify.…` imports need <llms>.
    assert str(llms_dir.resolve()) in sys.path
    assert str((llms_dir / "verify").resolve()) in sys.path
    assert canonical_prompt(resolved.prompts_dir, "base") == "The quick brown fox jumps over the lazy"
    # Resolving twice reuses the same module, it does not duplicate sys.path entries.
    again = resolve_runner(llms_dir)
    assert again.runner_cls is resolved.runner_cls
    assert sys.path.count(str(llms_dir.resolve())) == 1


def test_stale_runners_package_is_replaced(llms_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other_llms"
    runners = other / "verify" / "runners"
    runners.mkdir(parents=True)
    (other / "verify" / "prompts").mkdir()
    (runners / "__init__.py").write_text("")
    (runners / "hf_runner.py").write_text("class HfRunner:\n    name = 'other'\n")
    assert resolve_runner(other).runner_cls.name == "other"
    resolved = resolve_runner(llms_dir)
    assert resolved.runner_cls.name == "hf_bf16"
    assert resolved.path == (llms_dir / "verify" / "runners" / "hf_runner.py").resolve()


@pytest.mark.parametrize("init", ["__init__.py", "__init__.pyc", "__init__.abi3.so", None])
def test_runners_at_the_tree_root_never_stand_in(llms_dir: Path, tmp_path: Path, init: str | None) -> None:
    """A `runners` package at the tree's root (any form; None: a namespace
    folder) comes first on sys.path, yet the runner is verify's, by path."""
    import shutil

    tree = tmp_path / "llms"
    shutil.copytree(llms_dir, tree)
    shadow = tree / "runners"
    shadow.mkdir()
    if init == "__init__.pyc":
        import py_compile

        (tmp_path / "src.py").write_text("")
        py_compile.compile(str(tmp_path / "src.py"), cfile=str(shadow / init))
    elif init is not None:
        (shadow / init).write_text("")
    (shadow / "hf_runner.py").write_text("class HfRunner:\n    name = 'shadow'\n")
    (shadow / "_records.py").write_text("raise ImportError('the shadow _records')\n")
    resolved = resolve_runner(tree)
    assert resolved.runner_cls.name == "hf_bf16"
    assert resolved.path == (tree / "verify" / "runners" / "hf_runner.py").resolve()
    assert sys.modules["runners"].__path__ == [str((tree / "verify" / "runners").resolve())]


def test_verify_and_bundled_runners_agree(llms_dir: Path, tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("qwen2")
    config = config_of(model_dir)
    ids = prompt_ids(model_dir)
    verify_cls = resolve_runner(llms_dir).runner_cls
    upstream = verify_cls(str(model_dir), config, 64, lite_mode=False).prefill(ids)
    ours = hf_runner.HfRunner(str(model_dir), config, 64, lite_mode=False).prefill(ids)
    assert type(upstream).__module__ == "runners._records"
    assert upstream.logits_at_pred.shape == (VOCAB_SIZE,)
    assert upstream.logits_at_pred.tobytes() == ours.logits_at_pred.tobytes()
    assert upstream.top1_token == ours.top1_token
    assert np.array_equal(upstream.final_hidden_normed, ours.final_hidden_normed)
    assert [sorted(d) for d in upstream.layer_intermediates] == [sorted(d) for d in ours.layer_intermediates]
