"""Quantized gate 3's facts (phase0_shim.quant.quant_module_facts): the config a module uses and
where its RoPE table comes from, also when both are borrowed from a sibling bf16 module, as
upstream's llama32_3b_q4nx borrows llama32_3b's."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phase0_shim.quant import quant_module_facts
from tests.quant_helpers import mlir_air

SIBLING = """
from dataclasses import dataclass


@dataclass
class LlamaConfig:
    n_layers: int = 28
    emb_dim: int = 3072
    rope_base: float = 500000.0


def generate_rope_lut(config=None, seq_len=2048):
    raise NotImplementedError
"""

BORROWING = """
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bf16"))
from bf16_weights import LlamaConfig  # noqa: E402


def load_q4nx_weights(model_source, config=None):
    config = config or LlamaConfig()
"""


@pytest.fixture(autouse=True)
def _forget_tree_modules(tmp_path: Path) -> Iterator[None]:
    """Upstream's modules import siblings by bare name (``proj_qmm_pack``): the
    ones these tests import must not answer a later test's import of the same
    name from another tree. Packages (transformers) stay imported."""
    before_path = list(sys.path)
    yield
    sys.path[:] = before_path
    roots = [tmp_path.resolve()] + ([mlir_air().resolve()] if mlir_air() else [])  # type: ignore[union-attr]
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None)
        if file and any(root in Path(file).resolve().parents for root in roots):
            del sys.modules[name]


def _facts(module: Path) -> Any:
    """The op as the worker runs it: JSON in, JSON out (its result type checked)."""
    return json.loads(quant_module_facts(json.dumps({"weights_module": str(module)})))


def _write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_borrowed_config_class_and_rope_table_are_found(tmp_path: Path) -> None:
    sibling = _write(tmp_path, "bf16/bf16_weights.py", SIBLING)
    module = _write(tmp_path, "q4nx/borrowing_weights.py", BORROWING)
    facts = _facts(module)
    assert facts["import_failure"] is None
    assert facts["configs"] == {"LlamaConfig": {"class": "LlamaConfig", "fields": {"n_layers": 28, "emb_dim": 3072, "rope_base": 500000.0}}}
    assert facts["rope_lut"] is False
    assert facts["rope_module"] == str(sibling.resolve())


def test_the_modules_own_config_function_and_table_come_first(tmp_path: Path) -> None:
    _write(tmp_path, "bf16/bf16_weights.py", SIBLING)
    own = BORROWING + textwrap.dedent(
        """
        def q4nx_config():
            return LlamaConfig(n_layers=16)


        def generate_rope_lut(config=None, seq_len=2048):
            raise NotImplementedError
        """
    )
    module = _write(tmp_path, "q4nx/own_weights.py", own)
    facts = _facts(module)
    assert list(facts["configs"]) == ["q4nx_config"]
    assert facts["configs"]["q4nx_config"]["fields"]["n_layers"] == 16
    assert facts["rope_lut"] is True and facts["rope_module"] == ""


def test_a_module_with_nothing_to_check_says_so(tmp_path: Path) -> None:
    module = _write(tmp_path, "q4nx/bare_weights.py", "D = 1\n")
    facts = _facts(module)
    assert facts["configs"] == {} and facts["rope_lut"] is False and facts["rope_module"] == ""


def test_a_config_class_from_outside_the_tree_is_not_the_folders(tmp_path: Path) -> None:
    # transformers 5's LlamaConfig is a dataclass with Llama-2-7B defaults: not the folder's config.
    module = _write(tmp_path, "T/llms/q4nx/hf_weights.py", "from transformers import LlamaConfig  # noqa: F401\n")
    facts = _facts(module)
    assert facts["configs"] == {} and facts["rope_module"] == ""


@pytest.mark.skipif(mlir_air() is None, reason="PHASE0_MLIR_AIR (a fetched mlir-air programming_examples) is not set")
def test_upstreams_3b_folder_borrows_its_config_and_rope_table() -> None:
    llms = mlir_air() / "llms"  # type: ignore[operator]
    facts = _facts(llms / "llama32_3b_q4nx" / "llama32_3b_q4nx_weights.py")
    assert list(facts["configs"]) == ["LlamaConfig"] and facts["configs"]["LlamaConfig"]["fields"]["n_layers"] == 28
    assert facts["rope_lut"] is False
    assert facts["rope_module"] == str((llms / "llama32_3b" / "llama32_3b_weights.py").resolve())
