"""Workload files a run executes (``compare --workloads my_model.py``, ``serve --models
my_model.keras``): recorded by what they are when the run starts, and shown and
confirmed before a resume executes them.

A results folder is data: one received from someone else names workload files in its
run.json (by any path), and ``compare --resume`` would execute them. So a resume that
runs workload files the command line did not name lists them (as given, resolved, and
their SHA-256) and asks; without a terminal it refuses unless ``--trust-workloads``.
And since the cells' ids name a file by the path as given, a resume from another
directory could run a different file under the same ids: run.json records each file's
SHA-256 (``workload_files``), and a resume whose file differs is refused. A serving
run's model files (run.json's ``models``: a ``.keras`` file is loaded, a ``.py`` one
executed) are covered the same way; ``serve --resume`` names them on its command line
(its arguments must be the run's), so they need no other confirmation.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tfvariants.errors import UserError, one_line
from tfvariants.plan.cell import FILE_SUFFIXES
from tfvariants.store.inputs import InputError, read_input

MAX_WORKLOAD_BYTES = 64 << 20
FIELD = "workload_files"  # run.json: {path as given: sha256}
# The run.json lists that may name files a run executes: compare's workloads, serve's
# models (serve's own "workloads" are cell labels, never files).
NAMING_KEYS = ("workloads", "models")


def file_workloads(names: Iterable[str]) -> list[str]:
    return [n for n in names if n.endswith(FILE_SUFFIXES)]


def run_files(run: Mapping[str, Any]) -> list[str]:
    """The workload and model files a run (run.json, or its matrix part) executes, each
    once, as given."""
    names: list[str] = []
    for key in NAMING_KEYS:
        listed = run.get(key)
        if isinstance(listed, list):
            names += [n for n in listed if isinstance(n, str)]
    return list(dict.fromkeys(file_workloads(names)))


def fingerprint(path: str) -> str | None:
    """The SHA-256 of the workload file at ``path``, or None if there is none."""
    if not os.path.lexists(path):
        return None
    try:
        return hashlib.sha256(read_input(path, MAX_WORKLOAD_BYTES)).hexdigest()
    except InputError as exc:
        raise UserError(f"workload file {exc}") from None


def record(run: Mapping[str, Any]) -> dict[str, str]:
    """run.json's ``workload_files`` for a new run (``run``: its matrix part)."""
    out = {}
    for name in run_files(run):
        digest = fingerprint(name)
        if digest is not None:
            out[name] = digest
    return out


def _ask_on_terminal(question: str) -> bool:
    print(question, end=" ", file=sys.stderr, flush=True)
    try:
        return input().strip().lower() in ("y", "yes")
    except (EOFError, OSError, ValueError, RuntimeError):  # stdin closed while asking
        return False


def _on_terminal() -> bool:
    """stdin and stderr are a terminal: False when either is closed (``0<&-``)."""
    try:
        return bool(sys.stdin and sys.stdin.isatty() and sys.stderr and sys.stderr.isatty())
    except (OSError, ValueError):
        return False


def check_resume(
    stored: dict[str, Any],
    *,
    named: Iterable[str] = (),
    trusted: bool = False,
    ask: Callable[[str], bool] | None = None,
) -> None:
    """Before a resume runs anything: every workload or model file run.json names is the
    file it recorded, and each one the command line did not name is confirmed (``ask``
    on a terminal, or ``trusted``). UserError, one line, otherwise; nothing is run."""
    files = run_files(stored)
    check_recorded(stored, files)
    unconfirmed = [n for n in files if n not in set(named)]
    if not unconfirmed or trusted:
        return
    shown = "; ".join(
        f"{n} -> {os.path.realpath(n)} (sha256 {fingerprint(n)})" for n in unconfirmed
    )
    if ask is None and _on_terminal():
        ask = _ask_on_terminal
    question = f"--resume will run these workload files: {one_line(shown)}. Run them? [y/N]"
    if ask is not None and ask(question):
        return
    raise UserError(
        f"--resume would run workload file(s) named by the run's run.json: {shown}; read "
        "them, then confirm with --trust-workloads or name them with --workloads "
        "(nothing was run)"
    )


def check_recorded(stored: Mapping[str, Any], files: Iterable[str]) -> None:
    """Each of ``files`` (paths as given) is here and, where run.json recorded its
    SHA-256, that very file: else a resume would pool another file's cells under the
    same ids. UserError, one line."""
    recorded = stored.get(FIELD) or {}
    recorded = recorded if isinstance(recorded, dict) else {}
    for name in files:
        digest = fingerprint(name)
        where = os.path.realpath(name)
        if digest is None:
            raise UserError(
                f"--resume: the run's workload file {name} is not found (here: {where}): "
                "resume from the folder the run was started in; nothing was run"
            )
        if recorded.get(name) not in (None, digest):
            raise UserError(
                f"--resume: {name} (here: {where}) is not the file this run measured (its "
                "SHA-256 differs from run.json's): its cells would be pooled with another "
                "file's; resume from the folder the run was started in, or start a new run"
            )
