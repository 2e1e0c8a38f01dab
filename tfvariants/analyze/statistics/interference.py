"""Disturbed cells: what interference did to a run, and which policy the verdicts follow.

The rule itself (is this result disturbed, and why) is ONE function,
:func:`tfvariants.store.disturbance.disturbance`, over what the cell recorded: other
processes' share of its pinned CPUs and the hypervisor's steal share over its measured
``fit`` (warm-up and steady window; workloads/cpuload.py). Parsed results carry it as
``CellResult.disturbed``; a cell disturbed by others for part of its time but measured
on its undisturbed steps (``CellResult.undisturbed_only``) is not, and is counted apart.
:func:`disturbance` here applies it to a result dict (the matrix asks it of a cell that
just finished, to run it again).

A disturbed cell stays on disk and in the report, and `compare` runs it again (a new
attempt of the same round). The verdicts leave disturbed cells out (policy "exclude"),
or use them ("include"); the default, "auto", leaves them out unless more than half of
the configuration-rounds have no undisturbed attempt: then the load was the machine's
normal state, not an exception, and leaving them out would leave the verdicts to a few
lucky cells (the randomised order spreads a sustained load over every configuration
alike). The limits were measured on this project's machines: docs/methods.md,
"Interference".
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from tfvariants.options.interference import DISTURBED_SHARE, POLICIES, SHIELDED_SHARE
from tfvariants.options.training import TrainingOptions
from tfvariants.store import disturbance as rule
from tfvariants.store.rawfields import finite_number, get_path
from tfvariants.store.training import CellResult

__all__ = ["Interference", "disturbance", "summarise"]


def disturbance(
    result: Mapping[str, Any],
    limit: float = DISTURBED_SHARE,
    shielded_limit: float = SHIELDED_SHARE,
) -> str | None:
    """Why this result dict is disturbed, or None (not disturbed, not a successful
    cell, or no share recorded): the one rule, applied to an unparsed result."""
    if result.get("status") != "ok":
        return None
    return rule.result_disturbance(result, limit, shielded_limit)


@dataclass(frozen=True)
class Interference:
    """What interference did to a run: the disturbed cells (kept apart from the verdicts
    unless used), and how long the cells waited for quiet."""

    limit: float = DISTURBED_SHARE
    shielded_limit: float = SHIELDED_SHARE  # run-queue wait limit for shielded workers
    policy: str = "auto"  # POLICIES
    included: bool = False  # the verdicts use disturbed results (policy, or auto: most were)
    disturbed: list[tuple[str, str]] = field(default_factory=list)  # (cell id, why)
    # Disturbed by others for part of the cell, measured on its undisturbed steps only
    # (store/disturbance.py undisturbed_steps): not disturbed. (cell id, its flag)
    clean: list[tuple[str, str]] = field(default_factory=list)
    clean_gaps: int = 0  # of those: their epoch gaps ran disturbed (counted as measured)
    cells: int = 0  # successful training cells, every attempt
    waited_s: float = 0.0  # total wait for quiet before cells
    not_quiet: int = 0  # cells that started after the wait ran out, not in quiet
    sustained: int = 0  # cells started while the load was sustained (no wait, no retry)
    unclean_rounds: int = 0  # configuration-rounds with no undisturbed attempt
    config_rounds: int = 0  # configuration-rounds with a successful attempt
    quiet_wait_s: float | None = None
    raised: int = 0  # cells whose worker asked for raised priority
    shielded: int = 0  # of those: raised, and other sessions compete by weight against it
    unshielded_why: str | None = None  # why the first unshielded one was not
    started_shielded: int = 0  # cells started without a wait: the one before ran shielded
    started_after_quiet: int = 0  # without a wait: the one before was clean, ended quiet
    grants: set[str] = field(default_factory=set)  # what workers got, "nice -10 by rlimit_nice"
    advice: str | None = None  # how to get more (execute/priority.py Priority.advice)
    waits_skipped: dict[str, int] = field(default_factory=dict)  # why not waited -> cells

    @property
    def never_quiet(self) -> bool:
        """Every cell was disturbed: the machine was never quiet during the run."""
        return self.cells > 0 and len(self.disturbed) == self.cells

    def sentence(self) -> str:
        if not self.cells:
            return ""
        text = (
            f"{len(self.disturbed)} of {self.cells} cells were disturbed (other processes or "
            f"steal above {self.limit:.0%} of their pinned CPUs"
            + (
                f"; for workers at raised priority, their threads waiting for a CPU above "
                f"{self.shielded_limit:.0%} of the time)"
                if self.shielded
                else ")"
            )
        )
        if self.disturbed and self.included and self.policy == "auto":
            text += (
                f": in {self.unclean_rounds} of {self.config_rounds} configuration-rounds every "
                "attempt was disturbed, more than half, so the load was this machine's normal "
                "state and the verdicts use them (--disturbed exclude leaves them out)"
            )
        elif self.disturbed:
            text += (
                ": used in the verdicts (--disturbed include)"
                if self.included
                else ": kept on disk and listed, left out of the verdicts"
            )
        text += f"; the cells waited {self.waited_s:.0f} s for quiet in all"
        if self.not_quiet:
            text += f", and {self.not_quiet} started without it"
            if self.quiet_wait_s:
                text += f" (the wait of {self.quiet_wait_s:.0f} s ran out)"
        if self.started_after_quiet:
            text += (
                f"; {self.started_after_quiet} cell(s) started without a wait, as the cell "
                "before them was undisturbed and its own last second quiet"
            )
        text += skipped_waits(self.waits_skipped) + "." + self.clean_sentence()
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
        return text + self.priority_sentence()

    def clean_sentence(self) -> str:
        """How many cells were measured on their undisturbed steps (empty when none)."""
        if not self.clean:
            return ""
        text = (
            f" {len(self.clean)} of {self.cells} cells were measured on their undisturbed "
            "steps only (others used their CPUs for part of the cell): their times are "
            "projected from those steps, and they count as undisturbed"
        )
        if self.clean_gaps:
            text += (
                f"; in {self.clean_gaps} of them the epoch gaps (validation) ran while others used "
                "their CPUs, which the projection counts as measured"
            )
        return text + "."

    def priority_sentence(self) -> str:
        """What the raised priority did (empty when no cell asked for it)."""
        if not self.raised:
            return ""
        if not self.shielded:  # nothing was raised: say why, not what a raise would do
            text = f" None of {self.raised} workers could run at raised priority"
            text += f": {self.unshielded_why}" if self.unshielded_why else ""
        else:
            got = ", ".join(sorted(self.grants)) or "nice -20"
            full = all(g.startswith("nice -20 ") for g in self.grants)  # else down to -10
            share = "about 1" if full else "at most 10"
            text = (
                f" {self.shielded} of {self.raised} workers ran at raised priority (their "
                f"session at {got}, so other programs' sessions got {share} % of a contested "
                "CPU)"
            )
        if 0 < self.shielded < self.raised and self.unshielded_why:
            text += f"; the others at normal priority: {self.unshielded_why}"
        if self.started_shielded:
            text += (
                f"; {self.started_shielded} cell(s) started without waiting for quiet, as the "
                "cell before them ran shielded and undisturbed"
            )
        return text + "." + (f" To get more: {self.advice}." if self.advice else "")


class Judged(Protocol):
    """A successful result of any task, as the disturbed policy counts it."""

    @property
    def disturbed(self) -> bool: ...


J = TypeVar("J", bound=Judged)


def unclean_rounds(ok: Iterable[J], round_of: Callable[[J], Hashable]) -> tuple[int, int]:
    """(configuration-rounds with no undisturbed attempt, configuration-rounds) among
    the successful results ``ok``; ``round_of``: a result's configuration-round (its
    attempts share it)."""
    rounds: dict[Hashable, bool] = {}
    for r in ok:
        k = round_of(r)
        rounds[k] = rounds.get(k, True) and r.disturbed
    return sum(rounds.values()), len(rounds)


def uses_disturbed(policy: str, unclean: int, config_rounds: int) -> bool:
    """Whether the verdicts use disturbed results: "include", or "auto" when more than
    half of the configuration-rounds have no undisturbed attempt (the load was the
    machine's normal state, see the module)."""
    return policy == "include" or (policy == "auto" and 2 * unclean > config_rounds)


def summarise(
    results: Iterable[CellResult],
    *,
    policy: str = "auto",
    options: TrainingOptions | None = None,
) -> Interference:
    """The run's disturbed cells, waits, and whether the verdicts use disturbed cells
    under ``policy`` (one of POLICIES; see the module). ``options``: the run's."""
    if policy not in POLICIES:
        raise ValueError(f"disturbed policy {policy!r}: expected one of {', '.join(POLICIES)}")
    limit, shielded_limit = rule.limits_of(options)
    results = list(results)
    ok = [r for r in results if r.ok]
    unclean, config_rounds = unclean_rounds(ok, lambda r: (r.key, r.round))
    clean = [r for r in ok if not r.disturbed and r.undisturbed_only]
    return Interference(
        limit=limit,
        policy=policy,
        shielded_limit=shielded_limit,
        included=uses_disturbed(policy, unclean, config_rounds),
        disturbed=[
            (r.cell_id, disturbance(r.raw, limit, shielded_limit) or "disturbed")
            for r in ok
            if r.disturbed
        ],
        clean=[(r.cell_id, str(r.undisturbed_only)) for r in clean],
        clean_gaps=sum(
            1
            for r in clean
            if (steps := rule.undisturbed_steps(r.raw, limit)) is not None
            and steps.gap_disturbed(limit)
        ),
        cells=len(ok),
        unclean_rounds=unclean,
        config_rounds=config_rounds,
        quiet_wait_s=options.quiet_wait_s if options is not None else None,
        **_waits(results),
        **_priorities(results),
    )


def _waits(results: list[CellResult]) -> dict[str, Any]:
    """How the cells waited for quiet (execute/quiet.py's record of each)."""
    skipped: dict[str, int] = {}
    for r in results:
        why = r.get("runner", "quiet", "skipped")
        if isinstance(why, str):
            skipped[why] = skipped.get(why, 0) + 1

    def count(key: str, value: bool) -> int:
        return sum(1 for r in results if r.get("runner", "quiet", key) is value)

    return {
        "waited_s": sum(
            finite_number(r.get("runner", "quiet", "waited_s")) or 0.0 for r in results
        ),
        "not_quiet": count("quiet", False),
        "sustained": count("sustained", True),
        "started_shielded": count("shielded", True),
        "started_after_quiet": count("ended_quiet", True),
        "waits_skipped": skipped,
    }


def _priorities(results: list[CellResult]) -> dict[str, Any]:
    """The raised workers: how many were shielded, why the first other was not, what
    they got and the first advice on how to get more."""
    raised = [r for r in results if r.get("runner", "priority", "requested") == "raised"]
    unshielded = [r for r in raised if not rule.worker_shielded(r.raw)]
    why = unshielded[0].get("runner", "priority", "why") if unshielded else None
    grants: set[str] = set()
    advice: list[str] = []
    for r in raised:
        got = get_path(r.raw, "runner", "priority")
        if not isinstance(got, Mapping):
            continue
        if got.get("shielded") is True and isinstance(got.get("value"), int):
            grants.add(f"nice {got['value']} by {got.get('mechanism')}")
        if isinstance(got.get("advice"), str):
            advice.append(got["advice"])
    return {
        "raised": len(raised),
        "shielded": len(raised) - len(unshielded),
        "unshielded_why": (str(why) if why else "not recorded") if unshielded else None,
        "grants": grants,
        "advice": advice[0] if advice else None,
    }


def policy_of(options: TrainingOptions | None, given: str | None = None) -> str:
    """The disturbed policy: given (command line), else the run's, else "auto"."""
    return given or (options.disturbed_policy if options is not None else "auto")


def rule_of(options: TrainingOptions) -> Callable[[Mapping[str, Any]], str | None]:
    """The run's disturbed rule over a result dict, with both its limits."""
    limit, shielded = rule.limits_of(options)
    return lambda result: disturbance(result, limit, shielded)


def skipped_waits(skipped: Mapping[str, int]) -> str:
    """Cells started without a wait for quiet, and why (execute/quiet.py SKIPPED)."""
    parts = []
    if skipped.get("share"):
        parts.append(
            f"{skipped['share']} cell(s) started without a wait as the waits had used their "
            "share of the run's time"
        )
    if skipped.get("unpaid"):
        parts.append(
            f"{skipped['unpaid']} cell(s) without one as the last waits had been followed by "
            "disturbed cells (waiting was not paying off)"
        )
    return "; " + " and ".join(parts) if parts else ""
