from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest

from phase0_testmodels import FAMILIES, make_tiny_model

DATA = Path(__file__).resolve().parent / "data"

TinyModelFactory = Callable[..., Path]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def llms_dir() -> Path:
    return DATA / "llms"


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> TinyModelFactory:
    """tiny_model(family, **opts) -> model dir, each variant built once per session."""
    built: dict[tuple[str, tuple[tuple[str, Any], ...]], Path] = {}

    def build(family: str, **opts: Any) -> Path:
        key = (family, tuple(sorted(opts.items())))
        if key not in built:
            suffix = "-".join(f"{k}_{v}" for k, v in sorted(opts.items()))
            out = tmp_path_factory.mktemp(f"tiny-{family}{'-' + suffix if suffix else ''}")
            built[key] = make_tiny_model(family, out, **opts)  # type: ignore[arg-type]
        return built[key]

    return build


@pytest.fixture(scope="session", params=FAMILIES)
def family(request: pytest.FixtureRequest) -> str:
    return str(request.param)


WeightsModuleWriter = Callable[..., Path]


@pytest.fixture
def weights_module(tmp_path: Path) -> WeightsModuleWriter:
    """Copy tests/data/tiny_weights.py with some LlamaConfig defaults replaced.

    weights_module(head_dim=32, qk_norm=True) -> path of the edited copy.
    """
    counter = iter(range(1000))

    def write(**defaults: Any) -> Path:
        text = (DATA / "tiny_weights.py").read_text(encoding="utf-8")
        for name, value in defaults.items():
            pattern = re.compile(rf"^(    {name}: [^=]+= ).*$", re.MULTILINE)
            # A dict default must go through default_factory (dataclasses refuse mutable defaults).
            literal = f"field(default_factory=lambda: {value!r})" if isinstance(value, dict) else repr(value)
            text, n = pattern.subn(lambda m: m.group(1) + literal, text)
            if n != 1:
                raise KeyError(f"tiny_weights.py has no LlamaConfig default {name!r}")
        path = tmp_path / f"tiny{next(counter)}_weights.py"
        path.write_text(text, encoding="utf-8")
        return path

    return write


# LlamaConfig defaults that make tiny_weights.py describe each tiny family.
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {},
    "mistral": {"rope_base": 1000000.0},
    "qwen2": {"rope_base": 1000000.0, "rms_norm_eps": 1e-06, "qkv_bias": True},
    "qwen3": {"rope_base": 1000000.0, "rms_norm_eps": 1e-06, "head_dim": 32, "qk_norm": True},
}
