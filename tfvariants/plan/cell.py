"""A cell: one (variant, threads, workload, repeat[, attempt]), and its id: ``make_id`` is the one
place any cell id (and so any cell's file name) is made, training and serving alike.

An id is its parts joined by ``__``, each part encoded so that the encoding is
injective: no part can contain ``__`` or start or end with ``_``, so the separators are
exactly the ``__`` in the id, and each part decodes back to one string. Two different
cells therefore never share an id (and a file), whatever their names hold.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SEP = "__"
# A workload or model given as a file is named by its stem plus a hash of the path as
# given, so two files with one stem (a/x.py, b/x.py) get two ids; "@" marks that.
FILE_SUFFIXES = (".py", ".keras")
_FILE_MARK = "@"
# Longer ids keep a readable head and end in a hash of the whole id: a file name
# (id + ".json", ".log", a scratch prefix) must stay within NAME_MAX (255 bytes).
MAX_ID_BYTES = 200
_LONG_MARK = "~"
# Characters never left as themselves in a part: the escape character, the two marks,
# and what a file name cannot hold.
_ALWAYS = {"%", _FILE_MARK, _LONG_MARK, "/", "\x00"}


def _hash(text: str, n: int = 10) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def encode_part(text: str) -> str:
    """``text`` with ``%``, ``@``, ``/``, NUL and every ``_`` that would start, end or
    double an underscore percent-escaped (``x__y`` -> ``x_%5Fy``); other text as is."""
    out: list[str] = []
    for i, ch in enumerate(text):
        underscore_risk = ch == "_" and (i == 0 or i == len(text) - 1 or out[-1] == "_")
        if ch in _ALWAYS or underscore_risk:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
        else:
            out.append(ch)
    return "".join(out)


def name_part(name: str) -> str:
    """A workload (or serving model) as an id part: a registered name as itself
    (encoded), a file as its encoded stem + ``@`` + a hash of the path as given."""
    if name.endswith(FILE_SUFFIXES):
        return f"{encode_part(Path(name).stem)}{_FILE_MARK}{_hash(name)}"
    return encode_part(name)


def make_id(*parts: str) -> str:
    """The one maker of cell ids: encoded parts joined by ``__`` (callers pass parts
    through ``encode_part``, or ``name_part`` where a part may be a file). An id longer
    than MAX_ID_BYTES keeps its head and ends in ``~`` + a hash of the whole id."""
    cid = SEP.join(parts)
    raw = cid.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_ID_BYTES:
        return cid
    # The hash is of the full id, so long ids stay distinct; the head stays readable.
    head = raw[: MAX_ID_BYTES - 12].decode("utf-8", "ignore").rstrip("_")
    return f"{head}{_LONG_MARK}{_hash(cid)}"


def config_label(variant: str, threads: int) -> str:
    """A configuration as people read it, ``VARIANT@THREADS`` (``--baseline``'s form):
    the one place it is formatted; code keys configurations by their parts."""
    return f"{variant}@{threads}"


def cell_id(variant: str, threads: int, workload: str, repeat: int, attempt: int = 0) -> str:
    """A training cell's id and file stem: ``<workload>__<variant>__t<threads>__r<repeat>``
    (e.g. ``mnist_mlp__local__t2__r0``), parts encoded as ``make_id`` says, and
    ``__a<attempt>`` for a cell run again because an earlier attempt of the same round
    was disturbed (the first attempt keeps the plain id, as earlier run folders have)."""
    parts = [name_part(workload), encode_part(variant), f"t{threads}", f"r{repeat}"]
    return make_id(*parts, *([f"a{attempt}"] if attempt else []))


def cell_id_of(cell: dict[str, Any]) -> str:
    """The id of a stored result's ``cell`` object (validated by the result loader)."""
    attempt = cell.get("attempt", 0)
    return cell_id(
        str(cell.get("variant")),
        int(cell.get("threads") or 0),
        str(cell.get("workload")),
        int(cell.get("repeat") or 0),
        attempt if isinstance(attempt, int) else 0,
    )


def legacy_cell_id(variant: str, threads: int, workload: str, repeat: int) -> str:
    """The id run folders written before ids were encoded used (they could collide);
    only the loader and the folder migration use it, to find those files."""
    name = Path(workload).stem if workload.endswith(".py") else workload
    return f"{name}__{variant}__t{threads}__r{repeat}"


@dataclass(frozen=True)
class Cell:
    variant: str
    threads: int
    workload: str
    repeat: int = 0
    attempt: int = 0  # > 0: this round's cell again, after a disturbed attempt

    @property
    def cell_id(self) -> str:
        return cell_id(self.variant, self.threads, self.workload, self.repeat, self.attempt)

    def to_dict(self) -> dict[str, Any]:
        # The first attempt's object has no "attempt" key: as results always had.
        d = asdict(self)
        if not self.attempt:
            del d["attempt"]
        return d
