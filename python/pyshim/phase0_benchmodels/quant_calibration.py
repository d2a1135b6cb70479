"""Calibration of quantized gate 1 and gate 2: our packers on real and real-shaped weights.

Bench-only. For each format (Q4NX ``I8``, Q4NX zero-point ``Q4NX``, ``Q4_0``,
``AWQ`` g128) it quantizes the projections with our own packers and reports the
per-tensor statistics of ``phase0_testmodels.quant.stats`` (min / median / max
over tensors) for clean tensors and for each negative class, then, on SmolLM2,
the end-to-end numbers of quantized gate 2 (the dequantized weights patched into
the transformers model: top-1 agreement, KL divergence, perplexity ratio).

SmolLM2-135M (phase0's default model) is 576 wide, not a multiple of 256, so it
is group-quantized per 32-column group without the 32x256 block layout. Its
bf16 weights are themselves a dequantized Q4_1 GGUF whose 32-element blocks are
exactly our column groups, so an aligned grid reproduces them almost exactly;
``shift16`` groups columns 16 off that grid, which is what a checkpoint that was
never on a 4-bit grid looks like.

    python -m phase0_benchmodels.quant_calibration [--smollm2 DIR] [--shaped DIR] [--layers 0,5,10,15] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from phase0_testmodels.quant import awq, q4_0, q4nx
from phase0_testmodels.quant.bundle import PROJECTIONS
from phase0_testmodels.quant.st import Checkpoint
from phase0_testmodels.quant.stats import Step, tensor_stats

F32 = q4nx.F32
FORMATS = ("I8", "Q4NX", "Q4_0", "AWQ")
NEGATIVES = ("random", "transposed", "gate_up_swapped", "nibble_order", "doubled_scale", "other_model")
PROMPT = "The capital of France is"
PASSAGE = "The sun rose over the quiet town, and the children walked to school with their books."


@dataclass(frozen=True)
class Format:
    name: str
    group: int
    step: Step


def awq_group(k: int) -> int:
    """AWQ's 128, or 64 where the width is not a multiple of 128 (SmolLM2's 576)."""
    return awq.GROUP if k % awq.GROUP == 0 else 64


FORMAT = {
    "I8": Format("I8", 32, "affine"),
    "Q4NX": Format("Q4NX", 32, "affine"),
    "Q4_0": Format("Q4_0", 32, "symmetric"),
    "AWQ": Format("AWQ", 128, "affine"),
}


def roundtrip(
    fmt: str, w: F32, *, blocks: bool, shift: int = 0, nibble_swap: bool = False, scale_x2: bool = False
) -> F32:
    """``w`` [out, in] through format ``fmt`` and back (optionally broken), float32."""
    if shift:
        w = np.roll(w, -shift, axis=1)
    if fmt in ("I8", "Q4NX"):
        qt = q4nx.quantize(w, fmt)  # type: ignore[arg-type]
        if scale_x2:
            qt = q4nx.Quantized(qt.codec, qt.q, qt.scale * 2, qt.offset)
        if blocks:
            m, k = w.shape
            packed = q4nx.pack_blocks(qt, "odd-low" if nibble_swap else "even-low")
            out = q4nx.unpack_blocks(packed, m, k, qt.codec).dequant()
        else:
            if nibble_swap:  # what the swapped nibbles do: each even row takes its odd neighbour's codes
                q = qt.q.copy()
                q[0::2], q[1::2] = qt.q[1::2], qt.q[0::2]
                qt = q4nx.Quantized(qt.codec, q, qt.scale, qt.offset)
            out = qt.dequant()
    elif fmt == "Q4_0":
        q0 = q4_0.quantize(w)
        if nibble_swap:
            q0q = q0.q.copy()
            q0q[0::2], q0q[1::2] = q0.q[1::2], q0.q[0::2]
            q0 = q4_0.Q40(q0q, q0.scale)
        if scale_x2:
            q0 = q4_0.Q40(q0.q, q0.scale * 2)
        out = q0.dequant()
    else:
        lin = awq.quantize(w, awq_group(w.shape[1]))
        if nibble_swap:  # nibbles read in plain order 0..7 instead of AutoAWQ's 0 2 4 6 1 3 5 7
            lin = awq.AwqLinear(awq.pack(awq.unpack(lin.qweight), np.arange(8)), lin.qzeros, lin.scales, lin.group)
        if scale_x2:
            lin = awq.AwqLinear(
                lin.qweight, lin.qzeros, (lin.scales.astype(np.float32) * 2).astype(np.float16), lin.group
            )
        out = lin.dequant().T
    out = np.ascontiguousarray(out, dtype=np.float32)
    return np.roll(out, shift, axis=1) if shift else out


def group_of(f: Format, w: F32) -> int:
    return awq_group(w.shape[1]) if f.name == "AWQ" else f.group


def layer_names(layer: int) -> dict[str, str]:
    return {p.split(".")[1]: f"model.layers.{layer}.{p}.weight" for p in PROJECTIONS}


def _stats(ref: F32, deq: F32, f: Format, shift: int) -> dict[str, float]:
    """Stats on the quantizer's own groups: a shifted grid is judged on shifted groups."""
    if shift:
        ref, deq = np.roll(ref, -shift, axis=1), np.roll(deq, -shift, axis=1)
    return tensor_stats(ref, deq, group=group_of(f, ref), step=f.step).row()


def clean_rows(ck: Checkpoint, layers: Sequence[int], fmt: str, *, blocks: bool, shift: int) -> list[dict[str, float]]:
    f = FORMAT[fmt]
    rows = []
    for layer in layers:
        for name in layer_names(layer).values():
            w = ck.f32(name)
            rows.append(_stats(w, roundtrip(fmt, w, blocks=blocks, shift=shift), f, shift))
    return rows


def negative_rows(
    ck: Checkpoint, layers: Sequence[int], fmt: str, kind: str, *, blocks: bool, shift: int
) -> list[dict[str, float]]:
    """The stats of the tensors a negative of ``kind`` breaks, one per layer in ``layers``."""
    f = FORMAT[fmt]
    rows = []
    n_layers = int(ck.config()["num_hidden_layers"])
    for layer in layers:
        names = layer_names(layer)
        partner: F32 | None = None
        if kind == "random":
            ref = ck.f32(names["down_proj"])
            deq = roundtrip(
                fmt,
                (np.random.default_rng(layer).standard_normal(ref.shape) * ref.std()).astype(np.float32),
                blocks=blocks,
                shift=shift,
            )
        elif kind == "transposed":
            ref = ck.f32(names["o_proj"])
            deq = roundtrip(fmt, np.ascontiguousarray(ref.T), blocks=blocks, shift=shift)
            partner = ref.T
        elif kind == "gate_up_swapped":
            ref, other = ck.f32(names["gate_proj"]), ck.f32(names["up_proj"])
            deq = roundtrip(fmt, other, blocks=blocks, shift=shift)
            partner = other
        elif kind == "nibble_order":
            ref = ck.f32(names["down_proj"])
            deq = roundtrip(fmt, ref, blocks=blocks, shift=shift, nibble_swap=True)
        elif kind == "doubled_scale":
            ref = ck.f32(names["q_proj"])
            deq = roundtrip(fmt, ref, blocks=blocks, shift=shift, scale_x2=True)
        else:  # other_model: the same tensor of another layer stands in for another model's
            ref = ck.f32(names["down_proj"])
            other = ck.f32(layer_names((layer + n_layers // 2) % n_layers)["down_proj"])
            deq = roundtrip(fmt, other, blocks=blocks, shift=shift)
        row = _stats(ref, deq, f, shift)
        if partner is not None:
            row["cos_partner"] = _stats(np.ascontiguousarray(partner), deq, f, shift)["cosine"]
        rows.append(row)
    return rows


def summary(rows: list[dict[str, float]]) -> dict[str, tuple[float, float, float]]:
    return {
        k: (min(r[k] for r in rows), statistics.median(r[k] for r in rows), max(r[k] for r in rows)) for k in rows[0]
    }


# ---- gate 2, end to end (SmolLM2) ----


def _logits(model: Any, ids: list[int]) -> Any:
    import torch

    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float()


def e2e(model_dir: Path, variants: dict[str, "Variant"]) -> dict[str, dict[str, float]]:
    """Per variant: top-1 / top-5 agreement on the prompt, KL and perplexity ratio on prompt + passage."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).eval()  # type: ignore[no-untyped-call]
    prompt, passage = tok.encode(PROMPT), tok.encode(PASSAGE)
    base_p, base_s = _logits(model, prompt), _logits(model, passage)
    original = {n: p.detach().clone() for n, p in model.named_parameters() if any(x in n for x in PROJECTIONS)}
    target = torch.tensor(passage[1:])

    def get(name: str) -> F32:
        return np.asarray(original[name].float().numpy(), dtype=np.float32)

    out: dict[str, dict[str, float]] = {}
    for name, fn in variants.items():
        with torch.no_grad():
            for n, p in model.named_parameters():
                if n in original:
                    new = fn(n, original[n].float().numpy(), get)
                    p.copy_(original[n] if new is None else torch.from_numpy(new).to(torch.bfloat16))
        q_p, q_s = _logits(model, prompt), _logits(model, passage)
        lp, lq = torch.log_softmax(base_s[:-1], -1), torch.log_softmax(q_s[:-1], -1)
        kl = (lp.exp() * (lp - lq)).sum(-1)
        nll_b = -lp.gather(1, target[:, None]).mean()
        nll_q = -lq.gather(1, target[:, None]).mean()
        a, b = int(base_p[-1].argmax()), int(q_p[-1].argmax())
        top5_b, top5_q = set(base_p[-1].topk(5).indices.tolist()), set(q_p[-1].topk(5).indices.tolist())
        lp1, lq1 = torch.log_softmax(base_p[-1], -1), torch.log_softmax(q_p[-1], -1)
        out[name] = {
            "top1_equal": float(a == b),
            "top1_in_top5_both": float(a in top5_q and b in top5_b),
            "top1_agree_passage": float((base_s[:-1].argmax(-1) == q_s[:-1].argmax(-1)).float().mean()),
            "kl_prompt_last": float((lp1.exp() * (lp1 - lq1)).sum()),
            "kl_passage_mean": float(kl.mean()),
            "kl_passage_max": float(kl.max()),
            "ppl_ratio": float(torch.exp(nll_q - nll_b)),
        }
        print(f"e2e {name}: {out[name]}", file=sys.stderr, flush=True)
    return out


Variant = Callable[[str, F32, Callable[[str], F32]], "F32 | None"]


def e2e_variants(n_layers: int) -> dict[str, Variant]:
    """Clean formats (grid shifted 16 columns off SmolLM2's own Q4_1 grid, and one aligned) and I8 negatives."""
    t = "model.layers.1."

    def fmt(f: str, shift: int = 16, **kw: bool) -> Variant:
        return lambda n, w, get: roundtrip(f, w, blocks=False, shift=shift, **kw)

    def only(name: str, fn: Callable[[F32], F32]) -> Variant:
        return lambda n, w, get: fn(w) if n == name else roundtrip("I8", w, blocks=False, shift=16)

    def other_model(n: str, w: F32, get: Callable[[str], F32]) -> F32:
        layer = int(n.split(".")[2])
        return roundtrip(
            "I8", get(n.replace(f".{layer}.", f".{(layer + n_layers // 2) % n_layers}.", 1)), blocks=False, shift=16
        )

    def i8(w: F32, **kw: bool) -> F32:
        return roundtrip("I8", w, blocks=False, shift=16, **kw)

    def rand(w: F32) -> F32:
        return i8((np.random.default_rng(0).standard_normal(w.shape) * w.std()).astype(np.float32))

    return {
        "bf16 (identity)": lambda n, w, get: None,
        "I8 aligned": fmt("I8", 0),
        "I8 shift16": fmt("I8"),
        "Q4NX shift16": fmt("Q4NX"),
        "Q4_0 shift16": fmt("Q4_0"),
        "AWQ shift16": fmt("AWQ"),
        "neg random L1 down": only(t + "mlp.down_proj.weight", rand),
        "neg transposed L1 o": only(t + "self_attn.o_proj.weight", lambda w: i8(np.ascontiguousarray(w.T))),
        "neg gate/up swapped L1": lambda n, w, get: i8(
            get(n.replace("gate_proj", "up_proj") if "gate_proj" in n else n.replace("up_proj", "gate_proj"))
            if n.startswith(t + "mlp.") and ("gate_proj" in n or "up_proj" in n)
            else w
        ),
        "neg doubled scale L1 q": only(t + "self_attn.q_proj.weight", lambda w: i8(w, scale_x2=True)),
        "neg nibble order (all)": fmt("I8", nibble_swap=True),
        "neg other model (layers rotated)": other_model,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m phase0_benchmodels.quant_calibration", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--smollm2", type=Path, default=Path.home() / ".cache/phase0/models/SmolLM2-135M-Instruct")
    parser.add_argument(
        "--shaped", type=Path, help="a real-shaped Llama-3.2-1B folder (python -m phase0_benchmodels.shaped)"
    )
    parser.add_argument("--layers", default="0,5,10,15", help="layers of the shaped model to measure")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-e2e", action="store_true")
    ns = parser.parse_args(argv)
    result: dict[str, Any] = {}
    runs: list[tuple[str, Checkpoint, list[int], bool, int]] = []
    smol = Checkpoint(ns.smollm2)
    n_smol = int(smol.config()["num_hidden_layers"])
    runs.append(("smollm2 aligned", smol, list(range(n_smol)), False, 0))
    runs.append(("smollm2 shift16", smol, list(range(n_smol)), False, 16))
    if ns.shaped:
        runs.append(("llama1b-shaped blocks", Checkpoint(ns.shaped), [int(x) for x in ns.layers.split(",")], True, 0))
    for label, ck, layers, blocks, shift in runs:
        for fmt in FORMATS:
            key = f"{label} {fmt}"
            result[key] = {"clean": summary(clean_rows(ck, layers, fmt, blocks=blocks, shift=shift))}
            for kind in NEGATIVES:
                neg_layers = layers if len(layers) <= 4 else layers[:: max(1, len(layers) // 4)]
                result[key][kind] = summary(negative_rows(ck, neg_layers, fmt, kind, blocks=blocks, shift=shift))
            print(f"done {key}", file=sys.stderr, flush=True)
    if not ns.no_e2e:
        result["e2e smollm2"] = e2e(ns.smollm2, e2e_variants(n_smol))
    text = json.dumps(result, indent=1)
    if ns.json:
        ns.json.write_text(text)
    print(text)
    return 0


def _rows(result: dict[str, Any]) -> Iterator[str]:
    for key, kinds in result.items():
        if key.startswith("e2e"):
            continue
        for kind, stats in kinds.items():
            yield key + " " + kind + " " + " ".join(f"{k}={v[0]:.4g}/{v[1]:.4g}/{v[2]:.4g}" for k, v in stats.items())


if __name__ == "__main__":
    raise SystemExit(main())
