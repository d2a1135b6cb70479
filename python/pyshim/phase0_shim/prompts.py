"""Prompt files, prompt style and tokenization, matching upstream verify."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

PromptStyle = Literal["base", "instruct"]

BUNDLED_PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"

# Parts of a model name that mark an instruction-tuned model, matched as whole
# words of the id split on punctuation: Llama-3.2-1B-Instruct, gemma-2b-it,
# Llama-2-7b-chat-hf, Qwen3-4B-Instruct-2507; not "split", "chatterbox".
_INSTRUCT_WORDS = frozenset({"instruct", "it", "chat"})
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


# MAX_PROMPT_FILE bounds a prompt file (upstream's are a few hundred bytes):
# a sparse or runaway file must not be read whole into the worker.
MAX_PROMPT_FILE = 1 << 20


def read_prompts(path: Path) -> list[str]:
    """Return the prompts in a prompt file: one per line, `#` comments and
    blanks skipped. The file must be a regular file of at most
    MAX_PROMPT_FILE bytes of UTF-8 text; the error names it."""
    if path.exists() and not path.is_file():
        raise ValueError(f"{path}: not a regular file")
    with path.open("rb") as f:
        data = f.read(MAX_PROMPT_FILE + 1)
    if len(data) > MAX_PROMPT_FILE:
        raise ValueError(f"{path}: larger than {MAX_PROMPT_FILE} bytes; a prompt file holds a few lines")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start})") from None
    prompts: list[str] = []
    for line in text.splitlines():
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        prompts.append(text)
    return prompts


def canonical_prompt(prompts_dir: Path | str, style: PromptStyle) -> str:
    """The first prompt of ``<prompts_dir>/<style>.txt``."""
    if style not in ("base", "instruct"):
        raise ValueError(f"prompt style {style!r} is not one of 'base', 'instruct'")
    path = Path(prompts_dir) / f"{style}.txt"
    prompts = read_prompts(path)
    if not prompts:
        raise ValueError(f"{path}: no prompt (every line is blank or a # comment)")
    return prompts[0]


def style_from_model_id(model_id: str) -> PromptStyle:
    """'instruct' when the model's own name says instruct / -it / chat, else 'base'.

    Only the last path element counts (the repo name of a hub id, the folder
    of a local checkpoint): a base model kept under /data/it/ or published by
    an organisation named "chat" is still a base model.
    """
    name = model_id.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    words = _WORD_SPLIT.split(name.lower())
    return "instruct" if any(w in _INSTRUCT_WORDS for w in words) else "base"


def tokenize(model_dir: Path | str, prompt: str) -> list[int]:
    """Token ids exactly as upstream verify makes them.

    ``AutoTokenizer.encode`` with the tokenizer's default special tokens and no
    chat template, even for instruct models.
    """
    from phase0_shim.tokens import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    return [int(t) for t in tokenizer.encode(prompt)]
