"""What the runner hands back for one cell: a small, frozen record of the result it stored,
so the Matrix and the commands read typed fields instead of keys of the stored dict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tfvariants.execute.process import ProcessOutcome


@dataclass(frozen=True)
class StoredCell:
    """One cell's result as stored in ``path`` (``cells/<cell_id>.json``).

    ``outcome`` is how the worker process ended, None when no worker ran (a skipped cell,
    a runner error). ``raw`` is the stored dict, read-only: the file is the truth, this
    record only points into it."""

    cell_id: str
    status: str
    reason: str | None
    path: Path
    outcome: ProcessOutcome | None
    raw: Mapping[str, Any]

    @classmethod
    def written(
        cls,
        cell_id: str,
        result: Mapping[str, Any],
        path: Path,
        outcome: ProcessOutcome | None = None,
    ) -> StoredCell:
        """The record of ``result``, written to ``path``."""
        # A result without a status is a broken one: the Matrix counts it as failed.
        reason = result.get("reason")
        return cls(
            cell_id=cell_id,
            status=str(result.get("status", "failed")),
            reason=None if reason is None else str(reason),
            path=path,
            outcome=outcome,
            raw=MappingProxyType(dict(result)),
        )
