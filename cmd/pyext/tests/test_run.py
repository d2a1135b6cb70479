"""phase0.baseline / phase0.run: torch stays in the worker child; crashes and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FAMILIES, RUN_FAMILIES, normalise, runner_source
from test_inspect import cli_json

import phase0


@pytest.mark.parametrize("family", RUN_FAMILIES)
def test_run_each_family(tiny_models: Path, torch_python: str, tmp_path: Path, family: str) -> None:
    llms = tmp_path / "llms"
    # mistral also shows a nested YAML setting given as a mapping.
    helpers = {"attention_fallback": False} if family == "mistral" else None
    r = phase0.run(tiny_models / family, out_dir=llms, python=torch_python, timeout=600, cpu_helpers=helpers)
    assert r.status == "PASS", r.raw
    assert "torch" not in sys.modules and "transformers" not in sys.modules
    b = r.gates.hf_baseline
    assert b is not None and b.status == "PASS" and b.runner == "bundled"
    assert 0 <= b.top1_token < 512 and b.tokens and b.prompt
    assert r.gates.python_weights is not None and r.gates.python_weights.passed
    assert r.workspace is not None and r.workspace.name == family and r.workspace.mode == "generated"
    assert b.perplexity is not None and b.perplexity_limit is not None and b.perplexity < b.perplexity_limit
    assert r.reference is not None and r.reference["status"] == "PASS" and r.reused_from is None
    ws = Path(r.workspace.dir)
    assert (ws / f"{family}_weights.py").is_file() and (ws / f"{family}_cpu_helpers.py").is_file()
    assert "- [x] 0: Build CPU Reference" in (ws / "TODO.md").read_text()
    assert ("attention_reference" in r.workspace.helpers_kept) == (helpers is None), r.workspace.helpers_kept
    on_disk = json.loads(Path(r.workspace.report_json).read_text())
    assert on_disk["status"] == "PASS" and on_disk["gates"]["hf_baseline"]["top1_token"] == b.top1_token


@pytest.mark.first_minor
def test_baseline_and_run_equal_the_cli(tiny_models: Path, torch_python: str, tmp_path: Path) -> None:
    model = str(tiny_models / "qwen3")
    r = phase0.baseline(model, python=torch_python, decode=3)
    code, want = cli_json("baseline", model, "--python", torch_python, "--decode", "3")
    assert r.exit_code == code == 0
    assert normalise(r.raw) == normalise(want)
    assert r.gates.hf_baseline is not None and len(r.gates.hf_baseline.raw["decode"]["ids"]) == 3

    api, cli = tmp_path / "api", tmp_path / "cli"
    r = phase0.run(model, out_dir=api, python=torch_python)
    code, want = cli_json("run", model, "--out-dir", str(cli), "--python", torch_python)
    assert r.exit_code == code == 0
    assert normalise(r.raw, {str(api): "LLMS"}) == normalise(want, {str(cli): "LLMS"})
    assert "torch" not in sys.modules


@pytest.mark.first_minor  # the crash is the child's; this interpreter's minor plays no part in it
def test_worker_crash_is_a_fail_result(tiny_models: Path, torch_python: str, fake_verify: Path) -> None:
    (fake_verify / "verify" / "runners" / "hf_runner.py").write_text(
        runner_source("        import ctypes\n        ctypes.string_at(0)"))
    r = phase0.run(tiny_models / "qwen3", llms_dir=fake_verify, python=torch_python)
    assert r.status == "FAIL" and r.exit_code == 1
    b = r.gates.hf_baseline
    assert b is not None and b.status == "FAIL" and any("SIGSEGV" in x for x in b.reasons), b
    # This interpreter is alive and phase0 still works in it.
    assert phase0.inspect(tiny_models / "qwen3").status == "PASS"


def test_missing_python_is_an_error(tiny_models: Path, tmp_path: Path) -> None:
    with pytest.raises(phase0.PythonEnvironmentError) as e:
        phase0.baseline(tiny_models / "qwen3", python=tmp_path / "no-python")
    assert e.value.stage == "python"


CTRL_C = """
import signal, sys, phase0
# A shell that starts a job in the background makes it ignore SIGINT, and
# Python then installs no handler: put the interactive one back.
signal.signal(signal.SIGINT, signal.default_int_handler)
if sys.argv[1] == "api":
    try:
        phase0.run(sys.argv[2], llms_dir=sys.argv[3], python=sys.argv[4])
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        sys.exit(42)
    print("finished", flush=True)
else:  # python -m phase0, in this process so the handler above applies
    sys.exit(phase0.main(["run", sys.argv[2], "--llms-dir", sys.argv[3], "--python", sys.argv[4], "--json"]))
"""


@pytest.mark.parametrize("how", ["api", "cli"])
def test_ctrl_c_interrupts_and_kills_the_worker(tiny_models: Path, torch_python: str, fake_verify: Path, how: str) -> None:
    started = fake_verify / "prefill-started"
    body = textwrap.indent(textwrap.dedent(f"""\
        import os, time
        with open({str(started)!r} + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename({str(started)!r} + ".tmp", {str(started)!r})
        time.sleep(600)"""), "        ")
    (fake_verify / "verify" / "runners" / "hf_runner.py").write_text(runner_source(body))
    p = subprocess.Popen([sys.executable, "-c", CTRL_C, how, str(tiny_models / "qwen3"), str(fake_verify), torch_python],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Wait for the runner to be in prefill: a file appears, no clock involved.
        inotify_wait(started, p)
        worker_pid = int(started.read_text())
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=300)  # a hang guard, not a speed check
    finally:
        if p.poll() is None:
            p.kill()
    if how == "api":
        assert p.returncode == 42 and "KeyboardInterrupt" in out, (out, err)
    else:  # the CLI's own answer: exit 130 and one JSON report saying so
        assert p.returncode == 130, (out, err)
        assert json.loads(out)["interrupted"] is True
    assert not alive(worker_pid), "the worker child survived the interrupt"
    ws = fake_verify / "qwen3"
    assert not (ws / "docs" / "development_progress" / "phase0" / "report.json").exists()
    todo = ws / "TODO.md"
    if todo.exists():
        assert "- [x] 0:" not in todo.read_text()


def inotify_wait(path: Path, p: subprocess.Popen[str]) -> None:
    """Block until path exists or p exited (a poll on the filesystem, bounded by the child's life)."""
    import select

    while not path.exists():
        if p.poll() is not None:
            raise AssertionError(f"the run ended before prefill: {p.communicate()}")
        select.select([], [], [], 0.05)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead: it only waits for its parent, which has exited.
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
