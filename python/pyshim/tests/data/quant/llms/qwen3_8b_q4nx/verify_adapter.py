# Test fixture for phase0: a verify adapter in the style of mlir-air's
# qwen3_8b_q4nx (what phase0 reads: MODEL_CHOICES and the bundle's source).

"""Verify adapter for the Q4NX Qwen3-8B example (fixture)."""

from __future__ import annotations

import os

MODEL_CHOICES = {
    "base": "Qwen/Qwen3-8B",
    "instruct": "Qwen/Qwen3-8B",
}
DEFAULT_MODEL = "instruct"

Q4NX_MODEL_SOURCE = os.environ.get("Q4NX_MODEL_SOURCE", "FastFlowLM/Qwen3-8B-NPU2")


def resolve_model(model_choice_or_id: str) -> str:
    return MODEL_CHOICES.get(model_choice_or_id, model_choice_or_id)


def hf_reference(npu_model_name: str) -> str:
    return npu_model_name


def build_config():
    from qwen3_8b_q4nx_weights import qwen3_8b_config

    return qwen3_8b_config()
