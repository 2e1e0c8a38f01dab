"""A cell: one (variant, threads, workload, repeat[, attempt]), and its id, the one place
it is made."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# The most vCPUs a cell may emulate (the command line and the result loader agree).
MAX_THREADS = 4096


def cell_id(variant: str, threads: int, workload: str, repeat: int, attempt: int = 0) -> str:
    """The cell's id and file stem: ``<workload>__<variant>__t<threads>__r<repeat>``, and
    ``__a<attempt>`` for a cell run again because its first attempt was disturbed (the
    first attempt keeps the plain id, so earlier run folders keep theirs).

    A workload given as a file path is named by its stem, so ids are file names."""
    name = Path(workload).stem if workload.endswith(".py") else workload
    tail = f"__a{attempt}" if attempt else ""
    return f"{name}__{variant}__t{threads}__r{repeat}{tail}"


def cell_id_of(cell: dict[str, Any]) -> str:
    """The id of a stored result's ``cell`` object (validated by the result loader)."""
    attempt = cell.get("attempt", 0)
    return cell_id(str(cell.get("variant")), int(cell.get("threads") or 0),
                   str(cell.get("workload")), int(cell.get("repeat") or 0),
                   attempt if isinstance(attempt, int) else 0)  # fmt: skip


@dataclass(frozen=True)
class Cell:
    variant: str
    threads: int
    workload: str
    repeat: int = 0
    attempt: int = 0  # > 0: this round's cell again, after a disturbed attempt

    @property
    def cell_id(self) -> str:
        return cell_id(self.variant, self.threads, self.workload, self.repeat, self.attempt)

    def to_dict(self) -> dict[str, Any]:
        # The first attempt's object has no "attempt" key: as results always had.
        d = asdict(self)
        if not self.attempt:
            del d["attempt"]
        return d
