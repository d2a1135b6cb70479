"""Bench child for quantized gate 1: one measurement per process, so each peak RSS is its own.

    python -m phase0_benchmodels.quant_bench loader|gate|model|e2e|e2e-notwin|stages MODULE SOURCE REFERENCE N_LAYERS [FACTS_OUT]
        [--family gemma3|phi3] [--embed-scale S]

or the op ``measure`` in a phase0 worker with the same arguments (what make bench runs).

``loader`` runs the folder's own loader alone (every tensor of every layer,
one layer at a time, as quantized gate 1 reads it), ``loader-reuse`` the same under the worker's
allocator as gate 1 runs it (heap.reusing; as ``loader`` under a plain python); ``gate`` runs quantized
gate 1's facts (the loader plus every statistic); ``model`` loads the bf16
reference in transformers and prefills 16 tokens, as the baseline's stage does; ``e2e`` loads it
and runs quantized gate 2's facts (bf16, the folder's tensors, the Q4NX twin, in one model) on a
16-token prompt and a 40-token passage, ``e2e-notwin`` the same without the twin (a rule phase0
does not know, so the worker skips it: today's stage before the twin). ``stages`` is a quantized
run's worker in order: gate 1's facts keeping the dequantized tensors, the source checkpoint loaded and
prefilled, then quantized gate 2 taking gate 1's tensors (its peak RSS is what the memory preflight
estimates). ``--family`` / ``--embed-scale`` are a deployed family's (Gemma 3's sqrt(hidden)), as the
run passes them. Prints one JSON object: wall seconds and the process's peak RSS (and writes gate 2's
facts to FACTS_OUT when given) and its peak anonymous memory (RssAnon, sampled every 50 ms).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import threading
import time
from pathlib import Path

import numpy as np


class AnonPeak:
    """The process's anonymous resident memory (RssAnon) at its highest, sampled
    every 50 ms on a thread: what the memory preflight estimates. ru_maxrss
    counts the bf16 model's mmap-ed safetensors pages too, which are
    file-backed and reclaimable."""

    def __init__(self) -> None:
        self.kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                self.kb = max(self.kb, int(line.split()[1]))

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self._sample()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        self._sample()
        return self.kb


def measure(arg_json: str) -> str:
    """The same measurement as a worker op (``{"argv": [...]}``): make bench
    runs it in a phase0 worker, the process quantized gate 1 runs in, whose
    allocator (heap.reusing) a plain python does not have."""
    return json.dumps(_measure(json.loads(arg_json)["argv"]))


def main(argv: list[str]) -> int:
    print(json.dumps(_measure(argv)))
    return 0


def _measure(argv: list[str]) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m phase0_benchmodels.quant_bench")
    for name in ("mode", "module", "source", "reference"):
        parser.add_argument(name)
    parser.add_argument("n_layers", type=int)
    parser.add_argument("facts_out", nargs="?", type=Path)
    parser.add_argument("--family", default="")
    parser.add_argument("--embed-scale", type=float, default=0.0)
    ns = parser.parse_args(argv)
    mode, module, source, reference, n_layers = ns.mode, Path(ns.module), ns.source, Path(ns.reference), ns.n_layers
    from phase0_shim.quant.discovery import import_module, find_loader
    from phase0_shim.quant.families import FamilyReference
    from phase0_shim.quant.reading import Reference
    from phase0_shim.optypes import QuantArgs
    from phase0_shim import heap
    from phase0_shim.quant.weights import REUSE_CAP, quant_facts_of

    gate_args: QuantArgs = {
        "weights_module": str(module),
        "source": source,
        "reference_dir": str(reference),
        "n_layers": n_layers,
        "bound": {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128},
        # as the run asks: the tensors stay for quantized gate 2
        "keep": True,
    }
    if ns.family:
        gate_args["family"] = ns.family
        gate_args["embed_scale"] = ns.embed_scale
    anon = AnonPeak() if Path("/proc/self/status").is_file() else None
    start = time.perf_counter()
    tensors = 0
    if mode in ("loader", "loader-reuse"):
        mod, failure = import_module(module)
        if failure is not None:
            raise ImportError(failure["message"])
        plain = contextlib.nullcontext(heap.Reuse(None))  # NumPy's own allocator, as upstream runs
        with heap.reusing(REUSE_CAP) if mode == "loader-reuse" else plain as reuse:
            _, layers = find_loader(mod, source, n_layers, FamilyReference(Reference(reference), ns.family, ns.embed_scale))
            last = -1
            for layer, _, value in layers:
                if layer > last:  # as gate 1 does
                    reuse.next_layer(layer, n_layers)
                    last = layer
                if value is not None:
                    np.asarray(value)
                    tensors += 1
    elif mode == "gate":
        tensors = len(quant_facts_of(gate_args)["tensors"])
    elif mode == "model":
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(str(reference), dtype=torch.bfloat16, low_cpu_mem_usage=True)
        tensors = sum(1 for _ in model.parameters())
        with torch.inference_mode():  # a prefill touches every weight, as the baseline's does
            model(torch.arange(16, dtype=torch.long)[None], use_cache=False)
    elif mode in ("e2e", "e2e-notwin", "stages"):
        import torch
        from transformers import AutoModelForCausalLM

        from phase0_shim.quant.end_to_end import e2e_facts

        if mode == "stages":
            tensors += len(quant_facts_of(gate_args)["tensors"])
        model = AutoModelForCausalLM.from_pretrained(str(reference), dtype=torch.bfloat16, low_cpu_mem_usage=True)
        # The real-shaped checkpoints have no tokenizer: 40 ids spread over the vocabulary stand for the passage.
        passage = [(7919 * i) % int(model.config.get_text_config().vocab_size) for i in range(1, 41)]
        rule = {"group": 32, "levels": 0 if mode == "e2e-notwin" else 15, "symmetric": False, "slack": 1.0 / 128}
        args = {"weights_module": str(module), "source": source, "reference_dir": str(reference), "n_layers": n_layers, "rule": rule}
        e2e = e2e_facts(model, list(range(1, 17)), passage, args)  # type: ignore[arg-type]
        tensors += e2e["patched"] + e2e["twin_quantized"]
        if ns.facts_out is not None:
            ns.facts_out.write_text(json.dumps(e2e) + "\n")
    else:
        raise ValueError(f"unknown mode {mode!r}: loader, gate, model, e2e, e2e-notwin or stages")
    seconds = time.perf_counter() - start
    anon_kb = anon.stop() if anon is not None else 0
    return {"seconds": seconds, "tensors": tensors, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "anon_peak_kb": anon_kb}


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
