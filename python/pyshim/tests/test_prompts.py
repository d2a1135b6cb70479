from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from phase0_shim.prompts import BUNDLED_PROMPTS_DIR, canonical_prompt, read_prompts, style_from_model_id, tokenize


def test_read_prompts_skips_comments_and_blanks(tmp_path: Path) -> None:
    path = tmp_path / "base.txt"
    path.write_text("# header\n\n   \n  The sky is  \n# The sea is\nTwo plus two is\n", encoding="utf-8")
    assert read_prompts(path) == ["The sky is", "Two plus two is"]


def test_read_prompts_is_bounded(tmp_path: Path) -> None:
    """A sparse 2 GiB prompt file took the worker to 24 GB RSS; a binary one
    raised a UnicodeDecodeError naming no file. Each is refused, named."""
    import os

    huge = tmp_path / "huge.txt"
    with huge.open("wb") as f:
        f.truncate(2 << 30)
    with pytest.raises(ValueError, match="huge.txt: larger than 1048576 bytes"):
        read_prompts(huge)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"The capital\xa5 of France is\n")
    with pytest.raises(ValueError, match=r"binary.txt: not UTF-8 text \(byte 11\)"):
        read_prompts(binary)
    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="fifo.txt: not a regular file"):
        read_prompts(fifo)


def test_canonical_prompt_is_first_prompt(tmp_path: Path) -> None:
    (tmp_path / "instruct.txt").write_text("#x\n\nSay hi.\nSay bye.\n", encoding="utf-8")
    assert canonical_prompt(tmp_path, "instruct") == "Say hi."


def test_canonical_prompt_errors(tmp_path: Path) -> None:
    (tmp_path / "base.txt").write_text("# only a comment\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no prompt"):
        canonical_prompt(tmp_path, "base")
    with pytest.raises(ValueError, match="not one of"):
        canonical_prompt(tmp_path, "chat")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        canonical_prompt(tmp_path, "instruct")


def test_bundled_prompts() -> None:
    assert canonical_prompt(BUNDLED_PROMPTS_DIR, "base") == "The capital of France is"
    assert len(read_prompts(BUNDLED_PROMPTS_DIR / "base.txt")) >= 3
    assert len(read_prompts(BUNDLED_PROMPTS_DIR / "instruct.txt")) >= 3


@pytest.mark.parametrize(
    ("model_id", "style"),
    [
        ("meta-llama/Llama-3.2-1B", "base"),
        ("meta-llama/Llama-3.2-1B-Instruct", "instruct"),
        ("HuggingFaceTB/SmolLM2-135M-Instruct", "instruct"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "instruct"),
        ("Qwen/Qwen2.5-0.5B-Instruct", "instruct"),
        ("Qwen/Qwen2.5-0.5B", "base"),
        ("Qwen/Qwen3-0.6B", "base"),
        ("google/gemma-2b-it", "instruct"),
        ("google/gemma-2b-IT", "instruct"),
        ("deepseek-ai/deepseek-llm-7b-chat", "instruct"),
        ("Qwen/Qwen-7B-Chat", "instruct"),
        ("someone/tiny_instruct_model", "instruct"),
        ("/models/qwen3_0_6b", "base"),
        ("someone/split-llama", "base"),
        ("someone/bitnet-7b", "base"),
        ("someone/chatterbox-base", "base"),
        ("meta-llama/Llama-2-7b-chat-hf", "instruct"),
        ("Qwen/Qwen3-4B-Instruct-2507", "instruct"),
        # Only the model's own name counts, not the folders above it or the org.
        ("/data/it/SmolLM2-135M", "base"),
        ("/home/me/chat/models/Qwen3-0.6B/", "base"),
        ("chat-org/Llama-3.2-1B", "base"),
        ("/data/base/SmolLM2-135M-Instruct/", "instruct"),
        ("C:\\models\\it\\gemma-2b", "base"),
    ],
)
def test_style_from_model_id(model_id: str, style: str) -> None:
    assert style_from_model_id(model_id) == style


def test_tokenize_matches_autotokenizer_encode(tiny_model) -> None:  # type: ignore[no-untyped-def]
    model_dir = tiny_model("llama")
    prompt = "The capital of France is"
    ids = tokenize(model_dir, prompt)
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    assert ids == tok.encode(prompt)
    assert ids[0] == tok.bos_token_id  # default special tokens are added
    assert tok.decode(ids[1:]) == prompt
