"""Quantized gate 1 facts (op ``quant_facts``): the folder's own loader,
every tensor against the source checkpoint, the statistics of one tensor on a
second thread while the loader dequantizes the next.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim import heap, progress
from phase0_shim.opargs import op
from phase0_shim.optypes import QuantArgs, QuantBound, QuantCandidate, QuantFactsResult, QuantTensor
from phase0_shim.quant.discovery import Fallback, import_module, find_loader
from phase0_shim.quant.missing import reraise_missing
from phase0_shim.quant.families import FamilyReference, convention_facts, kept_hf
from phase0_shim.quant.run import Kept, QuantRun, RunKey, as_bf16, is_bf16
from phase0_shim.quant.reading import Reference, projection_name, release_mapped
from phase0_shim.quant.stats import CONFUSION_ROWS, count_differing, stats_io, kept_facts, projection_facts
from phase0_shim.quant.vocab import GLOBALS, KEPT, PARTNERS, PROJECTIONS
from phase0_shim.session import STATE

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


def quant_facts_of(args: QuantArgs) -> QuantFactsResult:
    """Gate 1's facts. With ``keep``, the run (the reference's reader, the
    allocator's figures, the kept tensors) stays in the session for gate 2."""
    STATE.drop_quant()  # an earlier run's tensors are never this one's
    module, failure = import_module(Path(args["weights_module"]))
    if failure is not None:
        return {"loader": "", "layers_loaded": 0, "tensors": [], "import_failure": failure}
    ref = FamilyReference(Reference(Path(args["reference_dir"])), args.get("family", ""), float(args.get("embed_scale", 0.0)))
    run = QuantRun(RunKey.of(args["weights_module"], args["source"], int(args["n_layers"])), args["reference_dir"], ref)
    with heap.reusing(REUSE_CAP) as reuse:
        run.reuse = reuse
        try:
            result = _facts(args, module, run)
        except KeyError as e:
            reraise_missing(e, args["source"])
            raise
    if args.get("keep"):
        STATE.hold_quant(run)
    return result


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


def _facts(args: QuantArgs, module: Any, run: QuantRun) -> QuantFactsResult:
    """Gate 1's loop: each tensor the folder's loader returns, in its order,
    kept for gate 2 (with ``keep``) and its facts taken on the statistics
    thread (_Statistics) while the loader dequantizes the next."""
    ref, reuse = run.reference, run.reuse
    n_layers = int(args["n_layers"])
    fallback = Fallback()
    loader, layers = find_loader(module, args["source"], n_layers, ref, fallback)
    keep: list[tuple[int, str, Any]] | None = [] if args.get("keep") else None
    # What is kept is carved out of what the loader frees (see _kept_bytes).
    need = _kept_bytes(ref, n_layers) if keep is not None else [0] * (n_layers + 1)
    reuse.arena(need[0])
    loaded = set()
    candidates: list[tuple[Reference, QuantCandidate]] = [
        (FamilyReference(Reference(Path(d)), args.get("family", "")), {"reference_dir": d, "fields": [], "stats": []})
        for d in args.get("candidate_dirs") or []
    ]
    facts_of = _TensorFacts(ref, args["bound"], kept_hf(args.get("family", "")), candidates).of
    # The bundle's pages the loader read are dropped from the worker once a
    # layer is done (release_mapped): what gate 1 holds by the last layer is
    # the kept tensors, not those plus the whole mapped bundle. The C heap's
    # free pages are returned once, after the last tensor (heap.reusing):
    # returned after every layer, the next layer's temporaries faulted them
    # back in, each 2 MiB page zeroed by the kernel again (at Gemma 3 4B
    # +12 s of system time, as much as the loader's own). At each new layer
    # the reuse cache drops the sizes the loader stopped making (the head's).
    source = Path(args["source"])
    missing: list[str] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="quant-stats") as pool:
        statistics = _Statistics(pool, facts_of)
        for layer, field, value in _until_missing(layers, missing):
            if value is None:
                continue
            # A tied head the loader returns as the very embedding array is
            # not kept: gate 2 patches a head only where it differs from the
            # model's, and this one is the embedding gate 1 compares bit for
            # bit (a FAIL there, and gate 2 does not run). At 1B its bf16
            # copy was 0.5 GB of gate 1's peak.
            tied = statistics.is_tied_head(layer, field, value, ref)
            held = False  # keep holds this very array
            if keep is not None and not tied and (field in PROJECTIONS if layer >= 0 else field == "lm_head"):
                held = _keep(keep, layer, field, value, pool, reuse)
            if layer >= 0 and layer not in loaded:
                release_mapped(source)
                # The last layer runs as under NumPy's own allocator: it ends
                # where gate 1 holds every kept tensor.
                reuse.arena(need[min(layer, n_layers)])
                reuse.next_layer(layer, n_layers)
            if layer >= 0:
                loaded.add(layer)
                statistics.new_layer()
            statistics.add(layer, field, value, tied, counts=not held and getattr(value, "nbytes", SMALL) >= SMALL)
            del value
            statistics.settle()
        tensors = statistics.finish()
    loader = fallback.loader or loader
    if keep is not None:
        run.kept = Kept(loader, [(layer, field, v.result() if isinstance(v, Future) else v) for layer, field, v in keep])
    result: QuantFactsResult = {"loader": loader, "layers_loaded": len(loaded), "tensors": tensors, "import_failure": None, "loader_fallback": fallback.why}
    if candidates:
        result["candidates"] = [c for _, c in candidates]
    if missing:
        result["missing_key"] = missing[0]
    return result


def _until_missing(layers: Iterator[tuple[int, str, Any]], missing: list[str]) -> Iterator[tuple[int, str, Any]]:
    """The loader's tensors until it raises KeyError on a key its source
    does not hold (upstream's ``self._hdr[name]``): the key goes to
    ``missing`` and the tensors returned before it are still judged. Go
    names it a missing tensor (docs/quantized.md); a KeyError of anything
    but one string is the loader raising."""
    while True:
        try:
            item = next(layers)
        except StopIteration:
            return
        except KeyError as e:
            if len(e.args) != 1 or not isinstance(e.args[0], str):
                raise
            missing.append(e.args[0])
            return
        yield item


def _keep(keep: list[tuple[int, str, Any]], layer: int, field: str, value: Any, pool: ThreadPoolExecutor, reuse: heap.Reuse) -> bool:
    """Keep a projection or the head for gate 2, in bf16: the loader's own
    array when it is bf16 already, else a bf16 copy made on the statistics
    thread, off the loader's (Gemma 3 4B's float32 head, 0.67 B elements,
    took ~3 s of it). Returns whether the kept list holds this very array."""
    if is_bf16(value):
        keep.append((layer, field, np.asarray(value)))
        return bool(keep[-1][2] is value)
    keep.append((layer, field, pool.submit(as_bf16, value, reuse)))
    return False


class _Statistics:
    """The tensors' facts on the statistics thread while the loader
    dequantizes the next (NumPy releases the GIL): the gate then costs about
    the loader's time, not the sum. At most PENDING tensors (those not kept
    as they are, each counted by add) wait, which bounds the memory to about
    one layer beyond the loader's own. The facts come back in the loader's
    order."""

    def __init__(self, pool: ThreadPoolExecutor, facts_of: Callable[[int, str, Any], QuantTensor | None]) -> None:
        self.pool, self.facts_of = pool, facts_of
        # Each waiting tensor with whether it counts against PENDING.
        self.waiting: deque[tuple[Future[QuantTensor | None], bool]] = deque()
        self.counted = 0
        self.tensors: list[QuantTensor] = []
        # The embedding as the loader returned it and its facts, until the
        # layers begin: a tied head that is that very array has its facts.
        self.embed: tuple[Any, Future[QuantTensor | None]] | None = None

    def is_tied_head(self, layer: int, field: str, value: Any, ref: FamilyReference) -> bool:
        """Whether ``value`` is a tied head: the loader's head is the very
        embedding array, and the reference has no head of its own."""
        return layer < 0 and field == "lm_head" and self.embed is not None and value is self.embed[0] and not ref.has(GLOBALS["lm_head"])

    def new_layer(self) -> None:
        """The loader reads the layers: no head follows."""
        self.embed = None

    def add(self, layer: int, field: str, value: Any, tied: bool, counts: bool) -> None:
        """Queue ``value``'s facts (a tied head's are the embedding's, compared once)."""
        if tied and self.embed is not None:
            done = self.pool.submit(self._as_head, self.embed[1], value)
        else:
            done = self.pool.submit(self.facts_of, layer, field, value)
            if layer < 0 and field == "embed_table":
                self.embed = (value, done)
        self.waiting.append((done, counts))
        self.counted += counts

    def settle(self) -> None:
        """Wait for the oldest facts while more than PENDING tensors count
        (called once the loader's array is let go of)."""
        while self.counted > PENDING:
            oldest, counted = self.waiting.popleft()
            self.counted -= counted
            if (fact := oldest.result()) is not None:
                self.tensors.append(fact)

    def finish(self) -> list[QuantTensor]:
        """Every tensor's facts, once the last is done."""
        while self.waiting:
            if (fact := self.waiting.popleft()[0].result()) is not None:
                self.tensors.append(fact)
        return self.tensors

    def _as_head(self, embedding: Future[QuantTensor | None], value: Any) -> QuantTensor | None:
        """A tied head's facts: the embedding's, when it matched bit for bit."""
        fact = embedding.result()
        if fact is None or fact.get("differing") != 0 or "problem" in fact:
            return self.facts_of(-1, "lm_head", value)
        return {**fact, "field": "lm_head"}


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
    return count_differing(x[:CONFUSION_ROWS], y[:CONFUSION_ROWS]) > 0


def _candidate_stats(candidates: list[tuple[Reference, QuantCandidate]], field: str, value: Any, hf: str) -> None:
    """Layer 0's projection against each candidate checkpoint (same layout as the reference's)."""
    x = np.asarray(value)
    for cand, out in candidates:
        if not cand.has(hf):
            continue
        y = cand.get(hf)
        if x.ndim == 2 and x.shape == (y.shape[1], y.shape[0]):
            out["fields"].append(field)
            out["stats"].append(stats_io(x, y, None))


@op("quant_facts", QuantArgs, QuantFactsResult, nonempty=("weights_module", "source", "reference_dir"))
def quant_facts(args: QuantArgs) -> QuantFactsResult:
    """Quantized gate 1 facts: the folder's own loader, every tensor against the reference."""
    try:
        with progress.heartbeat(STAGE, f"{Path(args['weights_module']).name}: dequantizing and comparing every tensor"):
            return quant_facts_of(args)
    finally:
        heap.release()


# Quantized gate 2: the dequantized projections patched into the reference's
