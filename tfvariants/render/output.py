"""Writing an output file (report, CSV, imported catalog) so that nothing half-written
is ever left."""

from __future__ import annotations

from pathlib import Path

from tfvariants.errors import UserError
from tfvariants.store.runfolder import write_bytes_atomic


def write_text_atomic(path: Path, text: str) -> None:
    """A new temp file beside ``path`` (created exclusively: never through a link), fsync,
    then rename: a reader sees the old file or the new one, and a failure (a read-only
    or full file system) leaves the old file and no temp file behind: one line."""
    if path.is_dir():
        raise UserError(f"{path} is a folder: give a file path, e.g. {path / 'index.html'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
