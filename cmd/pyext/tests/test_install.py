"""The same wheel installs into a fresh venv that holds nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import phase0

PROBE = "import phase0, sys; print(phase0.__version__, '%d.%d' % sys.version_info[:2], phase0.worker_binary().is_file())"


def test_wheel_installs_into_an_empty_venv(tmp_path: Path) -> None:
    wheel = os.environ.get("PHASE0_WHEEL")
    if not wheel:
        pytest.skip("PHASE0_WHEEL is not set (make test-python-package sets it)")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    py = str(env_dir / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", wheel], check=True)
    out = subprocess.run([py, "-c", PROBE], check=True, capture_output=True, text=True, cwd=tmp_path).stdout.split()
    assert out == [phase0.__version__, "%d.%d" % sys.version_info[:2], "True"]
    p = subprocess.run([py, "-m", "phase0", "inspect", str(tmp_path / "absent")], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and "no such folder" in p.stdout
