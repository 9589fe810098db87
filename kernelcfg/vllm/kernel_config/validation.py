"""vLLM's validation of ``--kernel-config`` and ``--ir-op-priority`` values, each
refusal said in one line that names the flag, the bad value and the closest match.

vLLM validates every ``--kernel-config`` occurrence while parsing; the Python API's raw
mappings go through here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernelcfg.base.errors import ArgumentError, closest
from kernelcfg.vllm.kernel_config import values
from kernelcfg.vllm.releases import Release

__all__ = [
    "elsewhere",
    "validate_ir",
    "validate_ir_priority",
    "validate_kernel",
    "validate_kernel_config",
    "validated",
]


def _pydantic_errors(exc: ValueError) -> list[Any] | None:
    """The errors of a pydantic ``ValidationError`` (a ``ValueError``), else ``None``."""
    errors = getattr(exc, "errors", None)
    return errors(include_url=False) if callable(errors) else None


def _crash(flag: str, exc: TypeError) -> ArgumentError:
    return ArgumentError(
        f"argument {flag}: a value has the wrong shape ({exc}); vLLM itself would crash "
        "here with a TypeError",
        field=flag,
    )


def validated(flag: str, check: Callable[[], Any], explain: Callable[[Any], str]) -> Any:
    """Run a pydantic-backed check; its refusal as one ``ArgumentError`` line."""
    try:
        return check()
    except TypeError as exc:
        raise _crash(flag, exc) from None
    except ValueError as exc:
        errors = _pydantic_errors(exc)
        if errors is None:
            raise
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        loc = ".".join(str(p) for p in errors[0]["loc"])
        raise ArgumentError(f"argument {flag}: {explain(errors[0])}{more}", field=loc) from None


def validate_kernel_config(release: Release, value: dict[str, Any], flag: str) -> dict[str, Any]:
    """A ``--kernel-config`` mapping's values; one ``ArgumentError`` line when invalid.

    vLLM validates every ``--kernel-config`` occurrence while parsing; the Python API's
    raw mappings go through here too.
    """

    def explain(err: Any) -> str:
        loc = ".".join(str(p) for p in err["loc"])
        hint = ""
        if err["type"] == "unexpected_keyword_argument":
            known = [f.name for f in release.kernel_fields]
            suggestion = closest(loc.replace("-", "_"), known)
            hint = f"; fields: {', '.join(known)}" + (
                f" (did you mean {suggestion!r}?)" if suggestion else ""
            )
            other = elsewhere(release, repr(loc), lambda r: loc in r.field_facts)
            if other:
                hint += f"; {other}"
        elif err["type"] == "literal_error" and err["loc"]:
            facts = release.field_facts.get(err["loc"][0])
            if facts is not None and facts.choices is not None:
                suggestion = closest(str(err["input"]), release.choices(facts.choices))
                if suggestion:
                    hint = f" (did you mean {suggestion!r}?)"
        return f"{loc}: {err['msg']}, got {err['input']!r}{hint}"

    result: dict[str, Any] = validated(flag, lambda: validate_kernel(release, value), explain)
    return result


def elsewhere(release: Release, what: str, has: Callable[[Release], bool]) -> str | None:
    """Which other releases have something this one lacks, said as a fix."""
    from kernelcfg.vllm import releases

    if has(release):
        return None
    having = releases.versions_where(lambda r: r.version != release.version and has(r))
    if not having:
        return None
    return f"{what} exists in vLLM {', '.join(having)}; you are resolving for {release.version}"


def validate_ir_priority(
    release: Release, value: dict[str, Any], flag: str
) -> dict[str, list[str]]:
    def explain(err: Any) -> str:
        loc = ".".join(str(p) for p in err["loc"])
        hint = (
            f"; ops: {', '.join(release.ir_ops)}"
            if err["type"] == "unexpected_keyword_argument"
            else ""
        )
        return f"{loc}: {err['msg'] or 'every entry must be a string'}{hint}"

    result: dict[str, list[str]] = validated(flag, lambda: validate_ir(release, value), explain)
    return result


def validate_kernel(release: Release, given: Mapping[str, Any]) -> values.Values:
    """The values of ``KernelConfig(**given)``; raises pydantic's error when invalid."""
    out = values.defaults(release)
    fields = release.field_facts
    for name, value in given.items():
        facts = fields.get(name)
        if facts is None:
            break
        ok, checked = values.fast_value(release, facts, value)
        if not ok:
            break
        out[name] = checked
    else:
        return out
    from kernelcfg.vllm.kernel_config.config import (
        config_classes,  # pydantic: only off the plain path
    )

    return config_classes(release).KernelConfig(**given).values()


def validate_ir(release: Release, given: Mapping[str, Any]) -> values.IrLists:
    """The lists of ``IrOpPriorityConfig(**given)``; raises pydantic's error when invalid."""
    lists = values.fast_ir(release, given)
    if lists is not None:
        return lists
    from kernelcfg.vllm.kernel_config.config import config_classes

    return config_classes(release).IrOpPriorityConfig(**given).op_lists()
