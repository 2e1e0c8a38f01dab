"""What the executor needs of a variant, as a protocol: its name and kind, the env and
compile options a worker gets, how to launch ``python -m module`` in it, whether it pins
on the host, whether it can run here, and how to make it ready (a Ray node builds a
requirement-spec environment on first use). tfvariants.variants.Variant is one (checked by
mypy where commands pass it in), so execute/ and variants/ stay side by side: neither
imports the other."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from workloads.protocol import WorkerRequest


class Launchable(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def image(self) -> str | None: ...

    @property
    def device(self) -> str: ...

    @property
    def env(self) -> Mapping[str, str]: ...

    @property
    def keras(self) -> Mapping[str, Any]: ...

    @property
    def backend(self) -> str: ...

    def launch(
        self,
        request: WorkerRequest,
        env: dict[str, str],
        cpus: tuple[int, ...],
        scratch_dir: Path,
        module: str = "workloads.worker",
    ) -> tuple[list[str], dict[str, str]]: ...

    def pins_on_host(self) -> bool: ...

    def readiness(self) -> tuple[bool, str]: ...

    def skip_reason(self) -> str | None: ...

    def prepare(self, log: Callable[[str], None]) -> dict[str, Any] | None: ...
