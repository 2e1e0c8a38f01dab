"""Errors that reach the user as one line, never as a traceback."""

from __future__ import annotations


class UserError(Exception):
    """Bad input or a missing prerequisite: printed as one line, exit code 2."""

    exit_code = 2


MAX_MESSAGE = 1000  # characters: only a message quoting a huge value gets longer


def one_line(text: object) -> str:
    """``text`` with every control or line-breaking character escaped (\\n, \\x1b,
    \\u2028, ...): a message quoting a user's value stays one line, and cannot move the
    terminal's cursor. A message that quotes a huge value keeps its start and its end."""
    line = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text)
    )
    if len(line) > MAX_MESSAGE:
        line = f"{line[: MAX_MESSAGE * 2 // 3]} [...] {line[-MAX_MESSAGE // 4 :]}"
    return line
