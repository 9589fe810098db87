"""What a ``vllm serve`` command line says about kernels, once read.

:func:`kernelcfg.flags.argv.parse` fills an :class:`Inputs` from flags; the Python API can
build one directly. Values are as vLLM's parser leaves them: the ``--kernel-config``
mapping unvalidated (validation is the resolution's first step), top-level flags
already checked against their choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kernelcfg.base.problems import Problem

__all__ = ["DEFAULT_ALL2ALL_BACKEND", "DEFAULT_INSTALLS", "INSTALLS", "Inputs"]

DEFAULT_ALL2ALL_BACKEND = "allgather_reducescatter"
"""vLLM's ``ParallelConfig.all2all_backend`` default."""

INSTALLS = ("pip", "image", "minimal", "all")
"""What may be installed beside vLLM, for ``--install``: ``pip`` (what ``pip install
vllm`` brings), ``image`` (the official container: FlashInfer's kernels usable, DeepEP),
``minimal`` (no optional library), ``all`` (every optional library)."""

DEFAULT_INSTALLS: dict[str, str] = {
    "cuda": "pip",
    "rocm": "image",
    "xpu": "image",
    "cpu": "pip",
    "tpu": "pip",
}
"""The install judged when ``--install`` (and ``KERNELCFG_INSTALL``) is not given, per
platform: what vLLM ships for it. CUDA: ``pip`` (the PyPI wheels are CUDA builds);
ROCm: ``image`` (no ROCm wheel on PyPI: vLLM's ROCm image, which ships AITER, is what
an MI300X runs); XPU: ``image`` (vLLM's XPU Dockerfile); CPU and TPU: ``pip``. A default
is judged as that install, the same as if it were named."""


@dataclass
class Inputs:
    """The kernel-related settings of one ``vllm serve`` invocation."""

    kernel_config: dict[str, Any] = field(default_factory=dict)
    """The ``--kernel-config`` mapping (whole JSON or gathered dotted keys)."""
    kernel_values: dict[str, Any] | None = None
    """``kernel_config`` once validated (every field); ``None`` until then."""
    moe_backend: str = "auto"
    """``--moe-backend`` (normalised); overrides the kernel config unless ``auto``."""
    linear_backend: str = "auto"
    """``--linear-backend`` (normalised); overrides unless ``auto``."""
    sparse_indexer_topk_backend: str = "auto"
    """``--sparse-indexer-topk-backend`` (normalised); overrides unless ``auto``."""
    ir_op_priority: dict[str, list[str]] = field(default_factory=dict)
    """The top-level ``--ir-op-priority`` lists, already split."""
    enable_flashinfer_autotune: bool | None = None
    """``--enable-flashinfer-autotune`` / ``--disable-…``; ``None`` when not given."""
    monokernel: bool = False
    """``--monokernel``; it can only ever turn the kernel config's value on."""
    enforce_eager: bool = False
    """``--enforce-eager``."""
    enable_fault_tolerance: bool = False
    """``--enable-fault-tolerance``: keeps JIT warm-up on under ``--enforce-eager``."""
    enable_lora: bool | None = None
    """``--enable-lora``."""
    all2all_backend: str = DEFAULT_ALL2ALL_BACKEND
    """``--all2all-backend`` as given."""
    all2all_given: bool = False
    """Whether ``--all2all-backend`` was given."""
    enable_expert_parallel: bool = False
    """``--enable-expert-parallel`` / ``-ep``."""
    data_parallel_size: int = 1
    """``--data-parallel-size`` / ``-dp``."""
    tensor_parallel_size: int = 1
    """``--tensor-parallel-size`` / ``-tp``."""
    compilation_mode: str | None = None
    """``-cc.mode`` as a CompilationMode name; ``None`` when not given."""
    cudagraph_mode: str | None = None
    """``-cc.cudagraph_mode`` as a CUDAGraphMode name; ``None`` when not given."""
    compile_backend: str = ""
    """``-cc.backend``; ``""`` means the platform's (``inductor``)."""
    optimization_level: int = 2
    """``-O``/``--optimization-level``, 0 to 3."""
    model: str | None = None
    """The model (positional or ``--model``), when given."""
    architectures: list[str] | None = None
    """The model's architectures, when known (flag or local ``config.json``)."""
    quantization: str | None = None
    """``--quantization``/``-q``, or the local ``config.json``'s quantisation method."""
    quant_scheme: str | None = None
    """The quantisation scheme (``--quant-scheme``, or the checkpoint's as vLLM reads it)."""
    linear_kinds: tuple[str, ...] | None = None
    """The kinds of linear layer the checkpoint's method builds (``vllm.checkpoint``),
    when its config.json was read and ``--quant-scheme`` was not given."""
    attention_backend: str | None = None
    """``--attention-backend`` as given (``None``: not given)."""
    attention_config: dict[str, Any] = field(default_factory=dict)
    """The ``--attention-config``/``-ac`` mapping (whole JSON or gathered dotted keys)."""
    dtype: str = "auto"
    """``--dtype``: the model's activation dtype (``auto``: the config.json's)."""
    kv_cache_dtype: str = "auto"
    """``--kv-cache-dtype``."""
    block_size: int | None = None
    """``--block-size``; ``None`` lets the attention backend choose."""
    hf_config: dict[str, Any] | None = None
    """The model's ``config.json`` when one was read here."""
    install: str = "pip"
    """``--install``: which optional libraries vLLM finds (pip, image, minimal, all)."""
    compile_cache_path: str | None = None
    """``--compile-cache``: a vLLM compile cache of the install the launch runs on (its
    folder or ``cache_key_factors.json``)."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables the engine would see (``--env`` over the process's)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Where each given setting came from: ``flag``, ``config file``, ``kernel-config``."""
    model_source: str | None = None
    """Where the model's config.json was read: ``--hf-config-path``, ``local folder``,
    ``Hugging Face cache``; ``None`` when it was not found here."""
    model_config_file: str | None = None
    """That config.json's path."""
    model_config_key: tuple[str, int, int, int] | None = None
    """That file's identity as read (path, inode, size, mtime): equal keys, equal
    ``hf_config`` (a batch's caches use it instead of the whole mapping)."""
    other_options: dict[str, str] = field(default_factory=dict)
    """The ``vllm serve`` options given that do not bear on kernels, with their source."""
    options: dict[str, Any] = field(default_factory=dict)
    """Every ``vllm serve`` option given, by destination, as the release's parser typed
    it (JSON options as their mapping), except those kernelcfg reads into the fields
    above (the backends, ``-tp``, ``-dp``, ``-O``, the kernel config)."""
    notes: list[Problem] = field(default_factory=list)
    """Warnings and notes from reading the flags (lost YAML ``false``, ignored flags)."""

    @property
    def install_given(self) -> bool:
        """Whether the install was named (``--install`` or ``KERNELCFG_INSTALL``) rather
        than the platform's default; either way the verdict is for that install."""
        return self.sources.get("install") in ("flag", "environment")

    @property
    def install_source(self) -> str:
        """Where the install judged came from: ``flag``, ``environment`` or ``default``
        (the platform's, :data:`DEFAULT_INSTALLS`)."""
        return self.sources.get("install", "default")

    @property
    def install_words(self) -> str:
        """The install judged, as a message names it: ``--install pip``, with ``(the
        default)`` when it was not named."""
        return f"--install {self.install}" + ("" if self.install_given else " (the default)")

    def named_backend_problems(
        self, field: str, value: str, device: str, works: Sequence[str]
    ) -> list[Problem]:
        """The problem of a backend named by flag (``--moe-backend``, ``--linear-backend``)
        that runs under the installs ``works`` only (none when no install can run it: the
        catalogue judges the device itself, or when this install can)."""
        if not works or self.install in works:
            return []
        severity, refusing = self.refused_under(works)
        flag = "--" + field.replace("_", "-")
        return [
            Problem(
                severity,
                f"{field.split('_', maxsplit=1)[0]}-backend-needs-install",
                field,
                f"{flag} {value} on {device}: none of its kernels runs {refusing} (a "
                f"library it needs is not installed); with --install {' or '.join(works)} "
                "it may run",
            )
        ]

    def refused_under(self, works: Sequence[str]) -> tuple[Literal["error", "warning"], str]:
        """How a layer or backend that vLLM refuses under this install is reported, given
        the installs under which it runs (``works``): an error, named or default alike (a
        default is judged as that install); and where it is refused, as words to follow
        the subject (``with --install X``, ``under every install`` when none runs it)."""
        if not works:
            return "error", "under every install"
        return "error", "with " + self.install_words
