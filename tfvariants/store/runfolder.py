"""The run folder: the one piece of code that knows its layout and the only writer in it.

```
<run>/run.json                 the run's definition (tfvariants.store.runfile validates it)
<run>/cells/<cell_id>.json     one result per cell
<run>/logs/<cell_id>.log       the worker's combined stdout/stderr
<run>/artifacts/<cell_id>/     what a serving cell's worker kept (LoadGen logs, server log)
<run>/quarantine/              unreadable files moved aside by compare --resume --quarantine
<run>/.scratch/<cell_id>.XXXX/ a running cell's private (0700) working folder
<run>/.lock                    the lock while a command writes (tfvariants.store.lock)
<run>/report/                  the report slot: the one place inside a run folder that
                               -o/--csv may write (anything else inside is evidence)
```

Every write is atomic (a new temp file in the target's folder, fsync, rename), so a
reader sees the old file or the whole new one; none follows a symbolic link (the temp
file is created exclusively and the rename replaces the directory entry itself; the
folders are checked not to be links); and a finished result (``ok``/``skipped``) or a
file that cannot be read is never replaced.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tfvariants.errors import UserError
from tfvariants.store import cleanup, lock, stamp
from tfvariants.store.atomic import write_bytes_atomic
from tfvariants.store.result import ResultError, load_result

RUN_FILE = "run.json"
CELLS_DIR = "cells"
LOGS_DIR = "logs"
ARTIFACTS_DIR = "artifacts"
QUARANTINE_DIR = "quarantine"
SCRATCH_DIR = ".scratch"
REPORT_SLOT = "report"
# What a run folder holds as evidence: no output may be written over any of it.
EVIDENCE = (
    RUN_FILE,
    CELLS_DIR,
    LOGS_DIR,
    ARTIFACTS_DIR,
    QUARANTINE_DIR,
    SCRATCH_DIR,
    lock.LOCK_FILE,
)
DONE_STATUSES = ("ok", "skipped")  # a result that is never replaced
# The folders the tool writes through: a link at any of them is refused up front.
_WRITTEN = (CELLS_DIR, LOGS_DIR, ARTIFACTS_DIR, QUARANTINE_DIR, SCRATCH_DIR)


class StoreError(UserError):
    """A write the run folder refuses (one line, exit 2)."""


@contextmanager
def _storing(path: Path) -> Iterator[None]:
    """A write that fails (a full disk, a read-only file system, a quota) is one line
    naming the file: the caller records a failed cell or stops with exit 2."""
    try:
        yield
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None


def _json_bytes(obj: object) -> bytes:
    import json

    return (json.dumps(obj, indent=2, allow_nan=False, default=str) + "\n").encode("utf-8")


class _Below:
    """A path of the layout: ``name`` below the run folder's root."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, folder: RunFolder, owner: type | None = None) -> Path:
        return folder.root / self.name


class RunFolder:
    """One run folder. Readers use its paths; every write into it goes through it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    # ---- the layout ----

    run_file = _Below(RUN_FILE)
    cells_dir = _Below(CELLS_DIR)
    logs_dir = _Below(LOGS_DIR)
    quarantine_dir = _Below(QUARANTINE_DIR)

    def cell_path(self, cid: str) -> Path:
        return self.cells_dir / f"{cid}.json"

    def log_path(self, cid: str) -> Path:
        return self.logs_dir / f"{cid}.log"

    def artifacts_path(self, cid: str) -> Path:
        return self.root / ARTIFACTS_DIR / cid

    # ---- the lock ----

    def lock(self, command: str = "") -> list[str]:
        """Hold this folder for the rest of the command (see tfvariants.store.lock);
        creates the folder. Returns warnings (a stale lock taken over)."""
        created = not self.root.exists()
        outer = run_folder_of(Path(os.path.abspath(self.root)))
        if outer is not None:  # its next cleanup or resume would treat ours as its own
            raise StoreError(
                f"{self.root} is inside the results folder {outer.root}: choose a results "
                "folder outside any other"
            )
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create {self.root}: {exc.strerror}") from None
        return lock.acquire(self.root, command, created=created)

    def holds_lock(self) -> bool:
        return lock.holds(self.root)

    def unlock(self) -> None:
        lock.release(self.root)

    def _check_writer(self) -> None:
        holder = lock.holder_of(self.root)
        if holder is not None:
            raise StoreError(
                f"{self.root} is being written by {lock.describe(holder)}: not writing into it"
            )

    # ---- folders: made on first write, never through a link ----

    def _dir(self, rel: str, mode: int = 0o755) -> Path:
        """``root/rel``, made if missing; a link or a non-folder is refused (writes would stray)."""
        self._check_writer()
        path = self.root / rel
        try:
            path.mkdir(mode=mode, parents=True, exist_ok=True)
            st = os.lstat(path)
        except FileExistsError:
            st = os.lstat(path)
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a folder"
            raise StoreError(f"{path} is {what}: refusing to write through it; remove it")
        return path

    def _refuse_link(self, path: Path) -> None:
        if path.is_symlink():
            raise StoreError(f"{path} is a symbolic link: refusing to write through it; remove it")

    # ---- writes ----

    def create(self) -> None:
        """The folder and its cells/ (a run's first write)."""
        self._dir(CELLS_DIR)

    def write_run(self, record: dict[str, Any]) -> None:
        """run.json (the caller, tfvariants.store.runfile, has validated it)."""
        self._dir(".")
        self._refuse_link(self.run_file)
        with _storing(self.run_file):
            write_bytes_atomic(self.run_file, _json_bytes(record))

    def write_cell(self, cid: str, result: dict[str, Any]) -> Path:
        """cells/<cid>.json (stamped: store/stamp.py), atomically, where check_cell_slot
        allows (checked again)."""
        result = stamp.stamped(result, self.run_file)
        with _storing(path := self.check_cell_slot(cid)):
            write_bytes_atomic(path, _json_bytes(result))
        return path

    def check_cell_slot(self, cid: str) -> Path:
        """cells/<cid>.json; StoreError if it holds a finished result or an unreadable file."""
        path = self._dir(CELLS_DIR) / f"{cid}.json"
        if os.path.lexists(path):
            self._refuse_link(path)
            try:
                old = load_result(path).get("status")
            except ResultError as exc:
                raise StoreError(f"{path} cannot be read ({exc}): not writing over it") from None
            if old in DONE_STATUSES:
                never = "results are never overwritten"
                raise StoreError(f"{path} already holds a finished result ({old}): {never}")
        return path

    @contextmanager
    def log_file(self, cid: str) -> Iterator[IO[bytes]]:
        """A new log for cell ``cid``, open for writing: a temp file in logs/ (created
        exclusively), renamed to logs/<cid>.log when the block ends, however it ends."""
        logs = self._dir(LOGS_DIR)
        final = logs / f"{cid}.log"
        with _storing(logs / f".{cid}.log.tmp"):
            fd, tmp = tempfile.mkstemp(prefix=f".{cid}.", suffix=".log.tmp", dir=logs)
        try:
            with os.fdopen(fd, "wb") as fh:  # the runner writes it capped, never reads it
                yield fh
                with _storing(final):
                    fh.flush()
                    os.fsync(fh.fileno())
        finally:
            try:
                os.replace(tmp, final)
            except OSError:
                Path(tmp).unlink(missing_ok=True)

    def write_log(self, cid: str, text: str) -> Path:
        path = self._dir(LOGS_DIR) / f"{cid}.log"
        with _storing(path):
            write_bytes_atomic(path, text.encode("utf-8", "replace"))
        return path

    def write_driver_log(self, name: str) -> Path:
        """A path in logs/ for a log another library writes (e.g. Ray's driver log):
        the folder is checked and a link there removed, so the write cannot leave it."""
        path = self._dir(LOGS_DIR) / name
        if path.is_symlink():
            path.unlink()
        return path

    def keep_artifacts(self, cid: str, files: dict[str, Path]) -> str | None:
        """Copy a cell's artifacts (name -> file or folder in its scratch) into
        artifacts/<cid>/, replacing a failed attempt's copy whole; returns the folder
        relative to the run, or None when there is nothing to keep."""
        present = {n: p for n, p in files.items() if p.exists() and not p.is_symlink()}
        if not present:
            return None
        parent = self._dir(ARTIFACTS_DIR)
        dest = parent / cid
        with _storing(dest):
            self._copy_artifacts(present, parent, dest, cid)
        return f"{ARTIFACTS_DIR}/{cid}"

    @staticmethod
    def _copy_artifacts(present: dict[str, Path], parent: Path, dest: Path, cid: str) -> None:
        staging = Path(tempfile.mkdtemp(prefix=f".{cid}.", suffix=".tmp", dir=parent))
        try:
            for name, src in present.items():
                if src.is_dir():
                    # symlinks=True copies links as links: nothing outside is read
                    shutil.copytree(src, staging / name, symlinks=True, dirs_exist_ok=True)
                else:
                    shutil.copy2(src, staging / name, follow_symlinks=False)
            if os.path.lexists(dest):
                if dest.is_symlink() or not dest.is_dir():
                    dest.unlink()
                else:
                    shutil.rmtree(dest)
            os.replace(staging, dest)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def quarantine(self, rel: str) -> Path:
        """Move ``rel`` (e.g. cells/x.json) to quarantine/, bytes unchanged, never over
        an existing file (x.1.json, x.2.json, ...); returns where it went."""
        src = self.root / rel
        target = self._dir(QUARANTINE_DIR)
        dest = target / src.name
        n = 1
        while True:
            try:
                os.link(src, dest, follow_symlinks=False)  # fails if dest exists: never over it
                break
            except FileExistsError:
                dest = target / f"{src.stem}.{n}{src.suffix}"
                n += 1
            except OSError:  # no hard links here (e.g. a folder): rename, after the check
                if os.path.lexists(dest):
                    dest = target / f"{src.stem}.{n}{src.suffix}"
                    n += 1
                    continue
                os.rename(src, dest)
                return dest
        os.unlink(src)
        return dest

    def rename_cell(self, old: str, new: str) -> bool:
        """Give cells/<old>.json and logs/<old>.log the id ``new`` (the id migration);
        never over an existing file. False when cells/<new>.json already exists."""
        pairs = [
            (self.cell_path(old), self.cell_path(new)),
            (self.log_path(old), self.log_path(new)),
        ]
        if os.path.lexists(pairs[0][1]):
            return False
        for src, dest in pairs:
            if os.path.lexists(src) and not os.path.lexists(dest):
                os.link(src, dest, follow_symlinks=False)
                os.unlink(src)
        return True

    # ---- scratch: a running cell's private folder ----

    @contextmanager
    def scratch(self, cid: str) -> Iterator[Path]:
        """A private (0700) folder for one cell's worker under .scratch/, removed when
        the block ends (a SIGTERM reaches here as KeyboardInterrupt, see cli.main); one
        left by a SIGKILL is removed by the next run (remove_stale_scratch)."""
        parent = self._dir(SCRATCH_DIR, mode=0o700)
        with _storing(parent / f"{cid[:150]}.*"):
            os.chmod(parent, 0o700)
            path = Path(tempfile.mkdtemp(prefix=f"{cid[:150]}.", dir=parent))  # 0700
            try:
                cleanup.mark_scratch(path)  # ours: the next run may remove it
            except OSError:
                shutil.rmtree(path, ignore_errors=True)
                raise
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
            try:
                parent.rmdir()  # the last one out: a finished run leaves no .scratch
            except OSError:
                pass

    def check_links(self) -> None:
        """Refuse (one line, before anything is written) a run folder whose written
        folders are links: every write through them would be refused later, per cell."""
        for rel in _WRITTEN:
            if (self.root / rel).is_symlink():
                raise StoreError(
                    f"{self.root / rel} is a symbolic link: refusing to write through it; "
                    "remove it (nothing was run or written)"
                )

    def remove_stale_scratch(self) -> list[str]:
        """Remove what a killed run left: scratch folders and temp files the tool can
        prove it made (tfvariants.store.cleanup), one line each. Call with the lock held,
        once the run is accepted (a refused command removes nothing)."""
        self.check_links()
        lines = []
        for path, what in cleanup.stale_entries(self.root, SCRATCH_DIR):
            cleanup.remove(path)
            lines.append(f"removed {path}: {what}")
        try:
            (self.root / SCRATCH_DIR).rmdir()
        except OSError:
            pass  # absent, or not empty (what is left there is not ours)
        return lines


# ---- output paths outside the folder's own writes ----


def run_folder_of(path: Path) -> RunFolder | None:
    """The run folder ``path`` lies in (the nearest folder above it holding a run.json,
    or cells/*.json), or None."""
    for parent in path.parents:
        cells = parent / CELLS_DIR
        if (parent / RUN_FILE).is_file() or (cells.is_dir() and any(cells.glob("*.json"))):
            return RunFolder(parent)
    return None


def _link_inside_a_run(plain: Path) -> str | None:
    """Inside a run folder (a received one, perhaps), no part of an output's path may be
    a link, the report slot and the file itself included: it could point anywhere."""
    folder = run_folder_of(plain)
    if folder is None:
        return None
    part = folder.root
    for name in plain.relative_to(folder.root).parts:
        part = part / name
        if part.is_symlink():
            return (
                f"{part} is a symbolic link inside the results folder {folder.root}: "
                "not writing through it"
            )
    return None


def evidence_reason(path: Path) -> str | None:
    """Why an output file at ``path`` would overwrite a run folder's evidence (run.json,
    cells, logs, quarantine, artifacts, scratch, lock), or None. Inside a run folder,
    only its report slot (``<run>/report/``) and files beside the evidence are free."""
    plain = Path(os.path.abspath(path))
    linked = _link_inside_a_run(plain)
    if linked:
        return linked
    resolved = plain
    try:
        resolved = resolved.resolve()
    except (OSError, RuntimeError):  # a loop of links (RuntimeError before Python 3.13)
        pass
    folder = run_folder_of(resolved)
    if folder is None:
        return None
    rel = resolved.relative_to(folder.root).parts
    if rel and rel[0] in EVIDENCE:
        what = "its run.json" if rel == (RUN_FILE,) else f"its {rel[0]}/"
        return (
            f"that is inside the results folder {folder.root}'s evidence ({what}); "
            f"write reports outside it or into {folder.root / REPORT_SLOT}/"
        )
    holder = lock.holder_of(folder.root)
    if holder is not None:
        return f"the results folder {folder.root} is being written by {lock.describe(holder)}"
    return None
