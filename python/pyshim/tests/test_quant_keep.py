"""What quantized gate 1 keeps for gate 2: every projection, and the head only
where it is not the tied embedding itself (gate 2 would not patch it)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from phase0_shim.quant import weights
from phase0_shim.quant.vocab import PROJECTIONS
from phase0_shim.session import STATE
from phase0_testmodels.quant.models import make_quant_model

MODULE = """
import types

import numpy as np
import torch
from safetensors.torch import load_file
from ml_dtypes import bfloat16

PROJ = {"wq": "self_attn.q_proj", "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
        "wo": "self_attn.o_proj", "w_gate": "mlp.gate_proj", "w_up": "mlp.up_proj",
        "w_down": "mlp.down_proj"}
HEAD = "tied"


def _np(t):
    return t.contiguous().view(torch.int16).numpy().view(bfloat16).astype(np.float32)


def load_test_weights(source):
    sd = load_file(source + "/model.safetensors")
    n = 1 + max(int(k.split(".")[2]) for k in sd if k.startswith("model.layers."))
    layers = []
    for k in range(n):
        p = f"model.layers.{k}."
        fields = {f: np.ascontiguousarray(_np(sd[p + hf + ".weight"]).T) for f, hf in PROJ.items()}
        fields["attn_norm"] = _np(sd[p + "input_layernorm.weight"])
        fields["ffn_norm"] = _np(sd[p + "post_attention_layernorm.weight"])
        layers.append(types.SimpleNamespace(**fields))
    embed = _np(sd["model.embed_tokens.weight"])
    head = embed if HEAD == "tied" else embed * 1.01
    return types.SimpleNamespace(embed_table=embed, final_norm=_np(sd["model.norm.weight"]), lm_head=head, layers=layers)
"""


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_quant_model(tmp_path_factory.mktemp("keep") / "llama", "llama")


@pytest.mark.parametrize("head", ["tied", "own"])
def test_a_tied_head_that_is_the_embedding_is_not_kept(checkpoint: Path, tmp_path: Path, head: str) -> None:
    path = tmp_path / f"keep_{head}_weights.py"
    path.write_text(textwrap.dedent(MODULE).replace('HEAD = "tied"', f"HEAD = {head!r}"))
    bound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
    facts = weights.quant_facts_of(
        {"weights_module": str(path), "source": str(checkpoint), "reference_dir": str(checkpoint), "n_layers": 2, "bound": bound, "keep": True}  # type: ignore[typeddict-item]
    )
    assert facts["import_failure"] is None
    run = STATE.quant()
    assert run is not None and run.kept is not None
    kept = {(layer, field) for layer, field, _ in run.kept.tensors}
    # The loader's float32 tensors kept as bf16 copies, made on the
    # statistics thread and resolved by the time gate 1 returns.
    dtypes = {type(a).__name__ + ":" + str(getattr(a, "dtype", "")) for _, _, a in run.kept.tensors}
    STATE.drop_quant()
    assert dtypes == {"ndarray:bfloat16"}
    assert {(k, f) for k in range(2) for f in PROJECTIONS} <= kept
    assert ((-1, "lm_head") in kept) == (head == "own")


def test_a_baseline_without_gate_2_drops_what_gate_1_kept(checkpoint: Path, tmp_path: Path) -> None:
    """Gate 1 FAILed (or the key is bf16): the baseline that follows runs no
    quantized gate 2, so the kept projections are dropped before it loads the
    model rather than held beside it (at Gemma 3 4B, 7.7 GB for nothing)."""
    import json

    from helpers import baseline_args, go_config
    from phase0_shim import ops

    path = tmp_path / "keep_weights.py"
    path.write_text(textwrap.dedent(MODULE))
    bound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
    weights.quant_facts_of(
        {"weights_module": str(path), "source": str(checkpoint), "reference_dir": str(checkpoint), "n_layers": 2, "bound": bound, "keep": True}  # type: ignore[typeddict-item]
    )
    assert STATE.quant() is not None
    args = baseline_args(checkpoint, llms_dir=None, prompt_style="base", prompt="The capital of France is", config=go_config(checkpoint), weights_module=None)
    ops.baseline(json.dumps(args))
    assert STATE.quant() is None


@pytest.mark.parametrize("family", ["llama", "phi3"])
def test_the_arena_holds_what_is_kept_from_each_layer_on(tmp_path: Path, family: str) -> None:
    """What the allocator's arena may hold at each layer is the bf16 bytes of
    the projections still to be kept, the last layer's not counted (it runs
    with the allocator stopped); Phi's fused rows counted once, split."""
    from safetensors import safe_open

    from phase0_shim.quant.families import FamilyReference
    from phase0_shim.quant.reading import Reference
    from phase0_testmodels.quant.families import make_phi3_model

    model = make_phi3_model(tmp_path / "phi3", seed=0) if family == "phi3" else make_quant_model(tmp_path / "llama", "llama")
    with safe_open(str(model / "model.safetensors"), "np") as f:
        shapes = {k: f.get_slice(k).get_shape() for k in f.keys()}
    n = 1 + max(int(k.split(".")[2]) for k in shapes if k.startswith("model.layers."))
    per_layer = [
        sum(2 * math.prod(shape) for k, shape in shapes.items() if k.startswith(f"model.layers.{layer}.") and k.endswith("_proj.weight")) for layer in range(n)
    ]
    need = weights._kept_bytes(FamilyReference(Reference(model), "phi3" if family == "phi3" else ""), n)
    assert need == [sum(per_layer[layer : n - 1]) for layer in range(n)] + [0]
    assert need[0] > 0 and need[n - 1] == 0


def test_the_session_holds_gate_1s_run_until_its_gate_2_or_a_reset(checkpoint: Path, tmp_path: Path) -> None:
    """Gate 1's run (the reference's reader, the allocator's figures, the
    kept tensors) stays in the session for the gate 2 of the same loader,
    source and depth, handed over once; another key's gate 2 is not given
    it, and reset_session (a session lent to another run) drops it."""
    import json

    from phase0_shim import session
    from phase0_shim.quant.run import RunKey

    path = tmp_path / "keep_weights.py"
    path.write_text(textwrap.dedent(MODULE))
    bound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
    args = {"weights_module": str(path), "source": str(checkpoint), "reference_dir": str(checkpoint), "n_layers": 2, "bound": bound, "keep": True}
    key = RunKey.of(str(path), str(checkpoint), 2)
    weights.quant_facts_of(args)  # type: ignore[arg-type]
    run = STATE.quant()
    assert run is not None and run.key == key and run.kept is not None and len(run.kept.tensors) >= 14
    assert run.reference.has("model.layers.1.mlp.down_proj.weight")
    assert STATE.take_quant(RunKey.of(str(path), str(checkpoint), 1)) is None and STATE.quant() is None
    weights.quant_facts_of(args)  # type: ignore[arg-type]
    taken = STATE.take_quant(key)
    assert taken is not None and taken.take_kept() is not None and taken.kept is None and STATE.quant() is None
    weights.quant_facts_of({**args, "keep": False})  # type: ignore[arg-type]
    assert STATE.quant() is None
    weights.quant_facts_of(args)  # type: ignore[arg-type]
    assert STATE.quant() is not None
    session.reset_session("{}")
    assert STATE.quant() is None
