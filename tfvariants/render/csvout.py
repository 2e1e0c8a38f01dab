"""The CSV export: one row per stored cell, each task's cells in a CSV of their own (its
part's table, analyze/report/part.py ``CsvTable``)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from tfvariants.analyze.report.build import Report
from tfvariants.analyze.report.part import CsvTable, TaskPart
from tfvariants.render.output import write_text_atomic

# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell_text(value: object) -> object:
    """None as empty; text that a spreadsheet would run as a formula, quoted with '."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def tables(report: Report) -> list[tuple[TaskPart, CsvTable]]:
    """Each part's CSV, in the report's order (a part with nothing to write: none)."""
    return [(p, t) for p in report.parts if (t := p.csv()) is not None]


def csv_rows(report: Report) -> list[dict[str, Any]]:
    """The rows of the report's first CSV (the one written where the command says)."""
    first = next(iter(tables(report)), None)
    return list(first[1].rows) if first is not None else []


def write_table(table: CsvTable, path: Path) -> Path:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(table.columns))
    writer.writeheader()
    for row in table.rows:
        writer.writerow({k: _cell_text(v) for k, v in row.items()})
    write_text_atomic(Path(path), buf.getvalue())
    return Path(path)


def write_report_csv(report: Report, path: Path) -> int:
    """The first part's cells to ``path``, each other part's beside it as
    ``<stem>-<part><suffix>`` (training's, then ``-serving``); the rows written to
    ``path``."""
    path = Path(path)
    written = tables(report)
    for i, (part, table) in enumerate(written):
        write_table(
            table, path if i == 0 else path.with_name(f"{path.stem}-{part.name}{path.suffix}")
        )
    return len(written[0][1].rows) if written else 0
