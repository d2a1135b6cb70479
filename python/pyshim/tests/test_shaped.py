"""The real-shaped checkpoint builder, on tiny versions of its shapes: the
published Gemma 3 layout, the family's norm fill, and transformers reading
the folder back as it was built."""

from __future__ import annotations

from pathlib import Path

import pytest

from phase0_benchmodels.shaped import Shape, build, shapes

torch = pytest.importorskip("torch")


def tiny_gemma() -> Shape:
    real = shapes()["gemma-3-4b"]
    config = dict(real.config)
    config["text_config"] = {
        **config["text_config"],
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "query_pre_attn_scalar": 32,
        "vocab_size": 300,
    }
    config["vision_config"] = {
        **config["vision_config"],
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": 28,
        "patch_size": 14,
    }
    config.update(
        mm_tokens_per_image=4,
        image_token_index=299,
        boi_token_index=297,
        eoi_token_index=298,
    )
    return Shape(config, norm_fill=real.norm_fill)


def test_real_configs_are_the_public_ones() -> None:
    table = shapes()
    gemma, phi = table["gemma-3-4b"].config, table["phi-4-mini"].config
    assert gemma["architectures"] == ["Gemma3ForConditionalGeneration"]
    assert (
        gemma["text_config"]["num_hidden_layers"],
        gemma["text_config"]["vocab_size"],
    ) == (34, 262208)
    assert phi["architectures"] == ["Phi3ForCausalLM"]
    assert (
        phi["num_hidden_layers"],
        phi["vocab_size"],
        phi["tie_word_embeddings"],
    ) == (32, 200064, True)
    assert len(phi["rope_scaling"]["long_factor"]) == 48


def test_gemma_is_saved_as_published(tmp_path: Path) -> None:
    from safetensors import safe_open
    from transformers import Gemma3ForConditionalGeneration

    out = build("tiny-gemma", tiny_gemma(), tmp_path)
    assert out == build("tiny-gemma", tiny_gemma(), tmp_path)  # cached
    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        names = set(f.keys())
        assert not [n for n in names if n.startswith("model.")]
        assert "language_model.model.layers.1.pre_feedforward_layernorm.weight" in names
        assert any(n.startswith("vision_tower.") for n in names) and any(n.startswith("multi_modal_projector.") for n in names)
        # Gemma computes x * (1 + w): its norms are 0; the SigLIP LayerNorms 1 with bias 0.
        assert torch.count_nonzero(f.get_tensor("language_model.model.layers.0.self_attn.q_norm.weight")) == 0
        assert torch.all(f.get_tensor("vision_tower.post_layernorm.weight") == 1)
        embed = f.get_tensor("language_model.model.embed_tokens.weight")
    assert embed.dtype == torch.bfloat16 and 0.015 < float(embed.float().std()) < 0.025
    model = Gemma3ForConditionalGeneration.from_pretrained(str(out), dtype=torch.bfloat16)
    assert torch.equal(model.get_input_embeddings().weight, embed)
    head, embedding = model.lm_head, model.get_input_embeddings()
    assert isinstance(head, torch.nn.Linear) and isinstance(embedding, torch.nn.Embedding)
    assert head.weight.data_ptr() == embedding.weight.data_ptr()  # tied
