"""Was a cell disturbed? The one classification of interference, from what the cell
recorded: other processes' share of its pinned CPUs, and the hypervisor's steal share,
over its measured ``fit`` (warm-up and steady window; workloads/cpuload.py).

A disturbed cell stays on disk and in the report, and `compare` runs the cell again (a
new attempt of the same round). The verdicts leave disturbed cells out (policy
"exclude"), or use them ("include"); the default, "auto", leaves them out unless most
cells of the run were disturbed: then the load was the machine's normal state, not an
exception, and leaving them out would leave the verdicts to a few lucky cells (the
randomised order spreads a sustained load over every configuration alike).
The default limits were measured on this project's machines: docs/compare.md,
"Interference".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tfvariants.analyze.fields import finite_number, get_path
from tfvariants.plan.cell import cell_id

# Others' (or steal) share of the pinned CPUs above which a cell is disturbed. Under
# 0.10 the quick compare's rounds agreed (mnist_cnn t1/t2 1.46-1.55); at 0.3-0.7 they
# scattered (0.68-2.21). See docs/compare.md for the measurement.
DISTURBED_SHARE = 0.10
# Before a cell: wait until others used less than this share of its CPUs over the last
# second, for at most QUIET_WAIT_S.
QUIET_SHARE = 0.10
QUIET_WAIT_S = 30.0
# Attempts after a disturbed one, per cell (each waits for quiet first).
DISTURBED_RETRIES = 2
POLICIES = ("auto", "exclude", "include")


def disturbance(result: Mapping[str, Any], limit: float = DISTURBED_SHARE) -> str | None:
    """Why this result is disturbed ("other processes used 34% of its pinned CPUs"), or
    None when it is not (or is not a successful training cell, or recorded no share)."""
    if result.get("status") != "ok":
        return None
    parts = []
    others = finite_number(get_path(result, "cpu", "others_share"))
    steal = finite_number(get_path(result, "cpu", "steal_share"))
    if others is not None and others > limit:
        parts.append(f"other processes used {others:.0%} of its pinned CPUs")
    if steal is not None and steal > limit:
        parts.append(f"the hypervisor stole {steal:.0%}")
    return " and ".join(parts) + f" (limit {limit:.0%})" if parts else None


def attempt_of(result: Mapping[str, Any]) -> int:
    attempt = get_path(result, "cell", "attempt")
    return attempt if isinstance(attempt, int) and attempt >= 0 else 0


def _round_key(result: Mapping[str, Any]) -> tuple[str, str, int, int]:
    c = result.get("cell") or {}
    return (str(c.get("workload")), str(c.get("variant")), int(c.get("threads") or 0),
            int(c.get("repeat") or 0))  # fmt: skip


@dataclass
class Interference:
    """What interference did to a run: the disturbed cells (kept apart from the verdicts
    unless included), replaced attempts, and how long the cells waited for quiet."""

    limit: float = DISTURBED_SHARE
    policy: str = "auto"  # POLICIES
    included: bool = False  # the verdicts use disturbed results (policy, or auto: most were)
    disturbed: list[tuple[str, str]] = field(default_factory=list)  # (cell id, why)
    cells: int = 0  # training cells considered
    waited_s: float = 0.0  # total wait for quiet before cells
    not_quiet: int = 0  # cells that started after the wait ran out, not in quiet
    sustained: int = 0  # cells started while the load was sustained (no wait, no retry)
    unclean_rounds: int = 0  # configuration-rounds with no undisturbed attempt
    quiet_limit: float | None = None
    quiet_wait_s: float | None = None

    @property
    def never_quiet(self) -> bool:
        """Every cell was disturbed: the machine was never quiet during the run."""
        return self.cells > 0 and len(self.disturbed) == self.cells

    def sentence(self) -> str:
        if not self.cells:
            return ""
        text = (
            f"{len(self.disturbed)} of {self.cells} cells were disturbed (other processes or "
            f"steal above {self.limit:.0%} of their pinned CPUs)"
        )
        if self.disturbed and self.included and self.policy == "auto":
            text += (
                f": in {self.unclean_rounds} configuration-rounds every attempt was, more than "
                "half, so the load was this machine's normal state and the verdicts use them "
                "(--disturbed exclude leaves them out)"
            )
        elif self.disturbed:
            text += (
                ": used in the verdicts (--disturbed include)"
                if self.included
                else ": kept on disk and listed, left out of the verdicts"
            )
        text += f"; the cells waited {self.waited_s:.0f} s for quiet in all"
        if self.not_quiet:
            text += (
                f", and {self.not_quiet} started without it (the wait of "
                f"{self.quiet_wait_s or 0:.0f} s ran out)"
            )
        text += "."
        if self.never_quiet:
            text += (
                " This machine was never quiet during the run: no undisturbed result, so no "
                "verdict rests on a clean measurement."
            )
        if self.sustained:
            text += (
                f" {self.sustained} cell(s) ran under a sustained load (several waits in a row "
                "ran out), without the full wait and not run again."
            )
        return text


def split(
    results: Sequence[Mapping[str, Any]],
    *,
    limit: float = DISTURBED_SHARE,
    policy: str = "auto",
) -> tuple[list[Any], Interference]:
    """The results the statistics use (one per configuration and round: its first
    undisturbed attempt; when disturbed ones are used and there is none, its first
    attempt), and the summary. ``policy``: one of POLICIES (see the module).

    Results that are not successful pass through unchanged (the report counts them)."""
    if policy not in POLICIES:
        raise ValueError(f"disturbed policy {policy!r}: expected one of {', '.join(POLICIES)}")
    summary = Interference(limit=limit, policy=policy)
    by_round: dict[tuple[str, str, int, int], list[Mapping[str, Any]]] = {}
    used: list[Any] = []
    for r in results:
        if get_path(r, "cell", "task") == "serve":
            used.append(r)
            continue
        summary.cells += 1
        summary.waited_s += finite_number(get_path(r, "runner", "quiet", "waited_s")) or 0.0
        if get_path(r, "runner", "quiet", "quiet") is False:
            summary.not_quiet += 1
        if get_path(r, "runner", "quiet", "sustained") is True:
            summary.sustained += 1
        why = disturbance(r, limit)
        if why:
            c = r.get("cell") or {}
            cid = cell_id(str(c.get("variant")), int(c.get("threads") or 0),
                          str(c.get("workload")), int(c.get("repeat") or 0), attempt_of(r))  # fmt: skip
            summary.disturbed.append((cid, why))
        by_round.setdefault(_round_key(r), []).append(r)
    rounds = [sorted(attempts, key=attempt_of) for attempts in by_round.values()]
    ok_rounds = [[r for r in attempts if r.get("status") == "ok"] for attempts in rounds]
    ok_rounds = [ok for ok in ok_rounds if ok]
    unclean = sum(1 for ok in ok_rounds if all(disturbance(r, limit) for r in ok))
    summary.unclean_rounds = unclean
    # auto: most configuration-rounds have no undisturbed attempt -> the load was normal.
    summary.included = policy == "include" or (policy == "auto" and 2 * unclean > len(ok_rounds))
    include = summary.included
    for attempts in rounds:
        ok = [r for r in attempts if r.get("status") == "ok"]
        clean = [r for r in ok if disturbance(r, limit) is None]
        if clean:
            used.append(clean[0])
        elif ok and include:
            used.append(ok[0])
        elif not ok:
            used.append(attempts[-1])  # the latest failure/skip says what happened
    return used, summary


def add_waits(summary: Interference, options: Mapping[str, Any]) -> Interference:
    """The run's wait settings (run.json options), for the report's sentence."""
    summary.quiet_limit = finite_number(options.get("quiet_share"))
    summary.quiet_wait_s = finite_number(options.get("quiet_wait_s"))
    return summary


def policy_of(options: Mapping[str, Any], given: str | None = None) -> str:
    """The disturbed policy: given (command line), else the run's, else "auto"."""
    stored = options.get("disturbed_policy")
    return given or (stored if stored in POLICIES else "auto")


def limit_of(options: Mapping[str, Any], given: float | None = None) -> float:
    """The disturbed limit: given (command line), else the run's (run.json), else default."""
    if given is not None:
        return given
    stored = finite_number(options.get("disturbed_share"))
    return stored if stored is not None else DISTURBED_SHARE
