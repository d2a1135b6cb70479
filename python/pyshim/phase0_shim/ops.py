"""Entry points Go calls through the embedded interpreter.

Each op takes one JSON string and returns a JSON string, or a tuple of (JSON
string, float32 C-contiguous 1-D NumPy array). Its arguments and result are
the TypedDicts of :mod:`phase0_shim.optypes`, parsed and checked by the
:func:`phase0_shim.opargs.op` decorator, generated from Go's package ``wire``.
Python runs things and reports facts; Go judges them. JSON output never
contains NaN or Infinity.
"""

from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Any, cast

import numpy as np

from phase0_shim import facts, heap, progress
from phase0_shim.calibration import passage_facts
from phase0_shim.config import generated_config, runner_config
from phase0_shim.opargs import NoArgs, op, op_with_array
from phase0_shim.optypes import (
    BaselineArgs,
    BaselineResult,
    ConfigFactsResult,
    Decode,
    Environment,
    LoaderFactsResult,
    ModuleArgs,
    QuantE2EFacts,
)
from phase0_shim.prompts import PromptStyle, canonical_prompt, style_from_model_id
from phase0_shim.tokens import load_tokenizer, special_token_ids, top_tokens

# Entry points implemented next to their helpers; re-exported so Go reaches
# every op through this one module.
from phase0_shim.behaviour import behaviour_facts, module_config  # noqa: F401
from phase0_shim.default_model import default_model  # noqa: F401
from phase0_shim.hub import download  # noqa: F401
from phase0_shim.reference_op import prompt_tokens, record_reference, reference_plan  # noqa: F401
from phase0_shim.quant import quant_e2e, quant_facts, quant_family_facts, quant_module_facts  # noqa: F401
from phase0_shim.session import STATE, reset_session  # noqa: F401
from phase0_shim.sources import python_sources  # noqa: F401

DEFAULT_MAX_SEQ = 64
TOP_K = 10
# The stage name phase0 prints for the baseline op, which progress lines repeat.
STAGE_BASELINE = "hf_baseline"


@op("environment", NoArgs, Environment)
def environment(_: NoArgs) -> Environment:
    """Versions of what the worker runs on (empty when a package is missing); a liveness check too."""
    import sys
    from importlib import metadata

    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return ""

    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "torch": version("torch"),
        "transformers": version("transformers"),
        "safetensors": version("safetensors"),
        "numpy": np.__version__,
    }


@op_with_array("baseline", BaselineArgs, BaselineResult, nonempty=("model_dir",))
def baseline(args: BaselineArgs) -> tuple[BaselineResult, np.ndarray]:
    """Gate 2: prefill the canonical prompt through the reference HfRunner in
    bf16; the result's facts and the last position's logits."""
    import torch
    import transformers

    # Imported here: the runner pulls in torch, which the download and
    # default-model ops do not need.
    from phase0_shim.runner import resolve_runner

    model_dir = str(args["model_dir"])
    model_id = str(args.get("model_id") or model_dir)
    max_seq = int(args.get("max_seq") or DEFAULT_MAX_SEQ)
    decode_n = int(args.get("decode_n") or 0)
    if decode_n < 0:
        raise ValueError(f"decode_n must be >= 0, got {decode_n}")

    resolved = resolve_runner(args.get("llms_dir"))
    style, prompt, tokenizer, tokens = _prompt(args, resolved.prompts_dir, model_id, max_seq, decode_n)
    weights_module = args.get("weights_module")
    config = generated_config(weights_module) if weights_module else runner_config(args.get("config") or {})

    # A quantized key's baseline is Go's quant_baseline stage: its lines say so.
    stage = "quant_baseline" if args.get("quant") else STAGE_BASELINE
    if not args.get("quant"):
        # No quantized gate 2 takes gate 1's tensors (gate 1 FAILed, or a
        # bf16 key): drop them before the model loads, where they would sit
        # beside it for nothing (the whole model in bf16, 7.7 GB at Gemma 3 4B).
        STATE.drop_quant()
    start = time.perf_counter()
    with progress.loading_model(stage, "loading the HF bf16 model"):
        runner = resolved.runner_cls(model_dir, config, max_seq, lite_mode=True)
    seconds_load = time.perf_counter() - start

    start = time.perf_counter()
    with progress.layers(stage, getattr(runner, "model", None), f"canonical prompt ({len(tokens)} tokens)"):
        record = runner.prefill(np.asarray(tokens, dtype=np.int64))
    seconds_prefill = time.perf_counter() - start
    logits = np.ascontiguousarray(np.asarray(record.logits_at_pred, dtype=np.float32).reshape(-1))

    decode, seconds_decode = _decode(runner, tokenizer, record, len(tokens), decode_n)
    # Perplexity facts on the fixed passage, through the very model the runner loaded.
    model = getattr(runner, "model", None)
    if model is None:
        raise ValueError(f"{resolved.path}: HfRunner keeps no .model, which the calibration passage needs")
    start = time.perf_counter()
    with progress.layers(stage, model, "calibration passage"):
        calibration = passage_facts(model, tokenizer)
    seconds_calibration = time.perf_counter() - start
    quant_facts: QuantE2EFacts | None = None
    if q := args.get("quant"):
        # Quantized gate 2: the same model, its projections swapped for the
        # folder's dequantized ones after the bf16 prefills above.
        from phase0_shim.quant.end_to_end import e2e_facts

        quant_facts = e2e_facts(model, tokens, calibration["tokens"], q, stage)
    result: BaselineResult = {
        "runner": resolved.kind,
        "runner_path": str(resolved.path),
        "prompts_dir": str(resolved.prompts_dir),
        "prompt": prompt,
        "prompt_style": style,
        "tokens": tokens,
        "top1_token": int(record.top1_token),
        "vocab_size": int(config.vocab_size),
        "tokenizer_size": len(tokenizer),
        "special": special_token_ids(tokenizer, model_dir),
        "top": [t.to_json() for t in top_tokens(tokenizer, logits, TOP_K)],
        "decode": decode,
        "calibration": calibration,
        "seconds_load": seconds_load,
        "seconds_prefill": seconds_prefill,
        "seconds_decode": seconds_decode,
        "seconds_calibration": seconds_calibration,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
    }
    if quant_facts is not None:
        result["quant"] = quant_facts
    return result, logits


def _prompt(args: BaselineArgs, prompts_dir: Path, model_id: str, max_seq: int, decode_n: int) -> tuple[str, str, Any, list[int]]:
    """The prompt style, the prompt (the one given, else the canonical prompt
    of the style), the model's tokenizer and the prompt's tokens, which with
    the decoded ones must fit ``max_seq``."""
    style = args.get("prompt_style") or style_from_model_id(model_id)
    prompt = args.get("prompt") or canonical_prompt(prompts_dir, cast(PromptStyle, style))
    tokenizer = load_tokenizer(str(args["model_dir"]))
    tokens = [int(t) for t in tokenizer.encode(prompt)]
    if len(tokens) + max(decode_n - 1, 0) > max_seq:
        raise ValueError(f"prompt ({len(tokens)} tokens) plus {decode_n} decoded tokens does not fit max_seq {max_seq}")
    return style, prompt, tokenizer, tokens


def _decode(runner: Any, tokenizer: Any, record: Any, n_prompt: int, decode_n: int) -> tuple[Decode | None, float | None]:
    """Greedy-decode ``decode_n`` tokens after the prefill ``record`` of an
    ``n_prompt``-token prompt (none when 0), and the seconds it took."""
    if decode_n <= 0:
        return None, None
    start = time.perf_counter()
    ids = [int(record.top1_token)]
    for step in range(decode_n - 1):
        out = runner.decode_step(ids[-1], n_prompt + step)
        ids.append(int(out.top1_token))
    return {"ids": ids, "text": tokenizer.decode(ids)}, time.perf_counter() - start


@op("loader_facts", ModuleArgs, LoaderFactsResult, nonempty=("weights_module", "model_dir"))
def loader_facts(args: ModuleArgs) -> LoaderFactsResult:
    """Gate 1 facts: what the module's load_weights returned."""
    module, model_dir = Path(str(args["weights_module"])), Path(args["model_dir"])
    what = f"{module.stem}.load_weights"
    try:
        with progress.reading("python_weights", what, progress.checkpoint_bytes(model_dir), model_dir):
            return facts.loader_facts(module, model_dir)
    finally:
        # The arrays are gone; their pages go back before the HF model loads.
        heap.release()


@op("config_facts", ModuleArgs, ConfigFactsResult, nonempty=("model_dir",))
def config_facts(args: ModuleArgs) -> ConfigFactsResult:
    """Gate 3 facts: {generated|null, transformers}.

    ``generated`` is the module's LlamaConfig() (null without a module);
    ``transformers`` is what AutoConfig resolved and the parameters of the
    model transformers would build from it.
    """
    module = args["weights_module"]
    with progress.heartbeat("config_facts", "importing transformers, building the model on the meta device"):
        return {
            "generated": facts.generated_config_facts(Path(module)) if module else None,
            "transformers": facts.transformers_facts(Path(args["model_dir"])),
        }
