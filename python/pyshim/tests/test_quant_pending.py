"""Quantized gate 1's loader reads on while the statistics thread works: a
tensor under weights.SMALL bytes (a norm) and a projection kept as the very
array the loader returned do not count against weights.PENDING. Counting a
layer's norms had the loader wait at Gemma 3 4B's first layer for the
embedding's and the head's statistics, ~4 s of the gate's wall time."""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from phase0_shim.quant import weights
from phase0_shim.session import STATE
from phase0_testmodels.quant.models import make_quant_model

# Projections as bf16 arrays (kept as they are), norms float32 of 256: 1 KiB.
MODULE = """
import types

import numpy as np
import torch
from safetensors.torch import load_file
from ml_dtypes import bfloat16

PROJ = {"wq": "self_attn.q_proj", "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
        "wo": "self_attn.o_proj", "w_gate": "mlp.gate_proj", "w_up": "mlp.up_proj",
        "w_down": "mlp.down_proj"}


def _np(t):
    return t.contiguous().view(torch.int16).numpy().view(bfloat16)


def load_test_weights(source):
    sd = load_file(source + "/model.safetensors")
    layers = []
    for k in range(2):
        p = f"model.layers.{k}."
        fields = {f: np.ascontiguousarray(_np(sd[p + hf + ".weight"]).T) for f, hf in PROJ.items()}
        fields["attn_norm"] = _np(sd[p + "input_layernorm.weight"]).astype(np.float32)
        fields["ffn_norm"] = _np(sd[p + "post_attention_layernorm.weight"]).astype(np.float32)
        layers.append(types.SimpleNamespace(**fields))
    embed = _np(sd["model.embed_tokens.weight"]).astype(np.float32)
    return types.SimpleNamespace(embed_table=embed, final_norm=_np(sd["model.norm.weight"]).astype(np.float32), lm_head=embed, layers=layers)
"""


def test_the_loader_reads_past_norms_and_kept_projections_while_the_embedding_is_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = make_quant_model(tmp_path / "llama", "llama")
    path = tmp_path / "pending_weights.py"
    path.write_text(textwrap.dedent(MODULE))
    # Two large tensors may wait (the embedding and the head); the norms are under SMALL.
    monkeypatch.setattr(weights, "PENDING", 2)
    monkeypatch.setattr(weights, "SMALL", 4096)
    last_layer_read = threading.Event()
    released = []
    find_loader, facts_of = weights.find_loader, weights._TensorFacts.of

    def watched_loader(*args: Any) -> Any:
        name, layers = find_loader(*args)

        def read() -> Any:
            for layer, field, value in layers:
                if layer == 1:
                    last_layer_read.set()
                yield layer, field, value

        return name, read()

    def held_embedding(self: Any, layer: int, field: str, value: Any) -> Any:
        if field == "embed_table":
            # The statistics of the embedding last until the loader has read
            # the last layer: it must not be waiting for them.
            released.append(last_layer_read.wait(timeout=10))
        return facts_of(self, layer, field, value)

    monkeypatch.setattr(weights, "find_loader", watched_loader)
    monkeypatch.setattr(weights._TensorFacts, "of", held_embedding)
    bound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
    facts = weights.quant_facts_of(
        {"weights_module": str(path), "source": str(checkpoint), "reference_dir": str(checkpoint), "n_layers": 2, "bound": bound, "keep": True}  # type: ignore[typeddict-item]
    )
    STATE.drop_quant()
    assert facts["import_failure"] is None and released == [True]
    assert {(t["layer"], t["field"]) for t in facts["tensors"]} >= {(-1, "embed_table"), (1, "w_down"), (1, "ffn_norm")}


def test_the_heap_is_trimmed_once_after_the_loader_not_after_each_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trimmed after every layer, the next layer's temporaries faulted the
    returned pages back in, each zeroed by the kernel again: at Gemma 3 4B
    +12 s of system time, as much as the loader's own."""
    checkpoint = make_quant_model(tmp_path / "llama", "llama")
    path = tmp_path / "trim_weights.py"
    path.write_text(textwrap.dedent(MODULE))
    trims = []
    monkeypatch.setattr(weights.heap, "release", lambda: trims.append(1) or True)
    bound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
    facts = weights.quant_facts_of(
        {"weights_module": str(path), "source": str(checkpoint), "reference_dir": str(checkpoint), "n_layers": 2, "bound": bound}  # type: ignore[typeddict-item]
    )
    assert facts["layers_loaded"] == 2 and len(trims) == 1


def test_a_tensor_the_loader_raises_keyerror_on_is_a_fact(tmp_path: Path) -> None:
    """A loader asking its source for a tensor it does not hold (upstream's
    self._hdr[name]) raises KeyError: the facts name the key and keep the
    tensors returned before it, with no traceback; Go judges it."""
    checkpoint = make_quant_model(tmp_path / "llama", "llama")
    path = tmp_path / "missing_weights.py"
    path.write_text(
        textwrap.dedent(MODULE).replace(
            "    for k in range(2):\n", "    for k in range(2):\n        if k == 1:\n            sd['model.layers.1.mlp.down_proj.weight']\n"
        ).replace("load_file(source + \"/model.safetensors\")", "{n: v for n, v in load_file(source + \"/model.safetensors\").items() if n != 'model.layers.1.mlp.down_proj.weight'}")
    )
    bound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
    facts = weights.quant_facts_of(
        {"weights_module": str(path), "source": str(checkpoint), "reference_dir": str(checkpoint), "n_layers": 2, "bound": bound}  # type: ignore[typeddict-item]
    )
    assert facts["missing_key"] == "model.layers.1.mlp.down_proj.weight" and facts["import_failure"] is None
    # A load_*weights* function builds the whole model before returning: nothing came back.
    assert facts["tensors"] == [] and facts["layers_loaded"] == 0
