"""Every str and float the API takes reaches the Go core as given, or is a UsageError naming it.

A NUL ends the C string an argument travels in (the core read only what
precedes it: another folder); NaN and Infinity are not JSON (the options
object failed to parse with a bare "invalid character 'N'").
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import phase0

Command = Callable[..., phase0.Report]
COMMANDS: dict[str, Command] = {"inspect": phase0.inspect, "baseline": phase0.baseline, "run": phase0.run}

# The str options each command takes (by keyword, or as a setting through **options).
STR_OPTIONS: list[tuple[str, str]] = [
    ("inspect", "cache"),
    ("inspect", "pyshim"),
    ("baseline", "python"),
    ("baseline", "llms_dir"),
    ("baseline", "prompt"),
    ("baseline", "prompt_style"),
    ("run", "out_dir"),
    ("run", "report_dir"),
    ("run", "name"),
]
FLOAT_OPTIONS: list[tuple[str, str]] = [
    ("baseline", "max_perplexity_ratio"),
    ("run", "max_perplexity_ratio"),
    ("run", "timeout"),
    ("inspect", "workers"),  # an int setting given a float through **options
]
NONFINITE = [float("nan"), float("inf"), float("-inf")]


@pytest.fixture
def model(tiny_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # A call that is not refused writes ./workspace: keep it in tmp_path.
    monkeypatch.chdir(tmp_path)
    return Path(shutil.copytree(tiny_models / "qwen3", tmp_path / "model"))


def test_nul_in_the_model_does_not_inspect_the_folder_before_it(model: Path) -> None:
    # Before: cut at the NUL, this inspected `model` and passed.
    for arg in (f"{model}\0/nothing-here", Path(f"{model}\0/nothing-here")):
        with pytest.raises(phase0.UsageError, match=r"^model: '.*/model\\x00/nothing-here' holds a NUL character at index \d+"):
            phase0.inspect(arg)
    with pytest.raises(phase0.UsageError, match=r"^model: .* NUL"):
        phase0.run(f"{model}\0x", out_dir=model.parent / "out")
    assert not (model.parent / "out").exists()


def test_nul_in_config_is_a_usage_error(model: Path, tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("scan: true\n")
    with pytest.raises(phase0.UsageError, match=r"^config: '.*good\.yaml\\x00\.bak' holds a NUL character"):
        phase0.inspect(model, config=f"{good}\0.bak")


@pytest.mark.parametrize(("command", "option"), STR_OPTIONS)
@pytest.mark.parametrize(("value", "why"), [
    ("/tmp/a\0b", r"holds a NUL character at index 6"),
    ("/tmp/\udcff", r"is not valid UTF-8 at index 5"),
])
def test_str_options_refuse_what_the_core_cannot_see(model: Path, command: str, option: str, value: str, why: str) -> None:
    with pytest.raises(phase0.UsageError, match=rf"^option {option}: .* {why}"):
        COMMANDS[command](model, **{option: value})


def test_path_options_are_checked_as_paths_too(model: Path) -> None:
    with pytest.raises(phase0.UsageError, match=r"^option cache: .* NUL"):
        phase0.inspect(model, cache=Path("/tmp/c\0d"))
    with pytest.raises(phase0.UsageError, match=r"^option cpu_helpers\.attention_fallback: .* NUL"):
        phase0.run(model, cpu_helpers={"attention_fallback": "x\0"})  # type: ignore[dict-item]


@pytest.mark.parametrize(("command", "option"), FLOAT_OPTIONS)
@pytest.mark.parametrize("value", NONFINITE, ids=repr)
def test_nonfinite_floats_are_a_usage_error_naming_the_option(model: Path, command: str, option: str, value: float) -> None:
    with pytest.raises(phase0.UsageError, match=rf"^option {option}: {value!r} is not a finite number"):
        COMMANDS[command](model, **{option: value})


def test_nonfinite_float_in_a_mapping_names_the_key(model: Path) -> None:
    with pytest.raises(phase0.UsageError, match=r"^option cpu_helpers\.attention_fallback: nan is not a finite number"):
        phase0.run(model, cpu_helpers={"attention_fallback": float("nan")})  # type: ignore[dict-item]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("arg", "want"), [
    (b"/tmp/model", r"^model: b'/tmp/model' is bytes"),
    (3, r"^model: int 3 is not a str or os.PathLike"),
    (None, r"^model: NoneType None is not a str or os.PathLike"),
])
def test_model_of_another_type_is_a_usage_error(command: str, arg: Any, want: str) -> None:
    # Before: run(b'/path') and run(None) raised a bare TypeError.
    with pytest.raises(phase0.UsageError, match=want):
        COMMANDS[command](arg)


# A keyword of the wrong kind or beyond its range is refused by the Go core's
# one parser (the one flags, PHASE0_* variables and --config files go
# through), as a UsageError naming the option, before anything is written.
@pytest.mark.parametrize(("command", "options", "want"), [
    ("inspect", {"scan": 2}, r'^option scan: "2" is not true or false$'),
    ("inspect", {"workers": True}, r"^option workers: the bool true is not a base-10 integer in \[0, 1024\]$"),
    ("inspect", {"scan": True, "workers": 2**31 - 1}, r'^option workers: "2147483647" is not a base-10 integer in \[0, 1024\]$'),
    ("inspect", {"workers": 2.0}, r'^option workers: "2.0" is not a base-10 integer'),
    ("inspect", {"workers": 10**5000}, r"^option workers: an integer of 16610 bits is not any setting's value$"),
    ("inspect", {"timeout": "5m"}, r"^option timeout: inspect does not read this setting \(baseline, run, reference do\)$"),
    ("baseline", {"max_perplexity_ratio": 10**400}, r'^option max_perplexity_ratio: "1000+"… \(401 bytes\) is not a finite decimal number in \[0.0001, 1000\]$'),
    ("baseline", {"decode": 64.9}, r'^option decode: "64.9" is not a base-10 integer in \[0, 4096\]$'),
    ("baseline", {"timeout": 90 * 60 * 60 * 24 * 365}, r"^option timeout: \"2838240000.0s\" is not a duration"),
    ("run", {"out_dir": 123}, r'^option out_dir: the number "123" is not a string'),
    ("run", {"cpu_helpers": True}, r"^option cpu_helpers: a section of settings"),
    ("run", {"name": {"a": 1}}, r"^option name: a mapping is not a string$"),
    ("run", {"reference_steps": -1}, r'^option reference_steps: "-1" is not a base-10 integer in \[0, 1024\]$'),
])
def test_keyword_options_are_parsed_like_flags(model: Path, tmp_path: Path, command: str, options: dict[str, Any], want: str) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(phase0.UsageError, match=want):
        COMMANDS[command](model, **options)
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "a refused call wrote something"


def test_a_misspelled_variable_is_a_usage_error(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.environ as Python sees it reaches the Go core: a typo is refused there too.
    monkeypatch.setenv("PHASE0_" + "WORKRES", "2")
    with pytest.raises(phase0.UsageError, match=r"did you mean PHASE0_WORKERS\?"):
        phase0.inspect(model)


def test_unusual_but_valid_names_still_work(model: Path, tmp_path: Path) -> None:
    odd = model.rename(tmp_path / "modèle ü #1")
    assert phase0.inspect(odd, cache=tmp_path / "cache ü").status == "PASS"
    assert phase0.inspect(str(odd), workers=2).status == "PASS"


def test_python_m_refuses_a_nul_like_any_bad_argument(model: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # Before: cut at the NUL, exit 0 on `model`.
    assert phase0.main(["inspect", f"{model}\0/nothing-here", "--json"]) == 2
    out, err = capfd.readouterr()
    assert out == "" and "phase0: argument 2: " in err and "NUL character" in err
    assert phase0.main(["inspect", "/tmp/\udcff"]) == 2
    assert "phase0: argument 2: " in capfd.readouterr().err


def test_the_extension_itself_refuses_a_nul(model: Path) -> None:
    with pytest.raises(ValueError, match="phase0: argument 4 holds a NUL character"):
        phase0._native.execute(["inspect", "--json", "--", f"{model}\0x"], "{}", 0)


def test_a_setting_in_two_spellings_is_refused(model: Path, tmp_path: Path) -> None:
    # Before: the later spelling won, and the generated _cpu_helpers.py followed the keywords' order.
    for options in (
        {"cpu_helpers": {"attention_fallback": True}, "cpu_helpers.attention_fallback": False},
        {"cpu_helpers.attention_fallback": False, "cpu_helpers": {"attention_fallback": True}},
    ):
        with pytest.raises(phase0.UsageError, match=r"^option cpu_helpers\.attention_fallback: given twice"):
            phase0.run(model, out_dir=tmp_path / "out", **options)  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("progress", ["false", "False", 0, 1, None])
def test_progress_is_a_bool_only(model: Path, progress: Any) -> None:
    # Before: progress="false" was a true value and turned progress on.
    with pytest.raises(phase0.UsageError, match=r"^progress: .* is not True or False$"):
        phase0.inspect(model, progress=progress)
