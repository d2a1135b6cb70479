"""Facts about token ids: special ids, placeholder tokens, decoded text."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from phase0_shim.optypes import SpecialIDs, TopToken

# Reserved/unused vocabulary slots that a healthy model should never predict:
# <|reserved_special_token_7|> (Llama 3), <unused12> (Gemma), [unused3] (BERT),
# <extra_id_5> (T5), <|extra_3|>, <|reserved_2|>, <|unused_4|>.
_PLACEHOLDER_RE = re.compile(
    r"^(?:<\|?|\[)(?:reserved|unused|extra)(?:_special)?(?:_token)?(?:_id)?_?\d+(?:\|?>|\])$",
    re.IGNORECASE,
)


def is_placeholder(token: str | None) -> bool:
    return token is not None and _PLACEHOLDER_RE.match(token) is not None


@dataclass
class TokenInfo:
    id: int
    token: str | None  # the vocabulary string, None when the id is outside the tokenizer
    text: str  # tokenizer.decode([id])
    logit: float | None  # None when not finite (JSON has no NaN)
    special: bool
    placeholder: bool

    def to_json(self) -> TopToken:
        return {
            "id": self.id,
            "token": self.token,
            "text": self.text,
            "logit": self.logit,
            "special": self.special,
            "placeholder": self.placeholder,
            "in_tokenizer": self.token is not None,
        }


def special_ids(tokenizer: Any) -> set[int]:
    ids = {int(i) for i in tokenizer.all_special_ids}
    for i, added in tokenizer.added_tokens_decoder.items():
        if getattr(added, "special", False):
            ids.add(int(i))
    return ids


def token_info(tokenizer: Any, token_id: int, logit: float | None, specials: set[int]) -> TokenInfo:
    token: str | None = None
    text = ""
    if 0 <= token_id < len(tokenizer):
        converted = tokenizer.convert_ids_to_tokens(token_id)
        token = converted if isinstance(converted, str) else None
        text = tokenizer.decode([token_id])
    finite = logit is not None and math.isfinite(logit)
    return TokenInfo(
        id=token_id,
        token=token,
        text=text,
        logit=float(logit) if finite and logit is not None else None,
        special=token_id in specials,
        placeholder=is_placeholder(token),
    )


def top_tokens(tokenizer: Any, logits: np.ndarray, k: int = 10) -> list[TokenInfo]:
    """The k highest logits, best first; ties keep the lower id first, NaN sorts last."""
    order = np.argsort(-logits, kind="stable")[:k]
    specials = special_ids(tokenizer)
    return [token_info(tokenizer, int(i), float(logits[i]), specials) for i in order]


def _ids(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return []


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def special_token_ids(tokenizer: Any, model_dir: Path | str) -> SpecialIDs:
    """bos/pad/unk ids and every eos id (tokenizer, config.json, generation_config.json)."""
    eos: list[int] = []
    sources = (
        _ids(tokenizer.eos_token_id),
        _ids(_read_json(Path(model_dir) / "config.json").get("eos_token_id")),
        _ids(_read_json(Path(model_dir) / "generation_config.json").get("eos_token_id")),
    )
    for ids in sources:
        eos.extend(i for i in ids if i not in eos)
    return {
        "bos": tokenizer.bos_token_id,
        "eos": eos,
        "pad": tokenizer.pad_token_id,
        "unk": tokenizer.unk_token_id,
    }


# The JSON files AutoTokenizer may read from a model folder.
TOKENIZER_JSON_FILES = (
    "tokenizer_config.json",
    "tokenizer.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "chat_template.json",
    "config.json",
    "generation_config.json",
)

# Larger files are not re-read to find the broken one (tokenizer.json of a
# 256k vocabulary is ~35 MB).
_MAX_RECHECK_BYTES = 512 << 20


def broken_json_file(model_dir: Path | str) -> tuple[Path, ValueError] | None:
    """The first tokenizer JSON file in model_dir that does not parse, with why."""
    for name in TOKENIZER_JSON_FILES:
        path = Path(model_dir) / name
        if not path.is_file() or path.stat().st_size > _MAX_RECHECK_BYTES:
            continue
        try:
            json.loads(path.read_bytes())
        except ValueError as err:  # JSONDecodeError and UnicodeDecodeError
            return path, err
    return None


def load_tokenizer(model_dir: Path | str) -> Any:
    """AutoTokenizer.from_pretrained, naming the file when one is not JSON.

    transformers raises a bare JSONDecodeError ("Expecting value: line 1
    column 1 (char 0)") and tokenizers an Exception, neither naming the file.
    """
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(model_dir))
    except Exception as err:
        broken = broken_json_file(model_dir)
        if broken is None:
            raise
        path, why = broken
        raise ValueError(f"{path} is not valid JSON ({why}); the tokenizer cannot be loaded") from err
