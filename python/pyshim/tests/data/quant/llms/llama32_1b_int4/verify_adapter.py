# Test fixture for phase0: a verify adapter in the style of mlir-air's
# llama32_1b_int4 (what phase0 reads: MODEL_CHOICES).

"""Verify adapter for the AWQ int4 Llama-3.2-1B example (fixture).

The reference is built from the AWQ checkpoint itself, with the AWQ-dequantized
weights patched into the HF model.
"""

from __future__ import annotations

_DEFAULT_AWQ_MODEL = "amd/Llama-3.2-1B-Instruct-awq-uint4-asym-g128-bf16-lmhead"

MODEL_CHOICES = {
    "instruct": _DEFAULT_AWQ_MODEL,
}
DEFAULT_MODEL = "instruct"


def resolve_model(model_choice_or_id: str) -> str:
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def hf_reference(npu_model_name: str) -> str:
    """The AWQ checkpoint itself: its own dequant is the reference."""
    return npu_model_name
