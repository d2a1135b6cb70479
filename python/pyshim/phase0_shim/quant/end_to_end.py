"""Quantized gate 2 facts: the dequantized projections patched into the
reference's own transformers model (already loaded by the baseline op: no
second load), prompt and passage prefilled on both sides.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim import progress
from phase0_shim.opargs import op
from phase0_shim.optypes import QuantE2EArgs, QuantE2EFacts, QuantE2EOnlyArgs
from phase0_shim.quant.discovery import _import, find_loader
from phase0_shim.quant.reading import Reference
from phase0_shim.quant.families import FamilyReference, detect_family, fused_slot
from phase0_shim.quant.vocab import PROJECTIONS
from phase0_shim.quant.weights import _bf16, _take_kept

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
    one bf16 copy (_bf16), never a float32 one."""
    import torch

    a = _bf16(value)
    if not (a.flags.writeable and all(s >= 0 for s in a.strides)):
        a = a.copy()
    return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)


def _as_weight(value: Any) -> Any:
    """A loader's (in, out) array as an HF weight, (out, in) bf16."""
    return _torch_bf16(value).T


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


def e2e_facts(model: Any, prompt_ids: list[int], passage_ids: list[int], args: QuantE2EArgs, stage: str = "quant_baseline") -> QuantE2EFacts:
    """Prefill the prompt and the passage through ``model`` as loaded (bf16),
    patch every projection the folder's loader dequantizes into it, layer by
    layer, and prefill both again. Facts only: each side's top-5 (ids and
    log-probabilities) at the prompt's last position, the KL divergence
    KL(bf16 || quantized) of the next-token distributions there and at every
    passage position, each side's per-token NLL of the passage and its
    argmax per position. The model's weights stay patched: the caller drops it."""
    import torch

    module, failure = _import(Path(args["weights_module"]))
    if failure is not None:
        raise ImportError(f"{args['weights_module']}: {failure['message']}")
    base = Reference(Path(args["reference_dir"]))
    ref = FamilyReference(base, detect_family(base))
    with progress.layers(stage, model, "bf16 weights: prompt and passage"):
        ref_prompt = _last_logits(model, prompt_ids)[-1]
        ref_passage = _last_logits(model, passage_ids)[:-1]
    # The model's projections are dropped before the loader runs and the
    # loader's arrays become them (a bf16 array without a copy): a loader
    # that returns the whole model at once (upstream's load_*_weights) then
    # costs about one model's memory, not two (at 8 B, 16 GB instead of 32).
    n_layers = int(args["n_layers"])
    shapes = {}
    # Where each projection goes, read before any parameter is dropped
    # (a fused tensor's rows are sized from o_proj's input width).
    slots = {(k, field): _projection_slot(model, k, field) for k in range(n_layers) for field in PROJECTIONS}
    for k in range(n_layers):
        for field in PROJECTIONS:
            param, rows = slots[k, field]
            if rows is None:
                shapes[k, field] = tuple(param.shape)
                param.data = torch.empty(0, dtype=param.dtype)
            else:  # rows of a fused parameter: overwritten in place
                shapes[k, field] = (rows.stop - rows.start, *param.shape[1:])
    layers: Iterable[tuple[int, str, Any]]
    from_gate_1 = (kept := _take_kept(args["weights_module"], args["source"], n_layers)) is not None
    if kept is not None:
        loader, layers = kept
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
        # What the loader did not give keeps the reference's weights, so
        # the prefill runs and Go judges the count.
        for (layer, field), want in shapes.items():
            hf = f"model.layers.{layer}.{PROJECTIONS[field][1]}.weight"
            _put(slots[layer, field], _as_weight(np.asarray(ref.get(hf)).T))
            ref.release(hf)
    with progress.layers(stage, model, "dequantized weights: prompt and passage"):
        q_prompt = _last_logits(model, prompt_ids)[-1]
        q_passage = _last_logits(model, passage_ids)[:-1]

    def kl(p_logits: Any, q_logits: Any) -> list[float]:
        lp, lq = torch.log_softmax(p_logits, dim=-1), torch.log_softmax(q_logits, dim=-1)
        return [float(x) for x in (lp.exp() * (lp - lq)).sum(-1).reshape(-1).tolist()]

    target = torch.tensor(passage_ids[1:], dtype=torch.long)[:, None]

    def nll(logits: Any) -> list[float]:
        return [float(x) for x in (-torch.log_softmax(logits, dim=-1).gather(1, target).squeeze(1)).tolist()]

    ref_ids, ref_lp = _side(ref_prompt)
    q_ids, q_lp = _side(q_prompt)
    return {
        "loader": loader,
        "patched": patched,
        "head_patched": head_patched,
        "from_gate_1": from_gate_1,
        "reference_top": ref_ids,
        "reference_top_logprobs": ref_lp,
        "quantized_top": q_ids,
        "quantized_top_logprobs": q_lp,
        "kl_prompt": kl(ref_prompt, q_prompt)[0],
        "passage_tokens": len(passage_ids),
        "kl_passage": kl(ref_passage, q_passage),
        "reference_nll": nll(ref_passage),
        "quantized_nll": nll(q_passage),
        "reference_argmax": [int(x) for x in ref_passage.argmax(-1).tolist()],
        "quantized_argmax": [int(x) for x in q_passage.argmax(-1).tolist()],
    }



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
