"""Tiny, deterministic checkpoints for tests (Go and pytest).

Each model is written by transformers' own ``save_pretrained`` in bf16
safetensors, next to a real byte-level BPE tokenizer trained on a fixed
English text shipped in this package. No network, no pickles.

By default a model is trained for a few seconds on bundled English text
(``training.py``; cached), so it is a sane language model at its 512-token
vocabulary and passes gate 2's perplexity rule. ``--untrained`` keeps the
random initialisation (``--init-std`` sets its sigma); ``--tokenizer-from``
puts a random model on another model's tokenizer and vocabulary, which is how
the calibration of gate 2 builds random models at a realistic vocabulary.

    python -m phase0_testmodels --family qwen3 --out /tmp/tiny-qwen3 [--sharded]
        [--nan-in model.layers.0.mlp.down_proj.weight] [--rope-scaling llama3|linear]
        [--tied | --untied] [--sliding-window N] [--seed S]
        [--untrained [--init-std SIGMA] [--tokenizer-from MODEL_DIR]]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Sequence

Family = Literal["llama", "mistral", "qwen2", "qwen3"]
FAMILIES: tuple[Family, ...] = ("llama", "mistral", "qwen2", "qwen3")
RopeScaling = Literal["llama3", "linear"]

VOCAB_SIZE = 512
CORPUS = Path(__file__).resolve().parent / "data" / "tokenizer_corpus.txt"

UNK, BOS, EOS, PAD = "<unk>", "<s>", "</s>", "<pad>"
# Two reserved slots, like Llama 3's, so placeholder detection has real ids to see.
RESERVED = ["<|reserved_special_token_0|>", "<|reserved_special_token_1|>"]
SPECIAL_TOKENS = [UNK, BOS, EOS, PAD, *RESERVED]


@dataclass(frozen=True)
class FamilyShape:
    model_type: str
    rope_theta: float
    rms_norm_eps: float
    head_dim: int | None  # None: hidden_size // num_attention_heads


# Qwen3 deliberately has head_dim 32 with 4 heads over hidden 64, so
# n_heads * head_dim != emb_dim, as in Qwen3-0.6B.
_SHAPES: dict[Family, FamilyShape] = {
    "llama": FamilyShape("llama", 500000.0, 1e-5, None),
    "mistral": FamilyShape("mistral", 1000000.0, 1e-5, None),
    "qwen2": FamilyShape("qwen2", 1000000.0, 1e-6, None),
    "qwen3": FamilyShape("qwen3", 1000000.0, 1e-6, 32),
}


def train_tokenizer(vocab_size: int = VOCAB_SIZE) -> Any:
    """A byte-level BPE over the bundled corpus, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS.read_text(encoding="utf-8").splitlines(), trainer=trainer)
    if tok.get_vocab_size() != vocab_size:
        raise RuntimeError(f"trained tokenizer has {tok.get_vocab_size()} tokens, wanted {vocab_size}")
    # Prepend BOS like Llama-family tokenizers do, so encode() behaves like the real thing.
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A",
        pair=f"{BOS} $A {BOS} $B",
        special_tokens=[(BOS, tok.token_to_id(BOS))],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        pad_token=PAD,
        additional_special_tokens=RESERVED,
        model_max_length=256,
    )


def _rope_parameters(kind: RopeScaling | None, theta: float) -> dict[str, Any]:
    if kind is None:
        return {"rope_type": "default", "rope_theta": theta}
    if kind == "llama3":
        return {
            "rope_type": "llama3",
            "rope_theta": theta,
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        }
    if kind == "linear":
        return {"rope_type": "linear", "rope_theta": theta, "factor": 2.0}
    raise ValueError(f"rope scaling {kind!r} is not one of llama3, linear")


def tiny_config(
    family: Family,
    *,
    rope_scaling: RopeScaling | None = None,
    tied: bool | None = None,
    sliding_window: int | None = None,
    token_ids: dict[str, int | None] | None = None,
    vocab_size: int = VOCAB_SIZE,
    init_std: float = 0.1,
) -> Any:
    from transformers import AutoConfig

    if family not in _SHAPES:
        raise ValueError(f"family {family!r} is not one of {', '.join(FAMILIES)}")
    shape = _SHAPES[family]
    kwargs: dict[str, Any] = {
        "vocab_size": vocab_size,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 256,
        "rms_norm_eps": shape.rms_norm_eps,
        "rope_parameters": _rope_parameters(rope_scaling, shape.rope_theta),
        # Larger than the default 0.02 so the random logits have a visible spread.
        "initializer_range": init_std,
        **(token_ids or {}),
    }
    if shape.head_dim is not None:
        kwargs["head_dim"] = shape.head_dim
    if tied is not None:
        kwargs["tie_word_embeddings"] = tied
    if family == "mistral":
        kwargs["sliding_window"] = sliding_window
    elif sliding_window is not None:
        kwargs["sliding_window"] = sliding_window
        kwargs["use_sliding_window"] = True
    return AutoConfig.for_model(shape.model_type, **kwargs)


def make_tiny_model(
    family: Family,
    out: Path | str,
    *,
    sharded: bool = False,
    nan_in: str | None = None,
    rope_scaling: RopeScaling | None = None,
    tied: bool | None = None,
    sliding_window: int | None = None,
    seed: int = 0,
    trained: bool = True,
    init_std: float | None = None,
    tokenizer_from: Path | str | None = None,
) -> Path:
    """Write a tiny ``family`` checkpoint plus tokenizer into ``out``; return ``out``.

    ``trained`` (the default) trains it briefly on bundled English text;
    ``init_std`` and ``tokenizer_from`` are for untrained models only.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from phase0_testmodels.training import load_or_train

    if trained and (init_std is not None or tokenizer_from is not None):
        raise ValueError("init_std and tokenizer_from describe a random model: pass trained=False (--untrained)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_from) if tokenizer_from is not None else train_tokenizer()
    ids = {
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    config = tiny_config(
        family,
        rope_scaling=rope_scaling,
        tied=tied,
        sliding_window=sliding_window,
        token_ids=ids,
        vocab_size=len(tokenizer) if tokenizer_from is not None else VOCAB_SIZE,
        init_std=0.1 if init_std is None else init_std,
    )

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    if trained:
        load_or_train(model, tokenizer, seed)
    model = model.to(torch.bfloat16).eval()
    if nan_in is not None:
        _plant_nan(model, nan_in)
    # ~280 KB of bf16 weights: 100KB shards give a multi-file checkpoint with an index.
    model.save_pretrained(out, max_shard_size="100KB" if sharded else "50MB")
    tokenizer.save_pretrained(out)
    return out


def _plant_nan(model: Any, name: str) -> None:
    """Fill one whole tensor with NaN, as a corrupt download would."""
    import torch

    state = model.state_dict()
    if name not in state:
        raise ValueError(f"--nan-in {name!r}: no such tensor; the model has {', '.join(sorted(state))}")
    with torch.no_grad():
        state[name].fill_(float("nan"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m phase0_testmodels", description=__doc__.splitlines()[0])
    parser.add_argument("--family", required=True, choices=FAMILIES)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--sharded", action="store_true", help="write several shards and an index")
    parser.add_argument("--nan-in", metavar="TENSOR_NAME", help="fill this HF tensor with NaN")
    parser.add_argument("--rope-scaling", choices=("llama3", "linear"))
    tie = parser.add_mutually_exclusive_group()
    tie.add_argument("--tied", dest="tied", action="store_true", default=None)
    tie.add_argument("--untied", dest="tied", action="store_false")
    parser.add_argument("--sliding-window", type=int, metavar="N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--untrained", action="store_true", help="keep the random initialisation")
    parser.add_argument("--init-std", type=float, metavar="SIGMA", help="random init sigma (with --untrained)")
    parser.add_argument("--tokenizer-from", type=Path, metavar="MODEL_DIR", help="another model's tokenizer (with --untrained)")
    ns = parser.parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        path = make_tiny_model(
            ns.family,
            ns.out,
            sharded=ns.sharded,
            nan_in=ns.nan_in,
            rope_scaling=ns.rope_scaling,
            tied=ns.tied,
            sliding_window=ns.sliding_window,
            seed=ns.seed,
            trained=not ns.untrained,
            init_std=ns.init_std,
            tokenizer_from=ns.tokenizer_from,
        )
    except ValueError as exc:
        print(f"testmodels: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0
