"""vLLM's compile-cache key and directory, and what separates two keys.

``VllmBackend.__call__`` (``vllm/compilation/backends.py``) names the directory
``VLLM_CACHE_ROOT/torch_compile_cache/<key>/rank_<R>_<D>/<prefix>`` (the prefix is the
model tag, ``backbone`` for a model's main graph) from four parts — the environment, the
configuration, the traced code and the compiler — and writes ``cache_key_factors.json``
there:

- 0.29-0.33: ``key = sha256(str([env_hash, config_hash, code_hash, compiler_hash]))[:10]``;
  the file holds the raw env factors and the other three hashes.
- 0.34: ``key = hash_factors({"env", "config", "code": {"files"}, "compiler"})[:10]``
  over the factor dicts themselves; the file holds the whole tree and the three hashes.

A :class:`CacheKey` holds what is known of the four parts, from a launch (env and config
computed, code and compiler unknown unless taken from a cache of the same install) or
from a cache's file; :func:`differences` names what separates two keys, part by part.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from kernelcfg.base import bounded
from kernelcfg.base.errors import ArgumentError
from kernelcfg.vllm.kernel_config.hashing import digest

__all__ = [
    "FACTORS_FILE",
    "PARTS",
    "CacheKey",
    "Finding",
    "config_path",
    "differences",
    "directory",
    "find_factors_file",
    "read_factors_file",
]

FACTORS_FILE = "cache_key_factors.json"
"""The file vLLM writes into each cache directory it uses."""
PARTS = ("env", "config", "code", "compiler")
"""The parts of the key, in vLLM's order."""
MAX_DEPTH = 4
"""How deep below a folder kernelcfg looks for a cache's factors file
(``<root>/torch_compile_cache/<key>/rank_0_0/backbone``)."""


@dataclass(frozen=True)
class CacheKey:
    """What is known of one compile-cache key."""

    scheme: str
    """``hashes`` (0.29-0.33: a list of four hashes) or ``factors`` (0.34: the factor
    dicts)."""
    env_factors: dict[str, Any] | None = None
    """``envs.compile_factors()``; ``None`` when unknown."""
    config_factors: dict[str, Any] | None = None
    """``VllmConfig.compile_factors()`` (0.34); ``None`` when unknown or not kept."""
    config_parts: dict[str, str | None] = field(default_factory=dict)
    """Each sub-config's hash by VllmConfig's attribute name (a launch only)."""
    config_known: dict[str, Any] = field(default_factory=dict)
    """The factors of each sub-config known, by attribute name (a launch only): what
    names a differing field while the whole tree is not known."""
    config_hash: str | None = None
    """The config part's hash."""
    code_files: list[dict[str, str]] | None = None
    """``{path, hash}`` per traced file (0.34)."""
    code_hash: str | None = None
    """The code part's hash."""
    compiler_factors: dict[str, Any] | None = None
    """The compiler manager's factors (0.34)."""
    compiler_hash: str | None = None
    """The compiler part's hash."""
    version: str | None = None
    """The vLLM release, where known (a launch; a 0.34 cache's config factors)."""
    source: str = "launch"
    """Where it comes from: ``launch`` or the factors file's path."""

    @property
    def env_hash(self) -> str | None:
        """The env part's hash."""
        return None if self.env_factors is None else digest(self.env_factors)

    @property
    def unknown(self) -> list[str]:
        """The parts not known (each stops the key from being computed)."""
        known = {
            "env": self.env_factors is not None,
            "config": self.config_hash is not None or self.config_factors is not None,
            "code": self.code_hash is not None or self.code_files is not None,
            "compiler": self.compiler_hash is not None or self.compiler_factors is not None,
        }
        return [part for part in PARTS if not known[part]]

    @property
    def key(self) -> str | None:
        """The directory's key; ``None`` while a part is unknown."""
        if self.unknown:
            return None
        if self.scheme == "factors":
            if self.config_factors is None or self.code_files is None:
                return None
            tree = {
                "env": self.env_factors,
                "config": self.config_factors,
                "code": {"files": self.code_files},
                "compiler": self.compiler_factors,
            }
            return digest(tree)[:10]
        listed = [self.env_hash, self.config_hash, self.code_hash, self.compiler_hash]
        if None in listed:
            return None
        return hashlib.sha256(str(listed).encode()).hexdigest()[:10]

    def with_install(self, cache: CacheKey) -> CacheKey:
        """This key with the install's parts (code, compiler) taken from ``cache``."""
        return replace(
            self,
            code_files=cache.code_files,
            code_hash=cache.code_hash,
            compiler_factors=cache.compiler_factors,
            compiler_hash=cache.compiler_hash,
        )


def directory(key: CacheKey, cache_root: str, rank: int = 0, dp_rank: int = 0) -> str | None:
    """The JIT cache directory the key names under ``cache_root`` (``VLLM_CACHE_ROOT``)
    for the model's main graph on one rank; ``None`` while the key is unknown."""
    name = key.key
    if name is None:
        return None
    return os.path.join(
        cache_root, "torch_compile_cache", name, f"rank_{rank}_{dp_rank}", "backbone"
    )


# ---------------------------------------------------------------- reading a cache


def find_factors_file(path: str) -> str:
    """The factors file ``path`` names: the file itself, or the first one found (in name
    order) at most :data:`MAX_DEPTH` folders below it."""
    if os.path.isfile(path):
        return path
    if not os.path.isdir(path):
        raise ArgumentError(
            f"{bounded.shown(path)} is neither a compile-cache folder nor a {FACTORS_FILE}",
            field="cache",
        )
    for found in _walk(path, MAX_DEPTH):
        return found
    raise ArgumentError(
        f"no {FACTORS_FILE} in {bounded.shown(path)} or {MAX_DEPTH} folders below it: "
        "vLLM writes one into each cache directory it compiles into",
        field="cache",
    )


def _walk(folder: str, depth: int) -> Iterator[str]:
    """Factors files under ``folder``, shallowest first, names in order."""
    inside = os.path.join(folder, FACTORS_FILE)
    if os.path.isfile(inside):
        yield inside
    if depth == 0:
        return
    try:
        names = sorted(os.listdir(folder))[:1000]
    except OSError:
        return
    for name in names:
        child = os.path.join(folder, name)
        if os.path.isdir(child) and not os.path.islink(child):
            yield from _walk(child, depth - 1)


def read_factors_file(path: str) -> CacheKey:
    """The key a ``cache_key_factors.json`` (or the folder holding one) records."""
    found = find_factors_file(path)
    data = bounded.loads_json(bounded.read_text(found, FACTORS_FILE), bounded.shown(found))
    if not isinstance(data, dict) or not isinstance(data.get("env"), dict):
        raise ArgumentError(
            f"{bounded.shown(found)} is not a {FACTORS_FILE} vLLM wrote (no 'env' factors)",
            field="cache",
        )
    config = data.get("config")
    scheme = "factors" if isinstance(config, dict) else "hashes"
    code = data.get("code")
    files = code.get("files") if isinstance(code, dict) else None
    compiler = data.get("compiler")
    return CacheKey(
        scheme=scheme,
        env_factors=data["env"],
        config_factors=config if isinstance(config, dict) else None,
        config_hash=_text(data.get("config_hash")),
        code_files=files if isinstance(files, list) else None,
        code_hash=_text(data.get("code_hash")),
        compiler_factors=compiler if isinstance(compiler, dict) else None,
        compiler_hash=_text(data.get("compiler_hash")),
        version=_text(config.get("vllm_version")) if isinstance(config, dict) else None,
        source=found,
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------- differences


@dataclass(frozen=True)
class Finding:
    """One thing that separates two keys."""

    part: str
    """``env``, ``config``, ``code``, ``compiler`` or ``scheme``."""
    what: str
    """The variable, the dotted config path, the file, or the compiler fact."""
    a: Any = None
    """Its value in A (``None``: absent)."""
    b: Any = None
    """Its value in B (``None``: absent)."""
    message: str = ""
    """One plain line."""


MAX_FINDINGS = 200
"""The most findings listed; more are counted in the last one."""


def differences(a: CacheKey, b: CacheKey) -> list[Finding]:
    """What separates ``a`` from ``b``, part by part (unknown parts are not compared)."""
    found: list[Finding] = []
    if a.scheme != b.scheme or (a.version and b.version and a.version != b.version):
        found.append(_release_finding(a, b))
    if a.env_factors is not None and b.env_factors is not None:
        found += _dict_findings("env", a.env_factors, b.env_factors)
    found += _config_findings(a, b)
    found += _code_findings(a, b)
    found += _compiler_findings(a, b)
    if len(found) > MAX_FINDINGS:
        more = len(found) - MAX_FINDINGS + 1
        found = [*found[: MAX_FINDINGS - 1], Finding("more", "", message=f"and {more} more")]
    return found


def _release_finding(a: CacheKey, b: CacheKey) -> Finding:
    said = {"hashes": "0.33 or older", "factors": "0.34 or newer"}
    va = a.version or said[a.scheme]
    vb = b.version or said[b.scheme]
    return Finding(
        "scheme",
        "vllm_version",
        va,
        vb,
        f"the vLLM release differs ({va} vs {vb}): the config part hashes the version, and "
        "0.34 builds the key from the factors themselves; no cache carries across",
    )


def _dict_findings(part: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Finding]:
    """Dotted paths whose values differ between two factor trees."""
    found: list[Finding] = []
    for path, va, vb in _leaves_differing(a, b, ""):
        message = f"{part} {path}: {_shown(va)} vs {_shown(vb)}"
        found.append(Finding(part, path, _value(va), _value(vb), message))
    return found


_ABSENT = object()
"""A factor one side lacks (its ``Finding`` value is ``None``)."""


def _value(value: Any) -> Any:
    return None if value is _ABSENT else value


def _leaves_differing(a: Any, b: Any, prefix: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for name in sorted(set(a) | set(b), key=str):
            path = f"{prefix}.{name}" if prefix else str(name)
            yield from _leaves_differing(a.get(name, _ABSENT), b.get(name, _ABSENT), path)
        return
    if a != b:
        yield prefix, a, b


def _shown(value: Any) -> str:
    """A factor's value in a message: ``absent`` where one side lacks it, JSON's
    ``null`` where it holds ``None``."""
    if value is _ABSENT:
        return "absent"
    if value is None:
        return "null"
    return bounded.cut(repr(value), 80)


@cache
def _attributes() -> dict[str, str]:
    """``VllmConfig``'s attribute name of each key of its ``compile_factors()`` tree
    (``parallel``: ``parallel_config``), from the newest release that keys it so."""
    from kernelcfg.vllm import releases

    for version in reversed(releases.known_versions()):
        data = releases.release_data("compile-config", version)
        if data is not None and data.get("scheme") == "compile_factors":
            return {p["key"]: p["attribute"] for p in data["parts"] if p.get("attribute")}
    return {}


def config_path(path: str) -> str:
    """A dotted config path in vLLM's own names, as every kernelcfg command says it:
    ``VllmConfig``'s attribute first (``parallel_config.tensor_parallel_size``), also
    where 0.34's factor tree keys the part ``parallel``. A path given either way comes
    back in the attribute's spelling (the tree's is still accepted where one is typed)."""
    head, dot, rest = path.partition(".")
    names = _attributes()
    if head in names.values():
        return path
    return names.get(head, head) + dot + rest


def _by_attribute(tree: Mapping[str, Any]) -> dict[str, Any]:
    """A 0.34 factor tree with each part under ``VllmConfig``'s attribute name."""
    return {config_path(str(key)): value for key, value in tree.items()}


def _config_findings(a: CacheKey, b: CacheKey) -> list[Finding]:
    if a.config_factors is not None and b.config_factors is not None:
        return _dict_findings(
            "config", _by_attribute(a.config_factors), _by_attribute(b.config_factors)
        )
    both = [name for name in a.config_known if name in b.config_known]
    if both:
        return _dict_findings(
            "config",
            {name: a.config_known[name] for name in both},
            {name: b.config_known[name] for name in both},
        )
    parts = [
        name
        for name in sorted(set(a.config_parts) & set(b.config_parts))
        if a.config_parts[name]
        and b.config_parts[name]
        and a.config_parts[name] != b.config_parts[name]
    ]
    if parts:
        return [Finding("config", name, message=f"config {name} differs") for name in parts]
    return _hash_findings(
        "config",
        a.config_hash,
        b.config_hash,
        "the config hash differs (0.33 caches keep only its hash: compare the launches "
        "to see which field)",
    )


def _hash_findings(part: str, a: str | None, b: str | None, message: str) -> list[Finding]:
    """One finding when both sides know only a part's hash and the hashes differ."""
    if a and b and a != b:
        return [Finding(part, f"{part}_hash", a, b, message)]
    return []


def _code_findings(a: CacheKey, b: CacheKey) -> list[Finding]:
    if a.code_files is not None and b.code_files is not None:
        return _file_findings(a.code_files, b.code_files)
    return _hash_findings("code", a.code_hash, b.code_hash, "the traced code differs")


def _file_findings(a: list[dict[str, str]], b: list[dict[str, str]]) -> list[Finding]:
    """Traced files added, removed or changed; a whole install moved is one finding."""
    ha = {str(f.get("path")): _hash_text(f.get("hash")) for f in a if isinstance(f, dict)}
    hb = {str(f.get("path")): _hash_text(f.get("hash")) for f in b if isinstance(f, dict)}
    moved = _moved(ha, hb)
    if moved is not None:
        old, new = moved
        ha = {new + p[len(old) :] if p.startswith(old) else p: h for p, h in ha.items()}
        found = [Finding("code", "install path", old, new, f"the install moved: {old} -> {new}")]
    else:
        found = []
    for path in sorted(set(ha) | set(hb)):
        if path not in hb:
            found.append(Finding("code", path, ha[path], None, f"traced file only in A: {path}"))
        elif path not in ha:
            found.append(Finding("code", path, None, hb[path], f"traced file only in B: {path}"))
        elif ha[path] != hb[path]:
            found.append(Finding("code", path, ha[path], hb[path], f"traced file changed: {path}"))
    return found


def _hash_text(value: Any) -> str | None:
    """A traced file's recorded hash as text (a file someone else wrote may hold any
    JSON there: it is compared as its JSON text)."""
    if value is None or isinstance(value, str):
        return value
    return bounded.cut(json.dumps(value, sort_keys=True, default=str), 200)


def _moved(ha: Mapping[str, Any], hb: Mapping[str, Any]) -> tuple[str, str] | None:
    """The folder prefix that, swapped, makes most of A's files B's (same content)."""
    only_a = {h: p for p, h in ha.items() if p not in hb and h}
    only_b = {h: p for p, h in hb.items() if p not in ha and h}
    pairs = [(only_a[h], only_b[h]) for h in only_a.keys() & only_b.keys()]
    if not pairs:
        return None
    old, new = pairs[0]
    while old and new and os.path.basename(old) == os.path.basename(new):
        up = os.path.dirname(old), os.path.dirname(new)
        if up == (old, new):  # a root ('/', '//') is its own folder
            break
        old, new = up
    if not old or old == new:
        return None
    return old, new


def _compiler_findings(a: CacheKey, b: CacheKey) -> list[Finding]:
    if a.compiler_factors is not None and b.compiler_factors is not None:
        return _dict_findings("compiler", a.compiler_factors, b.compiler_factors)
    return _hash_findings(
        "compiler",
        a.compiler_hash,
        b.compiler_hash,
        "the compiler part differs (torch, triton, CUDA/ROCm build or GPU)",
    )
