"""Test stand-in for upstream verify/runners/hf_runner.py.

Same import style (``from runners._records import ...``, which only works with
``<llms>/verify`` on sys.path), same constructor, same keyword upstream passes
to from_pretrained (``torch_dtype``), so phase0's runner resolution is tested
against the layout it will meet in a real mlir-air checkout.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import AutoModelForCausalLM

from runners._records import DecodeStepRecord, PrefillRecord


class HfRunner:
    name = "hf_bf16"

    def __init__(self, model_name, config, max_seq, lite_mode=False, model=None):
        self.config = config
        self.max_seq = max_seq
        self.lite_mode = lite_mode
        if model is None:
            model = AutoModelForCausalLM.from_pretrained(
                model_name, torch_dtype=torch.bfloat16, low_cpu_mem_usage=True
            )
        self.model = model
        self.model.eval()
        self.past_key_values = None
        self._n_layers = config.n_layers
        self._emb_dim = config.emb_dim
        self._n_kv = config.n_kv_heads
        self._head_dim = config.head_dim

    @torch.no_grad()
    def prefill(self, prompt_tokens):
        self.past_key_values = None
        ids = torch.tensor(prompt_tokens, dtype=torch.long).unsqueeze(0)
        out = self.model(ids, output_hidden_states=not self.lite_mode, use_cache=True, return_dict=True)
        self.past_key_values = out.past_key_values
        logits = out.logits[0, -1].float().numpy()
        top1 = int(np.argmax(logits))
        if self.lite_mode:
            return PrefillRecord([], np.empty((0,), dtype=np.float32), logits, top1)
        hidden = out.hidden_states
        layers = [{"ffn_out": hidden[i + 1][0].float().numpy()} for i in range(self._n_layers - 1)]
        layers.append({})
        return PrefillRecord(layers, hidden[-1][0].float().numpy(), logits, top1)

    @torch.no_grad()
    def decode_step(self, input_token, current_pos):
        if self.past_key_values is None:
            raise RuntimeError("decode_step called before prefill")
        ids = torch.tensor([[input_token]], dtype=torch.long)
        out = self.model(ids, past_key_values=self.past_key_values, use_cache=True, return_dict=True)
        self.past_key_values = out.past_key_values
        logits = out.logits[0, -1].float().numpy()
        return DecodeStepRecord(logits, int(np.argmax(logits)))
