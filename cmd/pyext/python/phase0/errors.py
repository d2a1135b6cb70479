"""The exceptions phase0 raises when it could not evaluate a model (CLI exit code 2).

A model that was evaluated and failed a gate, or was rejected, is not an
exception: it is a :class:`phase0.Report` whose ``status`` says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phase0.report import Report


class Phase0Error(Exception):
    """phase0 could not evaluate the model (exit code 2).

    ``report`` is the JSON report phase0 printed (status ERROR), when there
    was one; ``log`` is what phase0 wrote to stderr.
    """

    def __init__(self, message: str, report: Report | None = None, log: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.report = report
        self.log = log

    @property
    def kind(self) -> str:
        """Why the model could not be evaluated, as one word (the report's
        ``error_kind``: docs/reports.md#error-kinds); "" without a report."""
        return self.report.error_kind if self.report is not None else ""

    @property
    def stage(self) -> str:
        """The stage that could not complete ("" for a bad invocation)."""
        if self.report is None:
            return ""
        for s in reversed(self.report.stages):
            if s.status == "ERROR":
                return s.name
        return ""


class UsageError(Phase0Error, ValueError):
    """An unknown option, a value of the wrong kind, or an unreadable ``config=`` file."""


class ModelNotFoundError(Phase0Error, FileNotFoundError):
    """The model argument names no folder, no cached hub model and no hub repository."""


class HubError(ModelNotFoundError):
    """A hub id is not in the HF cache and could not be downloaded: not on the hub, gated, a bad
    revision, the hub switched off (HF_HUB_OFFLINE) or unreachable."""


class PythonEnvironmentError(Phase0Error):
    """No usable Python with torch + transformers for the worker (``python=``, $PHASE0_PYTHON), or the
    worker child could not start it."""


class CouldNotEvaluateError(Phase0Error):
    """Any other reason the model could not be evaluated (unreadable config.json, …)."""


class ForkedProcessError(Phase0Error, RuntimeError):
    """phase0 was called in a process forked after ``import phase0``.

    The Go runtime inside the extension does not survive ``os.fork()``; call
    phase0 in the parent, or start workers with the "spawn" or "forkserver"
    multiprocessing start method.
    """
