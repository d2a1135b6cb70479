"""Quantized gate 1 facts (op ``quant_facts``): the folder's own loader,
every tensor against the bf16 reference, the statistics of one tensor on a
second thread while the loader dequantizes the next.
"""

from __future__ import annotations

import contextlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim import heap, progress
from phase0_shim.opargs import op
from phase0_shim.optypes import QuantArgs, QuantBound, QuantCandidate, QuantFactsResult, QuantTensor
from phase0_shim.quant.discovery import _import, find_loader
from phase0_shim.quant.families import FamilyReference, convention_facts, kept_hf
from phase0_shim.quant.reading import Reference, projection_name, release_mapped
from phase0_shim.quant.stats import CONFUSION_ROWS, _differing, _stats_io, kept_facts, projection_facts
from phase0_shim.quant.vocab import GLOBALS, KEPT, PARTNERS, PROJECTIONS

STAGE = "quant_weights"
# Tensors whose statistics may wait while the loader reads on (about a
# layer). Not counted: a tensor gate 1 keeps as the very array the loader
# returned (a bf16 projection, with QuantArgs.keep), which holds no memory
# the kept list does not, and one under SMALL bytes (a norm). Counting a
# layer's six norms had the loader wait ~4 s at Gemma 3 4B's first layer
# for the embedding's and the head's statistics.
PENDING = 8
SMALL = 1 << 20
# What the worker's allocator may keep of the loader's freed temporaries
# for the next of the same size (heap.reusing). Upstream's loaders make the
# same float32 temporaries for every layer, and Gemma 3 4B's dequantizes its
# 262208 x 2560 head whole, ~2.7 GB a temporary: one of those fits. At that
# shape make bench's gate 1 went from 58.9 to 45-47 s (best of three), the
# worker's anonymous peak up 0.4 GiB (docs/BENCHMARKS.md).
REUSE_CAP = 3 << 30


# The dequantized tensors gate 1 kept for quantized gate 2 in the same
# worker (QuantArgs.keep): the loader, then (layer, field, array) for each
# projection and the head, under the key they were loaded for.
_Kept = tuple[tuple[str, str, int], str, list[tuple[int, str, Any]]]
_kept: _Kept | None = None


def _bf16(value: Any, reuse: heap.Reuse | None = None) -> Any:
    """A kept tensor as bf16, the dtype gate 2 patches in: the loader's own
    array when it is bf16 already, else one bf16 copy (a float32 loader's
    whole model kept as float32 would take twice the memory), through
    gate 1's allocator when given (carved out of its arena, room allowing)."""
    import ml_dtypes

    a = np.asarray(value)
    if a.dtype == ml_dtypes.bfloat16:
        return a
    with reuse.carving() if reuse is not None else contextlib.nullcontext():
        return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _is_bf16(value: Any) -> bool:
    import ml_dtypes

    return bool(np.asarray(value).dtype == ml_dtypes.bfloat16)


def drop_kept() -> None:
    """Forget what gate 1 kept. A baseline without quantized gate 2 (gate 1
    FAILed, so gate 2 is not run, or a bf16 key) calls it before it loads
    the model: the kept projections (the whole model in bf16, 7.7 GB at
    Gemma 3 4B) would sit beside the model for nothing."""
    global _kept
    _kept = None


def _kept_key(weights_module: str, source: str, n_layers: int) -> tuple[str, str, int]:
    return (str(Path(weights_module).resolve()), source, n_layers)


def _take_kept(weights_module: str, source: str, n_layers: int) -> tuple[str, list[tuple[int, str, Any]]] | None:
    """What gate 1 kept for this loader, source and depth, once; anything else kept is dropped."""
    global _kept
    kept, _kept = _kept, None
    if kept is None or kept[0] != _kept_key(weights_module, source, n_layers):
        return None
    return kept[1], kept[2]


def quant_facts_of(args: QuantArgs) -> QuantFactsResult:
    global _kept
    _kept = None  # an earlier run's tensors are never this one's
    module, failure = _import(Path(args["weights_module"]))
    if failure is not None:
        return {"loader": "", "layers_loaded": 0, "tensors": [], "import_failure": failure}
    ref = FamilyReference(Reference(Path(args["reference_dir"])), args.get("family", ""), float(args.get("embed_scale", 0.0)))
    with heap.reusing(REUSE_CAP) as reuse:
        return _facts(args, module, ref, reuse)


def _kept_bytes(ref: Reference, n_layers: int) -> list[int]:
    """For each layer, the bf16 bytes of the projections gate 1 keeps for
    gate 2 from that layer on, up to the last layer (which runs with the
    allocator stopped): what the allocator's arena may hold of the loader's
    freed memory to carve them from. Kept, each projection would otherwise
    be memory the worker never touched, while the loader's head frees that
    much just before the layers (at Gemma 3 4B 6.2 GB, at ~2 s/GiB of first
    touches on this project's VM: gate 1 took 0.5-1.0 s a layer, now the
    loader's 0.5 s). No more, so the arena is never memory gate 1 would not
    hold by its end anyway; the allocator also keeps none that would take
    the worker past the resident peak it has reached (at Gemma the head's
    float32 embedding and head outlive the head phase for their statistics:
    bounded by this alone, the peak rose 12.23 -> 13.41 GiB)."""
    need = [0] * (n_layers + 1)
    for layer in reversed(range(n_layers - 1)):
        names = [projection_name(layer, field) for field in PROJECTIONS]
        need[layer] = need[layer + 1] + sum(2 * int(np.prod(ref.shape(n))) for n in names if ref.has(n))
    return need


def _facts(args: QuantArgs, module: Any, ref: FamilyReference, reuse: heap.Reuse) -> QuantFactsResult:
    global _kept
    family = args.get("family", "")
    family_kept = kept_hf(family)
    bound = args["bound"]
    n_layers = int(args["n_layers"])
    loader, layers = find_loader(module, args["source"], n_layers, ref)
    keep: list[tuple[int, str, Any]] | None = [] if args.get("keep") else None
    # What is kept is carved out of what the loader frees (see _kept_bytes).
    need = _kept_bytes(ref, n_layers) if keep is not None else [0] * (n_layers + 1)
    reuse.arena(need[0])
    tensors: list[QuantTensor] = []
    loaded = set()
    candidates: list[tuple[Reference, QuantCandidate]] = [
        (FamilyReference(Reference(Path(d)), family), {"reference_dir": d, "fields": [], "stats": []}) for d in args.get("candidate_dirs") or []
    ]

    facts_of = _TensorFacts(ref, bound, family_kept, candidates).of

    # The statistics of one tensor run on a second thread while the loader
    # dequantizes the next (NumPy releases the GIL): the gate then costs
    # about the loader's time, not the sum. At most PENDING tensors (those
    # not kept as they are) wait,
    # which bounds the memory to about one layer beyond the loader's own.
    # Each waiting tensor with whether it counts against PENDING.
    pending: deque[tuple[Future[QuantTensor | None], bool]] = deque()
    counted = 0
    # A tied head the loader returns as the very embedding array, against
    # the same reference tensor, has the embedding's facts: compared once.
    embed: tuple[Any, Future[QuantTensor | None]] | None = None

    def as_head(done: Future[QuantTensor | None], value: Any) -> QuantTensor | None:
        fact = done.result()
        if fact is None or fact.get("differing") != 0 or "problem" in fact:
            return facts_of(-1, "lm_head", value)
        return {**fact, "field": "lm_head"}

    # The bundle's pages the loader read are dropped from the worker once a
    # layer is done (release_mapped): what gate 1 holds by the last layer is
    # the kept tensors, not those plus the whole mapped bundle. The C heap's
    # free pages are returned once, after the last tensor (heap.reusing):
    # returned after every layer, the next layer's temporaries faulted them
    # back in, each 2 MiB page zeroed by the kernel again (at Gemma 3 4B
    # +12 s of system time, as much as the loader's own). At each new layer
    # the reuse cache drops the sizes the loader stopped making (the head's).
    source = Path(args["source"])
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="quant-stats") as pool:
        for layer, field, value in layers:
            if value is None:
                continue
            # A tied head the loader returns as the very embedding array is
            # not kept: gate 2 patches a head only where it differs from the
            # model's, and this one is the embedding gate 1 compares bit for
            # bit (a FAIL there, and gate 2 does not run). At 1B its bf16
            # copy was 0.5 GB of gate 1's peak.
            tied = layer < 0 and field == "lm_head" and embed is not None and value is embed[0] and not ref.has(GLOBALS["lm_head"])
            held = False  # keep holds this very array
            if keep is not None and not tied and (field in PROJECTIONS if layer >= 0 else field == "lm_head"):
                if _is_bf16(value):
                    keep.append((layer, field, np.asarray(value)))
                    held = keep[-1][2] is value
                else:
                    # The bf16 copy is made on the statistics thread, off
                    # the loader's: Gemma 3 4B's float32 head (0.67 B
                    # elements) took ~3 s of it.
                    keep.append((layer, field, pool.submit(_bf16, value, reuse)))
            counts = not held and getattr(value, "nbytes", SMALL) >= SMALL
            if layer >= 0 and layer not in loaded:
                release_mapped(source)
                # The last layer runs as under NumPy's own allocator: it ends
                # where gate 1 holds every kept tensor.
                reuse.arena(need[min(layer, n_layers)])
                reuse.next_layer(layer, n_layers)
            if layer >= 0:
                loaded.add(layer)
                embed = None
            if layer < 0 and field == "lm_head" and embed is not None and value is embed[0] and not ref.has("lm_head.weight"):
                pending.append((pool.submit(as_head, embed[1], value), counts))
            else:
                pending.append((pool.submit(facts_of, layer, field, value), counts))
                if layer < 0 and field == "embed_table":
                    embed = (value, pending[-1][0])
            counted += counts
            del value
            while counted > PENDING:
                done, counts = pending.popleft()
                counted -= counts
                if (fact := done.result()) is not None:
                    tensors.append(fact)
        while pending:
            if (fact := pending.popleft()[0].result()) is not None:
                tensors.append(fact)
    if keep is not None:
        keep = [(layer, field, v.result() if isinstance(v, Future) else v) for layer, field, v in keep]
        _kept = (_kept_key(args["weights_module"], args["source"], n_layers), loader, keep)
    result: QuantFactsResult = {"loader": loader, "layers_loaded": len(loaded), "tensors": tensors, "import_failure": None}
    if candidates:
        result["candidates"] = [c for _, c in candidates]
    return result


class _TensorFacts:
    """One tensor's facts against the reference, on the statistics thread:
    a whole-model tensor, a projection (layer 0's also against each pairing
    candidate) or a tensor kept in bf16, each by its family's convention."""

    def __init__(
        self, ref: FamilyReference, bound: QuantBound, family_kept: dict[str, str], candidates: list[tuple[Reference, QuantCandidate]]
    ) -> None:
        self.ref, self.bound, self.family_kept, self.candidates = ref, bound, family_kept, candidates

    def of(self, layer: int, field: str, value: Any) -> QuantTensor | None:
        if layer < 0:
            return self._global(layer, field, value)
        if field in PROJECTIONS:
            return self._projection(layer, field, value)
        if field in KEPT or field in self.family_kept:
            return self._kept(layer, field, value)
        return None

    def _global(self, layer: int, field: str, value: Any) -> QuantTensor:
        ref = self.ref
        hf = GLOBALS[field]
        if field == "lm_head" and not ref.has(hf):
            hf = GLOBALS["embed_table"]  # tied: the head is the embedding
        if convention := ref.stored(field):
            fact = convention_facts(layer, field, value, ref, hf, convention)
            ref.release(hf)
            return fact
        # A quantized copy of the head is judged as a projection; its
        # statistics are computed there, once. Its first rows differing from
        # the tied embedding already say so: the bit-for-bit pass over the
        # whole head (0.67 B elements at Gemma 3 4B) is then skipped.
        quantized_head = field == "lm_head" and _first_rows_differ(value, ref, hf)
        if not quantized_head:
            fact = kept_facts(layer, field, value, ref, hf, stats=field != "lm_head")
            quantized_head = field == "lm_head" and bool(fact.get("differing"))
        if quantized_head:
            fact = projection_facts(layer, field, np.asarray(value).T, ref, hf, None, self.bound)
        fact["reference"] = ref.describe(hf)
        ref.release(hf)
        return fact

    def _projection(self, layer: int, field: str, value: Any) -> QuantTensor:
        ref = self.ref
        partner = PARTNERS.get(field)
        hf = projection_name(layer, field)
        fact = projection_facts(layer, field, value, ref, hf, projection_name(layer, partner) if partner else None, self.bound)
        fact["reference"] = ref.describe(hf)
        if layer == 0:
            _candidate_stats(self.candidates, field, value, hf)
        ref.release(hf)
        return fact

    def _kept(self, layer: int, field: str, value: Any) -> QuantTensor:
        ref = self.ref
        hf = f"model.layers.{layer}.{KEPT.get(field) or self.family_kept[field]}"
        if convention := ref.stored(field):
            return convention_facts(layer, field, value, ref, hf, convention)
        fact = kept_facts(layer, field, value, ref, hf)
        fact["reference"] = ref.describe(hf)
        return fact


def _first_rows_differ(value: Any, ref: FamilyReference, hf: str) -> bool:
    """Whether the loader's head, shaped as the reference's hf, has bits
    differing from it within its first CONFUSION_ROWS rows (a quantized
    head does at once; a tied head that is the embedding never)."""
    x, y = np.asarray(value), ref.get(hf)
    if x.shape != y.shape or x.ndim != 2:
        return False  # kept_facts names the shape
    return _differing(x[:CONFUSION_ROWS], y[:CONFUSION_ROWS]) > 0


def _candidate_stats(candidates: list[tuple[Reference, QuantCandidate]], field: str, value: Any, hf: str) -> None:
    """Layer 0's projection against each candidate checkpoint (same layout as the reference's)."""
    x = np.asarray(value)
    for cand, out in candidates:
        if not cand.has(hf):
            continue
        y = cand.get(hf)
        if x.ndim == 2 and x.shape == (y.shape[1], y.shape[0]):
            out["fields"].append(field)
            out["stats"].append(_stats_io(x, y, None))


@op("quant_facts", QuantArgs, QuantFactsResult, nonempty=("weights_module", "source", "reference_dir"))
def quant_facts(args: QuantArgs) -> QuantFactsResult:
    """Quantized gate 1 facts: the folder's own loader, every tensor against the reference."""
    try:
        with progress.heartbeat(STAGE, f"{Path(args['weights_module']).name}: dequantizing and comparing every tensor"):
            return quant_facts_of(args)
    finally:
        heap.release()


# Quantized gate 2: the dequantized projections patched into the reference's
