"""Typed views of phase0's JSON report (``phase0 … --json``).

Every dataclass mirrors one JSON object field for field and keeps the whole
object in ``raw``, so fields phase0 adds later are readable before they get a
typed attribute here. Verdicts are phase0's (Go's): nothing here re-judges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

Status = Literal["PASS", "WARN", "FAIL", "SKIPPED", "REJECTED", "ERROR"]
"""phase0's one status type: PASS, WARN and SKIPPED exit 0, FAIL and REJECTED 1, ERROR 2."""

_OK: frozenset[str] = frozenset({"PASS", "WARN", "SKIPPED"})

JSONObject = Mapping[str, Any]


def _obj(v: object) -> JSONObject:
    return cast(JSONObject, v) if isinstance(v, Mapping) else {}


def _list(v: object) -> Sequence[Any]:
    return cast(Sequence[Any], v) if isinstance(v, list) else ()


def _strs(v: object) -> tuple[str, ...]:
    return tuple(str(x) for x in _list(v))


def _float_or_none(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _ints(v: object) -> tuple[int, ...]:
    return tuple(int(x) for x in _list(v))


def _status(v: object) -> Status:
    s = str(v)
    if s not in ("PASS", "WARN", "FAIL", "SKIPPED", "REJECTED", "ERROR"):
        return "ERROR"  # an unknown word means could-not-evaluate, as in Go
    return cast(Status, s)


@dataclass(frozen=True)
class RopeScaling:
    """The rope_scaling phase0 implements (llama3 or linear)."""

    rope_type: str
    factor: float
    low_freq_factor: float = 0.0
    high_freq_factor: float = 0.0
    original_max_position_embeddings: int = 0

    @classmethod
    def from_json(cls, d: JSONObject) -> RopeScaling:
        return cls(
            rope_type=str(d.get("rope_type", "")),
            factor=float(d.get("factor", 0.0)),
            low_freq_factor=float(d.get("low_freq_factor", 0.0)),
            high_freq_factor=float(d.get("high_freq_factor", 0.0)),
            original_max_position_embeddings=int(d.get("original_max_position_embeddings", 0)),
        )


@dataclass(frozen=True)
class Config:
    """The model's resolved config: the fields of the generated Config dataclass."""

    n_layers: int
    emb_dim: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_dim: int
    vocab_size: int
    rope_base: float
    tie_word_embeddings: bool
    rms_norm_eps: float
    qkv_bias: bool
    qk_norm: bool
    rope_scaling: RopeScaling | None
    hidden_act: str
    dtype: str
    raw: JSONObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: JSONObject) -> Config:
        rs = d.get("rope_scaling")
        return cls(
            n_layers=int(d.get("n_layers", 0)),
            emb_dim=int(d.get("emb_dim", 0)),
            n_heads=int(d.get("n_heads", 0)),
            n_kv_heads=int(d.get("n_kv_heads", 0)),
            head_dim=int(d.get("head_dim", 0)),
            hidden_dim=int(d.get("hidden_dim", 0)),
            vocab_size=int(d.get("vocab_size", 0)),
            rope_base=float(d.get("rope_base", 0.0)),
            tie_word_embeddings=bool(d.get("tie_word_embeddings", False)),
            rms_norm_eps=float(d.get("rms_norm_eps", 0.0)),
            qkv_bias=bool(d.get("qkv_bias", False)),
            qk_norm=bool(d.get("qk_norm", False)),
            rope_scaling=RopeScaling.from_json(_obj(rs)) if isinstance(rs, Mapping) else None,
            hidden_act=str(d.get("hidden_act", "")),
            dtype=str(d.get("dtype", "")),
            raw=d,
        )


@dataclass(frozen=True)
class Rejection:
    """Why the architecture gate refused the model: a stable code and a message."""

    code: str
    message: str

    @classmethod
    def from_json(cls, d: JSONObject) -> Rejection:
        return cls(code=str(d.get("code", "")), message=str(d.get("message", "")))


@dataclass(frozen=True)
class Defaulted:
    """A config field config.json did not set, and the value phase0 used."""

    field: str
    key: str
    value: Any
    source: str

    @classmethod
    def from_json(cls, d: JSONObject) -> Defaulted:
        return cls(field=str(d.get("field", "")), key=str(d.get("key", "")), value=d.get("value"), source=str(d.get("source", "")))


@dataclass(frozen=True)
class Gate:
    """One gate's section: its status, a one-line summary and the findings.

    Each finding names the file, tensor or field with the expected and actual
    values. ``raw`` holds the gate's other fields (missing tensors, mismatches …).
    """

    status: Status
    summary: str
    findings: tuple[str, ...]
    findings_omitted: int
    raw: JSONObject = field(repr=False, compare=False)

    @property
    def passed(self) -> bool:
        return self.status in _OK

    @classmethod
    def from_json(cls, d: JSONObject) -> Gate:
        return cls(
            status=_status(d.get("status")),
            summary=str(d.get("summary", "")),
            findings=_strs(d.get("findings")),
            findings_omitted=int(d.get("findings_omitted", 0)),
            raw=d,
        )


@dataclass(frozen=True)
class Baseline(Gate):
    """Gate 2: the HF transformers bf16 prefill of the canonical prompt."""

    runner: str = ""
    runner_path: str = ""
    prompt: str = ""
    prompt_style: str = ""
    tokens: tuple[int, ...] = ()
    top1_token: int = -1
    top1_text: str = ""
    reasons: tuple[str, ...] = ()
    #: The calibration passage's teacher-forced perplexity (None: not measured)
    #: and the limit it must stay under (max_perplexity_ratio × vocab_size).
    perplexity: float | None = None
    perplexity_limit: float | None = None

    @classmethod
    def from_json(cls, d: JSONObject) -> Baseline:
        g = Gate.from_json(d)
        return cls(
            status=g.status,
            summary=g.summary,
            findings=g.findings,
            findings_omitted=g.findings_omitted,
            raw=d,
            runner=str(d.get("runner", "")),
            runner_path=str(d.get("runner_path", "")),
            prompt=str(d.get("prompt", "")),
            prompt_style=str(d.get("prompt_style", "")),
            tokens=_ints(d.get("tokens")),
            top1_token=int(d.get("top1_token", -1)),
            top1_text=str(d.get("top1_text", "")),
            reasons=_strs(d.get("reasons")),
            perplexity=_float_or_none(_obj(d.get("calibration")).get("perplexity")),
            perplexity_limit=_float_or_none(_obj(d.get("calibration")).get("limit")),
        )


@dataclass(frozen=True)
class Gates:
    """The gates that ran (None: not run by this command or not reached)."""

    weights: Gate | None
    config_consistency: Gate | None
    python_weights: Gate | None
    hf_baseline: Baseline | None
    raw: JSONObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: JSONObject) -> Gates:
        def gate(key: str) -> Gate | None:
            v = d.get(key)
            return Gate.from_json(_obj(v)) if isinstance(v, Mapping) else None

        hf = d.get("hf_baseline")
        return cls(
            weights=gate("weights"),
            config_consistency=gate("config_consistency"),
            python_weights=gate("python_weights"),
            hf_baseline=Baseline.from_json(_obj(hf)) if isinstance(hf, Mapping) else None,
            raw=d,
        )


@dataclass(frozen=True)
class Workspace:
    """The generated workspace of a run (paths are absolute)."""

    dir: str
    name: str
    #: "generated", or "validated_existing" when <name>_weights.py was not
    #: phase0's (upstream's own or user-edited) and was validated in place.
    mode: str
    written: tuple[str, ...]
    unchanged: tuple[str, ...]
    kept: tuple[str, ...]
    helpers_kept: tuple[str, ...]
    foreign: tuple[str, ...]
    report_json: str
    report_md: str
    raw: JSONObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: JSONObject) -> Workspace:
        return cls(
            dir=str(d.get("dir", "")),
            name=str(d.get("name", "")),
            mode=str(d.get("mode", "")),
            written=_strs(d.get("written")),
            unchanged=_strs(d.get("unchanged")),
            kept=_strs(d.get("kept")),
            helpers_kept=_strs(d.get("helpers_kept")),
            foreign=_strs(d.get("foreign")),
            report_json=str(d.get("report_json", "")),
            report_md=str(d.get("report_md", "")),
            raw=d,
        )


@dataclass(frozen=True)
class Stage:
    """One timed step of the command."""

    name: str
    status: Status
    seconds: float
    detail: str

    @classmethod
    def from_json(cls, d: JSONObject) -> Stage:
        return cls(name=str(d.get("name", "")), status=_status(d.get("status")), seconds=float(d.get("seconds", 0.0)), detail=str(d.get("detail", "")))


@dataclass(frozen=True)
class Report:
    """The one report of an inspect, baseline or run: what ``--json`` prints.

    ``status`` is the verdict (PASS/WARN: exit 0; FAIL/REJECTED: exit 1).
    ``raw`` is the whole JSON object; ``log`` what phase0 wrote to stderr.
    """

    tool: str
    version: str
    command: str
    model: str
    model_id: str
    model_dir: str
    revision: str
    status: Status
    error: str
    #: Why an ERROR report could not be evaluated, as one word ("" otherwise):
    #: docs/reports.md#error-kinds.
    error_kind: str
    interrupted: bool
    architecture: str
    family: str
    config: Config | None
    defaulted: tuple[Defaulted, ...]
    rejections: tuple[Rejection, ...]
    gates: Gates
    workspace: Workspace | None
    #: The recorded reference section of run / reference (None: not recorded).
    reference: JSONObject | None
    #: The report.json whose verdict a repeat run reused (None: it ran).
    reused_from: str | None
    warnings: tuple[str, ...]
    stages: tuple[Stage, ...]
    started: str
    seconds: float
    exit_code: int
    raw: JSONObject = field(repr=False, compare=False)
    log: str = field(default="", repr=False, compare=False)

    @property
    def passed(self) -> bool:
        """True when the CLI would exit 0."""
        return self.status in _OK

    @property
    def rejected(self) -> bool:
        return self.status == "REJECTED"

    @property
    def rejection_codes(self) -> tuple[str, ...]:
        return tuple(r.code for r in self.rejections)

    @classmethod
    def from_json(cls, d: JSONObject, exit_code: int, log: str = "") -> Report:
        cfg, ws = d.get("config"), d.get("workspace")
        return cls(
            tool=str(d.get("tool", "")),
            version=str(d.get("version", "")),
            command=str(d.get("command", "")),
            model=str(d.get("model", "")),
            model_id=str(d.get("model_id", "")),
            model_dir=str(d.get("model_dir", "")),
            revision=str(d.get("revision", "")),
            status=_status(d.get("status")),
            error=str(d.get("error", "")),
            error_kind=str(d.get("error_kind", "")),
            interrupted=bool(d.get("interrupted", False)),
            architecture=str(d.get("architecture", "")),
            family=str(d.get("family", "")),
            config=Config.from_json(_obj(cfg)) if isinstance(cfg, Mapping) else None,
            defaulted=tuple(Defaulted.from_json(_obj(x)) for x in _list(d.get("defaulted"))),
            rejections=tuple(Rejection.from_json(_obj(x)) for x in _list(d.get("rejections"))),
            gates=Gates.from_json(_obj(d.get("gates"))),
            workspace=Workspace.from_json(_obj(ws)) if isinstance(ws, Mapping) else None,
            reference=_obj(d["reference"]) if isinstance(d.get("reference"), Mapping) else None,
            reused_from=str(_obj(d["reused_from"]).get("path", "")) if isinstance(d.get("reused_from"), Mapping) else None,
            warnings=_strs(d.get("warnings")),
            stages=tuple(Stage.from_json(_obj(x)) for x in _list(d.get("stages"))),
            started=str(d.get("started", "")),
            seconds=float(d.get("seconds", 0.0)),
            exit_code=exit_code,
            raw=d,
            log=log,
        )
