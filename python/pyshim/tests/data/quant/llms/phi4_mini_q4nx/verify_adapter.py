# Test fixture for phase0: a verify adapter in the style of mlir-air's
# phi4_mini_q4nx (what phase0 reads: MODEL_CHOICES and the bundle's source).

"""Verify adapter for the Q4NX Phi-4-mini example (fixture)."""

from __future__ import annotations

import os

MODEL_CHOICES = {
    "base": "microsoft/Phi-4-mini-instruct",
    "instruct": "microsoft/Phi-4-mini-instruct",
}
DEFAULT_MODEL = "instruct"

Q4NX_MODEL_SOURCE = os.environ.get("Q4NX_MODEL_SOURCE", "FastFlowLM/Phi4-mini-Instruct-NPU2")


def resolve_model(model_choice_or_id: str) -> str:
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def hf_reference(npu_model_name: str) -> str:
    return npu_model_name


def build_config():
    from phi4_mini_q4nx_weights import phi4_mini_config

    return phi4_mini_config()
