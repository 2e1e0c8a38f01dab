"""A cell: one (variant, threads, workload, repeat), and its id, the one place it is made."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# The most vCPUs a cell may emulate (the command line and the result loader agree).
MAX_THREADS = 4096


def cell_id(variant: str, threads: int, workload: str, repeat: int) -> str:
    """The cell's id and file stem: ``<workload>__<variant>__t<threads>__r<repeat>``.

    A workload given as a file path is named by its stem, so ids are file names."""
    name = Path(workload).stem if workload.endswith(".py") else workload
    return f"{name}__{variant}__t{threads}__r{repeat}"


@dataclass(frozen=True)
class Cell:
    variant: str
    threads: int
    workload: str
    repeat: int = 0

    @property
    def cell_id(self) -> str:
        return cell_id(self.variant, self.threads, self.workload, self.repeat)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
