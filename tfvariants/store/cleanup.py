"""What a killed run leaves in its folder, and removing it: only what this tool can
prove it made, and only with the folder's lock held (no live run uses it then).

- scratch folders: ``.scratch/<cell_id>.XXXXXXXX/`` holding the mark file the tool
  writes when it makes one (``.tfvariants-scratch``, whose content is the folder's own
  name); a folder without it (the user's own ``.scratch/notes``) is never touched;
- temp files of the atomic writes, named ``.<name>.XXXXXXXX.tmp`` (``tempfile``'s eight
  characters) in the folders the tool writes: ``.run.json.*.tmp`` in the run folder,
  ``cells/.<id>.json.*.tmp``, ``logs/.<id>.*.log.tmp``, ``artifacts/.<id>.*.tmp/``.

Anything else (hidden folders, files of other names, links) stays where it is.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

SCRATCH_MARK = ".tfvariants-scratch"
_RAND = r"[a-z0-9_]{8}"  # tempfile's names: 8 of these characters
# (folder relative to the run, pattern of the names the tool gives its temp entries)
_TEMPS = (
    (".", re.compile(rf"^\.run\.json\.{_RAND}\.tmp$")),
    ("cells", re.compile(rf"^\..+\.json\.{_RAND}\.tmp$")),
    ("logs", re.compile(rf"^\..+\.(?:{_RAND}\.log|log\.{_RAND})\.tmp$")),
    ("artifacts", re.compile(rf"^\..+\.{_RAND}\.tmp$")),
)
_SCRATCH_NAME = re.compile(rf"^.+\.{_RAND}$")


def mark_scratch(path: Path) -> None:
    """Mark a scratch folder the tool has just made as its own."""
    fd = os.open(path / SCRATCH_MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, path.name.encode())
    finally:
        os.close(fd)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def is_our_scratch(path: Path) -> bool:
    """A real folder named like a scratch folder, holding the tool's mark for it."""
    st, mark = _lstat(path), _lstat(path / SCRATCH_MARK)
    if st is None or mark is None or not stat.S_ISDIR(st.st_mode):
        return False
    if not _SCRATCH_NAME.match(path.name) or not stat.S_ISREG(mark.st_mode):
        return False
    if mark.st_size > 4096:
        return False
    try:
        return (path / SCRATCH_MARK).read_bytes() == path.name.encode()
    except OSError:
        return False


def stale_entries(root: Path, scratch_dir: str) -> list[tuple[Path, str]]:
    """What a killed run left in ``root``: (path, what it is), the tool's own only."""
    found: list[tuple[Path, str]] = []
    scratch = root / scratch_dir
    st = _lstat(scratch)
    if st is not None and stat.S_ISDIR(st.st_mode):
        for p in sorted(scratch.iterdir()):
            if is_our_scratch(p):
                found.append((p, "a scratch folder left by an interrupted run"))
    for rel, pattern in _TEMPS:
        folder = root / rel
        st = _lstat(folder)
        if st is None or not stat.S_ISDIR(st.st_mode):
            continue
        for p in sorted(folder.iterdir()):
            pst = _lstat(p)
            if pst is None or not pattern.match(p.name):
                continue
            if stat.S_ISREG(pst.st_mode) or (rel == "artifacts" and stat.S_ISDIR(pst.st_mode)):
                found.append((p, "a temp file left by an interrupted run"))
    return found


def remove(path: Path) -> None:
    st = _lstat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
