"""Progress lines for the worker's long ops: ``phase0: <stage>: <what> (<elapsed>, ETA <eta>)``.

Whatever the worker prints reaches phase0's stderr (never the ``--json``
object on stdout) and the tail a crash report quotes. So the lines are few:
an op that ends within the interval prints nothing, a longer one at most one
line per interval and, once it printed any, a final line. The interval is 2 s;
``PHASE0_PROGRESS_INTERVAL`` (seconds) changes it, 0 prints every update.

Three sources of progress, from the best to the least informative: the op
counts its own units (the reference's prompts and steps); a forward pass is
followed layer by layer through forward hooks on the decoder layers; code
that cannot report (a generated loader, imports) is watched from a helper
thread, through the bytes the process has read when there are any.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

INTERVAL_ENV = "PHASE0_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 2.0
# A line that can only say that time passes is worth fewer than one that counts.
HEARTBEAT_FACTOR = 5
# The shortest period of a helper thread's look (with the interval at 0).
TICK = 0.25


def interval() -> float:
    """Seconds between two lines: $PHASE0_PROGRESS_INTERVAL, else 2."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, ""))
    except ValueError:
        return DEFAULT_INTERVAL
    return value if math.isfinite(value) and value >= 0 else DEFAULT_INTERVAL


def size(n: float) -> str:
    """``6.4 GB``, ``12.5 MB``."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def duration(seconds: float) -> str:
    """``7 s``, ``3m05s``."""
    s = max(0, int(round(seconds)))
    return f"{s} s" if s < 60 else f"{s // 60}m{s % 60:02d}s"


class Progress:
    """One task's rate-limited lines on stderr (thread-safe)."""

    def __init__(
        self,
        stage: str,
        *,
        every: float | None = None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stage = stage
        self.every = interval() if every is None else every
        self._stream = stream
        self._clock = clock
        self._lock = threading.Lock()
        self.start = clock()
        self._last = self.start
        self.printed = 0

    def update(self, done: float, total: float, what: str) -> None:
        """``done`` of ``total`` units are finished (0 of 0: unknown); ``what`` says where."""
        with self._lock:
            now = self._clock()
            if now - self._last < self.every:
                return
            elapsed = now - self.start
            detail = duration(elapsed)
            if 0 < done < total:
                detail += f", ETA {duration(elapsed * (total - done) / done)}"
            self._emit(f"{what} ({detail})", now)

    def finish(self, what: str) -> None:
        """The final line, ``<what> in <elapsed>``; only after another line."""
        with self._lock:
            if self.printed:
                now = self._clock()
                self._emit(f"{what} in {duration(now - self.start)}", now)

    def _emit(self, text: str, now: float) -> None:
        stream = self._stream if self._stream is not None else sys.stderr
        stream.write(f"phase0: {self.stage}: {text}\n")
        stream.flush()
        self._last = now
        self.printed += 1


@contextmanager
def _ticking(report: Callable[[], None], period: float) -> Iterator[None]:
    """Call ``report`` every ``period`` seconds from a helper thread while the body runs."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(period):
            report()

    thread = threading.Thread(target=run, name="phase0-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def bytes_read() -> int | None:
    """Bytes this process has read through read(2) and its kin (Linux
    /proc/self/io ``rchar``); None where that is not known."""
    try:
        with open("/proc/self/io", encoding="ascii") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def checkpoint_bytes(model_dir: Path | str) -> int:
    """The size of a folder's .safetensors files."""
    return sum(p.stat().st_size for p in Path(model_dir).glob("*.safetensors") if p.is_file())


def maps_under(folder: Path | str) -> bool:
    """Whether this process has a file under ``folder`` memory-mapped (Linux
    /proc/self/maps): such a loader reads by page faults, which no read
    counter sees."""
    root = os.path.realpath(folder).rstrip("/") + "/"
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            return any(line.rstrip("\n").split(maxsplit=5)[-1].startswith(root) for line in f if line.count(" ") >= 5)
    except OSError:
        return False


@contextmanager
def reading(stage: str, what: str, total: int, folder: Path | str | None = None) -> Iterator[None]:
    """Watch code that reads ``total`` bytes of ``folder`` and cannot report
    by itself (a generated loader): how much the process has read since, and
    an ETA from it. A loader that maps the files instead of reading them
    (upstream's modules, safetensors' safe_open) shows the time only: the
    bytes it has read say nothing about how far it is."""
    progress = Progress(stage)
    first = bytes_read()
    mapped = False

    def report() -> None:
        nonlocal mapped
        mapped = mapped or (folder is not None and maps_under(folder))
        now = bytes_read()
        done = now - first if now is not None and first is not None else 0
        if done > 0 and total > 0 and not mapped:
            done = min(done, total)
            progress.update(done, total, f"{what}: {size(done)} of {size(total)} read")
        else:
            progress.update(0, 0, what)

    with _ticking(report, max(progress.every, TICK)):
        yield
    progress.finish(what)


@contextmanager
def heartbeat(stage: str, what: str) -> Iterator[None]:
    """Say, now and then, that code which cannot report is still running."""
    progress = Progress(stage, every=interval() * HEARTBEAT_FACTOR)
    with _ticking(lambda: progress.update(0, 0, what), max(progress.every, TICK)):
        yield
    progress.finish(what)


@contextmanager
def loading_model(stage: str, what: str) -> Iterator[None]:
    """A model load: phase0's heartbeat, and none of transformers' own bars.

    transformers 5 draws a "Loading weights" bar for every load; its
    carriage-return redraws land between phase0's stage lines on stderr and
    in the tail a crash report quotes. Its bars are off for the load and as
    they were afterwards (they stay off if the user had turned them off).
    """
    with heartbeat(stage, what), _transformers_bars_off():
        yield


@contextmanager
def _transformers_bars_off() -> Iterator[None]:
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        hf_logging = None  # type: ignore[assignment]
    if hf_logging is None or not hf_logging.is_progress_bar_enabled():
        yield
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _decoder_layers(model: Any) -> list[Any]:
    """An HF causal LM's decoder layers (``model.model.layers``), else none."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    try:
        return list(layers) if layers is not None else []
    except TypeError:
        return []


@contextmanager
def layers(stage: str, model: Any, what: str) -> Iterator[None]:
    """Follow the forward passes of the body through ``model``'s decoder
    layers (forward hooks, removed on exit; they return nothing, so the
    outputs are untouched). A model without ``model.layers`` is not followed."""
    blocks = _decoder_layers(model)
    progress = Progress(stage)
    handles = []
    for i, block in enumerate(blocks):

        def hook(*_: Any, i: int = i) -> None:
            progress.update(i + 1, len(blocks), f"{what}, layer {i + 1}/{len(blocks)}")

        handles.append(block.register_forward_hook(hook))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
    progress.finish(f"{what}, {len(blocks)} layers")
