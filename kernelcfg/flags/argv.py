"""vLLM's flag language, read the way ``vllm serve`` reads it, into :class:`Inputs`.

The steps follow vLLM's ``FlexibleArgumentParser`` pre-processing: the first
``--model`` moves to the model position; a ``--config`` YAML file is expanded right
after the model; in option names, ``_`` becomes ``-`` before the first ``.``;
``-O3``/``-O=3``/``-O 3`` become ``--optimization-level``; dotted keys
(``--kernel-config.moe_backend=x``) are gathered into one JSON value per option,
appended last (so it replaces a whole-JSON value). Then the release's own ``vllm
serve`` parser (:mod:`kernelcfg.flags.serve_line.parser`) reads the words, and the options that
bear on kernels are checked here, with kernelcfg's messages; the others are accepted.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
from argparse import ArgumentTypeError
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from kernelcfg.base import bounded
from kernelcfg.base.answers import Answers
from kernelcfg.base.errors import ArgumentError, EngineError, closest
from kernelcfg.base.problems import Problem
from kernelcfg.flags import model_config
from kernelcfg.flags.serve_line import parser as serve_parser
from kernelcfg.vllm.context import COMPILATION_MODES, CUDAGRAPH_MODES
from kernelcfg.vllm.inputs import INSTALLS, Inputs
from kernelcfg.vllm.kernel_config import values
from kernelcfg.vllm.kernel_config.validation import (
    elsewhere,
    validate_ir_priority,
    validate_kernel_config,
)
from kernelcfg.vllm.kernels.attention import config as attention_config
from kernelcfg.vllm.releases import Release

__all__ = [
    "CONTEXT_OPTIONS",
    "FLAG_OPTIONS",
    "ContextOptions",
    "TargetOptions",
    "context_after_serve",
    "parse",
    "split_serve",
    "split_version",
    "take_options",
]


@dataclass
class TargetOptions:
    """kernelcfg's own options that say what to resolve for: the target, the release,
    the model's architectures and the environment (the CLI's, or a ``--batch`` line's)."""

    device: str | None = None
    """``--device``: a preset name."""
    platform: str | None = None
    """``--platform``: cuda, rocm, xpu, cpu or tpu."""
    capability: str | None = None
    """``--capability``: CUDA compute capability."""
    gfx_arch: str | None = None
    """``--gfx-arch``: ROCm architecture."""
    vllm_version: str | None = None
    """``--vllm-version``; default ``KERNELCFG_VLLM_VERSION``, the installed vLLM, the newest."""
    architectures: list[str] = field(default_factory=list)
    """``--architecture`` (repeatable)."""
    env: dict[str, str] = field(default_factory=dict)
    """``--env KEY=VALUE`` (repeatable) and ``--env-file FILE``'s lines; they win over
    the process's environment."""
    compile_cache: str | None = None
    """``--compile-cache PATH``: a vLLM compile cache (or its ``cache_key_factors.json``)
    of the install the launch will run on."""


@dataclass
class ContextOptions(TargetOptions):
    """The options a line of flags may carry among vLLM's (``--batch`` lines)."""

    quant_scheme: str | None = None
    """``--quant-scheme``: the model's quantisation scheme."""
    install: str | None = None
    """``--install``: what is installed beside vLLM (pip, image, minimal, all)."""
    download: bool = False
    """``--download`` (or ``KERNELCFG_DOWNLOAD=1``): fetch a hub id's config.json from
    the Hub when it is not in the local cache."""


CONTEXT_OPTIONS = {
    "--device": "device",
    "--platform": "platform",
    "--capability": "capability",
    "--gfx-arch": "gfx_arch",
    "--vllm-version": "vllm_version",
    "--architecture": "architectures",
    "--env": "env",
    "--env-file": "env_file",
    "--compile-cache": "compile_cache",
    "--quant-scheme": "quant_scheme",
    "--install": "install",
    "--download": "download",
}
"""kernelcfg's context options, by option string, to the ContextOptions field."""
FLAG_OPTIONS = frozenset({"--download"})
"""The context options that take no value."""

_NORMALISED = {"moe_backend", "linear_backend", "sparse_indexer_topk_backend"}

_MODEL_OPTIONS = frozenset(
    {
        "quantization",
        "attention_backend",
        "attention_config",
        "dtype",
        "kv_cache_dtype",
        "block_size",
    }
)
"""vLLM options kept as parsed on the inputs: what they mean is decided later, by the
release's model of vLLM (the attention config, the selection)."""


class _Token(str):
    """A word that came from a config file, or a gathered dotted value; plain words
    of the command line stay plain ``str`` (read with :func:`_origin`, :func:`_parsed`)."""

    origin: str
    parsed: Any


def _token(text: str, origin: str = "flag", parsed: Any = None) -> str:
    if origin == "flag" and parsed is None:
        return text
    tok = _Token(text)
    tok.origin = origin
    tok.parsed = parsed
    return tok


def _origin(word: str) -> str:
    return word.origin if type(word) is _Token else "flag"


def _parsed(word: str) -> Any:
    return word.parsed if type(word) is _Token else None


def split_version(argv: Sequence[str]) -> str | None:
    """The ``--vllm-version`` a line asks for (the last one), read before anything else."""
    found = None
    if "--vllm-version" not in "\0".join(argv):  # most lines: one C scan, no loop
        return found
    for i, arg in enumerate(argv):
        if arg.startswith("--vllm-version="):
            found = arg.split("=", 1)[1]
        elif arg == "--vllm-version" and i + 1 < len(argv):
            found = argv[i + 1]
    return found


def _load_yaml(path_text: str, notes: list[Problem]) -> list[str]:
    """``--config FILE``'s keys as options, the way vLLM's parser turns them."""
    if path_text.rsplit(".", 1)[-1] not in ("yaml", "yml"):
        raise ArgumentError(
            f"--config: config file must be a .yaml or .yml file, got {path_text!r}",
            field="config",
        )
    path = Path(path_text)
    data = bounded.loads_yaml(bounded.read_text(path_text, "--config"), f"--config {path.name}")
    if data is None:
        raise ArgumentError(
            f"--config: {bounded.shown(path_text)} is empty; vllm serve stops on it "
            "(AttributeError)",
            field="config",
        )
    if not isinstance(data, dict):
        raise ArgumentError(
            f"--config: {path_text!r} must hold a mapping of option names to values",
            field="config",
        )
    origin = f"config file {path.name}"
    out: list[str] = []
    for key, value in data.items():
        name = f"--{key}"
        if isinstance(value, bool):
            if value:
                out.append(_token(name, origin))
            else:
                notes.append(
                    Problem(
                        "warning",
                        "yaml-false-dropped",
                        str(key),
                        f"{path.name}: '{key}: false' is dropped by vllm serve (it has no "
                        f"--no-{key} at the top level); the setting keeps its default",
                    )
                )
        elif isinstance(value, list):
            if value:
                out.append(_token(name, origin))
                out.extend(_token(str(v), origin) for v in value)
        elif isinstance(value, dict):
            text = _yaml_json(value, path.name, key)
            out.extend([_token(name, origin), _token(text, origin)])
        else:
            out.extend([_token(name, origin), _token(_yaml_scalar(value, path.name, key), origin)])
    return out


def _yaml_scalar(value: Any, file: str, key: object) -> str:
    """A YAML scalar as vLLM passes it on (``str()``); binary and sets are refused."""
    if isinstance(value, bytes | set):
        raise ArgumentError(
            f"--config {file}: {key!s} holds a YAML {type(value).__name__}, which vllm serve "
            "cannot pass on as an option value",
            field=str(key),
        )
    try:
        return str(value)
    except ValueError as exc:  # an integer beyond Python's digit limit
        raise ArgumentError(
            f"--config {file}: {key!s}: {bounded.reason(exc)}", field=str(key)
        ) from None


def _yaml_json(value: dict[Any, Any], file: str, key: object) -> str:
    """A YAML mapping as the JSON text vLLM makes of it; values JSON cannot hold refused."""
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ArgumentError(
            f"--config {file}: {key!s} holds a value JSON cannot carry "
            f"({bounded.reason(exc)}); vLLM itself would crash on it",
            field=str(key),
        ) from None


_CONFIG_TOKEN = re.compile(r"--config(=.+|$)")
_SERVED_NAME = re.compile(r"--served[-_]model[-_]name(=.+|$)")
_MODEL_TOKEN = re.compile(r"--model(=.+|$)")


def _expand_config(
    tokens: list[str], notes: list[Problem], *, insert_at: int, serve: bool
) -> list[str]:
    """``--config FILE``: its keys as options, placed after the model (vLLM's step)."""
    for t in tokens:
        if t.startswith("--config="):
            notes.append(
                Problem(
                    "warning",
                    "config-equals-ignored",
                    "config",
                    f"{bounded.shown(str(t))}: vLLM only reads '--config FILE' (with a space); "
                    "with '=' the file is silently ignored, and so kernelcfg ignores it",
                )
            )
    count = tokens.count("--config")
    if count == 0:
        return tokens
    if count > 1:
        raise ArgumentError(
            "--config: more than one config file specified (vllm serve stops: AssertionError)",
            field="config",
        )
    idx = tokens.index("--config")
    if idx + 1 >= len(tokens):
        raise ArgumentError(
            "--config: no config file specified (vllm serve stops: ValueError)", field="config"
        )
    loaded = _load_yaml(tokens[idx + 1], notes)
    rest = tokens[:idx] + tokens[idx + 2 :]
    if serve and insert_at == 0 and "--model" not in loaded:
        raise ArgumentError(
            "No model specified! Give the model first (vllm serve MODEL ...) or as 'model:' in "
            "the config file (vllm serve stops: ValueError)",
            field="model",
        )
    return rest[:insert_at] + loaded + rest[insert_at:]


def _dash_name(arg: str) -> str:
    """``--a_b.c_d=v`` to ``--a-b.c_d=v``: only the name before the first ``.``."""
    key, eq, value = arg.partition("=")
    head, dot, tail = key.partition(".")
    return head.replace("_", "-") + dot + tail + eq + value


def _rewrite(tokens: list[str]) -> list[str]:
    """``_`` to ``-`` before the first ``.`` of ``--`` options; the ``-O`` forms."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        if arg.startswith("--help="):
            out.append(_token("--help", _origin(arg)))
        elif arg.startswith("--"):
            out.append(_token(_dash_name(arg), _origin(arg)) if "_" in arg else arg)
        elif arg.startswith("-O") and arg != "-O":
            value = arg[3:] if arg[2] == "=" else arg[2:]
            origin = _origin(arg)
            out.extend([_token("--optimization-level", origin), _token(value, origin)])
        elif arg == "-O" and i + 1 < len(tokens) and tokens[i + 1] in ("0", "1", "2", "3"):
            out.append(_token("--optimization-level", _origin(arg)))
        elif arg == "-O":
            raise ArgumentError(
                "unrecognized arguments: -O"
                + (f" {tokens[i + 1]}" if i + 1 < len(tokens) else "")
                + " (with a space, -O takes only 0, 1, 2 or 3; write -O3 or "
                "--optimization-level 3)",
                field="optimization_level",
            )
        else:
            out.append(arg)
        i += 1
    return out


_JSON_WORDS = frozenset({"true", "false", "null", "NaN", "Infinity"})
"""The JSON values that start with a letter."""


def _dotted_value(text: str) -> Any:
    """A dotted option's value as vLLM reads it: JSON, else a human-readable integer,
    else the text. A word that starts with an ASCII letter and is not one of JSON's
    words is neither (neither ``json.loads`` nor ``int`` reads it), so it is the text
    at once: two exceptions saved on most dotted values (``…rms_norm=vllm_c``)."""
    head = text.lstrip(" \t\n\r")[:1]
    if head.isascii() and head.isalpha() and text.strip(" \t\n\r") not in _JSON_WORDS:
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    except (RecursionError, ValueError) as exc:
        raise ArgumentError(
            f"dotted value {bounded.shown(text)}: unusable JSON ({bounded.reason(exc)})"
        ) from None
    try:
        return serve_parser.human_readable_int(text)
    except (ValueError, OverflowError, ArgumentTypeError):
        return text


def _merge(into: dict[str, Any], new: dict[str, Any], path: str, dupes: list[str]) -> None:
    for key, value in new.items():
        here = f"{path}.{key}"
        if key in into and isinstance(into[key], dict) and isinstance(value, dict):
            _merge(into[key], value, here, dupes)
        elif key in into and isinstance(into[key], list) and isinstance(value, list):
            into[key] = into[key] + value
        else:
            if key in into:
                dupes.append(here)
            into[key] = value


def _warn_duplicates(dupes: list[str], notes: list[Problem]) -> None:
    """vLLM's one-line warning about keys given more than once."""
    if dupes:
        notes.append(
            Problem(
                "warning",
                "duplicate-keys",
                None,
                f"Found duplicate keys {', '.join(dict.fromkeys(dupes))}: the last value wins",
            )
        )


def _gather_dotted(tokens: list[str], notes: list[Problem]) -> list[str]:
    """Gather ``--opt.a.b=v`` into one JSON value per option, placed last."""
    if not any("." in t for t in tokens):  # the common case: only repeats to warn about
        names = [t.partition("=")[0] for t in tokens if t.startswith("--")]
        if len(set(names)) != len(names):
            seen_once: set[str] = set()
            repeated: list[str] = []
            for name in names:
                if name in seen_once:
                    repeated.append(name)
                seen_once.add(name)
            _warn_duplicates(repeated, notes)
        return tokens
    gathered: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    dupes: list[str] = []
    seen: set[str] = set()
    out: list[str] = []
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        if arg.startswith("--") and "." not in arg:
            name = arg.split("=", 1)[0]
            if name in seen:
                dupes.append(name)
            seen.add(name)
        dotted = _dotted(tokens, i) if "." in arg and arg.startswith("-") else None
        if dotted is None:
            out.append(arg)
            i += 1
            continue
        key_path, value_text, i = dotted
        key, nested = _nest(key_path, value_text)
        _merge(gathered.setdefault(key, {}), nested, key, dupes)
        origins.setdefault(key, _origin(arg))
    _warn_duplicates(dupes, notes)
    for key, value in gathered.items():
        out.append(_token(key, origins[key]))
        out.append(_token(json.dumps(value), origins[key], parsed=value))
    return out


def _dotted(tokens: list[str], i: int) -> tuple[str, str, int] | None:
    """The key path and value text of a dotted option at ``tokens[i]`` (vLLM's rule:
    ``-0.5`` counts too, and eats a word), with the index after it; ``None`` when the
    word is not one (``--opt=a.b``)."""
    arg = tokens[i]
    if "=" in arg:
        key_path, value_text = arg.split("=", 1)
        return (key_path, value_text, i + 1) if "." in key_path else None
    if i + 1 >= len(tokens):
        raise ArgumentError(f"argument {arg}: expected one argument", field=arg)
    return arg, str(tokens[i + 1]), i + 2


def _nest(key_path: str, value_text: str) -> tuple[str, dict[str, Any]]:
    """``--opt.a.b+=x,y`` to ``("--opt", {"a": {"b": ["x", "y"]}})``."""
    value: Any
    if key_path.endswith("+"):
        key_path = key_path[:-1]
        value = value_text.split(",")
    else:
        value = _dotted_value(value_text)
    key, *keys = key_path.split(".")
    nested: dict[str, Any] = {}
    cursor = nested
    for k in keys[:-1]:
        cursor[k] = {}
        cursor = cursor[k]
    cursor[keys[-1]] = value
    return key, nested


_CHOSEN: Answers[tuple[Release, str, str], str] = Answers(1024)
"""Backend values already accepted, by release, option and the value as written."""


def _choice(release: Release, dest: str, flag: str, value: str) -> str:
    """The value of a choice option as vLLM keeps it (normalised); refused with the
    allowed values and the closest one when it is not among them."""
    key = (release, dest, value)
    found = _CHOSEN.find(key)
    if found is None:
        found = _choose(release, dest, flag, value)
        _CHOSEN.keep(key, found)
    return found


def _choose(release: Release, dest: str, flag: str, value: str) -> str:
    normalised = values.normalize_backend(value) if dest in _NORMALISED else value
    allowed = list(release.choices(dest))
    if dest == "all2all_backend":
        allowed = [c for c in allowed if c != release.constant("PASSTHROUGH_ALL2ALL_BACKEND")]
    if normalised in allowed:
        return normalised
    hint = closest(normalised, allowed)
    extra = ""
    if dest == "all2all_backend" and value == release.constant("PASSTHROUGH_ALL2ALL_BACKEND"):
        extra = " ('passthrough' is bound automatically for MoE backends that dispatch themselves)"
    else:
        other = elsewhere(release, repr(normalised), lambda r: normalised in r.choices(dest))
        if other:
            extra = f" ({other})"
    raise ArgumentError(
        f"argument {flag}: invalid choice {value!r}; allowed: {', '.join(sorted(allowed))}"
        + (f" (did you mean {hint!r}?)" if hint else "")
        + extra,
        field=dest,
    )


def _int(flag: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ArgumentError(f"argument {flag}: invalid int value: {value!r}", field=flag) from None


def _optimization_level(value: str) -> int:
    text = value.strip()
    level: int | None = None
    try:
        level = int(text)
    except ValueError:
        try:
            number = float(text)
            level = int(number) if number.is_integer() else None
        except ValueError:
            level = None
    if level is None or level not in (0, 1, 2, 3):
        raise EngineError(
            f"-O/--optimization-level: {bounded.shown(value)} is not an optimisation level; "
            "allowed: 0, 1, 2, 3 (vllm serve reads it as text, then refuses it while building "
            "its config)",
            field="optimization_level",
        )
    return level


def _json(flag: str, token: str) -> Any:
    parsed = _parsed(token)
    if parsed is not None:
        return parsed
    try:
        value = json.loads(token)
    except json.JSONDecodeError as exc:
        raise ArgumentError(
            f"argument {flag}: {bounded.shown(str(token))} is not valid JSON ({exc.msg} at "
            f"column {exc.colno}); for one field write {flag}.FIELD=VALUE",
            field=flag,
        ) from None
    except (RecursionError, ValueError) as exc:
        raise ArgumentError(
            f"argument {flag}: unusable JSON ({bounded.reason(exc)})", field=flag
        ) from None
    if not isinstance(value, dict):
        raise ArgumentError(
            f"argument {flag}: expected a JSON object, got {bounded.shown(str(token))}",
            field=flag,
        )
    bounded.check_depth(value, f"argument {flag}")
    return value


def _compilation(release: Release, value: dict[str, Any], flag: str, inputs: Inputs) -> None:
    known = set(release.data.get("compilation_fields", ()))
    for key in value:
        if known and key not in known:
            hint = closest(key, known)
            raise ArgumentError(
                f"argument {flag}: unknown compilation-config field {key!r}"
                + (f" (did you mean {hint!r}?)" if hint else ""),
                field=f"compilation_config.{key}",
            )
    fields = serve_parser.options(release).fields("compilation_config")
    nested = serve_parser.unknown_key(value, fields) if fields is not None else None
    if nested:  # a key inside pass_config and the like
        raise ArgumentError(f"argument {flag}: {nested}", field="compilation_config")
    mode = _compilation_mode(value.get("mode"), flag)
    cudagraph = _cudagraph_mode(value.get("cudagraph_mode"), flag)
    backend = value.get("backend", "")
    if not isinstance(backend, str):
        raise ArgumentError(
            f"argument {flag}: backend: Input should be a valid string, got {backend!r}",
            field="compilation_config.backend",
        )
    if mode == "VLLM_COMPILE" and backend not in ("", "eager", "inductor"):
        raise ArgumentError(
            f"argument {flag}: Invalid backend for piecewise compilation: {backend} "
            "(with mode 3 the backend must be '', 'eager' or 'inductor')",
            field="compilation_config.backend",
        )
    inputs.compilation_mode = mode
    inputs.cudagraph_mode = cudagraph
    inputs.compile_backend = backend
    inputs.options["compilation_config"] = value


def _compilation_mode(mode: Any, flag: str) -> str | None:
    """``-cc.mode`` as a ``CompilationMode`` name (vLLM takes the name in any case, or 0-3)."""
    if mode is None:
        return None
    if isinstance(mode, str):
        if mode.upper() not in COMPILATION_MODES:
            raise ArgumentError(
                f"argument {flag}: Invalid compilation mode: {mode}. Valid modes are: "
                f"{', '.join(COMPILATION_MODES)}",
                field="compilation_config.mode",
            )
        return mode.upper()
    if isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= 3:
        return COMPILATION_MODES[mode]
    raise ArgumentError(
        f"argument {flag}: mode: Input should be 0, 1, 2 or 3, got {mode!r}",
        field="compilation_config.mode",
    )


def _cudagraph_mode(cudagraph: Any, flag: str) -> str | None:
    """``-cc.cudagraph_mode`` as a ``CUDAGraphMode`` name (any case, or 0-2)."""
    if cudagraph is None:
        return None
    if isinstance(cudagraph, str):
        if cudagraph.upper() not in CUDAGRAPH_MODES:
            hint = closest(cudagraph.upper(), CUDAGRAPH_MODES)
            raise ArgumentError(
                f"argument {flag}: unknown cudagraph_mode {cudagraph!r}; allowed: "
                f"{', '.join(CUDAGRAPH_MODES)} (any case) or 0, 1, 2"
                + (f" (did you mean {hint!r}?)" if hint else "")
                + "; vLLM itself crashes here with a bare KeyError",
                field="compilation_config.cudagraph_mode",
            )
        return cudagraph.upper()
    if isinstance(cudagraph, int) and not isinstance(cudagraph, bool) and cudagraph in (0, 1, 2):
        return CUDAGRAPH_MODES[cudagraph]
    raise ArgumentError(
        f"argument {flag}: cudagraph_mode: Input should be 0, 1, 2, (2, 0) or (2, 1), "
        f"got {cudagraph!r}",
        field="compilation_config.cudagraph_mode",
    )


_KERNEL_BOOLEANS = (
    "enable_flashinfer_autotune",
    "enforce_eager",
    "enable_lora",
    "enable_fault_tolerance",
    "enable_expert_parallel",
    "monokernel",
)


def parse(
    argv: Sequence[str],
    release: Release,
    *,
    env: Mapping[str, str] | None = None,
    context: ContextOptions | None = None,
    serve_is_vllms: bool = False,
) -> tuple[Inputs, ContextOptions]:
    """Read ``argv`` (vLLM flags, optionally ``vllm serve MODEL …``) into inputs.

    kernelcfg's own options (:data:`CONTEXT_OPTIONS`) are taken out first: anywhere
    before the ``vllm serve`` part, and inside it where the release's ``vllm serve``
    has no option of that name — unless ``serve_is_vllms``: then every word of the
    ``vllm serve`` part is vLLM's (a line found in a file or written in a batch: an
    option vLLM lacks is refused as vLLM refuses it, never a change of target).
    The rest is read as ``vllm serve`` reads it.
    """
    inputs = Inputs(env=dict(env) if env is not None else {})
    ctx = context or ContextOptions()
    head, serve = split_serve(argv)
    head = take_options(head, CONTEXT_OPTIONS, lambda name, value: _context(ctx, name, value))
    tokens, insert_at = head, 0
    if serve is not None:
        own = {} if serve_is_vllms else context_after_serve(release)
        taken = take_options(
            serve, own, lambda name, value: _context(ctx, name, value), after_serve=True
        )
        tokens, insert_at = _serve_line(taken, head)
    if "--config" in tokens or any(t.startswith("--config=") for t in tokens):
        tokens = _expand_config(tokens, inputs.notes, insert_at=insert_at, serve=serve is not None)
        given = _read(release, tokens, inputs.notes)
    else:
        given = _read_again(release, tokens, inputs.notes)
    _apply_all(release, inputs, given)
    env = {**inputs.env, **ctx.env} if ctx.env else inputs.env  # the line's --env wins
    model_config.read(
        inputs,
        given.get("hf_config_path"),
        env=env,
        revision=given.get("revision"),
        download=ctx.download,
    )
    return inputs, ctx


def _read(release: Release, tokens: list[str], notes: list[Problem]) -> dict[str, Any]:
    """What the release's ``vllm serve`` makes of the words, after vLLM's renaming and
    gathering passes (their warnings go to ``notes``)."""
    if any("_" in t or t.startswith(("-O", "--help=")) for t in tokens):
        tokens = _rewrite(tokens)
    tokens = _gather_dotted(tokens, notes)
    return serve_parser.parse(release, tokens) if tokens else {}


class _Read(NamedTuple):
    """What :func:`_read` made of a list of words that reads no file."""

    given: dict[str, Any]
    """Its answer (kept unchanged: each line gets a copy)."""
    notes: tuple[Problem, ...]
    """The warnings it wrote."""
    gathered: tuple[str, ...]
    """The options whose value is a gathered dotted value (a word carrying its parsed
    mapping, which each line gets its own copy of)."""
    lists: tuple[str, ...]
    """The options whose value is a list of plain values (``--served-model-name a b``),
    which each line gets its own copy of."""


_READS: Answers[tuple[object, ...], _Read] = Answers(8192)
""":func:`_read`'s answers by release and words. A batch repeats the same flags for
many targets and environments (kernelcfg's own options are not among the words):
``make bench``'s seven-device ``--matrix`` went from 13,700-14,500 to 15,700-16,400
results/s with it (``--jobs auto``; one process 8,600 -> 9,600)."""
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


def _read_again(release: Release, tokens: list[str], notes: list[Problem]) -> dict[str, Any]:
    """:func:`_read` for words that read no file, answered once per distinct list."""
    key = (release, *tokens)
    found = _READS.find(key)
    if found is None:
        written: list[Problem] = []
        given = _read(release, tokens, written)
        notes += written
        kept = _keepable(given, written)
        if kept is not None:
            _READS.keep(key, kept)
        return given if kept is None else _fresh(kept)
    notes += found.notes
    return _fresh(found)


def _keepable(given: dict[str, Any], notes: list[Problem]) -> _Read | None:
    """``given`` as kept, or ``None`` where a value could be changed by its reader."""
    gathered, lists = [], []
    for dest, value in given.items():
        if type(value) is _Token and isinstance(value.parsed, dict):
            gathered.append(dest)
        elif type(value) is list and all(type(v) in _IMMUTABLE for v in value):
            lists.append(dest)
        elif type(value) not in _IMMUTABLE and dest not in ("_origins", "_earlier"):
            return None
    return _Read(dict(given), tuple(notes), tuple(gathered), tuple(lists))


def _fresh(kept: _Read) -> dict[str, Any]:
    """A line's own copy of a kept answer (:func:`_apply_all` takes it apart)."""
    given = dict(kept.given)
    for dest in kept.gathered:
        word = given[dest]
        given[dest] = _token(str(word), word.origin, copy.deepcopy(word.parsed))
    for dest in kept.lists:
        given[dest] = list(given[dest])
    return given


@cache
def context_after_serve(release: Release) -> dict[str, str]:
    """kernelcfg's context options that stay kernelcfg's after ``vllm serve``: those the
    release's own ``vllm serve`` has no option of the same name for."""
    theirs = serve_parser.options(release).strings
    return {name: dest for name, dest in CONTEXT_OPTIONS.items() if name not in theirs}


def split_serve(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """kernelcfg's part and what follows ``[--] [vllm] serve`` (``None``: no serve).

    A bare ``--`` before ``vllm serve`` (or alone at the start) only separates.
    """
    args = list(argv)
    for idx, arg in enumerate(args):
        if arg == "serve" and (idx == 0 or args[idx - 1] in ("vllm", "--")):
            head = idx - 1 if idx and args[idx - 1] == "vllm" else idx
            if head and args[head - 1] == "--":
                head -= 1
            return args[:head], args[idx + 1 :]
    if args and args[0] == "--":
        args = args[1:]
    return args, None


def take_options(
    tokens: list[str],
    names: Mapping[str, str],
    take: Callable[[str, str], None],
    *,
    after_serve: bool = False,
) -> list[str]:
    """``tokens`` without the options ``names`` lists (``--x V`` or ``--x=V``; one of
    :data:`FLAG_OPTIONS` alone, handed ``""``), each handed to ``take``; a bare ``--``
    ends the search. ``after_serve``: the words follow ``vllm serve``, where a flag
    option written with a value (``--download /models``, ``--download=/models``) is
    left to vLLM, whose parser reads it as the prefix of an option that takes one
    (``--download-dir``): kernelcfg takes it only where vLLM would refuse it."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        name, eq, inline = arg.partition("=")
        if arg == "--":
            out.extend(tokens[i:])
            break
        if name not in names:
            out.append(arg)
            i += 1
            continue
        if name in FLAG_OPTIONS:
            if after_serve and _valued(tokens, i):
                out.append(arg)
            elif eq:
                raise ArgumentError(f"{name}: takes no value", field=names[name])
            else:
                take(name, "")
            i += 1
            continue
        if eq:
            take(name, inline)
            i += 1
            continue
        if i + 1 >= len(tokens):
            raise ArgumentError(f"{name}: expected one argument", field=names[name])
        take(name, tokens[i + 1])
        i += 2
    return out


def _valued(tokens: list[str], i: int) -> bool:
    """Whether the option at ``tokens[i]`` is written with a value (``=V``, or a next
    word that is no option)."""
    return "=" in tokens[i] or (i + 1 < len(tokens) and not tokens[i + 1].startswith("-"))


def _serve_line(serve: list[str], head: list[str]) -> tuple[list[str], int]:
    """The words after ``vllm serve`` as vLLM orders them (the first ``--model`` moved
    to the front), with kernelcfg's part inserted after the model; and how many words
    the model takes (0 or 1)."""
    serve = list(serve)
    for i, arg in enumerate(serve):
        if not _MODEL_TOKEN.fullmatch(arg):
            continue
        if arg == "--model":
            if i + 1 >= len(serve):
                raise ArgumentError(
                    "--model: expected one argument (vllm serve stops: IndexError)", field="model"
                )
            value = serve.pop(i + 1)
        else:
            value = arg.split("=", 1)[1]
        serve.pop(i)
        serve.insert(0, value)
        break
    if (
        serve
        and serve[0].startswith("-")
        and not any(_CONFIG_TOKEN.fullmatch(t) for t in serve)
        and any(_SERVED_NAME.fullmatch(t) for t in serve)
    ):
        raise ArgumentError(
            "`model` should be provided as the first positional argument when using "
            "`vllm serve`, i.e. `vllm serve <model> --<arg> <value>` (vllm serve stops: "
            "ValueError)",
            field="model",
        )
    model = 1 if serve and not serve[0].startswith("-") else 0
    return serve[:model] + head + serve[model:], model


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A variable name a shell (and vLLM's environment) can hold."""


def _context(ctx: ContextOptions, name: str, value: str) -> None:
    """Apply one of kernelcfg's own options."""
    dest = CONTEXT_OPTIONS[name]
    if dest == "architectures":
        ctx.architectures.append(value)
    elif dest == "env":
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise ArgumentError(
                f"--env: expected KEY=VALUE, got {bounded.shown(value)}", field="env"
            )
        if not _ENV_NAME.fullmatch(key):
            raise ArgumentError(
                f"--env: {bounded.shown(key)} is not a variable name (ASCII letters, digits "
                "and _, not starting with a digit)",
                field="env",
            )
        ctx.env[key] = val
    elif dest == "env_file":
        from kernelcfg.checks.lint_env import read_env_file

        ctx.env = {**read_env_file(value), **ctx.env}
    elif dest in ("quant_scheme", "install"):
        check_choice(dest, name, value)
        setattr(ctx, dest, value)
    elif dest == "download":
        ctx.download = True
    else:
        setattr(ctx, dest, value)


def check_choice(dest: str, name: str, value: str) -> None:
    """Refuse a value of ``--quant-scheme`` or ``--install`` (or the variable ``name``
    that stands for one) outside its list, naming the closest allowed value."""
    noun, choices = _CONTEXT_CHOICES[dest]
    allowed = choices()
    if value not in allowed:
        hint = closest(value, allowed)
        raise ArgumentError(
            f"{name}: unknown {noun} {bounded.shown(value)}; allowed: "
            f"{', '.join(allowed)}" + (f" (did you mean {hint!r}?)" if hint else ""),
            field=dest,
        )


def _schemes() -> tuple[str, ...]:
    from kernelcfg.vllm.kernels.quantization import SCHEMES

    return tuple(SCHEMES)


_CONTEXT_CHOICES: dict[str, tuple[str, Callable[[], Sequence[str]]]] = {
    "quant_scheme": ("scheme", _schemes),
    "install": ("install", lambda: INSTALLS),
}
"""The context options with a fixed list of values: what a value is called, and the list."""


@cache
def _flag(release: Release, dest: str) -> str:
    """The option string vLLM names an option by (its first long form); asked for every
    option of every line, so answered once per release and option."""
    return serve_parser.options(release).flag(dest)


def _apply_all(release: Release, inputs: Inputs, given: dict[str, Any]) -> None:
    """What the parsed options mean for kernels; other options are accepted silently."""
    origins: dict[str, str] = given.pop("_origins", {})
    for dest, occurrences in given.pop("_earlier", {}).items():
        for value in occurrences[:-1]:  # each is checked as vLLM checks it; the last counts
            with contextlib.suppress(EngineError):
                _apply(release, Inputs(), dest, _flag(release, dest), value, "flag")
    for dest, value in given.items():
        origin = origins.get(dest, "flag")
        if dest in serve_parser.RAW_DESTS:
            try:
                _apply(release, inputs, dest, _flag(release, dest), value, origin)
            except EngineError as exc:  # read fine; vLLM refuses it building the engine
                inputs.notes.append(Problem.from_error(exc))
        elif dest in _KERNEL_BOOLEANS:
            setattr(inputs, dest, value)
            inputs.sources[dest] = origin
            inputs.options[dest] = value
        elif dest in _MODEL_OPTIONS:
            if dest == "attention_config" and value:
                _check_attention_config(release, value)
            setattr(inputs, dest, value)
            inputs.sources[dest] = origin
            inputs.options[dest] = value
        elif dest == "model_tag" or (dest == "model" and "model_tag" not in given):
            inputs.model = value
            inputs.options["model"] = str(value)
        else:
            inputs.other_options[dest] = origin
            inputs.options[dest] = _option_value(value)


def _option_value(value: Any) -> Any:
    """An option's value as vLLM holds it: a gathered dotted value as its mapping, a
    word from a config file as plain text."""
    if type(value) is not _Token:
        return value
    parsed = _parsed(value)
    return str(value) if parsed is None else parsed


def _check_attention_config(release: Release, value: dict[str, Any]) -> None:
    """``-ac`` as vLLM's parser validates it (its type is the config's JSON validator)."""
    found = attention_config.facts(release.version)
    if found is not None:
        attention_config.from_json(found, value, "--attention-config")


def _apply(release: Release, inputs: Inputs, dest: str, flag: str, tok: str, origin: str) -> None:
    """One option whose raw text kernelcfg checks (serve_parser.RAW_DESTS)."""
    value = str(tok)
    inputs.sources[dest] = origin
    if dest in _NORMALISED or dest == "all2all_backend":
        setattr(inputs, dest, _choice(release, dest, flag, value))
        if dest == "all2all_backend":
            inputs.all2all_given = True
    elif dest in ("data_parallel_size", "tensor_parallel_size"):
        number = _int(flag, value)
        if number < 1:
            raise EngineError(
                f"{dest} must be at least 1, got {number}; vLLM's ParallelConfig refuses it "
                "while building the engine config",
                field=dest,
            )
        setattr(inputs, dest, number)
    elif dest == "optimization_level":
        inputs.optimization_level = _optimization_level(value)
    elif dest == "kernel_config":
        mapping = _json(flag, tok)
        inputs.kernel_values = validate_kernel_config(release, mapping, flag)
        inputs.kernel_config = mapping
        for key in mapping:
            inputs.sources[f"kernel_config.{key}"] = (
                "--kernel-config" if origin == "flag" else origin
            )
    elif dest == "ir_op_priority":
        inputs.ir_op_priority = validate_ir_priority(release, _json(flag, tok), flag)
    elif dest == "compilation_config":
        _compilation(release, _json(flag, tok), flag, inputs)
