"""The arguments and results of every op Go calls, as ``TypedDict`` classes.

Generated from Go's package wire (wire/*.go) by
``go test ./wire -run Python -update``; do not edit. Each class is the
Go struct of the same name. Optional keys (``omitempty`` in Go) are
declared in a ``total=False`` class over a base holding the required ones
(``NotRequired`` needs Python 3.11); a key whose type allows None may
carry null. Open-ended facts (a config's fields, transformers' attributes)
are ``dict[str, Any]``; Go still decodes them strictly.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

# --- environment ----------------------------------------------------------


class Environment(TypedDict):
    """Environment is what the worker runs on; empty strings for missing packages."""

    executable: str
    version: str
    torch: str
    transformers: str
    safetensors: str
    numpy: str


# --- download -------------------------------------------------------------


class DownloadArgs(TypedDict):
    """DownloadArgs names a hub model to fetch into the HF cache."""

    repo_id: str
    # null: the default branch
    revision: str | None
    cache_dir: str


class DownloadReport(TypedDict):
    """DownloadReport is the download's outcome; the expected failures are
    status "error" with a code, never an exception."""

    status: Literal["ok", "error"]
    code: str | None
    message: str
    snapshot_dir: str | None
    revision: str | None
    bytes: int
    files: list[str]


# --- default_model --------------------------------------------------------


class DefaultModelArgs(TypedDict):
    """DefaultModelArgs names phase0's cache folder."""

    cache: str


class DefaultModelResult(TypedDict):
    """DefaultModelResult is the converted default model's folder and source."""

    path: str
    reused: bool
    seconds: float
    stamp: DefaultModelStamp


class DefaultModelStamp(TypedDict):
    """DefaultModelStamp is what the default model's folder was built from."""

    requirement: str
    wheel: str
    gguf_member: str
    gguf_sha256: str
    transformers_version: str
    format: int


# --- python_sources -------------------------------------------------------


class Imports(TypedDict):
    """Imports is what the worker reports about itself after a run (op
    python_sources): every module it imported (name, file, and a package's
    search folders), its sys.path, where its standard library lives and its
    site-packages folders. Python reports; read/fingerprint stamps."""

    modules: list[ImportedModule]
    sys_path: list[str]
    stdlib: list[str]
    site_dirs: list[str]


class ImportedModule(TypedDict):
    """ImportedModule is one entry of sys.modules."""

    name: str
    # ``file`` is the module's __file__ ("" for built-in and namespace modules).
    file: str
    # ``search`` is a package's __path__: the folders its submodules were
    # looked up in (empty for a plain module).
    search: list[str]


# --- reset_session --------------------------------------------------------


class ResetResult(TypedDict):
    """ResetResult is reset_session's answer: the modules it forgot and the
    restored import path."""

    forgotten: list[str]
    sys_path: list[str]


# --- loader_facts ---------------------------------------------------------


class ModuleArgs(TypedDict):
    """ModuleArgs names a weights module and the checkpoint it loads (gate 1
    and the config facts of gate 3)."""

    # "" for none (config_facts only)
    weights_module: str
    model_dir: str


class LoaderFacts(TypedDict):
    """LoaderFacts are LlamaWeights' arrays as loaded: the whole-model ones by
    field name, and each layer's (null when the weights have no layers)."""

    globals: dict[str, ArrayFacts]
    layers: list[dict[str, ArrayFacts]] | None


class _ArrayFactsRequired(TypedDict):
    # "ndarray", or the Python type name of something else
    type: str


class ArrayFacts(_ArrayFactsRequired, total=False):
    """ArrayFacts is what the worker reports of one array the loader returned."""

    # shape, dtype and samples: ndarrays only
    shape: list[int]
    dtype: str
    samples: list[ArraySample]


class _ArraySampleRequired(TypedDict):
    index: list[int]


class ArraySample(_ArraySampleRequired, total=False):
    """ArraySample is one loaded value: bf16 arrays give the 16-bit pattern,
    others a number."""

    bits: int
    value: Any


class LoaderFactsResult(LoaderFacts):
    """LoaderFactsResult is what the module's load_weights returned, and how
    its lm_head relates to its embed_table (judged in gate 3)."""

    tie: TieFacts | None


class TieFacts(TypedDict):
    """TieFacts is how the loaded lm_head relates to embed_table."""

    # lm_head is embed_table
    same_object: bool
    elements: int
    # ``differing`` counts elements that differ (bf16 by bit pattern); null
    # when the shapes differ.
    differing: int | None


# --- config_facts ---------------------------------------------------------


class ConfigFactsResult(TypedDict):
    """ConfigFactsResult is the module's LlamaConfig() (null without a module)
    and what transformers resolves for the folder."""

    generated: GeneratedFacts | None
    transformers: TransformersFacts | None


# GeneratedFacts is a module's LlamaConfig(): every field as Python holds
# it, types kept (28.0 is not 28, 0 is not false).
GeneratedFacts = TypedDict(
    "GeneratedFacts",
    {
        "class": str,
        "fields": dict[str, Any],
    },
)


# TransformersFacts is what transformers resolves for the model folder:
# AutoConfig's attributes, and the parameters (name → shape) of the model it
# builds from them (on the meta device; tied lm_head omitted, as a
# checkpoint omits it).
TransformersFacts = TypedDict(
    "TransformersFacts",
    {
        "class": str,
        "attributes": dict[str, Any],
        "parameters": dict[str, list[int]],
        "transformers_version": str,
    },
)


# --- module_config --------------------------------------------------------


class ModuleConfigArgs(TypedDict):
    """ModuleConfigArgs names a weights module to import."""

    weights_module: str


class ModuleConfigResult(TypedDict):
    """ModuleConfigResult is the module's LlamaConfig() as written."""

    generated: GeneratedFacts | None


# --- behaviour_facts ------------------------------------------------------


class _BehaviourArgsRequired(TypedDict):
    weights_module: str
    helpers_module: str
    model_dir: str
    max_seq: int


class BehaviourArgs(_BehaviourArgsRequired, total=False):
    """BehaviourArgs names the module, its helpers and the checkpoint whose
    RoPE table and RMSNorm are compared with transformers."""

    # ``config_function`` is the module function whose config the RoPE table
    # is asked for (a quantized module's llama31_8b_config); absent for
    # LlamaConfig().
    config_function: str


class _BehaviourFactsRequired(TypedDict):
    rope: RopeFacts
    helpers_module: str | None
    helpers_found: bool
    norms: list[NormFacts]
    arrays: list[ArraySpec]


class BehaviourFacts(_BehaviourFactsRequired, total=False):
    """BehaviourFacts are what the weights module and its helpers compute, next
    to what transformers computes for the same config. The arrays travel as
    one float32 payload, split by ``arrays``."""

    helpers_raised: str


class _RopeFactsRequired(TypedDict):
    seq_len: int
    head_dim: int
    # transformers' rope type for the checkpoint
    rope_type: str
    defined: bool


class RopeFacts(_RopeFactsRequired, total=False):
    """RopeFacts describes the module's generate_rope_lut call."""

    raised: str
    type: str
    dtype: str
    shape: list[int]


class _NormFactsRequired(TypedDict):
    # rms_norm or qk_norm_per_head
    helper: str
    defined: bool
    # the normalised axis
    width: int
    # heads for qk_norm_per_head, else 1
    groups: int


class NormFacts(_NormFactsRequired, total=False):
    """NormFacts describes one helper run on the RMSNorm probe."""

    # ``eps`` is transformers' rms_norm_eps for the reference (absent when the
    # helper is not defined).
    eps: float
    # ``eps_argument`` is the eps passed to the helper, null for its own default
    # (as production calls it); absent unless the helper ran.
    eps_argument: float | None
    raised: str


class ArraySpec(TypedDict):
    """ArraySpec names one part of the float32 payload."""

    name: str
    shape: list[int]


# --- baseline -------------------------------------------------------------


class _BaselineArgsRequired(TypedDict):
    model_dir: str
    model_id: str
    # ``config`` is the checkpoint's config as read/model extracted it, which
    # the worker takes as open-ended fields.
    config: dict[str, Any] | None
    max_seq: int
    decode_n: int


class BaselineArgs(_BaselineArgsRequired, total=False):
    """BaselineArgs asks for the canonical-prompt prefill through the reference
    HfRunner; reference_plan and prompt_tokens take the same arguments."""

    llms_dir: str
    prompt_style: str
    prompt: str
    weights_module: str
    # ``quant``, for a quantized folder's key, asks for quantized gate 2 in
    # the same op: the folder's dequantized projections patched into the
    # model the baseline loaded, prefilled again.
    quant: QuantE2EArgs


class QuantE2EArgs(TypedDict):
    """QuantE2EArgs name the quantized folder's loader for quantized gate 2,
    whose dequantized projections are patched into the baseline's model
    after the bf16 prefills."""

    weights_module: str
    source: str
    reference_dir: str
    n_layers: int
    # ``rule`` is the format's quantization rule, for the twin (the
    # reference's own projections through it and back).
    rule: QuantBound


class _QuantBoundRequired(TypedDict):
    group: int
    levels: int
    symmetric: bool
    slack: float


class QuantBound(_QuantBoundRequired, total=False):
    """QuantBound is a format's own per-element error bound, applied to each
    group of ``group`` input elements: step = (max - min) / levels (affine) or
    absmax / levels (symmetric); an element is beyond the bound when its
    error exceeds step / 2 + slack * absmax (the bf16 rounding of the scale,
    the offset and the dequantized value)."""

    # ``block_rows`` x ``block_cols`` is the format's storage block ([out, in]),
    # when it has one (Q4NX: 32 x 256): the worker then says which blocks
    # hold the errors beyond the bound and whether they hold another
    # block's values (blocks out of order).
    block_rows: int
    block_cols: int


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
    special: SpecialIDs
    top: list[TopToken]
    decode: Decode | None
    calibration: PassageFacts | None
    seconds_calibration: float
    seconds_load: float
    seconds_prefill: float
    seconds_decode: float | None
    torch_version: str
    transformers_version: str


class BaselineResult(_BaselineResultRequired, total=False):
    """BaselineResult is what the baseline prefill reports (facts; Go judges)."""

    # ``quant`` is quantized gate 2's facts, when the args asked for them.
    quant: QuantE2EFacts


class SpecialIDs(TypedDict):
    """SpecialIDs are the tokenizer's special ids (every eos id the tokenizer,
    config.json and generation_config.json name)."""

    bos: int | None
    eos: list[int]
    pad: int | None
    unk: int | None


class Token(TypedDict):
    """Token is a vocabulary entry the runner described (decoded text and kind)."""

    id: int
    text: str
    special: bool
    placeholder: bool


class TopToken(Token):
    """TopToken is one of the top logits' tokens."""

    # the vocabulary string; null outside the tokenizer
    token: str | None
    # null when not finite
    logit: float | None
    in_tokenizer: bool


class Decode(TypedDict):
    """Decode is the optional greedy continuation."""

    ids: list[int]
    text: str


class PassageFacts(TypedDict):
    """PassageFacts are the baseline's measurements on the calibration passage
    (phase0_shim/calibration.py holds the passage)."""

    passage: str
    tokens: list[int]
    nll: list[float | None]
    logits_size: int


class QuantE2EFacts(TypedDict):
    """QuantE2EFacts are the worker's answer for quantized gate 2: the
    reference's transformers model prefilled as loaded (bf16) and again with
    every projection swapped for the folder's dequantized one, on the
    canonical prompt and on the calibration passage."""

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
    # ``dp_passage`` is, per passage position, the drop of the reference's
    # top-1 probability: p_bf16(top-1) - p_quantized(the same token).
    dp_passage: list[float]
    # ``hidden_cosine`` is, per decoder layer, the mean over the prompt's tokens
    # of the cosine of the layer's output with the reference's.
    hidden_cosine: list[float]
    # The twin: the reference's own projections through the format's rule
    # and back, prefilled in the same model before the folder's tensors.
    twin_rule: str
    # why no twin was built ("" when it was)
    twin_error: str
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


# --- reference_plan -------------------------------------------------------


class PromptSet(TypedDict):
    """PromptSet is the prompts a recording covers, and the runner whose tree
    chose them."""

    runner: str
    runner_path: str
    prompts_file: str
    prompt_style: str
    prompts: list[str]
    canonical_prompt: int


class ReferencePlan(PromptSet):
    """ReferencePlan is what a recording is keyed on."""

    tokenizer_sha256: str
    torch_version: str
    transformers_version: str


# --- prompt_tokens --------------------------------------------------------


class PromptTokens(TypedDict):
    """PromptTokens is the canonical prompt gate 2 would prefill and its length
    in the model's tokens: a fact Go judges against max_seq before any model
    is loaded."""

    prompt: str
    tokens: int


# --- record_reference -----------------------------------------------------


class RecordReferenceArgs(BaselineArgs):
    """RecordReferenceArgs asks for a recording into ``out_dir``; ``meta`` is written
    into its reference.json as given."""

    steps: int
    top_k: int
    dtype: str
    out_dir: str
    meta: dict[str, Any] | None


# --- quant_facts ----------------------------------------------------------


class _QuantArgsRequired(TypedDict):
    weights_module: str
    source: str
    reference_dir: str
    n_layers: int
    bound: QuantBound


class QuantArgs(_QuantArgsRequired, total=False):
    """QuantArgs name a quantized folder's weights module, what its loader
    reads (the bundle, or the reference it quantizes on load), the bf16
    reference checkpoint, its layer count and the format's error bound."""

    # ``candidate_dirs`` are other cached checkpoints the bundle might come
    # from (the folder's other references, the card's base_model): layer
    # 0's projections are compared with each too, so the numbers can name
    # the source.
    candidate_dirs: list[str]
    # ``keep`` leaves the dequantized projections (and head) in the worker for
    # quantized gate 2 in the same session: the folder's loader runs once.
    keep: bool
    # ``family`` is a deployed family's name (read/tensornames' Families:
    # "gemma3", "phi3"): the worker reads the reference through its
    # prefixes, fused tensors and conventions. Absent for the supported
    # families.
    family: str
    # ``embed_scale`` is sqrt(hidden) for a family whose bundle stores the
    # embedding scaled.
    embed_scale: float


class _QuantFactsResultRequired(TypedDict):
    loader: str
    layers_loaded: int
    tensors: list[QuantTensor]
    import_failure: QuantImportFailure | None


class QuantFactsResult(_QuantFactsResultRequired, total=False):
    """QuantFactsResult is quant_facts' answer for one quantized folder: every
    tensor its own loader returned, against the source checkpoint."""

    # ``candidates`` are layer 0's projections against other cached
    # checkpoints the bundle might come from (``QuantArgs["candidate_dirs"]``).
    candidates: list[QuantCandidate]
    # ``missing_key`` is the key the loader raised KeyError on, when it stopped
    # there (a tensor its source does not hold): ``tensors`` are those it
    # returned before.
    missing_key: str
    # ``loader_fallback`` says why ``loader`` is the module's per-layer class and
    # not its load_*weights* function (the function could not import what
    # it imports); empty when the function ran.
    loader_fallback: str


class _QuantTensorRequired(TypedDict):
    layer: int
    # LlamaWeights' name: wq … w_down, attn_norm …
    field: str
    reference: str
    shape: list[int]
    reference_shape: list[int]


class QuantTensor(_QuantTensorRequired, total=False):
    """QuantTensor is what the worker reports for one tensor the loader
    returned. ``layer`` -1 is a whole-model tensor (embed_table, final_norm,
    lm_head)."""

    stats: QuantStats
    # transposed, partner, row_pairs_swapped, group_offset
    confusions: dict[str, QuantStats]
    # bf16 elements whose bits differ (kept tensors)
    differing: int
    # where the errors beyond the bound lie (a blocked format)
    blocks: QuantBlocks
    # groups the loader returned all zero where the reference's are not
    zeroed: QuantZeroed
    problem: str
    # ``convention`` is the family convention (one_plus, embed_scale) the
    # reference was brought to first; ``differing`` then counts elements more
    # than one bf16 step off, and the confusions are the mistaken ways of
    # storing it.
    convention: str


class QuantStats(TypedDict):
    """QuantStats are sufficient statistics of x (the loader's tensor) against
    y (the reference's), summed in float64 by the worker."""

    n: int
    sum_x: float
    sum_y: float
    sum_xx: float
    sum_yy: float
    sum_xy: float
    sum_dd: float
    max_abs_diff: float
    beyond_bound: int
    # ``worst_excess`` is the largest error beyond the bound in units of the
    # element's own bound (0 when none is beyond it).
    worst_excess: float


class QuantBlocks(TypedDict):
    """QuantBlocks is where a projection's errors beyond the bound lie, by the
    format's storage block: how many of its blocks hold any, how many of
    those were compared with every block of the reference, and how many of
    those match another block (its values stored in the wrong place)."""

    rows: int
    cols: int
    total: int
    beyond: int
    checked: int
    moved: int


class QuantZeroed(TypedDict):
    """QuantZeroed is where a projection's loader returned all zeros for a
    bound group (Group input elements of one output row) whose reference
    values are not all zero: how many such groups, how many output rows are
    zero in every group, and the first and last output row holding one."""

    groups: int
    rows: int
    first_row: int
    last_row: int


class QuantImportFailure(TypedDict):
    """QuantImportFailure says why the weights module could not be imported: a
    module it imports is missing, and which of the folders it put on
    sys.path do not exist."""

    module: str
    missing_paths: list[str]
    message: str


class QuantCandidate(TypedDict):
    """QuantCandidate is layer 0's projections (``fields``) against one checkpoint."""

    reference_dir: str
    fields: list[str]
    stats: list[QuantStats]


# --- quant_module_facts ---------------------------------------------------


class QuantModuleArgs(TypedDict):
    """QuantModuleArgs names a quantized weights module."""

    weights_module: str


class QuantModuleFacts(TypedDict):
    """QuantModuleFacts are a quantized module's *_config() functions' values
    (name → its config), the ones that raised, and whether it defines the
    behaviour gate 3 judges."""

    configs: dict[str, GeneratedFacts]
    raised: dict[str, str]
    rope_lut: bool
    # ``rope_module`` is the module whose generate_rope_lut the folder uses when
    # its own module has none: the one its config class comes from.
    rope_module: str
    rms_norm: bool
    import_failure: QuantImportFailure | None


# --- quant_e2e ------------------------------------------------------------


class QuantE2EOnlyArgs(QuantE2EArgs):
    """QuantE2EOnlyArgs ask for quantized gate 2 alone, when the bf16 gate 2
    is reused from its record: the reference model and the canonical
    prompt's token ids as recorded."""

    model_dir: str
    prompt_tokens: list[int]


# --- quant_family_facts ---------------------------------------------------


class QuantFamilyArgs(TypedDict):
    """QuantFamilyArgs names a deployed family's quantized module (Gemma 3,
    Phi-3), its family, the reference and what the module reads its RoPE
    factor tables from (the bundle)."""

    weights_module: str
    family: str
    reference_dir: str
    source: str


class QuantFamilyFacts(TypedDict):
    """QuantFamilyFacts are a deployed family's module as the worker evaluates
    it: its numeric top-level constants, which layers it makes global, and
    its RoPE tables against transformers'."""

    # ``constants`` are the module's numeric top-level constants as Python
    # evaluates them (EMBED_SCALE = float(np.sqrt(D)) included).
    constants: dict[str, float]
    # ``global_layers`` are the layers the module's is_global_layer makes
    # global; null when it defines none.
    global_layers: list[int] | None
    rope: list[QuantRopeTable]
    rope_error: str
    # ``factor_rel_diff`` is, for Phi-3, the largest relative difference of the
    # LongRoPE factor tables the module reads (from the bundle) against
    # config.json's, and ``factor_rel_diff_bf16`` the same after rounding config.json's
    # to bf16 (0 when the bundle's are its bf16 rounding); -1 when the
    # module reads none.
    factor_rel_diff: float
    factor_rel_diff_bf16: float
    import_failure: QuantImportFailure | None


class QuantRopeTable(TypedDict):
    """QuantRopeTable is one of the module's RoPE tables against transformers'
    for the same positions: ``label`` names the table (a layer and its kind, a
    LongRoPE range)."""

    label: str
    positions: list[int]
    max_abs_diff: float
    # ``other_max_abs_diff`` is the same table against transformers' other kind (Gemma:
    # the global table for a local layer); -1 when there is no other kind.
    other_max_abs_diff: float
