"""Entry points Go calls through the embedded interpreter.

Each function takes one JSON string and returns a JSON string, or a tuple of
(JSON string, float32 C-contiguous 1-D NumPy array). Python runs things and
reports facts; Go judges them. JSON output never contains NaN or Infinity.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim import facts, opargs, progress
from phase0_shim.calibration import passage_facts
from phase0_shim.config import generated_config, runner_config
from phase0_shim.prompts import canonical_prompt, style_from_model_id
from phase0_shim.tokens import load_tokenizer, special_ids, special_token_ids, token_info, top_tokens

# Entry points implemented next to their helpers; re-exported so Go reaches
# every op through this one module.
from phase0_shim.behaviour import behaviour_facts, module_config  # noqa: F401
from phase0_shim.default_model import prepare as default_model  # noqa: F401
from phase0_shim.hub import download  # noqa: F401
from phase0_shim.reference_op import record_reference, reference_plan  # noqa: F401
from phase0_shim.session import reset_session  # noqa: F401
from phase0_shim.sources import python_sources  # noqa: F401

DEFAULT_MAX_SEQ = 64
TOP_K = 10
# The stage name phase0 prints for the baseline op, which progress lines repeat.
STAGE_BASELINE = "hf_baseline"



def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, allow_nan=False, ensure_ascii=False)


def environment(args_json: str) -> str:
    """Versions of what the worker runs on (empty when a package is missing); a liveness check too."""
    import sys
    from importlib import metadata

    opargs.parse(args_json, ())

    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return ""

    return _dumps(
        {
            "executable": sys.executable,
            "version": platform.python_version(),
            "torch": version("torch"),
            "transformers": version("transformers"),
            "safetensors": version("safetensors"),
            "numpy": np.__version__,
        }
    )


def baseline(args_json: str) -> tuple[str, np.ndarray]:
    """Gate 2: prefill the canonical prompt through the reference HfRunner in bf16.

    Args: {model_dir, model_id, llms_dir|null, prompt_style|null, prompt|null,
    config{...}, weights_module|null, max_seq=64, decode_n=0}.
    """
    import torch
    import transformers

    # Imported here: the runner pulls in torch, which the download and
    # default-model ops do not need.
    from phase0_shim.runner import resolve_runner

    args = opargs.parse(args_json, ("model_dir",))
    model_dir = str(args["model_dir"])
    model_id = str(args.get("model_id") or model_dir)
    max_seq = int(args.get("max_seq") or DEFAULT_MAX_SEQ)
    decode_n = int(args.get("decode_n") or 0)
    if decode_n < 0:
        raise ValueError(f"decode_n must be >= 0, got {decode_n}")

    resolved = resolve_runner(args.get("llms_dir"))
    style = args.get("prompt_style") or style_from_model_id(model_id)
    prompt = args.get("prompt") or canonical_prompt(resolved.prompts_dir, style)

    tokenizer = load_tokenizer(model_dir)
    tokens = [int(t) for t in tokenizer.encode(prompt)]
    if len(tokens) + max(decode_n - 1, 0) > max_seq:
        raise ValueError(
            f"prompt ({len(tokens)} tokens) plus {decode_n} decoded tokens does not fit max_seq {max_seq}"
        )

    weights_module = args.get("weights_module")
    if weights_module:
        config = generated_config(weights_module)
    else:
        config = runner_config(args.get("config") or {})

    start = time.perf_counter()
    with progress.heartbeat(STAGE_BASELINE, "loading the HF bf16 model"):
        runner = resolved.runner_cls(model_dir, config, max_seq, lite_mode=True)
    seconds_load = time.perf_counter() - start

    start = time.perf_counter()
    with progress.layers(STAGE_BASELINE, getattr(runner, "model", None), f"canonical prompt ({len(tokens)} tokens)"):
        record = runner.prefill(np.asarray(tokens, dtype=np.int64))
    seconds_prefill = time.perf_counter() - start
    logits = np.ascontiguousarray(np.asarray(record.logits_at_pred, dtype=np.float32).reshape(-1))

    result: dict[str, Any] = {
        "runner": resolved.kind,
        "runner_path": str(resolved.path),
        "prompts_dir": str(resolved.prompts_dir),
        "prompt": prompt,
        "prompt_style": style,
        "tokens": tokens,
        "top1_token": int(record.top1_token),
        "vocab_size": int(config.vocab_size),
        "logits_size": int(logits.size),
        "tokenizer_size": len(tokenizer),
        "special": special_token_ids(tokenizer, model_dir),
        "top": [t.to_json() for t in top_tokens(tokenizer, logits, TOP_K)],
        "decode": None,
        "seconds_load": seconds_load,
        "seconds_prefill": seconds_prefill,
        "seconds_decode": None,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
    }
    if decode_n > 0:
        start = time.perf_counter()
        ids = [int(record.top1_token)]
        for step in range(decode_n - 1):
            out = runner.decode_step(ids[-1], len(tokens) + step)
            ids.append(int(out.top1_token))
        result["seconds_decode"] = time.perf_counter() - start
        result["decode"] = {"ids": ids, "text": tokenizer.decode(ids)}
    # Perplexity facts on the fixed passage, through the very model the runner loaded.
    model = getattr(runner, "model", None)
    if model is None:
        raise ValueError(f"{resolved.path}: HfRunner keeps no .model, which the calibration passage needs")
    start = time.perf_counter()
    with progress.layers(STAGE_BASELINE, model, "calibration passage"):
        result["calibration"] = passage_facts(model, tokenizer)
    result["seconds_calibration"] = time.perf_counter() - start
    return _dumps(result), logits


def decode_ids(args_json: str) -> str:
    """{model_dir, ids[]} → {texts[] (one per id), text (all ids decoded together), tokens[]}."""

    args = opargs.parse(args_json, ("model_dir",))
    ids = args.get("ids") or []
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ValueError(f"ids must be a list of integers, got {ids!r}")
    tokenizer = load_tokenizer(str(args["model_dir"]))
    specials = special_ids(tokenizer)
    infos = [token_info(tokenizer, i, None, specials) for i in ids]
    known = [i for i in ids if 0 <= i < len(tokenizer)]
    return _dumps(
        {
            "texts": [info.text for info in infos],
            "tokens": [info.to_json() for info in infos],
            "text": tokenizer.decode(known),
        }
    )


def loader_facts(args_json: str) -> str:
    """Gate 1 facts: {weights_module, model_dir} → what load_weights returned."""
    args = opargs.parse(args_json, ("weights_module", "model_dir"))
    module, model_dir = Path(args["weights_module"]), Path(args["model_dir"])
    what = f"{module.stem}.load_weights"
    with progress.reading("python_weights", what, progress.checkpoint_bytes(model_dir)):
        return _dumps(facts.loader_facts(module, model_dir))


def config_facts(args_json: str) -> str:
    """Gate 3 facts: {weights_module|null, model_dir} → {generated|null, transformers}.

    ``generated`` is the module's LlamaConfig() (null without a module);
    ``transformers`` is what AutoConfig resolved and the parameters of the
    model transformers would build from it.
    """
    args = opargs.parse(args_json, ("model_dir",))
    module = args.get("weights_module")
    with progress.heartbeat("config_facts", "importing transformers, building the model on the meta device"):
        return _dumps(
            {
                "generated": facts.generated_config_facts(Path(module)) if module else None,
                "transformers": facts.transformers_facts(Path(args["model_dir"])),
            }
        )
