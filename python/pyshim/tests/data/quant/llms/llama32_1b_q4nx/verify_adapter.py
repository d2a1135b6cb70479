# Test fixture for phase0: a verify adapter in the style of mlir-air's
# llama32_1b_q4nx (what phase0 reads: MODEL_CHOICES and the bundle's source).

"""Verify adapter for the Q4NX Llama-3.2-1B example (fixture).

The NPU runs the FastFlowLM 4-bit model.q4nx weights; the reference is the HF
bf16 checkpoint named by MODEL_CHOICES.
"""

from __future__ import annotations

import os

MODEL_CHOICES = {
    "base": "meta-llama/Llama-3.2-1B",
    "instruct": "meta-llama/Llama-3.2-1B-Instruct",
}
DEFAULT_MODEL = "instruct"

# NPU weight source (model.q4nx bundle); model_name selects the bf16 reference.
Q4NX_MODEL_SOURCE = os.environ.get("Q4NX_MODEL_SOURCE", "FastFlowLM/Llama-3.2-1B-NPU2")


def resolve_model(model_choice_or_id: str) -> str:
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def hf_reference(npu_model_name: str) -> str:
    """Reference is the HF bf16 checkpoint (NPU q4nx vs HF bf16)."""
    return npu_model_name


def build_config():
    from llama32_1b_weights import LlamaConfig

    return LlamaConfig()
