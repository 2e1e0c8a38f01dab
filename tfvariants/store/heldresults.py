"""A run folder's results as the matrix loop holds them while it runs: read from the
folder once (store/rundir.py ``load_run_dir``, when the loop prepares it), then each cell
the loop stores added as it is stored, by the rules a fresh load applies (the file read
back and validated, its name the cell's id, copies and undeclared hosts not counted).
So the adaptive rounds' hook gets what a reload of the folder would give after every
round, without reading every file again; each result is parsed once (again only when a
variant's device, a fact of the whole folder, changes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tfvariants.store.cellresult import AnyResult, parse_result, variant_devices
from tfvariants.store.rawfields import get_path
from tfvariants.store.record import RunRecord
from tfvariants.store.result import ResultError, load_result
from tfvariants.store.rundir import RunContents, cell_ids, count_results


class HeldResults:
    """The results of ``contents`` (a load of the folder) and of every cell ``add``-ed
    since, as of ``run`` (run.json, read when the loop starts: nothing writes what
    parsing reads while cells run)."""

    def __init__(self, contents: RunContents, run: RunRecord, *, allow_mixed_hosts: bool) -> None:
        self.results_dir, self.run, self.mixed = contents.results_dir, run, allow_mixed_hosts
        # Every readable cell as a load reads it, before its rules on copies and hosts.
        self.read: dict[str, dict[str, Any]] = {**contents.results, **contents.foreign}
        self._parsed: dict[str, tuple[dict[str, Any], str, AnyResult]] = {}

    def add(self, cell_id: str, path: Path) -> None:
        """The cell just stored in ``path``, read back as a load reads it: a file a load
        would not count (unreadable, invalid, not named by its cell's id) is left out."""
        self.read.pop(cell_id, None)
        try:
            result = load_result(path)
        except ResultError:
            return
        cid, legacy = cell_ids(result["cell"])
        if path.stem == cid or (path.stem == legacy and cid not in self.read):
            self.read[cid] = result

    def parsed(self) -> dict[str, AnyResult]:
        """Cell id -> typed result, as a load of the folder now would parse it."""
        # In a load's order (its files by name): sums over results add up alike.
        read = {cid: self.read[cid] for cid in sorted(self.read, key=lambda c: f"{c}.json")}
        contents = RunContents(self.results_dir, self.run, read, mixed_allowed=self.mixed)
        count_results(contents)
        devices = variant_devices(self.run, contents.results.values())
        out: dict[str, AnyResult] = {}
        for cid, raw in contents.results.items():
            device = devices.get(str(get_path(raw, "cell", "variant")), "cpu")
            held = self._parsed.get(cid)
            if held is None or held[0] is not raw or held[1] != device:
                held = (raw, device, parse_result(self.run, raw, devices))
                self._parsed[cid] = held
            out[cid] = held[2]
        return out
