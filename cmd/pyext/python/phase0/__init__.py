"""phase0 from Python: Phase 0 of bringing a HuggingFace LLM up on AMD NPU2 (mlir-air).

    import phase0

    report = phase0.run("Qwen/Qwen3-0.6B", llms_dir="/src/mlir-air/programming_examples/llms")
    if not report.passed:
        raise SystemExit(f"phase0: {report.status}: {report.rejection_codes or report.gates}")

``inspect``, ``baseline`` and ``run`` are the CLI's commands, run in this
process by phase0's Go core (the ``_native`` extension) with the GIL released.
The torch work runs in phase0's isolated worker child, as with the CLI, so
torch is never imported here. Each returns a :class:`Report` (the CLI's
``--json`` object, typed) for PASS, WARN, FAIL and REJECTED, and raises a
:class:`Phase0Error` subclass when the model could not be evaluated (the CLI's
exit code 2). Ctrl-C stops the run (the worker is killed, nothing is recorded)
and raises KeyboardInterrupt.

Keyword options are the settings of run/settings/default.yaml under their YAML
names (``llms_dir``, ``max_seq``, ``cpu_helpers={"attention_fallback": False}``
…); ``config=`` names a YAML settings file like ``--config``. Layering is the
CLI's: options > PHASE0_* environment > config file > defaults.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Literal

from phase0 import _native
from phase0.errors import (
    CouldNotEvaluateError,
    ForkedProcessError,
    HubError,
    ModelNotFoundError,
    Phase0Error,
    PythonEnvironmentError,
    UsageError,
)
from phase0.report import (
    Baseline,
    Config,
    Defaulted,
    Gate,
    Gates,
    Rejection,
    Report,
    RopeScaling,
    Stage,
    Status,
    Workspace,
)

__all__ = [
    "Baseline",
    "Config",
    "CouldNotEvaluateError",
    "Defaulted",
    "ForkedProcessError",
    "Gate",
    "Gates",
    "HubError",
    "ModelNotFoundError",
    "Phase0Error",
    "PythonEnvironmentError",
    "Rejection",
    "Report",
    "RopeScaling",
    "Stage",
    "Status",
    "UsageError",
    "Workspace",
    "__version__",
    "baseline",
    "inspect",
    "main",
    "run",
    "worker_binary",
]

__version__: str = _native.version

PathArg = str | os.PathLike[str]
Option = str | int | float | bool | os.PathLike[str] | timedelta | Mapping[str, object] | None

# Output modes of _native.execute.
_CAPTURE, _STREAM_STDERR, _STREAM_ALL = 0, 1, 2

# The exit code of an interrupted command.
_INTERRUPTED = 130


def worker_binary() -> Path:
    """The phase0 binary shipped in this package; the worker child runs it."""
    return Path(__file__).resolve().parent / "bin" / "phase0"


_forked = False


def _after_fork_in_child() -> None:
    global _forked
    _forked = True


# The Go runtime's threads do not survive fork(): mark the child so a call in
# it raises ForkedProcessError instead of hanging. (The extension checks the
# pid as well, for forks that bypass os.register_at_fork.)
os.register_at_fork(after_in_child=_after_fork_in_child)

if worker_binary().is_file():
    _native.set_worker(str(worker_binary()))


def _text(name: str, value: str) -> str:
    """value as the Go core will see it, or UsageError naming the argument.

    A NUL would end the C string an argument travels in, so the core would
    read only what precedes it (another folder, another file); no path or
    option can hold one, and the command line cannot carry one either. A
    lone surrogate (a file name with bytes that are not UTF-8, as os.fsdecode
    keeps them) has no UTF-8 form: JSON would turn it into U+FFFD, another name.
    """
    nul = value.find("\0")
    if nul >= 0:
        raise UsageError(f"{name}: {value!r} holds a NUL character at index {nul}; "
                         "no path or option can contain one (it would be cut there and name something else)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UsageError(f"{name}: {value!r} is not valid UTF-8 at index {e.start} (undecodable bytes, as "
                         "os.fsdecode keeps them); phase0 takes UTF-8 paths and options") from None
    return value


def _path(name: str, value: object) -> str:
    """A path argument (str or os.PathLike[str]) as a checked str."""
    try:
        p = os.fspath(value)  # type: ignore[call-overload]
    except TypeError:
        raise UsageError(f"{name}: {type(value).__name__} {value!r} is not a str or os.PathLike[str]") from None
    if not isinstance(p, str):
        raise UsageError(f"{name}: {p!r} is bytes; give a str or os.PathLike[str]")
    return _text(name, p)


# Beyond this an int has more digits than Python converts to text by default.
_MAX_INT_BITS = 4096


def _flatten(prefix: str, value: Option, out: dict[str, object]) -> None:
    name = f"option {prefix}"
    if value is None:
        return
    if prefix in out:
        # cpu_helpers={"attention_fallback": …} and the keyword
        # cpu_helpers.attention_fallback: one setting in two spellings.
        raise UsageError(f"{name}: given twice (as a keyword and inside a mapping, or in both spellings); "
                         "give each setting once")
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)  # type: ignore[arg-type]
    elif isinstance(value, timedelta):
        out[prefix] = f"{value.total_seconds()}s"
    elif isinstance(value, os.PathLike):
        out[prefix] = _path(name, value)
    elif isinstance(value, str):
        out[prefix] = _text(name, value)
    elif isinstance(value, float) and not math.isfinite(value):
        # json.dumps would write NaN / Infinity, which is not JSON.
        raise UsageError(f"{name}: {value!r} is not a finite number")
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _MAX_INT_BITS:
        # json.dumps cannot write it (sys.int_info's digit limit); no setting takes it anyway.
        raise UsageError(f"{name}: an integer of {value.bit_length()} bits is not any setting's value")
    elif isinstance(value, (bool, int, float)):
        # As JSON: the Go core's one parser checks the kind and the range
        # (scan=2, workers=True, out_dir=123, 10**400 are refused there).
        out[prefix] = value
    else:
        raise UsageError(f"{name}: {type(value).__name__} {value!r} is not a str, number, bool, path or timedelta")


# The exception of each of the report's error kinds (docs/reports.md#error-kinds);
# any other kind is CouldNotEvaluateError.
_by_kind: dict[str, type[Phase0Error]] = {
    "usage": UsageError,
    "model_not_found": ModelNotFoundError,
    "hub": HubError,
    "python_environment": PythonEnvironmentError,
    "worker_not_started": PythonEnvironmentError,
}


def _error(report: Report, log: str) -> Phase0Error:
    msg = report.error or log.strip() or "phase0 could not evaluate the model"
    return _by_kind.get(report.error_kind, CouldNotEvaluateError)(msg, report, log)


def _check_fork() -> None:
    if _forked or _native.forked():
        raise ForkedProcessError(
            "phase0 cannot run in a process created by os.fork() after `import phase0` (the Go runtime's threads "
            "do not survive fork); call it in the parent, or use multiprocessing's 'spawn' or 'forkserver' start method"
        )


def _command(command: Literal["inspect", "baseline", "run"], model: PathArg, config: PathArg | None, progress: bool,
             options: Mapping[str, Option]) -> Report:
    _check_fork()
    if not isinstance(progress, bool):
        # "false" is a true value: only the bools say what they mean.
        raise UsageError(f"progress: {progress!r} is not True or False")
    overrides: dict[str, object] = {}
    for k, v in options.items():
        _flatten(k, v, overrides)
    args = [command, "--json"]
    if config is not None:
        args += ["--config", _path("config", config)]
    args += ["--", _path("model", model)]
    if progress:
        sys.stderr.flush()
    code, out, log = _native.execute(args, json.dumps(overrides), _STREAM_STDERR if progress else _CAPTURE)
    try:
        raw = json.loads(out)
    except ValueError:
        raise Phase0Error(f"phase0 printed no JSON report (exit {code}): {log.strip()}", None, log) from None
    report = Report.from_json(raw, code, log)
    if code == _INTERRUPTED:
        raise KeyboardInterrupt
    if code not in (0, 1):
        raise _error(report, log)
    return report


def inspect(
    model: PathArg,
    *,
    config: PathArg | None = None,
    scan: bool | None = None,
    workers: int | None = None,
    cache: PathArg | None = None,
    progress: bool = False,
    **options: Option,
) -> Report:
    """Check config, architecture and weights natively (no Python, but ``default``'s one-time conversion): ``phase0 inspect MODEL``.

    model is a local folder, a hub id ``org/name[@revision]`` (through the HF
    cache), or ``"default"``. progress=True shows phase0's progress on stderr.
    """
    if (m := _path("model", model)).startswith("@"):
        raise UsageError(f"inspect takes one model, not the list {m}: "
                         "for a model list run `python -m phase0 inspect @FILE --json`")
    return _command("inspect", model, config, progress, {"scan": scan, "workers": workers, "cache": cache, **options})


def baseline(
    model: PathArg,
    *,
    config: PathArg | None = None,
    python: PathArg | None = None,
    llms_dir: PathArg | None = None,
    prompt_style: Literal["base", "instruct"] | None = None,
    prompt: str | None = None,
    decode: int | None = None,
    max_seq: int | None = None,
    timeout: str | float | timedelta | None = None,
    scan: bool | None = None,
    workers: int | None = None,
    force: bool | None = None,
    memory_check: bool | None = None,
    max_perplexity_ratio: float | None = None,
    cache: PathArg | None = None,
    progress: bool = False,
    **options: Option,
) -> Report:
    """Inspect, then confirm the HF transformers bf16 reference: ``phase0 baseline MODEL``.

    python is the venv interpreter holding torch + transformers (default
    $PHASE0_PYTHON); torch runs in phase0's worker child, never here. timeout
    is a duration ("30m") or seconds.
    """
    return _command("baseline", model, config, progress, {
        "python": python, "llms_dir": llms_dir, "prompt_style": prompt_style, "prompt": prompt, "decode": decode,
        "max_seq": max_seq, "timeout": _duration(timeout), "scan": scan, "workers": workers, "force": force,
        "memory_check": memory_check, "max_perplexity_ratio": max_perplexity_ratio, "cache": cache, **options,
    })


def run(
    model: PathArg,
    *,
    config: PathArg | None = None,
    python: PathArg | None = None,
    llms_dir: PathArg | None = None,
    out_dir: PathArg | None = None,
    name: str | None = None,
    report_dir: PathArg | None = None,
    prompt_style: Literal["base", "instruct"] | None = None,
    prompt: str | None = None,
    decode: int | None = None,
    max_seq: int | None = None,
    timeout: str | float | timedelta | None = None,
    scan: bool | None = None,
    workers: int | None = None,
    force: bool | None = None,
    memory_check: bool | None = None,
    cpu_helpers: Mapping[str, bool] | None = None,
    max_perplexity_ratio: float | None = None,
    reference_steps: int | None = None,
    refresh: bool | None = None,
    fresh: bool | None = None,
    license_header: str | None = None,
    cache: PathArg | None = None,
    progress: bool = False,
    **options: Option,
) -> Report:
    """All of Phase 0: inspect, generate the workspace, Python gates, baseline, record: ``phase0 run MODEL``.

    Writes ``<llms_dir>/<name>/`` (llms_dir: an mlir-air programming_examples/llms
    tree; without one, ``<out_dir>/<name>/``, default ./workspace) with its
    report.json / report.md and the recorded reference (reference_steps greedy
    tokens per prompt, 0 = none; refresh records it anew). fresh runs everything
    even when the recorded PASS's inputs are unchanged. license_header opens
    the generated Python files as comment lines (e.g. an SPDX-License-Identifier
    line). Other options as for :func:`baseline`.
    """
    if (m := _path("model", model)).startswith("@"):
        raise UsageError(f"run takes one model, not the list {m}: "
                         "for a model list run `python -m phase0 run @FILE --json`")
    return _command("run", model, config, progress, {
        "python": python, "llms_dir": llms_dir, "out_dir": out_dir, "name": name, "report_dir": report_dir,
        "prompt_style": prompt_style,
        "prompt": prompt, "decode": decode, "max_seq": max_seq, "timeout": _duration(timeout), "scan": scan,
        "workers": workers, "force": force, "memory_check": memory_check, "cpu_helpers": cpu_helpers,
        "max_perplexity_ratio": max_perplexity_ratio, "reference_steps": reference_steps, "refresh": refresh,
        "fresh": fresh, "license_header": license_header, "cache": cache, **options,
    })


def _duration(v: str | float | timedelta | None) -> str | timedelta | None:
    """timeout as the CLI takes it: a duration string; a number is seconds."""
    if v is None or isinstance(v, (str, timedelta)):
        return v
    if isinstance(v, bool):
        raise UsageError(f"option timeout: {v!r} is not a duration")
    try:
        seconds = float(v)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"option timeout: {v!r} is not a duration or a number of seconds") from None
    if not math.isfinite(seconds):
        raise UsageError(f"option timeout: {v!r} is not a finite number of seconds")
    return f"{seconds}s"


_cli_lock = threading.Lock()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m phase0 …``: the phase0 command line, in this process; returns the exit code.

    An argument no command line can hold (a NUL, text that is not UTF-8) is a
    usage error, as an unknown flag is: a message on stderr and exit code 2.
    """
    _check_fork()
    args = list(sys.argv[1:] if argv is None else argv)
    for i, a in enumerate(args):
        if isinstance(a, str):
            try:
                _text(f"argument {i + 1}", a)
            except UsageError as e:
                print(f"phase0: {e}", file=sys.stderr)
                return 2
    sys.stdout.flush()
    sys.stderr.flush()
    with _cli_lock:  # both streams are the process's own: one command at a time
        try:
            code, _, _ = _native.execute(args, "", _STREAM_ALL)
        except KeyboardInterrupt:
            return _INTERRUPTED
    return code
