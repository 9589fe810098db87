"""Credentials kept out of every output: the one rule for what looks like a credential,
and the masks every command applies before it writes a value.

A variable whose name holds one of :data:`SECRET_WORDS`, in any case (``VLLM_API_KEY``,
``HF_TOKEN``, ``S3_SECRET_ACCESS_KEY``), holds a credential; so does an option whose
name has one of them as a whole part (``--api-key``, ``--api_key``, ``--hf-token``; not
``--max-num-batched-tokens`` or ``--tokenizer``). Their values are shown as
:data:`MASK`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = [
    "MASK",
    "SECRET_WORDS",
    "hidden",
    "is_secret_name",
    "is_secret_option",
    "masked",
    "masked_env",
    "masked_words",
]

SECRET_WORDS = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "PRIVATE",
)
"""A variable whose name holds one of these, in any case, holds a credential
(``VLLM_API_KEY``, ``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``, ``S3_SECRET_ACCESS_KEY``)."""
MASK = "***"
"""What a credential's value is shown as."""

_SECRET = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)
_OPTION_PART = re.compile(
    r"(?:^|[-_])(?:" + "|".join(SECRET_WORDS) + r")(?:$|[-_])",
    re.IGNORECASE,
)
_ASSIGNMENT = re.compile(r"(?:--?[A-Za-z][\w-]*=)?([A-Za-z_][A-Za-z0-9_]*)=", re.ASCII)


def is_secret_name(name: str) -> bool:
    """Whether a variable of this name holds a credential."""
    return bool(_SECRET.search(name))


def is_secret_option(option: str) -> bool:
    """Whether an option of this name (``--api-key``) takes a credential."""
    return option.startswith("-") and bool(_OPTION_PART.search(option.lstrip("-")))


def masked(name: str, value: str) -> str:
    """``value``, or :data:`MASK` when ``name`` is a credential's and the value is not
    empty."""
    return MASK if value and is_secret_name(name) else value


def masked_env(env: Mapping[str, str]) -> dict[str, str]:
    """An environment with its credentials' values masked."""
    return {name: masked(name, value) for name, value in env.items()}


def masked_words(words: Sequence[str]) -> list[str]:
    """A command line's words with credentials masked: ``NAME=VALUE`` (also after an
    option, ``--env=HF_TOKEN=…``), ``--api-key VALUE`` and ``--api-key=VALUE``."""
    out: list[str] = []
    after_secret = False
    for word in words:
        if after_secret and not word.startswith("-"):
            out.append(MASK if word else word)
            after_secret = False
            continue
        after_secret = False
        out.append(_masked_word(word))
        if "=" not in word and is_secret_option(word):
            after_secret = True
    return out


def _masked_word(word: str) -> str:
    """One word with the credential it carries masked."""
    option, eq, value = word.partition("=")
    if eq and is_secret_option(option):
        return f"{option}={MASK if value else value}"
    assigned = _ASSIGNMENT.match(word)
    if assigned and is_secret_name(assigned.group(1)):
        value = word[assigned.end() :]
        return word[: assigned.end()] + (MASK if value else value)
    return word


def hidden(message: str, values: Sequence[str]) -> str:
    """``message`` with each of ``values`` that it quotes as a word (alone, or between
    quotes, blanks or ``=``) written :data:`MASK`: a file's values kept out of an error
    line that names its options."""
    words = sorted({v for v in values if v.strip()}, key=len, reverse=True)
    if not words:
        return message
    pattern = re.compile(
        r"(?<![^\s'\"=])(?:" + "|".join(map(re.escape, words)) + r")(?![^\s'\",)])"
    )
    return pattern.sub(MASK, message)
