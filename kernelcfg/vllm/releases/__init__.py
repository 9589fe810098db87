"""Per-release facts of vLLM, one JSON file per release, and the loader.

Nothing else in kernelcfg knows version numbers: code asks a :class:`Release` for
its fields, choice lists, constants, IR providers and rules. A resolve reads only the
file of the release it needs. A release's files are searched in the user's folders
first (``KERNELCFG_DATA_PATH``: :mod:`.search`); a version kernelcfg has no data for is
a patch release resolved with its minor's data, or a refusal (:mod:`.naming`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Any

from kernelcfg.vllm.releases import search

__all__ = [
    "Chosen",
    "Release",
    "catalogue",
    "choose",
    "data_file",
    "data_notes",
    "data_path",
    "data_source",
    "forget",
    "installed_vllm",
    "known_versions",
    "load",
    "named",
    "newest",
    "parse_version",
    "release_data",
    "version_key",
    "versions_where",
]

_NAME = re.compile(r"^vllm-(\d+\.\d+\.\d+)\.json$")
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?\Z")


@cache
def version_key(version: str) -> tuple[int, ...]:
    """``X.Y.Z`` as a tuple of integers, for ordering releases."""
    return tuple(int(p) for p in version.split("."))


@cache
def known_versions() -> tuple[str, ...]:
    """Every release kernelcfg has data for (its own, and the user's folders'), oldest
    first."""
    names = {*search.packaged_names(), *search.user_files()}
    found = (m.group(1) for m in map(_NAME.match, names) if m)
    return tuple(sorted(found, key=version_key))


def data_path(name: str) -> Path:
    """Where data file ``name`` is read from (``serve-0.34.0.json`` …): a user's folder
    holding it, else kernelcfg's own."""
    return search.locate(name)


def data_source(version: str) -> str | None:
    """The user's folder release ``version``'s data file comes from; ``None`` for
    kernelcfg's own."""
    path = search.user_files().get(f"vllm-{version}.json")
    return str(path.parent) if path else None


def data_notes(version: str) -> tuple[str, ...]:
    """One note per user folder that holds files of release ``version``: which, and
    whether they stand in for kernelcfg's own."""
    held: dict[Path, list[str]] = {}
    for name, path in search.user_files().items():
        if name.endswith(f"-{version}.json"):
            held.setdefault(path.parent, []).append(name)
    notes = []
    for folder, names in held.items():
        shadowed = [n for n in names if n in search.packaged_names()]
        where = f"read from {folder} ({search.VARIABLE})"
        if not shadowed:
            notes.append(f"vLLM {version}: {len(names)} data file(s) {where}; kernelcfg ships none")
        else:
            notes.append(
                f"vLLM {version}: {', '.join(shadowed)} {where}, in place of kernelcfg's own"
                + (f", and {len(names) - len(shadowed)} more" if len(names) > len(shadowed) else "")
            )
    return tuple(notes)


def _searched() -> str:
    """Where a user's release files go, for a message (on one line)."""
    from kernelcfg.base.bounded import one_line

    found = one_line(os.pathsep.join(map(str, search.folders())))
    if os.environ.get(search.VARIABLE) is not None:
        return f"a folder of {search.VARIABLE} ({found or 'empty'})"
    return f"{found + ' or ' if found else ''}a folder named in {search.VARIABLE}"


def newest() -> str:
    """The newest release kernelcfg knows."""
    return known_versions()[-1]


def parse_version(text: str, where: str = "--vllm-version") -> str:
    """Canonical ``X.Y.Z`` for ``0.32``, ``0.32.0`` or ``v0.32.0``; known releases only
    (else the refusal naming the nearest, :func:`.naming.refusal`)."""
    match = _VERSION.match(text)
    if match:
        major, minor, patch = match.groups()
        wanted = f"{major}.{minor}.{patch or 0}"
        if wanted in known_versions():
            return wanted
    from kernelcfg.vllm.releases import naming

    raise naming.refusal(text, known_versions(), where, _searched())


@dataclass(frozen=True)
class FieldFacts:
    """One field of ``KernelConfig`` as a release declares it."""

    name: str
    """The field's name."""
    kind: str
    """``ir_op_priority``, ``bool``, ``choice`` or ``choice_map``."""
    default: Any
    """The default value (``None`` for the IR-op priority, built by a factory)."""
    choices: str | None
    """For ``choice`` and ``choice_map``: the name of the choice list."""
    nullable: bool
    """Whether ``None`` passes validation (vLLM's skip-``None`` validator)."""
    min_length: int | None
    """For ``choice_map``: the least number of entries."""
    doc: str
    """What the field means, in kernelcfg's words."""


@dataclass(frozen=True, eq=False)
class Release:
    """The facts of one vLLM release that bear on kernel configuration."""

    version: str
    """``X.Y.Z``."""
    data: dict[str, Any] = field(repr=False)
    """The release's whole data file."""

    @cached_property
    def kernel_fields(self) -> tuple[FieldFacts, ...]:
        """``KernelConfig``'s fields, in declaration order."""
        return _kernel_fields(self)

    @cached_property
    def field_facts(self) -> dict[str, FieldFacts]:
        """``KernelConfig``'s fields by name, in declaration order."""
        return {f.name: f for f in self.kernel_fields}

    @cached_property
    def ir_field(self) -> str | None:
        """The IR-op priority field (``ir_op_priority``), or ``None`` once a release drops it."""
        return next((f.name for f in self.kernel_fields if f.kind == "ir_op_priority"), None)

    @cached_property
    def ir_ops(self) -> tuple[str, ...]:
        """``IrOpPriorityConfig``'s fields (the IR ops), in declaration order."""
        section = self.data.get("ir_op_priority") or {"fields": []}
        return tuple(f["name"] for f in section["fields"])

    def choices(self, name: str) -> tuple[str, ...]:
        """A choice list by field name or vLLM alias (``moe_backend``, ``MoEBackend``)."""
        return self._choices.get(_ALIASES.get(name, name), ())

    @cached_property
    def _choices(self) -> dict[str, tuple[str, ...]]:
        return {alias: tuple(values) for alias, values in self.data["choices"].items()}

    def constant(self, name: str, default: Any = None) -> Any:
        """A module-level constant of ``vllm.config.kernel`` (sets as sorted lists)."""
        return self.data["constants"].get(name, default)

    @cached_property
    def hash_scheme(self) -> str:
        """How this release hashes its kernel config: a name in ``hashing.SCHEMES``."""
        scheme: str = self.data["kernel_config"]["hash_scheme"]
        return scheme

    @cached_property
    def hash_ignored(self) -> frozenset[str]:
        """Fields ``KernelConfig.compute_hash`` always leaves out."""
        return frozenset(self.data["kernel_config"]["hash_ignored"])

    @cached_property
    def hashed_fields(self) -> tuple[str, ...]:
        """The kernel-config fields the hash digests (``None`` may still skip some); the
        IR-op priority always counts, as a sub-hash or as nested factors."""
        return tuple(
            f.name
            for f in self.kernel_fields
            if f.name not in self.hash_ignored or f.kind == "ir_op_priority"
        )

    @cached_property
    def hash_ignored_when_none(self) -> frozenset[str]:
        """Fields left out of the hash only while they are ``None``."""
        return frozenset(self.data["kernel_config"]["hash_ignored_when_none"])

    @cached_property
    def normalized_fields(self) -> frozenset[str]:
        """Fields whose strings are lower-cased, ``-`` to ``_``, before validation."""
        return frozenset(self.data["kernel_config"]["normalized"])

    def providers(self, op: str) -> dict[str, dict[str, Any]]:
        """The providers registered for an IR op: name to ``{file, uuid, ...}``."""
        return dict(self.data["ir_ops"].get(op, {}).get("providers", {}))

    def has_function(self, name: str) -> bool:
        """Whether ``vllm.config.kernel`` defines this rule function."""
        return bool(self.data["functions"].get(name))

    @cached_property
    def moe_ep_model_checked(self) -> frozenset[str]:
        """MoE backends that ``validate_flashinfer_moe_ep_model`` checks."""
        return frozenset(self.data["functions"].get("validate_flashinfer_moe_ep_model") or ())

    @property
    def rules(self) -> dict[str, Any]:
        """The maintainer-written rules: docs, platform IR defaults, provider support."""
        rules: dict[str, Any] = self.data["rules"]
        return rules

    @cached_property
    def engine_rules(self) -> dict[str, Any]:
        """Rules of engine start-up: LoRA limits, removed all2all backends, warnings."""
        found: dict[str, Any] = self.rules.get("engine", {})
        return found

    @cached_property
    def compilation_rules(self) -> dict[str, Any]:
        """Compilation rules: optimisation levels, breakable CUDA graphs, eager mode."""
        found: dict[str, Any] = self.rules.get("compilation", {})
        return found

    def breakable_architectures(self, kind: str) -> frozenset[str]:
        """Architectures that turn on breakable CUDA graphs by default on ``kind``."""
        default = frozenset(self.data.get("breakable_cudagraph_architectures", ()))
        override = self.compilation_rules.get("breakable_cudagraph_by_platform", {}).get(kind)
        if override is None:
            return default
        if "only" in override:
            return frozenset(override["only"])
        return (default | frozenset(override.get("plus", ()))) - frozenset(
            override.get("minus", ())
        )

    def level_defaults(self, level: int) -> dict[str, Any]:
        """What optimisation level ``level`` fills in when still unset."""
        found: dict[str, Any] = self.compilation_rules.get("optimization_levels", {}).get(
            str(level), {}
        )
        return found

    @cached_property
    def refused_envs(self) -> frozenset[str]:
        """Variables this release checks at engine start-up (``Platform.validate_environ``):
        removed ones, and ones whose value it checks."""
        checked = self.rules.get("env_validation", {})
        return frozenset(self.data.get("envs_removed", {})) | {
            name for name, rule in checked.items() if isinstance(rule, dict)
        }

    @cached_property
    def envs(self) -> frozenset[str]:
        """The environment variables this release's ``vllm/envs.py`` knows."""
        return frozenset(self.data["envs"])


_ALIASES = {
    "moe_backend": "MoEBackend",
    "linear_backend": "LinearBackend",
    "linear_backend_per_quant": "LinearBackend",
    "sparse_indexer_topk_backend": "SparseIndexerTopkBackend",
    "all2all_backend": "All2AllBackend",
    "rdna_hybrid_w4a16_prefill_dequant": "RDNAHybridW4A16PrefillDequantMode",
}


def _field_kind(annotation: str) -> tuple[str, str | None]:
    if annotation == "IrOpPriorityConfig":
        return "ir_op_priority", None
    if annotation == "bool":
        return "bool", None
    match = re.fullmatch(r"dict\[str, (\w+)\] \| None", annotation)
    if match:
        return "choice_map", match.group(1)
    return "choice", annotation


@cache
def _kernel_fields(release: Release) -> tuple[FieldFacts, ...]:
    decl = release.data["kernel_config"]
    docs = release.rules.get("docs", {}).get("fields", {})
    nullable = set(decl["skip_none_validation"])
    out = []
    for raw in decl["fields"]:
        kind, choices = _field_kind(raw["annotation"])
        out.append(
            FieldFacts(
                name=raw["name"],
                kind=kind,
                default=raw.get("default"),
                choices=choices,
                nullable=raw["name"] in nullable or kind == "choice_map",
                min_length=raw.get("min_length"),
                doc=docs.get(raw["name"], ""),
            )
        )
    return tuple(out)


def load(version: str | None = None) -> Release:
    """The release ``version`` (any accepted spelling), or the newest one: one object
    per release, whatever the spelling (``0.33``, ``0.33.0``, ``v0.33.0``)."""
    return _load(parse_version(version) if version else newest())


@cache
def _load(canonical: str) -> Release:
    release = Release(canonical, data_file(f"vllm-{canonical}.json"))
    mine = [name for name in search.user_files() if name.endswith(f"-{canonical}.json")]
    for name in mine:
        data_file(name)  # a broken file is refused here, not deep inside a walk
    serve = f"serve-{canonical}.json"
    if mine and serve not in mine and serve not in search.packaged_names():
        from kernelcfg.base.errors import ArgumentError

        raise ArgumentError(
            f"release data file {search.locate(f'vllm-{canonical}.json')} has no {serve} "
            "beside it (vllm serve's options, which every resolve reads); write it with the "
            "release command (docs/releases.md, 'Adding a release')"
        )
    return release


@cache
def data_file(name: str) -> dict[str, Any]:
    """A JSON data file, read once per process: a user's release file (bounded and
    checked, :func:`.search.read`), else kernelcfg's own."""
    return search.read(name)


def release_data(kind: str, version: str) -> dict[str, Any] | None:
    """A release's ``<kind>-<version>.json`` (``moe``, ``linear``, ``topk`` …), read once per
    process; ``None`` when kernelcfg has no such file for that release."""
    name = f"{kind}-{version}.json"
    return data_file(name) if data_path(name).is_file() else None


def catalogue() -> dict[str, Any]:
    """The backend catalogue (``constraints.json``): what each backend value needs, the
    quantisation schemes, and how ``--quantization`` methods map to them."""
    return data_file("constraints.json")


def versions_where(has: Callable[[Release], bool]) -> list[str]:
    """The known releases, oldest first, for which ``has`` holds."""
    return [v for v in known_versions() if has(load(v))]


_DIST_INFO = re.compile(r"^vllm-(\d+\.\d+(?:\.\d+)?)[^-]*\.(?:dist|egg)-info$", re.IGNORECASE)


@cache
def installed_vllm() -> str | None:
    """The version of vLLM installed where kernelcfg runs, from its package metadata.

    Reads the ``vllm-X.Y.Z.dist-info`` folder names on ``sys.path`` (what
    ``importlib.metadata`` reads, without its 20 ms import), leaving out the current
    folder (:func:`_install_folders`); never imports vLLM.
    """
    for entry in _install_folders():
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            if name[:5].lower() == "vllm-":
                match = _DIST_INFO.match(name)
                if match:
                    return match.group(1)
    return None


def _install_folders() -> list[str]:
    """The ``sys.path`` folders where an installed vLLM may be: not the current folder
    (``python -m`` puts it first, and a folder that merely holds a
    ``vllm-X.Y.Z.dist-info`` folder is no install) unless it is a site-packages folder."""
    import site
    import sys

    try:
        here: str | None = os.path.realpath(os.getcwd())
    except OSError:  # the current folder was removed
        here = None
    sites = {os.path.realpath(p) for p in (*site.getsitepackages(), site.getusersitepackages())}
    folders = []
    for entry in sys.path:
        if here is None and not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry or ".")
        if real != here or real in sites:
            folders.append(real)
    return folders


@dataclass(frozen=True)
class Chosen:
    """The release a run resolves for, and what chose it."""

    release: Release
    """The release."""
    source: str
    """``flag`` (--vllm-version), ``environment`` (KERNELCFG_VLLM_VERSION),
    ``installed`` (the vLLM installed here) or ``newest`` (the newest kernelcfg knows)."""
    asked: str | None = None
    """The release asked for when kernelcfg resolves it with another's data (a patch
    release it has no data for, ``0.33.1``, with ``0.33.0``'s); ``None`` otherwise."""

    @property
    def warning(self) -> str | None:
        """What a run resolved with another release's data must say; ``None`` otherwise."""
        if self.asked is None:
            return None
        from kernelcfg.vllm.releases import naming

        return naming.patch_warning(self.asked, self.release.version, _searched())

    @property
    def notes(self) -> tuple[str, ...]:
        """Where the release's files came from, when a user's folder holds some."""
        return data_notes(self.release.version) if search.user_files() else ()


ENVIRONMENT = ("KERNELCFG_VLLM_VERSION",)
"""The environment variables :func:`choose` reads."""
_WHERE = {"flag": "--vllm-version", "environment": "KERNELCFG_VLLM_VERSION"}


def named(text: str, source: str = "flag") -> Chosen:
    """The release for a version a user named (``source``: ``flag``, ``environment`` or
    ``installed``): a known one; a patch release of a known minor, resolved with that
    minor's data (:attr:`Chosen.asked` says so); else the refusal naming the nearest
    known release and how to add this one."""
    known = known_versions()
    match = _VERSION.match(text)
    if match:
        major, minor, patch = match.groups()
        wanted = f"{major}.{minor}.{patch or 0}"
        if wanted in known:
            return Chosen(_load(wanted), source)
        from kernelcfg.vllm.releases import naming

        used = naming.stand_in(wanted, known)
        if used is not None:
            return Chosen(_load(used), source, asked=wanted)
    from kernelcfg.vllm.releases import naming

    raise naming.refusal(text, known, _WHERE.get(source, source), _searched())


def choose(given: str | None, environ: Mapping[str, str]) -> Chosen:
    """The release for ``--vllm-version`` (``given``), else the environment's, else the
    installed vLLM's, else the newest known (each as :func:`named` takes it)."""
    from_env = environ.get("KERNELCFG_VLLM_VERSION") or None
    installed = None if given or from_env else installed_vllm()
    return _choose(given or None, from_env, installed)


@lru_cache(maxsize=64)
def _choose(given: str | None, from_env: str | None, installed: str | None) -> Chosen:
    """:func:`choose`, once per answer (every batch line asks again)."""
    if given:
        return named(given, "flag")
    if from_env:
        return named(from_env, "environment")
    if installed is None:
        return Chosen(load(None), "newest")
    return named(installed, "installed")


def forget() -> None:
    """Forget every release and folder listing read (a test changes the environment)."""
    search.forget()
    for cached in (known_versions, data_file, _load, _choose, installed_vllm):
        cached.cache_clear()
