"""Tiny Gemma 3 and Phi-3 references and their FastFlowLM-style bundles.

The references are written by transformers (``save_pretrained`` of tiny
configs, random weights): a ``Gemma3ForConditionalGeneration`` (a one-layer
SigLIP tower and the projector beside the text model, as the real 4B has) and
a ``Phi3ForCausalLM`` with fused ``qkv_proj`` / ``gate_up_proj``, partial
rotary 0.75 and LongRoPE. Both 256 wide so the projections fit Q4NX's
32x256 blocks.

The packers store what the tree's bundles store, from the folders' own
descriptions: Gemma's text tensors under ``model.`` with every RMSNorm weight
as 1 + w, the embedding x sqrt(hidden) in bf16 and the lm_head as the raw
tied matrix in Q4NX; Phi's fused projections split into q, k, v and gate, up,
norms and embedding as they are, the LongRoPE factor tables as
``rope.short.weight`` / ``rope.long.weight``. Options make the broken bundles
the gates must name: a norm stored as w or 1 + w twice, an embedding unscaled
or scaled twice, a layer's fused rows split in another order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from phase0_testmodels.quant import q4nx
from phase0_testmodels.quant.bundle import PackOptions, pack_tensor
from phase0_testmodels.quant.models import HEAD_DIM, HIDDEN, INIT_STD, INTERMEDIATE
from phase0_testmodels.quant.st import Checkpoint, Raw, raw, write

GEMMA_LAYERS = 6  # one global layer (5) with the 5:1 pattern
GEMMA_HEADS, GEMMA_KV_HEADS, GEMMA_HEAD_DIM = 2, 1, 128
GEMMA_WINDOW = 16
PHI_LAYERS = 2
PHI_HEADS, PHI_KV_HEADS = 4, 2
PHI_ORIG_MAX, PHI_MAX = 64, 256
PHI_ROPE_DIM = int(HEAD_DIM * 0.75)  # 48: 24 frequencies
# A long-factor table rising like Phi-4-mini's (1 … 47.77), at 24 entries.
PHI_LONG = [round(float(f), 4) for f in np.geomspace(1.0, 47.77, PHI_ROPE_DIM // 2)]

# Where transformers saves Gemma 3's text model, and where the published
# checkpoints keep it.
GEMMA_PREFIX = "model.language_model."
GEMMA_PUBLISHED_PREFIX = "language_model.model."


def gemma3_config(**overrides: Any) -> Any:
    from transformers import Gemma3Config

    from phase0_testmodels import VOCAB_SIZE

    text = {
        "vocab_size": VOCAB_SIZE,
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": GEMMA_LAYERS,
        "num_attention_heads": GEMMA_HEADS,
        "num_key_value_heads": GEMMA_KV_HEADS,
        "head_dim": GEMMA_HEAD_DIM,
        "query_pre_attn_scalar": GEMMA_HEAD_DIM,
        "sliding_window": GEMMA_WINDOW,
        "max_position_embeddings": 256,
        "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "rms_norm_eps": 1e-6,
        "initializer_range": INIT_STD,
        **overrides,
    }
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 28, "patch_size": 14}
    return Gemma3Config(
        text_config=text,
        vision_config=vision,
        mm_tokens_per_image=4,
        image_token_index=VOCAB_SIZE - 1,
        boi_token_index=VOCAB_SIZE - 3,
        eoi_token_index=VOCAB_SIZE - 2,
    )


def phi3_config(**overrides: Any) -> Any:
    from transformers import Phi3Config

    from phase0_testmodels import VOCAB_SIZE

    kwargs: dict[str, Any] = {
        "vocab_size": VOCAB_SIZE,
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": PHI_LAYERS,
        "num_attention_heads": PHI_HEADS,
        "num_key_value_heads": PHI_KV_HEADS,
        "partial_rotary_factor": 0.75,
        "max_position_embeddings": PHI_MAX,
        "original_max_position_embeddings": PHI_ORIG_MAX,
        "rope_scaling": {"type": "longrope", "short_factor": [1.0] * (PHI_ROPE_DIM // 2), "long_factor": PHI_LONG},
        "rope_theta": 10000.0,
        "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True,
        "initializer_range": INIT_STD,
        **overrides,
    }
    return Phi3Config(**kwargs)


def _make_model(out: Path | str, config_of: Callable[..., Any], model_class: Any, seed: int, norm_mean: float) -> Path:
    """A tiny ``model_class`` of ``config_of``'s config and the tests' tokenizer
    in ``out``: weights drawn from ``seed``, norms around ``norm_mean``."""
    import torch

    from phase0_testmodels import train_tokenizer

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer()
    config = config_of(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    config.architectures = [model_class.__name__]
    torch.manual_seed(seed)
    model = model_class(config).to(torch.bfloat16).eval()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                # Gemma's weights sit near 0 (it computes 1 + w), the others near 1.
                p.copy_((norm_mean + 0.1 * torch.randn(p.shape, generator=generator)).to(p.dtype))
            else:
                p.copy_((INIT_STD * torch.randn(p.shape, generator=generator)).to(p.dtype))
    model.tie_weights()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def make_gemma3_model(out: Path | str, *, seed: int = 0) -> Path:
    """A tiny Gemma3ForConditionalGeneration (text 256 wide, 6 layers) and tokenizer in ``out``."""
    from transformers import Gemma3ForConditionalGeneration

    return _make_model(out, gemma3_config, Gemma3ForConditionalGeneration, seed, 0.0)


def make_phi3_model(out: Path | str, *, seed: int = 0) -> Path:
    """A tiny Phi3ForCausalLM (256 wide, fused projections, LongRoPE) and tokenizer in ``out``."""
    from transformers import Phi3ForCausalLM

    return _make_model(out, phi3_config, Phi3ForCausalLM, seed, 1.0)


def _bf16(a: np.ndarray) -> Raw:
    from ml_dtypes import bfloat16

    return raw(np.asarray(a, dtype=np.float32).astype(bfloat16))


@dataclass(frozen=True)
class GemmaOptions:
    """How the Gemma packer stores the kept tensors: the 1 + w and x sqrt(hidden)
    conventions applied ``times`` (1: right; 0: not applied; 2: twice)."""

    pack: PackOptions = field(default_factory=PackOptions)
    # tensor name (under model.) -> times its 1 + w is applied, where not once
    norm_times: dict[str, int] = field(default_factory=dict)
    embed_times: int = 1
    # tensors left out of the bundle (a bundle missing the pre/post-feedforward norms)
    drop: tuple[str, ...] = ()


def pack_gemma3_bundle(src: Path | str | Checkpoint, out: Path | str, opts: GemmaOptions = GemmaOptions()) -> Path:
    """Gemma 3's text model as a ``model.q4nx``: norms 1 + w, the embedding x sqrt(hidden), Q4NX projections and head."""
    ckpt = src if isinstance(src, Checkpoint) else Checkpoint(src)
    prefix = next(p for p in (GEMMA_PREFIX, GEMMA_PUBLISHED_PREFIX, "model.") if f"{p}embed_tokens.weight" in ckpt)
    tensors: dict[str, Raw] = {}
    embed = ckpt.f32(prefix + "embed_tokens.weight")
    for name in ckpt.names():
        if not name.startswith(prefix):
            continue  # the vision tower and the projector are not the LLM's
        short = "model." + name[len(prefix) :]
        if short in opts.drop:
            continue
        w = ckpt.f32(name)
        if short.endswith("norm.weight"):
            tensors[short] = _bf16(w + float(opts.norm_times.get(short, 1)))
        elif short == "model.embed_tokens.weight":
            tensors[short] = _bf16(w * math.sqrt(w.shape[1]) ** opts.embed_times)
        elif w.ndim == 2:
            tensors[short] = pack_tensor(short, w, opts.pack)
        else:
            tensors[short] = _bf16(w)
    tensors["lm_head.weight"] = pack_tensor("lm_head.weight", embed, opts.pack)  # the raw tied matrix
    return write(out, tensors, opts.pack.metadata)


QKV = ("q", "k", "v")
GATE_UP = ("gate", "up")


@dataclass(frozen=True)
class PhiOptions:
    """How the Phi packer splits the fused rows: per layer, the order the
    parts are taken in (the reference's is [q, k, v] and [gate, up])."""

    pack: PackOptions = field(default_factory=PackOptions)
    qkv_order: dict[int, tuple[str, str, str]] = field(default_factory=dict)
    gate_up_order: dict[int, tuple[str, str]] = field(default_factory=dict)
    # split tensor name -> the rows kept (a split that does not add up to the fused rows)
    rows: dict[str, int] = field(default_factory=dict)
    # tensors left out of the bundle (one without the LongRoPE factor tables)
    drop: tuple[str, ...] = ()


def phi3_parts(ckpt: Checkpoint, layer: int) -> dict[str, q4nx.F32]:
    """Layer ``layer``'s q, k, v, gate, up rows of the fused reference tensors, in the reference's order."""
    qkv = ckpt.f32(f"model.layers.{layer}.self_attn.qkv_proj.weight")
    q_rows = ckpt.array(f"model.layers.{layer}.self_attn.o_proj.weight").shape[1]
    kv = (qkv.shape[0] - q_rows) // 2
    gu = ckpt.f32(f"model.layers.{layer}.mlp.gate_up_proj.weight")
    half = gu.shape[0] // 2
    return {"q": qkv[:q_rows], "k": qkv[q_rows : q_rows + kv], "v": qkv[q_rows + kv :], "gate": gu[:half], "up": gu[half:]}


_PHI_SPLIT = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj"}


def pack_phi3_bundle(src: Path | str | Checkpoint, out: Path | str, opts: PhiOptions = PhiOptions()) -> Path:
    """Phi-3 as a ``model.q4nx``: the fused projections split, a tied head's Q4NX copy, the LongRoPE tables."""
    ckpt = src if isinstance(src, Checkpoint) else Checkpoint(src)
    config = ckpt.config()
    tensors: dict[str, Raw] = {}
    layers = set()
    for name in ckpt.names():
        if name.endswith(("qkv_proj.weight", "gate_up_proj.weight")):
            layers.add(int(name.split(".")[2]))
            continue
        w = ckpt.f32(name)
        if name.startswith("model.layers.") and w.ndim == 2:
            tensors[name] = pack_tensor(name, w, opts.pack)
        else:
            tensors[name] = raw(ckpt.array(name))
    for k in sorted(layers):
        parts = phi3_parts(ckpt, k)
        # The bundle's part i holds the rows the order puts there: [k, q, v]
        # puts the reference's k rows where q belongs, and so on (only
        # parts of one shape can trade places).
        for order, ref_order in ((opts.qkv_order.get(k, QKV), QKV), (opts.gate_up_order.get(k, GATE_UP), GATE_UP)):
            for slot, taken in zip(ref_order, order):
                name = f"model.layers.{k}.{_PHI_SPLIT[slot]}.weight"
                tensors[name] = pack_tensor(name, parts[taken][: opts.rows.get(name)], opts.pack)
    tensors["lm_head.weight"] = pack_tensor("lm_head.weight", ckpt.f32("model.embed_tokens.weight"), opts.pack)
    rope = config.get("rope_scaling") or config.get("rope_parameters") or {}
    tensors["rope.short.weight"] = _bf16(np.asarray(rope["short_factor"], np.float32))
    tensors["rope.long.weight"] = _bf16(np.asarray(rope["long_factor"], np.float32))
    return write(out, {k: v for k, v in tensors.items() if k not in opts.drop}, opts.pack.metadata)


__all__ = [
    "GemmaOptions",
    "PhiOptions",
    "gemma3_config",
    "make_gemma3_model",
    "make_phi3_model",
    "pack_gemma3_bundle",
    "pack_phi3_bundle",
    "phi3_config",
    "phi3_parts",
]
