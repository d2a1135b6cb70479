"""Bundled HF transformers bf16 reference runner.

Used when no mlir-air ``verify/`` tree is available. It keeps upstream's
constructor and method signatures so the rest of phase0 cannot tell the two
apart, and it stays deliberately boring: load once, run under inference mode,
hand back float32 NumPy arrays.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol

import numpy as np
import torch
from transformers import AutoModelForCausalLM

from phase0_shim.records import DecodeStepRecord, PrefillRecord


class RunnerConfig(Protocol):
    """The config fields a runner reads (upstream reads exactly these)."""

    n_layers: int
    emb_dim: int
    n_kv_heads: int
    head_dim: int


def _cache_name(model: torch.nn.Module) -> str:
    """The KV-cache keyword of this model's forward.

    transformers 5.24 renamed ``past_key_values`` to ``cache`` (argument and
    output field) and drops the old name in 5.40; older 5.x only know the old one.
    """
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _to_f32(t: torch.Tensor) -> np.ndarray:
    # NumPy has no native bfloat16; every comparison downstream works in f32.
    return np.ascontiguousarray(t.detach().to(torch.float32).cpu().numpy())


class HfRunner:
    name = "hf_bf16"

    def __init__(
        self,
        model_name: str,
        config: RunnerConfig,
        max_seq: int,
        lite_mode: bool = False,
        model: torch.nn.Module | None = None,
    ) -> None:
        self.config = config
        self.max_seq = max_seq
        self.lite_mode = lite_mode
        if model is None:
            # low_cpu_mem_usage avoids holding a random-init copy next to the
            # loaded weights; use_safetensors refuses pickled checkpoints.
            model = AutoModelForCausalLM.from_pretrained(
                model_name,
                dtype=torch.bfloat16,
                low_cpu_mem_usage=True,
                use_safetensors=True,
            )
        self.model = model
        self.model.eval()
        self._cache_name = _cache_name(self.model)
        self.past_key_values: Any = None
        self._n_tokens = 0
        self._n_layers = config.n_layers
        self._emb_dim = config.emb_dim
        self._n_kv = config.n_kv_heads
        self._head_dim = config.head_dim

    @torch.inference_mode()
    def prefill(self, prompt_tokens: np.ndarray) -> PrefillRecord:
        tokens = np.asarray(prompt_tokens, dtype=np.int64)
        if tokens.ndim != 1 or tokens.size == 0:
            raise ValueError(f"prefill wants a non-empty 1-D token array, got shape {tokens.shape}")
        if tokens.size > self.max_seq:
            raise ValueError(f"prompt has {tokens.size} tokens, max_seq is {self.max_seq}")
        # A fresh cache per prompt: state from an earlier prompt must not leak in.
        self.past_key_values = None
        input_ids = torch.from_numpy(tokens.copy()).unsqueeze(0)
        out = self.model(
            input_ids,
            output_hidden_states=not self.lite_mode,
            use_cache=True,
            return_dict=True,
        )
        self.past_key_values = getattr(out, self._cache_name)
        self._n_tokens = int(tokens.size)
        logits = _to_f32(out.logits[0, -1])
        top1 = int(np.argmax(logits))
        if self.lite_mode:
            return PrefillRecord(
                layer_intermediates=[],
                final_hidden_normed=np.empty((0,), dtype=np.float32),
                logits_at_pred=logits,
                top1_token=top1,
            )
        # hidden_states has n_layers + 1 entries: the embeddings, the raw
        # outputs of layers 0..n_layers-2, and the last layer's output after
        # the final norm (its raw output is never exposed).
        hidden = out.hidden_states
        if len(hidden) != self._n_layers + 1:
            raise RuntimeError(
                f"model returned {len(hidden)} hidden states, config.n_layers={self._n_layers} "
                f"expects {self._n_layers + 1}"
            )
        layers: list[dict[str, np.ndarray]] = [
            {"ffn_out": _to_f32(hidden[i + 1][0])} for i in range(self._n_layers - 1)
        ]
        layers.append({})
        return PrefillRecord(
            layer_intermediates=layers,
            final_hidden_normed=_to_f32(hidden[-1][0]),
            logits_at_pred=logits,
            top1_token=top1,
        )

    @torch.inference_mode()
    def decode_step(self, input_token: int, current_pos: int) -> DecodeStepRecord:
        if self.past_key_values is None:
            raise RuntimeError("decode_step called before prefill")
        if current_pos != self._n_tokens:
            raise ValueError(
                f"decode_step at position {current_pos}, but the KV cache holds "
                f"{self._n_tokens} tokens (expected position {self._n_tokens})"
            )
        if current_pos >= self.max_seq:
            raise ValueError(f"decode position {current_pos} reaches max_seq {self.max_seq}")
        input_ids = torch.tensor([[int(input_token)]], dtype=torch.long)
        out = self.model(
            input_ids,
            use_cache=True,
            return_dict=True,
            **{self._cache_name: self.past_key_values},
        )
        self.past_key_values = getattr(out, self._cache_name)
        self._n_tokens += 1
        logits = _to_f32(out.logits[0, -1])
        return DecodeStepRecord(lm_head_logits=logits, top1_token=int(np.argmax(logits)))
