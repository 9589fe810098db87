"""One vLLM release's kernel-config API, under vLLM's own names."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from kernelcfg.vllm.kernel_config import rules
from kernelcfg.vllm.kernel_config.config import IrOpPriorityBase, KernelConfigBase, config_classes
from kernelcfg.vllm.releases import Release, load

__all__ = ["ReleaseAPI", "for_version"]


@dataclass(frozen=True)
class ReleaseAPI:
    """``vllm.config.kernel`` of one release: its classes and rule functions."""

    release: Release
    """The release's facts."""
    KernelConfig: type[KernelConfigBase]
    """That release's ``KernelConfig``."""
    IrOpPriorityConfig: type[IrOpPriorityBase]
    """That release's ``IrOpPriorityConfig``."""

    @property
    def version(self) -> str:
        """The release, ``X.Y.Z``."""
        return self.release.version

    def bind_passthrough_all2all_backend(
        self, moe_backend: str, parallel_config: rules.HasAll2All
    ) -> None:
        """vLLM's passthrough binding (0.32.0 on); see :mod:`kernelcfg.vllm.kernel_config.rules`."""
        if not self.release.has_function("bind_passthrough_all2all_backend"):
            raise AttributeError(
                f"bind_passthrough_all2all_backend does not exist in vLLM {self.version}"
            )
        rules.bind_passthrough_all2all_backend(self.release, moe_backend, parallel_config)

    def validate_flashinfer_moe_ep_model(
        self, moe_backend: str, architectures: Iterable[str]
    ) -> None:
        """vLLM's DeepSeek-V4-only check; see :mod:`kernelcfg.vllm.kernel_config.rules`."""
        rules.validate_flashinfer_moe_ep_model(self.release, moe_backend, architectures)


@cache
def _api(version: str) -> ReleaseAPI:
    release = load(version)
    classes = config_classes(release)
    return ReleaseAPI(release, classes.KernelConfig, classes.IrOpPriorityConfig)


def for_version(version: str | None = None) -> ReleaseAPI:
    """The API of release ``version`` (``0.32``, ``0.32.0``, ``v0.32.0``); newest if None.

    Raises :class:`kernelcfg.base.errors.UnknownVersionError` for a release kernelcfg has no
    data for; its message lists the known ones.
    """
    return _api(load(version).version)
