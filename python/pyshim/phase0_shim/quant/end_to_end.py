"""Quantized gate 2 facts: the dequantized projections patched into the
reference's own transformers model (already loaded by the baseline op: no
second load), prompt and passage prefilled on both sides.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim import progress
from phase0_shim.opargs import op
from phase0_shim.optypes import QuantBound, QuantE2EArgs, QuantE2EFacts, QuantE2EOnlyArgs
from phase0_shim.quant import twin
from phase0_shim.quant.discovery import import_module, find_loader
from phase0_shim.quant.reading import Reference, projection_name
from phase0_shim.quant.families import FamilyReference, detect_family, fused_slot
from phase0_shim.quant.vocab import PROJECTIONS
from phase0_shim.quant.run import Kept, RunKey, as_bf16
from phase0_shim.session import STATE

TOP_K = 5


def _last_logits(model: Any, ids: list[int]) -> Any:
    import torch

    with torch.inference_mode():
        out = model(torch.tensor([ids], dtype=torch.long), use_cache=False, return_dict=True)
    return out.logits[0].to(torch.float32)


def _projection_param(model: Any, layer: int, field: str) -> Any:
    """The HF parameter of LlamaWeights field ``field`` in layer ``layer`` ([out, in])."""
    path = PROJECTIONS[field][1].split(".")
    obj = model.get_decoder().layers[layer]
    for part in path:
        obj = getattr(obj, part)
    return obj.weight


def _projection_slot(model: Any, layer: int, field: str) -> tuple[Any, slice | None]:
    """Where field's weight lives in the loaded model: its own parameter, or
    rows of a fused one (a deployed family's qkv_proj, gate_up_proj)."""
    slot = fused_slot(model.get_decoder().layers[layer], PROJECTIONS[field][1])
    if slot is not None:
        return slot
    return _projection_param(model, layer, field), None


def _put(slot: tuple[Any, slice | None], weight: Any) -> None:
    param, rows = slot
    if rows is None:
        param.data = weight
    else:
        param.data[rows] = weight.to(param.dtype)


def _torch_bf16(value: Any) -> Any:
    """A loader's array as a torch bf16 tensor of the same layout: a view of
    the array itself when it is bf16 already (and torch can share it), else
    one bf16 copy (as_bf16), never a float32 one."""
    import torch

    a = as_bf16(value)
    if not (a.flags.writeable and all(s >= 0 for s in a.strides)):
        a = a.copy()
    return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)


def _as_weight(value: Any) -> Any:
    """A loader's (in, out) array as an HF weight, (out, in) bf16, laid out
    contiguously: torch's bf16 linear on a transposed view takes a path 50-75x
    slower on CPU (a 1B model's passage prefill: 29 min instead of 1.5)."""
    return _torch_bf16(value).T.contiguous()


def _drain(items: list[tuple[int, str, Any]]) -> Iterator[tuple[int, str, Any]]:
    """The kept tensors in order, each dropped from the list as it is taken,
    so that the contiguous copy patched in replaces it rather than doubling it."""
    items.reverse()
    while items:
        yield items.pop()


def _patch_head(model: Any, value: Any) -> bool:
    """Put the loader's lm_head ((vocab, emb), as the NPU uses it) into the
    model when it differs from the model's own: a quantized copy of a tied
    head gets a parameter of its own, so the embedding stays bf16. Returns
    whether the head was patched (False: it already was the model's)."""
    import torch

    head = model.get_output_embeddings()
    w = _torch_bf16(value).to(head.weight.dtype)
    if tuple(w.shape) != tuple(head.weight.shape):
        raise ValueError(f"lm_head: the loader's {list(w.shape)} does not fit the model's {list(head.weight.shape)}")
    if torch.equal(w, head.weight):
        return False
    head.weight = torch.nn.Parameter(w, requires_grad=False)
    return True


def _side(logits: Any) -> tuple[list[int], list[float]]:
    import torch

    lp = torch.log_softmax(logits, dim=-1)
    top = torch.topk(lp, TOP_K)
    return [int(i) for i in top.indices.tolist()], [float(v) for v in top.values.tolist()]


def _prefill(model: Any, prompt_ids: list[int], passage_ids: list[int]) -> tuple[Any, Any, list[Any]]:
    """The next-token logits at the prompt's last position, the passage's
    logits (each position but the last) and every decoder layer's output
    hidden states on the prompt ([seq, hidden] float32 each)."""
    import torch

    with torch.inference_mode():
        out = model(torch.tensor([prompt_ids], dtype=torch.long), use_cache=False, output_hidden_states=True, return_dict=True)
    prompt = out.logits[0, -1].to(torch.float32)
    hidden = [h[0].to(torch.float32) for h in out.hidden_states[1:]]
    del out
    return prompt, _last_logits(model, passage_ids)[:-1], hidden


def _per_token(ref_lp: Any, logits: Any, target: Any) -> tuple[list[float], list[float], list[int], list[float]]:
    """Per passage position, against the reference's log-probabilities
    ``ref_lp``: KL(bf16 || x), x's NLL of the next token, x's argmax, and
    the drop of the reference's top-1 probability (p_bf16 - p_x)."""
    import torch

    lx = torch.log_softmax(logits, dim=-1)
    kl = (ref_lp.exp() * (ref_lp - lx)).sum(-1)
    nll = -lx.gather(1, target).squeeze(1)
    top = ref_lp.argmax(-1, keepdim=True)
    dp = (ref_lp.gather(1, top).exp() - lx.gather(1, top).exp()).squeeze(1)
    return (
        [float(x) for x in kl.tolist()],
        [float(x) for x in nll.tolist()],
        [int(x) for x in lx.argmax(-1).tolist()],
        [float(x) for x in dp.tolist()],
    )


def _cosines(ref: list[Any], other: list[Any]) -> list[float]:
    """Per decoder layer, the mean over the prompt's tokens of the cosine
    between the reference's hidden state and ``other``'s."""
    import torch

    return [float(torch.nn.functional.cosine_similarity(a, b, dim=-1).mean()) for a, b in zip(ref, other, strict=True)]


def e2e_facts(model: Any, prompt_ids: list[int], passage_ids: list[int], args: QuantE2EArgs, stage: str = "quant_baseline") -> QuantE2EFacts:
    """Prefill the prompt and the passage through ``model`` three times, in
    the same loaded model: as loaded (bf16); with every projection the
    folder's loader dequantizes patched in, layer by layer; and as the twin
    (every projection of the reference checkpoint, and an untied head, put
    through the format's rule ``args["rule"]`` and back, one at a time in
    place of the bundle's: one copy of the projections at a time).
    Facts only: each side's top-5 at the prompt's last position and its
    KL(bf16 || x) there; per passage position each side's KL, NLL, argmax
    and drop of the reference's top-1 probability; per decoder layer the
    cosine of each side's hidden states on the prompt with the reference's.
    The model's weights stay patched (the twin's, or the bundle's when no
    twin was made): the caller drops it."""
    import torch

    module, failure = import_module(Path(args["weights_module"]))
    if failure is not None:
        raise ImportError(f"{args['weights_module']}: {failure['message']}")
    n_layers = int(args["n_layers"])
    # Gate 1's run in this session, when it kept its tensors for this
    # loader, source and depth: they are patched in instead of running the
    # loader again, and its reader of the same reference is read on.
    run = STATE.take_quant(RunKey.of(args["weights_module"], args["source"], n_layers))
    kept = run.take_kept() if run is not None else None
    same = run is not None and Path(run.reference_dir) == Path(args["reference_dir"])
    base = run.reference.base if run is not None and same else Reference(Path(args["reference_dir"]))
    del run
    ref = FamilyReference(base, detect_family(base))
    rule = args.get("rule")
    twin_error = twin.rule_problem(rule)
    if not twin_error and (lacking := twin.missing(ref, n_layers)):
        twin_error = f"the reference {args['reference_dir']} lacks {lacking[0]}" + (f" (and {len(lacking) - 1} more)" if len(lacking) > 1 else "") + ", which the twin needs"
    target = torch.tensor(passage_ids[1:], dtype=torch.long)[:, None]
    with progress.layers(stage, model, "bf16 weights: prompt and passage"):
        ref_prompt, ref_passage, ref_hidden = _prefill(model, prompt_ids, passage_ids)
    ref_lp = torch.log_softmax(ref_passage, dim=-1)
    ref_nll = [float(x) for x in (-ref_lp.gather(1, target).squeeze(1)).tolist()]
    ref_argmax = [int(x) for x in ref_lp.argmax(-1).tolist()]
    del ref_passage
    # Where each projection lives, read before any parameter is dropped (a
    # fused tensor's rows are sized from o_proj's input width). Every rule
    # groups within a row, so a fused parameter's twin is each of its
    # projections' twins, row by row.
    slots = {(k, field): _projection_slot(model, k, field) for k in range(n_layers) for field in PROJECTIONS}
    making_twin = not twin_error and rule is not None
    head = making_twin and twin.untied_head(model, ref)
    # The head as loaded (the embedding itself when tied): a bundle's own
    # head gives way to it for the twin when the reference has none of its own.
    loaded_head = model.get_output_embeddings().weight if making_twin and not head else None
    # The bundle first, then the twin in its place. The model's projections
    # are dropped before the loader runs and the loader's arrays become them
    # (a bf16 array without a copy): a loader that returns the whole model
    # at once (upstream's load_*_weights) costs about one model's memory, not
    # two. The twin is then made from the reference checkpoint, one
    # projection at a time in place of the bundle's, so the worker never
    # holds both (at 8 B, one copy of the projections in bf16, not two).
    loader, patched, head_patched, from_gate_1 = _patch_bundle(model, module, ref, slots, args, kept, stage)
    del kept
    with progress.layers(stage, model, "dequantized weights: prompt and passage"):
        q_prompt, q_passage, q_hidden = _prefill(model, prompt_ids, passage_ids)
    kl_q, nll_q, arg_q, dp_q = _per_token(ref_lp, q_passage, target)
    q_cosines = _cosines(ref_hidden, q_hidden)
    del q_passage, q_hidden
    ref_ids, ref_top_lp = _side(ref_prompt)
    q_ids, q_lp = _side(q_prompt)
    twin_facts = _NO_TWIN
    if making_twin and rule is not None:
        if head_patched and loaded_head is not None:
            model.get_output_embeddings().weight = loaded_head
        del loaded_head
        twin_facts = _twin_side(model, ref, slots, rule, head, ref_prompt, ref_lp, ref_hidden, prompt_ids, passage_ids, target, stage)
    return {
        "loader": loader,
        "patched": patched,
        "head_patched": head_patched,
        "from_gate_1": from_gate_1,
        "reference_top": ref_ids,
        "reference_top_logprobs": ref_top_lp,
        "quantized_top": q_ids,
        "quantized_top_logprobs": q_lp,
        "kl_prompt": _kl(ref_prompt, q_prompt)[0],
        "passage_tokens": len(passage_ids),
        "kl_passage": kl_q,
        "reference_nll": ref_nll,
        "quantized_nll": nll_q,
        "reference_argmax": ref_argmax,
        "quantized_argmax": arg_q,
        "dp_passage": dp_q,
        "hidden_cosine": q_cosines,
        "twin_rule": twin.describe(rule) if rule is not None and not twin.rule_problem(rule) else "",
        "twin_error": twin_error,
        **twin_facts,  # type: ignore[typeddict-item]
    }


# A twin that was not made (no rule, or one the reference cannot take):
# its facts are empty and twin_error says why.
_NO_TWIN: dict[str, Any] = {
    "twin_quantized": 0,
    "twin_head": False,
    "twin_top": [],
    "twin_top_logprobs": [],
    "kl_prompt_twin": 0.0,
    "kl_passage_twin": [],
    "twin_nll": [],
    "twin_argmax": [],
    "dp_passage_twin": [],
    "hidden_cosine_twin": [],
}


def _twin_side(
    model: Any,
    ref: Reference,
    slots: dict[tuple[int, str], tuple[Any, slice | None]],
    rule: QuantBound,
    head: bool,
    ref_prompt: Any,
    ref_lp: Any,
    ref_hidden: list[Any],
    prompt_ids: list[int],
    passage_ids: list[int],
    target: Any,
    stage: str,
) -> dict[str, Any]:
    """The twin's facts: every projection (and an untied head) of the
    reference checkpoint put through ``rule`` and back in place of what the
    model holds, the prompt and the passage prefilled, each figure against
    the reference's. The model keeps the twin's weights."""
    with progress.heartbeat(stage, f"the twin: {twin.describe(rule)}, projection by projection"):
        _patch_twin(model, ref, slots, rule, head)
    with progress.layers(stage, model, "the twin: prompt and passage"):
        t_prompt, t_passage, t_hidden = _prefill(model, prompt_ids, passage_ids)
    kl_t, nll_t, arg_t, dp_t = _per_token(ref_lp, t_passage, target)
    t_ids, t_lp = _side(t_prompt)
    return {
        "twin_quantized": len(slots),
        "twin_head": head,
        "twin_top": t_ids,
        "twin_top_logprobs": t_lp,
        "kl_prompt_twin": _kl(ref_prompt, t_prompt)[0],
        "kl_passage_twin": kl_t,
        "twin_nll": nll_t,
        "twin_argmax": arg_t,
        "dp_passage_twin": dp_t,
        "hidden_cosine_twin": _cosines(ref_hidden, t_hidden),
    }


def _patch_twin(model: Any, ref: Reference, slots: dict[tuple[int, str], tuple[Any, slice | None]], rule: QuantBound, head: bool) -> None:
    """Put the twin of each projection (and of the head when ``head``) in
    place of what the model holds, one at a time: the reference's weight as
    the model loads it (bf16), through ``rule`` and back. A parameter of its
    own lets go of the bundle's tensor as the twin's takes its place; rows
    of a fused one are overwritten. The peak is one copy of the
    projections, one tensor's bf16 copies and one chunk's float32 temporaries."""
    import torch

    with torch.no_grad():
        for (layer, field), slot in slots.items():
            hf = projection_name(layer, field)
            dtype = slot[0].dtype
            _put(slot, twin.round_trip(_torch_bf16(ref.get(hf)).to(dtype), rule).to(dtype))
            ref.release(hf)
        if head:
            w = model.get_output_embeddings().weight
            w.data = twin.round_trip(_torch_bf16(ref.get("lm_head.weight")).to(w.dtype), rule).to(w.dtype)
            ref.release("lm_head.weight")


def _patch_bundle(
    model: Any,
    module: Any,
    ref: Reference,
    slots: dict[tuple[int, str], tuple[Any, slice | None]],
    args: QuantE2EArgs,
    kept: Kept | None,
    stage: str,
) -> tuple[str, int, bool, bool]:
    """Drop the model's projections, then patch in every one the folder's
    loader dequantizes (or gate 1 kept: ``kept``), layer by layer; what the loader did
    not give keeps the reference's weights, so the prefill runs and Go
    judges the count. Returns the loader, the projections patched, whether
    the head was, and whether the tensors came from gate 1."""
    import torch

    n_layers = int(args["n_layers"])
    shapes = {}
    for k in range(n_layers):
        for field in PROJECTIONS:
            param, rows = slots[k, field]
            if rows is None:
                shapes[k, field] = tuple(param.shape)
                param.data = torch.empty(0, dtype=param.dtype)
            else:  # rows of a fused parameter: overwritten in place
                shapes[k, field] = (rows.stop - rows.start, *param.shape[1:])
    layers: Iterable[tuple[int, str, Any]]
    from_gate_1 = kept is not None
    if kept is not None:
        loader, layers = kept.loader, _drain(kept.tensors)
        doing = f"the tensors {loader} dequantized for gate 1 patched into the model"
    else:
        loader, layers = find_loader(module, args["source"], n_layers, ref)
        doing = f"{loader} dequantizing into the model"
    del kept
    patched, head_patched = 0, False
    with torch.no_grad(), progress.heartbeat(stage, f"{Path(args['weights_module']).name}: {doing}"):
        for layer, field, value in layers:
            if layer < 0 and field == "lm_head" and value is not None:
                head_patched = _patch_head(model, value)
                continue
            if value is None or (layer, field) not in shapes:
                continue  # a kept tensor (norms, biases) or a layer beyond n_layers
            want = shapes.pop((layer, field))
            if tuple(np.shape(value)) != want[::-1]:
                raise ValueError(f"layer {layer} {field}: the loader's {list(np.shape(value))} does not fit {list(want)} transposed")
            _put(slots[layer, field], _as_weight(value))
            patched += 1
        for (layer, field), want in shapes.items():
            hf = projection_name(layer, field)
            _put(slots[layer, field], _as_weight(np.asarray(ref.get(hf)).T))
            ref.release(hf)
    return loader, patched, head_patched, from_gate_1


def _kl(p_logits: Any, q_logits: Any) -> list[float]:
    import torch

    lp, lq = torch.log_softmax(p_logits, dim=-1), torch.log_softmax(q_logits, dim=-1)
    return [float(x) for x in (lp.exp() * (lp - lq)).sum(-1).reshape(-1).tolist()]


@op("quant_e2e", QuantE2EOnlyArgs, QuantE2EFacts, nonempty=("weights_module", "source", "reference_dir", "model_dir"))
def quant_e2e(args: QuantE2EOnlyArgs) -> QuantE2EFacts:
    """Quantized gate 2 without the bf16 baseline (reused from its record):
    one model load, then e2e_facts on the recorded prompt tokens and the
    calibration passage."""
    import torch
    from transformers import AutoModelForCausalLM

    from phase0_shim.calibration import PASSAGE
    from phase0_shim.tokens import load_tokenizer

    tokens = [int(t) for t in args["prompt_tokens"]]
    if not tokens:
        raise ValueError("quant_e2e: prompt_tokens is empty")
    tokenizer = load_tokenizer(args["model_dir"])
    with progress.heartbeat("quant_baseline", "loading the HF bf16 model"):
        model = AutoModelForCausalLM.from_pretrained(args["model_dir"], dtype=torch.bfloat16, low_cpu_mem_usage=True)
        model.eval()  # type: ignore[no-untyped-call]
    passage = [int(t) for t in tokenizer.encode(PASSAGE)]
    return e2e_facts(model, tokens, passage, args)
