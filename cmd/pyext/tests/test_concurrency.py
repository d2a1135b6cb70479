"""Several Python threads at once, and os.fork() after import."""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import FAMILIES

import phase0


def test_threads_calling_at_once(tiny_models: Path, torch_python: str) -> None:
    results: dict[str, str] = {}
    errors: list[BaseException] = []

    def call(key: str, fn: Callable[[], str]) -> None:
        try:
            results[key] = fn()
        except BaseException as e:  # noqa: BLE001 - the test reports whatever a thread raised
            errors.append(e)

    jobs: dict[str, Callable[[], str]] = {
        f"inspect-{f}-{i}": (lambda f=f: phase0.inspect(tiny_models / f, scan=True).status)  # type: ignore[misc]
        for f in FAMILIES for i in range(3)
    }
    jobs["baseline"] = lambda: phase0.baseline(tiny_models / "llama", python=torch_python).status
    jobs["missing"] = lambda: type(_raises(lambda: phase0.inspect(tiny_models / "absent"))).__name__

    threads = [threading.Thread(target=call, args=(k, fn)) for k, fn in jobs.items()]
    for th in threads:
        th.start()
    # This thread runs Python while the others are inside phase0: it can only
    # see the baseline's worker child if those calls released the GIL.
    saw_worker = False
    worker = f"{phase0.worker_binary()} __worker "  # the wheel's binary, not this python re-executed
    while any(th.is_alive() for th in threads):
        saw_worker = saw_worker or worker in _children_cmdlines()
        threading.Event().wait(0.01)
    for th in threads:
        th.join()
    assert not errors, errors
    assert results == {**{k: "PASS" for k in jobs if k.startswith("inspect")}, "baseline": "PASS",
                       "missing": "ModelNotFoundError"}
    assert saw_worker, "never ran while the calls were in Go: the GIL was not released"
    assert "torch" not in sys.modules


def _children_cmdlines() -> list[str]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid():
                out.append((d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _raises(fn: Callable[[], object]) -> BaseException:
    try:
        fn()
    except BaseException as e:  # noqa: BLE001
        return e
    raise AssertionError("no exception")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
def test_fork_after_import_is_refused_in_the_child(tiny_models: Path) -> None:
    assert phase0.inspect(tiny_models / "qwen3").status == "PASS"  # the Go runtime is running
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() of a multi-threaded process
        pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            phase0.inspect(tiny_models / "qwen3")
            msg = "no error"
        except phase0.ForkedProcessError as e:
            msg = "refused: " + str(e)
        except BaseException as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {e}"
        try:
            phase0._native.execute(["--version"], "", 0)
            msg += " | native ran"
        except RuntimeError as e:
            msg += " | native refused: " + str(e)
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        msg = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert msg.startswith("refused: phase0 cannot run in a process created by os.fork()"), msg
    assert "spawn" in msg and "| native refused: phase0 cannot run" in msg, msg
    # The parent is unaffected.
    assert phase0.inspect(tiny_models / "qwen3").status == "PASS"
