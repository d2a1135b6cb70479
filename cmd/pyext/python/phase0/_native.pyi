"""phase0's Go core, compiled into this CPython extension (pyext/ in the phase0 repository)."""

from collections.abc import Sequence

version: str

def execute(args: Sequence[str], overrides_json: str, mode: int, /) -> tuple[int, str, str]:
    """Run the phase0 command line in-process; returns (exit code, stdout, stderr).

    mode 0 captures both streams, 1 streams stderr live, 2 streams both.
    The GIL is released while Go works; Ctrl-C cancels the run and raises
    KeyboardInterrupt. Raises RuntimeError in a process forked after import.
    """

def set_worker(path: str, /) -> None:
    """Name the phase0 binary the isolated Python worker child runs."""

def forked() -> bool:
    """True in a process created by os.fork() after the import."""
