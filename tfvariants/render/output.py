"""Writing an output file (report, CSV) so that nothing half-written is ever left."""

from __future__ import annotations

from pathlib import Path

from tfvariants.errors import UserError


def write_text_atomic(path: Path, text: str) -> None:
    """Temp file beside ``path``, then rename: a reader sees the old file or the new
    one, and a failure leaves no temp file behind."""
    if path.is_dir():
        raise UserError(f"{path} is a folder: give a file path, e.g. {path / 'index.html'}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror}") from None
