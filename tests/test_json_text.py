"""kernelcfg's encoders made once give exactly ``json``'s text (the JSON lines and the
digests depend on it, byte for byte)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcfg.base.json_text import canonical, compact

from .examples import examples

keys = st.one_of(st.text(max_size=6), st.integers(-3, 3), st.booleans(), st.none())
values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=6), inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=examples(150), deadline=None)
@given(values)
def test_compact_is_jsons_compact_text(value: Any) -> None:
    expected = json.dumps(value, separators=(",", ":"), allow_nan=False)
    assert compact(value) == expected


@settings(max_examples=examples(150), deadline=None)
@given(values)
def test_canonical_is_json_dumps_with_sorted_keys(value: Any) -> None:
    assert canonical(value) == json.dumps(value, sort_keys=True)


@settings(max_examples=examples(100), deadline=None)
@given(st.dictionaries(keys, st.integers(), max_size=4))
def test_non_string_keys_as_json_writes_them(value: dict[Any, int]) -> None:
    assert compact(value) == json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize("bad", [math.nan, math.inf, {"x": [-math.inf]}])
def test_compact_refuses_what_json_refuses(bad: Any) -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        compact(bad)
    assert canonical(bad) == json.dumps(bad, sort_keys=True)


def test_unknown_objects_raise_jsons_type_error() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        compact({"x": object()})
