"""The answer table on the terminal: the last block of `report`, `compare` and `serve`,
the same table as the HTML report's first screen (analyze/report/answer.py).

Piped or redirected, it is plain text at most :data:`WIDTH` columns wide (configuration
labels shortened, keeping their ``@threads``; caveats cut to one line each), so a CI
log's last lines are the answer; on a terminal the verdict words are coloured."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence

from tfvariants.analyze.report.answer import Answer, Row
from tfvariants.analyze.report.build import Report
from tfvariants.analyze.statistics.verdict import Said, Verdict
from tfvariants.errors import one_line

WIDTH = 100
GAP = "  "
COLOURS = {
    Said.FASTER: "green",
    Said.CHEAPER: "green",
    Verdict.EQUIVALENT: "green",
    Said.SLOWER: "red",
    Said.DEARER: "red",
    Verdict.UNDECIDED: "yellow",
}


def answer_of_report(report: Report) -> Answer | None:
    return next((s for s in report.sections if isinstance(s, Answer)), None)


def _cells(answer: Answer) -> tuple[list[str], list[list[str]], set[str]]:
    """Header, rows and right-aligned columns, without the columns no row fills."""
    ratio = answer.ratio_header
    header = [answer.subject_header, "configuration", "verdict", ratio, "interval"]
    header += ["cost/run" if answer.cost_header == "cost per run" else "cost", "headroom", "best"]
    rows = [_row(r) for r in answer.rows]
    keep = [i for i in range(len(header)) if i < 3 or any(row[i] for row in rows)]
    pick = [[row[i] for i in keep] for row in [header, *rows]]
    return pick[0], pick[1:], {ratio, "interval", "cost/run", "cost", "headroom"}


def _row(r: Row) -> list[str]:
    verdict = r.verdict + ("*" if r.under_load else "")
    return [r.subject, r.config, verdict, r.ratio, r.interval, r.cost, r.headroom, r.best]


def shorten(text: str, width: int) -> str:
    """``text`` in ``width`` characters: a configuration label keeps its ``@threads``
    (and what follows), the middle gives way to ".."."""
    if len(text) <= width:
        return text
    head, at, tail = text.rpartition("@")
    if at and len(tail) + 4 <= width:
        return f"{head[: width - len(tail) - 3]}..@{tail}"
    return text[: max(width - 2, 1)] + ".."


def _fit(header: list[str], rows: list[list[str]]) -> list[int]:
    """Column widths within WIDTH: the configuration column gives way first, then the
    workload's (at least 12 and 8 characters)."""
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    over = sum(widths) + len(GAP) * (len(widths) - 1) - WIDTH
    for col, least in ((1, 12), (0, 8)):
        if over > 0:
            cut = min(over, max(widths[col] - least, 0))
            widths[col] -= cut
            over -= cut
    return widths


def table_lines(answer: Answer) -> list[str]:
    """The table as plain lines: header, then one line per row."""
    header, rows, right = _cells(answer)
    widths = _fit(header, rows)
    out = []
    for line in [header, *rows]:
        cells = [
            shorten(v, w).rjust(w) if c in right else shorten(v, w).ljust(w)
            for c, v, w in zip(header, line, widths, strict=True)
        ]
        out.append(GAP.join(cells).rstrip())
    return out


def notes(answer: Answer) -> list[str]:
    """Below the table: what the rows cannot show, the one next step, the marks'
    meaning, the noise line, the caveats (one line each, cut to WIDTH)."""
    step = f"next, for what is undecided: {answer.next_step}" if answer.next_step else ""
    lines = [w for b in answer.beyond for w in textwrap.wrap(b, WIDTH, subsequent_indent="  ")]
    lines += textwrap.wrap(step, WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    if answer.next_command:
        lines += command_lines(answer.next_command)
    lines += [_one_line(line) for line in answer.legend]
    if answer.noise:  # what the noise implies for the repeats: in full, not cut
        lines += textwrap.wrap(answer.noise, WIDTH, subsequent_indent="  ")
    return lines + [_one_line(f"caution: {c}") for c in answer.caveats]


def command_lines(command: str) -> list[str]:
    """A command to paste, indented, broken before its options with shell line
    continuations when it is wider than WIDTH (never cut: it must still run)."""
    lines = [f"  {command}"]
    while len(lines[-1]) > WIDTH:
        line = lines[-1]
        indent = len(line) - len(line.lstrip())
        at = line.rfind(" --", indent, WIDTH - 2)
        if at <= indent:  # no option to break before: one long line rather than a cut
            break
        lines[-1:] = [f"{line[:at]} \\", f"    {line[at + 1 :]}"]
    return lines


def _one_line(line: str) -> str:
    """A caveat in one line of WIDTH: cut at a word, the report has it in full."""
    return textwrap.shorten(line, WIDTH, placeholder=" ... (see the report)")


def answer_lines(answer: Answer) -> list[str]:
    """The whole block as plain text (what a pipe or a log gets); names and reasons
    from result files are escaped (errors.one_line): nothing can move the cursor."""
    head = [shorten(answer.question, WIDTH), shorten(answer.heading, WIDTH)]
    return [one_line(line) for line in [*head, *table_lines(answer), *notes(answer)]]


def print_answer(answer: Answer | None, tail: Sequence[str] = (), *, stderr: bool = False) -> None:
    """The answer block, then ``tail`` (the report's path), on stdout (``stderr``: where
    `compare` says everything): plain when piped; on a terminal the same lines with the
    verdict words coloured."""
    from rich.console import Console
    from rich.text import Text

    console = Console(stderr=stderr, highlight=False, soft_wrap=True)
    lines = answer_lines(answer) if answer is not None else []
    if not console.is_terminal:
        for line in [*lines, *map(one_line, tail)]:
            print(line, file=sys.stderr if stderr else sys.stdout)
        return
    for i, line in enumerate(lines):
        text = Text(line, style="bold" if i < 2 else "")
        if 3 <= i < 3 + len(answer.rows if answer else ()):
            for word, colour in COLOURS.items():
                text.highlight_words([f"  {word}"], style=colour)
        console.print(text)
    for line in tail:
        console.print(Text(one_line(line)))
