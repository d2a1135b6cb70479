"""The two reference ops Go calls: what a recording would be keyed on (cheap,
no torch), and the recording itself through the reference HfRunner."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any, cast

from phase0_shim import progress, reference
from phase0_shim.opargs import NoResult, op
from phase0_shim.optypes import BaselineArgs, PromptSet, PromptTokens, RecordReferenceArgs, ReferencePlan
from phase0_shim.prompts import BUNDLED_PROMPTS_DIR, PromptStyle, read_prompts, style_from_model_id

DTYPES = ("bfloat16", "float32")
# The stage name phase0 prints for the recording, which progress lines repeat.
STAGE = "reference"


def _prompt_set(args: BaselineArgs) -> PromptSet:
    """The prompts a recording covers: the style's prompt file of the verify
    tree (else the bundled one), with ``prompt`` (when given) as the canonical
    prompt, put first if the file lacks it."""
    # The same choice as runner.resolve_runner, made without importing torch:
    # a named tree must hold the runner (no quiet fallback to ours).
    llms = args.get("llms_dir")
    if llms:
        verify = Path(llms).resolve() / "verify"
        runner_path = verify / "runners" / "hf_runner.py"
        if not runner_path.is_file():
            raise FileNotFoundError(
                f"{runner_path} does not exist: {Path(llms).resolve()} is not an mlir-air programming_examples/llms tree"
            )
        kind, prompts_dir = "verify", verify / "prompts"
    else:
        kind, prompts_dir = "bundled", BUNDLED_PROMPTS_DIR
        runner_path = Path(reference.__file__).resolve().parent / "hf_runner.py"
    model_id = str(args.get("model_id") or args["model_dir"])
    style = args.get("prompt_style") or style_from_model_id(model_id)
    if style not in ("base", "instruct"):
        raise ValueError(f"prompt style {style!r} is not one of 'base', 'instruct'")
    prompts_file = prompts_dir / f"{cast(PromptStyle, style)}.txt"
    prompts = read_prompts(prompts_file)
    custom = args.get("prompt")
    if custom and custom not in prompts:
        prompts.insert(0, str(custom))
    if not prompts:
        raise ValueError(f"{prompts_file}: no prompt (every line is blank or a # comment)")
    return {
        "runner": kind,
        "runner_path": str(runner_path),
        "prompts_file": str(prompts_file),
        "prompt_style": style,
        "prompts": prompts,
        "canonical_prompt": prompts.index(custom) if custom else 0,
    }


@op("reference_plan", BaselineArgs, ReferencePlan, nonempty=("model_dir",))
def reference_plan(args: BaselineArgs) -> ReferencePlan:
    """The facts a recording is keyed on, without loading torch or the model."""
    versions = reference.versions()
    return {
        **_prompt_set(args),
        "tokenizer_sha256": reference.tokenizer_sha256(args["model_dir"]),
        "torch_version": versions["torch_version"],
        "transformers_version": versions["transformers_version"],
    }


@op("prompt_tokens", BaselineArgs, PromptTokens, nonempty=("model_dir",))
def prompt_tokens(args: BaselineArgs) -> PromptTokens:
    """The canonical prompt gate 2 prefills (``prompt``, else the style's
    first) and its token count with the model's tokenizer, without torch's
    model: Go refuses a prompt longer than max_seq before the model loads."""
    from phase0_shim.tokens import load_tokenizer

    plan = _prompt_set(args)
    prompt = plan["prompts"][plan["canonical_prompt"]]
    tokenizer = load_tokenizer(args["model_dir"])
    return {"prompt": prompt, "tokens": len(tokenizer.encode(prompt))}


@op("record_reference", RecordReferenceArgs, NoResult, nonempty=("model_dir", "out_dir"))
def record_reference(args: RecordReferenceArgs) -> NoResult:
    """Record the reference (or an fp32 self-check candidate) through HfRunner
    into ``out_dir``, which Go reads back. ``meta`` (Go's key) is written into
    reference.json as given; dtype is "bfloat16" or "float32"."""
    import torch
    from transformers import AutoModelForCausalLM

    from phase0_shim.config import generated_config, runner_config
    from phase0_shim.runner import resolve_runner
    from phase0_shim.tokens import load_tokenizer

    model_dir = str(args["model_dir"])
    steps = int(args.get("steps") or reference.DEFAULT_STEPS)
    k = int(args.get("top_k") or reference.DEFAULT_TOP_K)
    dtype = str(args.get("dtype") or "bfloat16")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    plan = _prompt_set(args)
    resolved = resolve_runner(args.get("llms_dir"))

    tokenizer = load_tokenizer(model_dir)
    encoded = [[int(t) for t in tokenizer.encode(p)] for p in plan["prompts"]]
    max_seq = max(int(args.get("max_seq") or 0), max(len(t) for t in encoded) + steps)
    weights_module = args.get("weights_module")
    config = generated_config(weights_module) if weights_module else runner_config(args.get("config") or {})

    start = time.perf_counter()
    model = None
    with progress.loading_model(STAGE, f"loading the HF {dtype} model"):
        if dtype != "bfloat16":
            # Upstream's HfRunner always loads bf16; any other dtype is handed in
            # through its model= hook, so the same runner code records it.
            model = AutoModelForCausalLM.from_pretrained(
                model_dir, dtype=getattr(torch, dtype), low_cpu_mem_usage=True, use_safetensors=True
            )
        runner = resolved.runner_cls(model_dir, config, max_seq, lite_mode=True, model=model)
        full = resolved.runner_cls(model_dir, config, max_seq, lite_mode=False, model=runner.model)
    seconds_load = time.perf_counter() - start

    gens, diag, n_threads, seconds_decode, seconds_diagnosis = _decode_and_diagnose(
        runner, full, plan, encoded, steps, k
    )

    meta = {
        **(args.get("meta") or {}),
        "role": "reference" if dtype == "bfloat16" else "candidate",
        "runner": f"{resolved.kind} HfRunner ({dtype})",
        "runner_path": str(resolved.path),
        "model_id": str(args.get("model_id") or model_dir),
        "model_dir": model_dir,
        "dtype": dtype,
        "tokenizer_sha256": reference.tokenizer_sha256(model_dir),
        "prompt_style": plan["prompt_style"],
        "prompts_file": plan["prompts_file"],
        "canonical_prompt": plan["canonical_prompt"],
        "n_layers": int(config.n_layers),
        "seconds": {"load": seconds_load, "decode": seconds_decode, "diagnosis": seconds_diagnosis},
        "torch_threads": n_threads,
        **reference.versions(),
    }
    reference.write(args["out_dir"], gens, diag, meta)
    return {}


def _decode_and_diagnose(
    runner: Any, full: Any, plan: PromptSet, encoded: list[list[int]], steps: int, k: int
) -> tuple[list[Any], Any, int, float, float]:
    """Greedy-decode every prompt ``steps`` steps (top-``k`` per step), then
    the diagnosis prefill of the canonical prompt through ``full``: the
    generations, the diagnosis tensors, the torch threads used and each
    part's seconds."""
    import torch

    from phase0_shim.threads import recording_threads, torch_threads, usable_cpus

    # Whichever runner records, a small model leaves a CPU free: see threads.py.
    parameters = sum(p.numel() for p in runner.model.parameters())
    n_threads = recording_threads(torch.get_num_threads(), usable_cpus(), parameters)
    with torch_threads(n_threads):
        start = time.perf_counter()
        decoding = progress.Progress(STAGE)
        n = len(encoded)

        def step_done(i: int, j: int) -> None:
            decoding.update(i * steps + j + 1, n * steps, f"prompt {i + 1}/{n}, step {j + 1}/{steps}")

        gens = [
            reference.generate(runner, p, t, steps, k, on_step=functools.partial(step_done, i))
            for i, (p, t) in enumerate(zip(plan["prompts"], encoded))
        ]
        decoding.finish(f"{n} prompts × {steps} steps decoded")
        seconds_decode = time.perf_counter() - start
        start = time.perf_counter()
        with progress.layers(STAGE, runner.model, "diagnosis prefill (canonical prompt)"):
            diag = reference.diagnosis_tensors(full, encoded[plan["canonical_prompt"]])
        seconds_diagnosis = time.perf_counter() - start

    return gens, diag, n_threads, seconds_decode, seconds_diagnosis
