"""JSON text written by encoders made once per process.

``json.dumps`` and ``JSONEncoder.encode`` build a new C encoder on every call; a batch
line encoded about twenty values, and building the encoders was about 5% of its cost
(``make bench``). The encoders here are built once and give exactly ``json``'s text:
where the C encoder is missing, ``json``'s own functions are used.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any

__all__ = ["canonical", "compact"]


def _made_once(
    *, sort_keys: bool, separators: tuple[str, str], allow_nan: bool
) -> Callable[[Any], str]:
    """``JSONEncoder(...).encode`` with its C encoder made once."""
    plain = json.JSONEncoder(
        sort_keys=sort_keys, separators=separators, allow_nan=allow_nan, check_circular=False
    )
    make = getattr(_encoder, "c_make_encoder", None)
    if make is None:  # another Python: json's own, as it would run
        return plain.encode
    item_sep = separators[0]
    key_sep = separators[1]
    ascii_str = _encoder.encode_basestring_ascii
    chunks = make(
        None, plain.default, ascii_str, None, key_sep, item_sep, sort_keys, False, allow_nan
    )

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return str(ascii_str(value))
        return "".join(chunks(value, 0))

    return encode


compact: Callable[[Any], str] = _made_once(sort_keys=False, separators=(",", ":"), allow_nan=False)
"""Compact JSON (``separators=(",", ":")``, no NaN): kernelcfg's JSON lines."""

canonical: Callable[[Any], str] = _made_once(
    sort_keys=True, separators=(", ", ": "), allow_nan=True
)
"""``json.dumps(value, sort_keys=True)``: the text vLLM digests."""
