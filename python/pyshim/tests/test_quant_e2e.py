"""Quantized gate 2's patching (phase0_shim.quant.e2e_facts): the loader's arrays become the model's
projections without a second copy of the model, whatever the loader's dtype, and what it does not
give keeps the reference's weights."""

from __future__ import annotations

import textwrap
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from phase0_shim.quant.end_to_end import e2e_facts
from phase0_shim.quant.vocab import PROJECTIONS
from phase0_shim.quant.weights import quant_facts_of
from phase0_testmodels.quant.models import make_quant_model

# An upstream-style module whose load_*weights function returns the whole
# model at once, as upstream's 8 B modules do: here the reference's own bf16
# weights in the (in, out) layout, so the patched model is the bf16 model.
MODULE = '''
import types

import numpy as np
import torch
from ml_dtypes import bfloat16
from safetensors.torch import load_file

DTYPE = "bf16"
SKIP = ()
HEAD = 1
LAST = {}
CALLS = []

PROJ = {"wq": "self_attn.q_proj", "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
        "wo": "self_attn.o_proj", "w_gate": "mlp.gate_proj", "w_up": "mlp.up_proj",
        "w_down": "mlp.down_proj"}


def _np(t):
    a = t.contiguous().view(torch.int16).numpy().view(bfloat16)
    return a if DTYPE == "bf16" else a.astype(np.float32)


def load_test_weights(source):
    CALLS.append(source)
    sd = load_file(source + "/model.safetensors")
    n = 1 + max(int(k.split(".")[2]) for k in sd if k.startswith("model.layers."))
    layers = []
    for k in range(n):
        p = f"model.layers.{k}."
        fields = {f: (None if (k, f) in SKIP else np.ascontiguousarray(_np(sd[p + hf + ".weight"]).T))
                  for f, hf in PROJ.items()}
        fields["attn_norm"] = _np(sd[p + "input_layernorm.weight"])
        fields["ffn_norm"] = _np(sd[p + "post_attention_layernorm.weight"])
        layers.append(types.SimpleNamespace(**fields))
    LAST["layers"] = layers
    embed = _np(sd["model.embed_tokens.weight"])
    return types.SimpleNamespace(embed_table=embed, final_norm=_np(sd["model.norm.weight"]),
                                 lm_head=embed if HEAD == 1 else embed * HEAD, layers=layers)
'''


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_quant_model(tmp_path_factory.mktemp("e2e") / "llama", "llama")


Q4NX_RULE = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}


def _run(
    checkpoint: Path,
    tmp_path: Path,
    dtype: str,
    skip: tuple[tuple[int, str], ...] = (),
    keep: bool | Callable[[], None] = False,
    rule: dict[str, Any] | None = None,
    reference: Path | None = None,
    head: int = 1,
) -> tuple[Any, Any, dict[str, Any]]:
    import torch
    from transformers import AutoModelForCausalLM

    path = tmp_path / "test_weights.py"
    path.write_text(textwrap.dedent(MODULE).replace('DTYPE = "bf16"', f"DTYPE = {dtype!r}").replace("SKIP = ()", f"SKIP = {skip!r}").replace("HEAD = 1", f"HEAD = {head}"))
    model = AutoModelForCausalLM.from_pretrained(str(checkpoint), dtype=torch.bfloat16).eval()
    n_layers = model.config.num_hidden_layers
    if keep is not False:
        # Gate 1 first, in the same process, keeping what the loader returned.
        bound = {"group": 32, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
        gate1 = quant_facts_of(
            {"weights_module": str(path), "source": str(checkpoint), "reference_dir": str(checkpoint), "n_layers": n_layers, "bound": bound, "keep": True}  # type: ignore[typeddict-item]
        )
        assert gate1["import_failure"] is None and gate1["tensors"]
        if callable(keep):
            keep()
    facts = e2e_facts(
        model,
        [1, 5, 9, 13, 17, 21],
        list(range(2, 40)),
        {
            "weights_module": str(path),
            "source": str(checkpoint),
            "reference_dir": str(reference or checkpoint),
            "n_layers": n_layers,
            "rule": rule or Q4NX_RULE,  # type: ignore[typeddict-item]
        },
    )
    # e2e_facts imports the module under its own name; find the loader's arrays through sys.modules.
    import sys

    module = next(m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == str(path))
    return model, module, dict(facts)


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_the_reference_weights_patched_in_give_the_reference(checkpoint: Path, tmp_path: Path, dtype: str) -> None:
    model, module, facts = _run(checkpoint, tmp_path, dtype)
    n = model.config.num_hidden_layers
    assert facts["patched"] == n * len(PROJECTIONS)
    assert facts["head_patched"] is False  # the loader's head is the tied embedding, already the model's
    assert facts["from_gate_1"] is False  # nothing kept: the loader ran here
    assert facts["quantized_top"] == facts["reference_top"]
    assert facts["kl_prompt"] < 1e-4 and max(facts["kl_passage"]) < 1e-4
    # The twin stood beside it: every projection through 4 bits and back, which costs something.
    assert facts["twin_error"] == "" and facts["twin_quantized"] == n * len(PROJECTIONS)
    assert facts["twin_rule"] == "affine 4-bit g32 (16 levels), bf16 scale and min"
    assert 1e-4 < sum(facts["kl_passage_twin"]) / len(facts["kl_passage_twin"]) < 0.5
    assert len(facts["kl_passage_twin"]) == len(facts["twin_nll"]) == len(facts["dp_passage_twin"]) == len(facts["kl_passage"])
    assert len(facts["hidden_cosine"]) == len(facts["hidden_cosine_twin"]) == n
    assert min(facts["hidden_cosine"]) > 0.9999 and 0.9 < min(facts["hidden_cosine_twin"]) < 0.9999
    # One copy of each projection: contiguous (torch's bf16 linear on a
    # transposed view is 50-75x slower), and the loader's structure let go
    # of its own array once it was taken.
    for k, layer in enumerate(module.LAST["layers"]):
        for field, (_, hf) in PROJECTIONS.items():
            param = model.get_decoder().layers[k].get_submodule(hf).weight
            assert param.is_contiguous() and getattr(layer, field) is None, (k, field)


def test_a_projection_the_loader_does_not_give_keeps_the_reference(checkpoint: Path, tmp_path: Path) -> None:
    model, _, facts = _run(checkpoint, tmp_path, "bf16", skip=((1, "w_down"),))
    assert facts["patched"] == model.config.num_hidden_layers * len(PROJECTIONS) - 1
    # The prefill still ran, on the reference's own down projection there.
    assert facts["kl_prompt"] < 1e-4
    assert model.get_decoder().layers[1].mlp.down_proj.weight.shape == (model.config.hidden_size, model.config.intermediate_size)


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_gate_2_takes_what_gate_1_kept_and_runs_the_loader_once(checkpoint: Path, tmp_path: Path, dtype: str) -> None:
    # A float32 loader's tensors are kept as bf16 (what gate 2 patches in): the same figures.
    model, module, facts = _run(checkpoint, tmp_path, dtype, keep=True)
    assert len(module.CALLS) == 1, f"the loader ran {len(module.CALLS)} times"
    assert facts["from_gate_1"] is True
    assert facts["patched"] == model.config.num_hidden_layers * len(PROJECTIONS)
    assert facts["quantized_top"] == facts["reference_top"] and facts["kl_prompt"] < 1e-4
    # Taken once: the next gate 2 of another run does not find them.
    from phase0_shim.session import STATE

    assert STATE.quant() is None


def test_the_twin_is_the_formats_rule(checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The twin's round trip is our packers' (the tests' stand-in for each
    format's own quantizer): Q4NX's min/max with bf16 scale and min, Q4_0's
    symmetric absmax/8, to the bf16 rounding of the result."""
    import torch

    from phase0_shim.quant import twin
    from phase0_testmodels.quant import q4_0, q4nx
    from phase0_testmodels.quant.st import Checkpoint

    w = Checkpoint(checkpoint).f32("model.layers.0.mlp.down_proj.weight")
    got = twin.round_trip(torch.from_numpy(w), Q4NX_RULE).to(torch.float32).numpy()  # type: ignore[arg-type]
    want = q4nx.quantize(w).dequant()
    assert np.abs(got - want).max() <= np.abs(want).max() / 128
    sym = {"group": 32, "levels": 8, "symmetric": True, "slack": 1.0 / 128}
    got = twin.round_trip(torch.from_numpy(w), sym).to(torch.float32).numpy()  # type: ignore[arg-type]
    want = q4_0.round_trip(w)
    assert np.abs(got - want).max() <= np.abs(want).max() / 128
    # A last group narrower than the rule's (576 columns in groups of 128) is its own group.
    odd = torch.from_numpy(w[:, :96].copy())
    g128 = {"group": 128, "levels": 15, "symmetric": False, "slack": 1.0 / 128}
    got = twin.round_trip(odd, g128).to(torch.float32).numpy()  # type: ignore[arg-type]
    lo, hi = w[:, :96].min(axis=1), w[:, :96].max(axis=1)
    assert got.shape == (w.shape[0], 96) and np.all(got.min(axis=1) >= lo - (hi - lo) / 30) and np.all(got.max(axis=1) <= hi + (hi - lo) / 30)
    # A chunk of rows at a time (bounded temporaries) is the same round trip as the whole tensor at once.
    whole = twin.round_trip(torch.from_numpy(w), Q4NX_RULE)  # type: ignore[arg-type]
    monkeypatch.setattr(twin, "CHUNK_ELEMENTS", 3 * w.shape[1] + 1)
    assert torch.equal(twin.round_trip(torch.from_numpy(w), Q4NX_RULE), whole)  # type: ignore[arg-type]


def test_no_twin_says_why(checkpoint: Path, tmp_path: Path) -> None:
    """A rule phase0 does not know, or a reference missing a projection the
    twin needs, is a twin_error naming it; the bundle's facts still come."""
    model, _, facts = _run(checkpoint, tmp_path, "bf16", rule={"group": 32, "levels": 3, "symmetric": False, "slack": 0.0})
    assert facts["twin_error"].startswith("the twin's rule (affine, group 32, levels 3) is not one phase0 knows")
    assert facts["twin_quantized"] == 0 and facts["kl_passage_twin"] == [] and len(facts["kl_passage"]) > 0
    # The reference as a folder whose checkpoint lacks layer 1's up projection.
    from safetensors.numpy import load_file, save_file

    lacking = tmp_path / "lacking"
    lacking.mkdir()
    sd = {k: v for k, v in load_file(str(checkpoint / "model.safetensors")).items() if k != "model.layers.1.mlp.up_proj.weight"}
    save_file(sd, str(lacking / "model.safetensors"))
    model, _, facts = _run(checkpoint, tmp_path, "bf16", reference=lacking)
    assert facts["twin_error"] == f"the reference {lacking} lacks model.layers.1.mlp.up_proj.weight, which the twin needs"
    assert facts["twin_quantized"] == 0 and facts["patched"] == model.config.num_hidden_layers * len(PROJECTIONS)


@pytest.fixture(scope="module")
def untied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_quant_model(tmp_path_factory.mktemp("e2e") / "qwen3", "qwen3")


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_the_twin_is_made_once_the_bundle_is_let_go(checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    """One copy of the projections at a time: the bundle (gate 1's kept
    tensors) is patched in and prefilled first, then the twin takes its
    place from the reference checkpoint, so no prefill after the bf16 one
    runs with gate 1's kept arrays alive beside the model's projections (at
    8 B, the two copies would not fit 24 GiB)."""
    from phase0_shim.quant import end_to_end
    from phase0_shim.session import STATE

    refs: list[weakref.ref[Any]] = []

    def watch() -> None:
        run = STATE.quant()
        assert run is not None and run.kept is not None
        refs.extend(weakref.ref(v) for _, _, v in run.kept.tensors if v is not None)

    alive: list[int] = []
    prefill = end_to_end._prefill

    def counting(*a: Any) -> Any:
        alive.append(sum(r() is not None for r in refs))
        return prefill(*a)

    monkeypatch.setattr(end_to_end, "_prefill", counting)
    model, _, facts = _run(checkpoint, tmp_path, dtype, keep=watch)
    n = model.config.num_hidden_layers * len(PROJECTIONS)
    assert facts["from_gate_1"] is True and facts["patched"] == n and facts["twin_quantized"] == n
    # bf16, the bundle, the twin: gate 1's arrays stand beside the bf16 model only.
    assert len(alive) == 3 and alive[0] >= n and alive[1:] == [0, 0], alive


@pytest.mark.parametrize(("family", "head"), [("llama", 1), ("llama", 2), ("qwen3", 1)])
def test_the_twin_is_the_reference_through_the_rule(checkpoint: Path, untied: Path, tmp_path: Path, family: str, head: int) -> None:
    """The twin's facts are those of the loaded reference's own bf16
    projections (and an untied head) put through the rule in place, whatever
    the bundle patched before it: its own head (head 2: a tied reference's
    embedding doubled; an untied reference's) gives way to the reference's."""
    import torch
    from transformers import AutoModelForCausalLM

    from phase0_shim.quant import end_to_end, twin

    ckpt = checkpoint if family == "llama" else untied
    model, _, facts = _run(ckpt, tmp_path, "bf16", head=head)
    assert facts["head_patched"] is (head != 1 or family == "qwen3")
    assert facts["twin_head"] is (family == "qwen3")
    ref = AutoModelForCausalLM.from_pretrained(str(ckpt), dtype=torch.bfloat16).eval()
    prompt, passage = [1, 5, 9, 13, 17, 21], list(range(2, 40))
    r_prompt, r_passage, r_hidden = end_to_end._prefill(ref, prompt, passage)
    with torch.no_grad():
        for k in range(ref.config.num_hidden_layers):
            for _, hf in PROJECTIONS.values():
                p = ref.get_decoder().layers[k].get_submodule(hf).weight
                p.data = twin.round_trip(p.data, Q4NX_RULE).to(p.dtype)  # type: ignore[arg-type]
        if facts["twin_head"]:
            w = ref.get_output_embeddings().weight
            w.data = twin.round_trip(w.data, Q4NX_RULE).to(w.dtype)  # type: ignore[arg-type]
    t_prompt, t_passage, t_hidden = end_to_end._prefill(ref, prompt, passage)
    target = torch.tensor(passage[1:], dtype=torch.long)[:, None]
    kl, nll, argmax, dp = end_to_end._per_token(torch.log_softmax(r_passage, dim=-1), t_passage, target)
    assert facts["kl_passage_twin"] == kl and facts["twin_nll"] == nll and facts["twin_argmax"] == argmax and facts["dp_passage_twin"] == dp
    assert facts["kl_prompt_twin"] == end_to_end._kl(r_prompt, t_prompt)[0]
    assert facts["hidden_cosine_twin"] == end_to_end._cosines(r_hidden, t_hidden)
    assert (facts["twin_top"], facts["twin_top_logprobs"]) == end_to_end._side(t_prompt)
