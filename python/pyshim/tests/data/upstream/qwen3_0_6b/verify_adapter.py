# Test fixture for phase0: the part of a verify adapter phase0 reads (as text).

"""Verify adapter for the bf16 Qwen3-0.6B example (fixture).

The shared verify framework imports this module and calls build_runner.
"""

from __future__ import annotations

# CLI --model choice -> HF id.
MODEL_CHOICES = {
    "base": "Qwen/Qwen3-0.6B",
    "instruct": "Qwen/Qwen3-0.6B",
}
DEFAULT_MODEL = "instruct"


def resolve_model(model_choice_or_id: str) -> str:
    """A MODEL_CHOICES key (base/instruct) or a raw HF id / local path."""
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def build_config():
    from qwen3_0_6b_weights import LlamaConfig

    return LlamaConfig()
