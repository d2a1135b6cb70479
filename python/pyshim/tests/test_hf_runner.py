"""The bundled runner against plain transformers calls on the same checkpoint."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import config_of, plain_model, prompt_ids
from phase0_shim.hf_runner import HfRunner
from phase0_shim.records import PrefillRecord


def test_prefill_matches_plain_forward_bitwise(tiny_model, family: str) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model(family)
    ids = prompt_ids(model_dir)
    record = HfRunner(str(model_dir), config_of(model_dir), max_seq=64, lite_mode=True).prefill(ids)

    with torch.inference_mode():
        expected = plain_model(model_dir)(torch.from_numpy(ids)[None]).logits[0, -1].float().numpy()

    assert isinstance(record, PrefillRecord)
    assert record.logits_at_pred.dtype == np.float32
    assert record.logits_at_pred.shape == (512,)
    assert record.logits_at_pred.tobytes() == expected.tobytes()
    assert record.top1_token == int(np.argmax(expected))
    assert record.layer_intermediates == []
    assert record.final_hidden_normed.size == 0


def test_prefill_full_mode_exposes_hidden_states(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("qwen3")
    config = config_of(model_dir)
    ids = prompt_ids(model_dir)
    record = HfRunner(str(model_dir), config, max_seq=64, lite_mode=False).prefill(ids)

    with torch.inference_mode():
        out = plain_model(model_dir)(torch.from_numpy(ids)[None], output_hidden_states=True)
    hidden = [h[0].float().numpy() for h in out.hidden_states]

    assert len(record.layer_intermediates) == config.n_layers
    for i in range(config.n_layers - 1):
        ffn_out = record.layer_intermediates[i]["ffn_out"]
        assert ffn_out.dtype == np.float32
        assert ffn_out.shape == (ids.size, config.emb_dim)
        assert np.array_equal(ffn_out, hidden[i + 1])
    assert record.layer_intermediates[-1] == {}
    assert np.array_equal(record.final_hidden_normed, hidden[-1])
    # hidden_states[-1] is what feeds the LM head: logits follow from it directly.
    lm_head = plain_model(model_dir).lm_head
    with torch.inference_mode():
        relogits = lm_head(out.hidden_states[-1][0, -1]).float().numpy()
    assert relogits.tobytes() == record.logits_at_pred.tobytes()


def test_decode_steps_match_greedy_generate(tiny_model, family: str) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model(family)
    ids = prompt_ids(model_dir)
    n_new = 6
    runner = HfRunner(str(model_dir), config_of(model_dir), max_seq=64)
    got = [runner.prefill(ids).top1_token]
    for step in range(n_new - 1):
        record = runner.decode_step(got[-1], ids.size + step)
        assert record.lm_head_logits.dtype == np.float32
        got.append(record.top1_token)

    model = plain_model(model_dir)
    with torch.inference_mode():
        generated = model.generate(
            torch.from_numpy(ids)[None],
            attention_mask=torch.ones(1, ids.size, dtype=torch.long),
            max_new_tokens=n_new,
            min_new_tokens=n_new,  # no early stop at EOS
            do_sample=False,
        )
    assert got == generated[0, ids.size :].tolist()


def test_prefill_resets_cache(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama")
    ids = prompt_ids(model_dir)
    runner = HfRunner(str(model_dir), config_of(model_dir), max_seq=64)
    first = runner.prefill(ids)
    runner.decode_step(first.top1_token, ids.size)
    again = runner.prefill(ids)
    assert again.logits_at_pred.tobytes() == first.logits_at_pred.tobytes()
    assert runner.decode_step(again.top1_token, ids.size).top1_token >= 0


def test_runner_misuse_is_reported(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama")
    ids = prompt_ids(model_dir)
    runner = HfRunner(str(model_dir), config_of(model_dir), max_seq=ids.size)
    with pytest.raises(RuntimeError, match="before prefill"):
        runner.decode_step(1, 0)
    record = runner.prefill(ids)
    with pytest.raises(ValueError, match=f"expected position {ids.size}"):
        runner.decode_step(record.top1_token, ids.size + 3)
    with pytest.raises(ValueError, match="max_seq"):
        runner.decode_step(record.top1_token, ids.size)
    with pytest.raises(ValueError, match="max_seq"):
        runner.prefill(np.concatenate([ids, ids]))
    with pytest.raises(ValueError, match="non-empty 1-D"):
        runner.prefill(np.zeros((0,), dtype=np.int64))


def test_injected_model_is_used(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("mistral")
    model = plain_model(model_dir)
    runner = HfRunner("not/a/real-model", config_of(model_dir), max_seq=64, model=model)
    assert runner.model is model
    assert runner.prefill(prompt_ids(model_dir)).logits_at_pred.shape == (512,)
