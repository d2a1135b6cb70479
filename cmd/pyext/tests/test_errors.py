"""What exits 2 raises the Phase0Error subclass of the report's error_kind (docs/reports.md#error-kinds).

Each case is a real call into the Go core; the class follows the kind the
report carries, and a PASS, FAIL or REJECTED report carries none.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import repo

import phase0


def documented_kinds() -> list[str]:
    text = (repo() / "docs" / "reports.md").read_text()
    table = text.split("## Error kinds", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_]+)` \|", table, re.M)


def test_every_documented_kind_has_its_class() -> None:
    kinds = documented_kinds()
    assert "usage" in kinds and "other" in kinds, kinds
    mapped = phase0._by_kind
    assert set(mapped) <= set(kinds), f"kinds the API maps that docs/reports.md does not list: {set(mapped) - set(kinds)}"
    for kind in kinds:
        assert issubclass(mapped.get(kind, phase0.CouldNotEvaluateError), phase0.Phase0Error)


def test_missing_model_is_model_not_found(tmp_path: Path) -> None:
    with pytest.raises(phase0.ModelNotFoundError) as e:
        phase0.inspect(tmp_path / "nothing-here")
    assert type(e.value) is phase0.ModelNotFoundError and e.value.kind == "model_not_found"
    assert e.value.report is not None and e.value.report.raw["error_kind"] == "model_not_found"


def test_uncached_hub_id_offline_is_a_hub_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(phase0.HubError) as e:
        phase0.inspect("tiny-org/not-cached")
    # A hub id that is nowhere is also a model not found.
    assert isinstance(e.value, phase0.ModelNotFoundError) and isinstance(e.value, FileNotFoundError)
    assert e.value.kind == "hub" and e.value.stage == "resolve", (e.value.kind, e.value.stage, str(e.value))


def test_unreadable_config_is_could_not_evaluate(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"architectures": [')
    with pytest.raises(phase0.CouldNotEvaluateError) as e:
        phase0.inspect(tmp_path)
    assert e.value.kind == "config_unreadable" and e.value.stage == "config"


def test_bad_setting_is_a_usage_error(tiny_models: Path) -> None:
    # The Go core refuses it (the API passes numbers through): the report's kind says usage.
    with pytest.raises(phase0.UsageError) as e:
        phase0.inspect(tiny_models / "qwen3", workers=-1)
    assert e.value.kind == "usage" and e.value.stage == "" and isinstance(e.value, ValueError)


def test_missing_python_is_a_python_environment_error(tiny_models: Path, tmp_path: Path) -> None:
    with pytest.raises(phase0.PythonEnvironmentError) as e:
        phase0.baseline(tiny_models / "qwen3", python=tmp_path / "no-python")
    assert e.value.kind == "python_environment" and e.value.stage == "python"


def test_an_evaluated_report_has_no_kind(tiny_models: Path) -> None:
    r = phase0.inspect(tiny_models / "qwen3")
    assert r.status == "PASS" and r.error_kind == "" and "error_kind" not in r.raw
