"""Tiny checkpoints whose projections fit Q4NX's 32x256 blocks.

phase0's usual tiny models are 64 wide, too narrow for a 256-column block. These
are 256 wide (intermediate 512, 2 layers, 4 heads of 64, 2 KV heads, the
512-token tokenizer of ``phase0_testmodels``), random N(0, 0.02) weights like a
freshly initialised model, written by transformers' ``save_pretrained`` in bf16.
Different seeds give different models (the "bundle of another model" fixture).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

QuantFamily = Literal["llama", "qwen3", "qwen2"]

HIDDEN = 256
INTERMEDIATE = 512
LAYERS = 2
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 64
INIT_STD = 0.02

_FAMILY: dict[str, dict[str, Any]] = {
    "llama": {"model_type": "llama", "rope_theta": 500000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": True},
    "qwen3": {"model_type": "qwen3", "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False},
    "qwen2": {"model_type": "qwen2", "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True},
}


def quant_config(family: QuantFamily = "llama", **overrides: Any) -> Any:
    from transformers import AutoConfig

    from phase0_testmodels import VOCAB_SIZE

    f = dict(_FAMILY[family])
    model_type = f.pop("model_type")
    theta = f.pop("rope_theta")
    kwargs: dict[str, Any] = {
        "vocab_size": VOCAB_SIZE,
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "max_position_embeddings": 256,
        "rope_parameters": {"rope_type": "default", "rope_theta": theta},
        "initializer_range": INIT_STD,
        **f,
        **overrides,
    }
    return AutoConfig.for_model(model_type, **kwargs)


def make_quant_model(out: Path | str, family: QuantFamily = "llama", *, seed: int = 0, **overrides: Any) -> Path:
    """Write a 256-wide random ``family`` checkpoint and tokenizer into ``out``; return ``out``."""
    import torch
    from transformers import AutoModelForCausalLM

    from phase0_testmodels import train_tokenizer

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer()
    config = quant_config(
        family,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        **overrides,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).to(torch.bfloat16).eval()  # type: ignore[no-untyped-call]
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                # Norm weights near 1 but not all equal, so a byte-identity check has something to see.
                p.copy_((1.0 + 0.1 * torch.randn(p.shape, generator=generator)).to(p.dtype))
            else:
                p.copy_((INIT_STD * torch.randn(p.shape, generator=generator)).to(p.dtype))
    model.tie_weights()
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
