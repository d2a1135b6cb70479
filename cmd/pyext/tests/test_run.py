"""phase0.baseline / phase0.run: torch stays in the worker child; crashes and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
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
def test_baseline_and_run_equal_the_cli(tiny_models: Path, torch_python: str, tmp_path: Path,
                                        capfd: pytest.CaptureFixture[str]) -> None:
    model = str(tiny_models / "qwen3")
    # The baseline against python -m phase0 (the command line in this
    # process, on this process's warm session); the run, below, against the
    # shipped binary, which starts torch of its own.
    r = phase0.baseline(model, python=torch_python, decode=3)
    capfd.readouterr()
    code = phase0.main(["baseline", model, "--python", torch_python, "--decode", "3", "--json"])
    want = json.loads(capfd.readouterr().out)
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
how, what, model = sys.argv[1:4]
if what == "run":
    args, kwargs = ["run", model, "--llms-dir", sys.argv[4], "--python", sys.argv[5]], dict(llms_dir=sys.argv[4], python=sys.argv[5])
else:  # the scan of every tensor's values, in Go, no worker
    args, kwargs = ["inspect", model, "--scan"], dict(scan=True, progress=True)
if how == "api":
    try:
        getattr(phase0, what)(model, **kwargs)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        sys.exit(42)
    print("finished", flush=True)
else:  # python -m phase0, in this process so the handler above applies
    sys.exit(phase0.main(args + ["--json"]))
"""


def _check_interrupted(how: str, p: subprocess.Popen[str], out: str, err: str) -> None:
    if how == "api":
        assert p.returncode == 42 and "KeyboardInterrupt" in out, (out, err)
    else:  # the CLI's own answer: exit 130 and one JSON report saying so
        assert p.returncode == 130, (out, err)
        assert json.loads(out)["interrupted"] is True
    assert "Traceback" not in err, err


@pytest.mark.parametrize("how", ["api", "cli"])
def test_ctrl_c_interrupts_a_call_in_go(tmp_path: Path, how: str) -> None:
    """Ctrl-C while a call is in Go (the scan of a 4 TiB sparse tensor, minutes of reading) ends it at once.

    The KeyboardInterrupt is this interpreter's: how the extension hands a signal
    from a call in Go back to Python is what differs between minors, so every
    minor runs this; the worker's death on Ctrl-C (below) is the same Go code in
    each, and needs torch in a child.
    """
    model = _sparse_model(tmp_path)
    p = subprocess.Popen([sys.executable, "-c", CTRL_C, how, "inspect", str(model)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stderr is not None
        lines = []
        for line in p.stderr:
            lines.append(line)
            if line.startswith("phase0: weights "):
                # The scan starts next: let it get going, so the signal lands inside it.
                threading.Event().wait(0.3)
                p.send_signal(signal.SIGINT)
                break
        out, err = p.communicate(timeout=120)  # a hang guard: the scan alone takes minutes
    finally:
        if p.poll() is None:
            p.kill()
    _check_interrupted(how, p, out, "".join(lines) + err)


def _sparse_model(tmp_path: Path) -> Path:
    """A model folder whose one tensor is 4 TiB of zeros, sparse on disk."""
    model = tmp_path / "sparse"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 512, "rms_norm_eps": 1e-5,
        "torch_dtype": "bfloat16"}))
    size = 1 << 42
    header = json.dumps({"model.embed_tokens.weight": {
        "dtype": "BF16", "shape": [1048576, 2097152], "data_offsets": [0, size]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(model / "model.safetensors", "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
        try:
            f.truncate(8 + len(header) + size)
        except OSError as e:
            pytest.skip(f"no 4 TiB sparse file here: {e}")
    return model


# The worker's death is Go's, the same in every minor and for the command
# line (cmd/internal/cli's TestSignalsEndTheRunCleanly); the call's interrupt,
# API and command line, is tested above in every minor.
@pytest.mark.first_minor
@pytest.mark.parametrize("how", ["api"])
def test_ctrl_c_interrupts_and_kills_the_worker(tiny_models: Path, torch_python: str, fake_verify: Path, how: str) -> None:
    started = fake_verify / "prefill-started"
    body = textwrap.indent(textwrap.dedent(f"""\
        import os, time
        with open({str(started)!r} + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename({str(started)!r} + ".tmp", {str(started)!r})
        time.sleep(600)"""), "        ")
    (fake_verify / "verify" / "runners" / "hf_runner.py").write_text(runner_source(body))
    p = subprocess.Popen([sys.executable, "-c", CTRL_C, how, "run", str(tiny_models / "qwen3"), str(fake_verify), torch_python],
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
    _check_interrupted(how, p, out, err)
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
