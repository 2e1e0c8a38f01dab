"""Tables on the terminal: the one table printer of the commands and the dry runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def print_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    right: Sequence[str] = (),
    show_header: bool = True,
    style: Callable[[str, str], str | None] | None = None,
) -> None:
    """A table on stdout: rich on a terminal; plain aligned text, never wrapped, when
    stdout is a pipe or file. User text is never read as rich markup."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    console = Console()
    if console.is_terminal:
        table = Table(title=Text(title), title_justify="left", show_header=show_header)
        for col in columns:
            table.add_column(
                Text(col), justify="right" if col in right else "left", overflow="fold"
            )
        for row in cells:
            table.add_row(
                *(
                    Text(v, style=(style(c, v) if style else None) or "")
                    for c, v in zip(columns, row, strict=True)
                )
            )
        console.print(table)
        return
    lines = [list(columns)] if show_header else []
    lines += cells
    widths = [max((len(line[i]) for line in lines), default=0) for i in range(len(columns))]
    print(title)
    for line in lines:
        padded = [
            v.rjust(w) if c in right else v.ljust(w)
            for c, v, w in zip(columns, line, widths, strict=True)
        ]
        print("  ".join(padded).rstrip())
    print()
