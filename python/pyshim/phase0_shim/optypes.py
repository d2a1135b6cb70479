"""The arguments and results of every op Go calls, as ``TypedDict`` classes.

Go's package ``ops`` (ops/types.go) declares the same keys; its contract test
compares the two, to every depth where both sides declare a class. Optional
keys are declared in a ``total=False`` class over a base holding the required
ones (``NotRequired`` needs Python 3.11); Go marks them ``omitempty``.
Results whose parts are open-ended facts (a config's fields, a loader's
arrays) type those parts as ``dict[str, Any]``; Go still decodes them strictly.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

# --- environment ----------------------------------------------------------


class EnvironmentResult(TypedDict):
    executable: str
    version: str
    torch: str
    transformers: str
    safetensors: str
    numpy: str


# --- download, default_model ----------------------------------------------


class DownloadArgs(TypedDict):
    repo_id: str
    revision: str | None
    cache_dir: str | None


class DownloadReport(TypedDict):
    status: Literal["ok", "error"]
    code: str | None
    message: str
    snapshot_dir: str | None
    revision: str | None
    bytes: int
    files: list[str]


class DefaultModelArgs(TypedDict):
    cache: str | None


class SourceStampJSON(TypedDict):
    requirement: str
    wheel: str
    gguf_member: str
    gguf_sha256: str
    transformers_version: str
    format: int


class DefaultModelResult(TypedDict):
    path: str
    reused: bool
    seconds: float
    stamp: SourceStampJSON


# --- gates 1 and 3 --------------------------------------------------------


class ModuleArgs(TypedDict):
    weights_module: str | None
    model_dir: str


class ModuleConfigArgs(TypedDict):
    weights_module: str


class TieFacts(TypedDict):
    same_object: bool
    elements: int
    differing: int | None


GeneratedFacts = TypedDict("GeneratedFacts", {"class": str, "fields": dict[str, Any]})
TransformersFacts = TypedDict(
    "TransformersFacts",
    {"class": str, "attributes": dict[str, Any], "parameters": dict[str, list[int]], "transformers_version": str},
)


class LoaderFactsResult(TypedDict):
    tie: TieFacts | None
    globals: dict[str, dict[str, Any]]
    layers: list[dict[str, dict[str, Any]]] | None


class ConfigFactsResult(TypedDict):
    generated: GeneratedFacts | None
    transformers: TransformersFacts


class ModuleConfigResult(TypedDict):
    generated: GeneratedFacts


class _BehaviourArgsRequired(TypedDict):
    weights_module: str
    helpers_module: str | None
    model_dir: str
    max_seq: int


class BehaviourArgs(_BehaviourArgsRequired, total=False):
    # The module function that builds the config its RoPE table is asked
    # for (a quantized module's ``llama31_8b_config``); default LlamaConfig().
    config_function: str


class _RopeFactsRequired(TypedDict):
    seq_len: int
    head_dim: int
    rope_type: str
    defined: bool


class RopeFacts(_RopeFactsRequired, total=False):
    raised: str
    type: str
    dtype: str
    shape: list[int]


class _NormFactsRequired(TypedDict):
    helper: str
    defined: bool
    width: int
    groups: int


class NormFacts(_NormFactsRequired, total=False):
    eps: float
    eps_argument: float | None
    raised: str


class ArraySpec(TypedDict):
    name: str
    shape: list[int]


class _BehaviourFactsRequired(TypedDict):
    rope: RopeFacts
    helpers_module: str | None
    helpers_found: bool
    norms: list[NormFacts]
    arrays: list[ArraySpec]


class BehaviourFacts(_BehaviourFactsRequired, total=False):
    helpers_raised: str


# --- gate 2 and the reference ---------------------------------------------


class _BaselineArgsRequired(TypedDict):
    model_dir: str
    model_id: str
    config: dict[str, Any] | None
    max_seq: int
    decode_n: int


class QuantE2EArgs(TypedDict):
    """Quantized gate 2: the folder's loader whose dequantized projections
    are patched into the baseline's model after the bf16 prefills."""

    weights_module: str
    source: str
    reference_dir: str
    n_layers: int
    rule: QuantBound  # the format's rule, for the twin


class QuantE2EFacts(TypedDict):
    """Both sides' next-token facts (bf16 reference, dequantized weights)."""

    loader: str
    patched: int
    head_patched: bool
    from_gate_1: bool
    reference_top: list[int]
    reference_top_logprobs: list[float]
    quantized_top: list[int]
    quantized_top_logprobs: list[float]
    kl_prompt: float
    passage_tokens: int
    kl_passage: list[float]
    reference_nll: list[float]
    quantized_nll: list[float]
    reference_argmax: list[int]
    quantized_argmax: list[int]
    dp_passage: list[float]  # per position: p_bf16(bf16's top-1) - p_quantized(it)
    hidden_cosine: list[float]  # per decoder layer, on the prompt
    # The twin: the reference's own projections through the format's rule and back.
    twin_rule: str
    twin_error: str  # why no twin was built ("" when it was)
    twin_quantized: int
    twin_head: bool
    twin_top: list[int]
    twin_top_logprobs: list[float]
    kl_prompt_twin: float
    kl_passage_twin: list[float]
    twin_nll: list[float]
    twin_argmax: list[int]
    dp_passage_twin: list[float]
    hidden_cosine_twin: list[float]


class BaselineArgs(_BaselineArgsRequired, total=False):
    llms_dir: str | None
    prompt_style: str | None
    prompt: str | None
    weights_module: str | None
    quant: QuantE2EArgs | None


class SpecialIds(TypedDict):
    bos: int | None
    eos: list[int]
    pad: int | None
    unk: int | None


class TokenJSON(TypedDict):
    id: int
    token: str | None
    text: str
    logit: float | None
    special: bool
    placeholder: bool
    in_tokenizer: bool


class Decode(TypedDict):
    ids: list[int]
    text: str


class PassageFacts(TypedDict):
    passage: str
    tokens: list[int]
    nll: list[float | None]
    logits_size: int


class _BaselineResultRequired(TypedDict):
    runner: str
    runner_path: str
    prompts_dir: str
    prompt: str
    prompt_style: str
    tokens: list[int]
    top1_token: int
    vocab_size: int
    tokenizer_size: int
    special: SpecialIds
    top: list[TokenJSON]
    decode: Decode | None
    calibration: PassageFacts
    seconds_load: float
    seconds_prefill: float
    seconds_decode: float | None
    seconds_calibration: float
    torch_version: str
    transformers_version: str


class BaselineResult(_BaselineResultRequired, total=False):
    quant: QuantE2EFacts


class PromptSet(TypedDict):
    """The prompts a recording covers, and the runner whose tree chose them."""

    runner: str
    runner_path: str
    prompts_file: str
    prompt_style: str
    prompts: list[str]
    canonical_prompt: int


class ReferencePlan(PromptSet):
    tokenizer_sha256: str
    torch_version: str
    transformers_version: str


class PromptTokens(TypedDict):
    """The canonical prompt gate 2 would prefill and its length in the
    model's tokens: a fact Go judges against max_seq before any model is
    loaded (a prompt that does not fit is the user's setting, not the
    model's fault)."""

    prompt: str
    tokens: int


class RecordReferenceArgs(BaselineArgs):
    steps: int
    top_k: int
    dtype: str
    out_dir: str
    meta: dict[str, Any] | None


class _QuantBoundRequired(TypedDict):
    group: int
    levels: int
    symmetric: bool
    slack: float


class QuantBound(_QuantBoundRequired, total=False):
    """A format's own error bound, per group of ``group`` input elements:
    ``step = (max - min) / levels`` (affine) or ``absmax / levels``
    (symmetric); an element is beyond the bound when its error exceeds
    ``step / 2 + slack * absmax`` (the bf16 rounding of scales, offsets and
    the dequantized value). ``block_rows`` x ``block_cols`` is the format's
    storage block ([out, in]) when it has one (Q4NX: 32 x 256)."""

    block_rows: int
    block_cols: int


class _QuantArgsRequired(TypedDict):
    weights_module: str
    source: str
    reference_dir: str
    n_layers: int
    bound: QuantBound


class QuantArgs(_QuantArgsRequired, total=False):
    # Other cached checkpoints the bundle might come from (the folder's
    # other references, the card's base_model): layer 0's projections are
    # compared with each too, so the numbers can name the source.
    candidate_dirs: list[str]
    # Keep the dequantized projections (and head) in the worker for
    # quantized gate 2 in the same session, which then does not run the
    # folder's loader a second time.
    keep: bool
    # A deployed family's name (read/tensornames' Family: "gemma3", "phi3"):
    # the reference is read through its prefixes, fused tensors and
    # conventions; absent for the supported families.
    family: str
    # sqrt(hidden): the embedding scale of a family storing it scaled.
    embed_scale: float


class QuantStats(TypedDict):
    """Sufficient statistics of x (the loader's tensor) against y."""

    n: int
    sum_x: float
    sum_y: float
    sum_xx: float
    sum_yy: float
    sum_xy: float
    sum_dd: float
    max_abs_diff: float
    beyond_bound: int
    worst_excess: float


class QuantBlocks(TypedDict):
    """Where a projection's errors beyond the bound lie, by storage block:
    blocks in all, blocks holding any, blocks compared with every reference
    block, and those matching another block (stored in the wrong place)."""

    rows: int
    cols: int
    total: int
    beyond: int
    checked: int
    moved: int


class QuantTensorBase(TypedDict):
    layer: int
    field: str
    reference: str
    shape: list[int]
    reference_shape: list[int]


class QuantTensor(QuantTensorBase, total=False):
    stats: QuantStats
    confusions: dict[str, QuantStats]
    differing: int
    blocks: QuantBlocks
    problem: str
    # The family convention the reference was brought to before comparing
    # (one_plus, embed_scale): differing then counts elements more than one
    # bf16 step off.
    convention: str


class QuantImportFailure(TypedDict):
    module: str
    missing_paths: list[str]
    message: str


class QuantCandidate(TypedDict):
    """Layer 0's projections against one candidate checkpoint."""

    reference_dir: str
    fields: list[str]
    stats: list[QuantStats]


class _QuantFactsResultRequired(TypedDict):
    loader: str
    layers_loaded: int
    tensors: list[QuantTensor]
    import_failure: QuantImportFailure | None


class QuantFactsResult(_QuantFactsResultRequired, total=False):
    candidates: list[QuantCandidate]


class QuantModuleArgs(TypedDict):
    weights_module: str


class QuantModuleFacts(TypedDict):
    """A quantized module's config functions (``*_config()``), called, and
    whether it defines the behaviour gate 3 judges."""

    configs: dict[str, GeneratedFacts]
    raised: dict[str, str]
    rope_lut: bool
    rope_module: str
    rms_norm: bool
    import_failure: QuantImportFailure | None


class QuantE2EOnlyArgs(QuantE2EArgs):
    """Quantized gate 2 alone, when the bf16 gate 2 is reused from its
    record: the reference model (``model_dir``) and the canonical prompt's
    token ids as the record has them."""

    model_dir: str
    prompt_tokens: list[int]


class QuantFamilyArgs(TypedDict):
    """Quantized gate 3 of a deployed family's module (Gemma 3, Phi-3)."""

    weights_module: str
    family: str
    reference_dir: str
    # What the module's RoPE reads its factor tables from (the bundle).
    source: str


class QuantRopeTable(TypedDict):
    """The module's RoPE table against transformers' for the same positions:
    ``label`` names the table (a layer and its kind, a LongRoPE range)."""

    label: str
    positions: list[int]
    max_abs_diff: float
    # The same table against transformers' other kind (Gemma: the global
    # table for a local layer); -1 when there is no other kind.
    other_max_abs_diff: float


class QuantFamilyFacts(TypedDict):
    """The module's numeric top-level constants, which layers it makes global
    (Gemma: is_global_layer), and its RoPE tables against transformers'."""

    constants: dict[str, float]
    global_layers: list[int] | None
    rope: list[QuantRopeTable]
    rope_error: str
    # Phi-3: the LongRoPE factor tables the module reads (from the bundle)
    # against config.json's: the largest relative difference, and the same
    # after rounding config.json's to bf16 (0 when the bundle's are its
    # bf16 rounding). -1 when the module reads none.
    factor_rel_diff: float
    factor_rel_diff_bf16: float
    import_failure: QuantImportFailure | None
