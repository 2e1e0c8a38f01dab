"""The PASS/FAIL checks of benchmarks/decide.py: each scored row against its limit
(the limits and why each is what it is: decide.py's docstring)."""

from __future__ import annotations

import math

from tfvariants.analyze.statistics import stats

LIMIT = 0.05  # false "different" and false "equivalent", each, over all looks together
POWER = 0.90
# The warning "wandering" on independent rounds (A/A, iid noise, no drift): a warning that
# fires on many clean runs says nothing when it fires on a wandering one.
WANDER_ALARM = 0.10
CLEAN = ("A/A log-normal 10%", "A/A Student-t 10%", "A/A bimodal 1.85x")
# The warning "tail" on identical configurations (the same law both sides): heavy-tailed and
# very noisy ones included, where two noisy point estimates disagree most often.
IDENTICAL = (*CLEAN, "A/A Student-t scale 0.1", "A/A log-normal 30%")
NAMED = 0.80  # the clearly fastest of five called "the fastest"
# The warning "tail" on a configuration taking 2x in 10 % of its runs, of the runs whose
# repeats of it show a 2x run at all: no test warns of a tail its runs never showed, and A
# stops at its deciding look (7-20 runs: none shows in 0.9^n of them)
TAIL_FOUND = 0.80
# "different" where the truth lies on the minimum effect (1.05x, min effect 5 %): the claim
# "beyond 5 %" is false there, and errs on that side only (the audit's watch row)
EDGE_LIMIT = LIMIT / 2
# The displayed interval's misses may exceed 1 - its label by this much (the audit's 1.5
# points: a simulation's margin at a few thousand trials is about 0.5-1 point).
COVERAGE_SLACK = 0.015
# 1.2x with 5 % outliers: 87.8 % of 2,000 trials found it with the rule before issue 25; 90 %
# is at the edge of these rank tests with early looks (docs/measurements.md). The issue asks for
# "power as before": that value less the simulation's 95 % margin at the trials run.
POWER_BEFORE = {"1.2x, 5% outliers": 0.878}
# Reported, not checked: the audit's stronger wander (its "(0.8: 31 %)"). The check is the
# audit's wandering configuration, AR(1) 0.5. At 0.8 no rule tried within the 20-repeat cap
# meets "<= 5 % or warned >= 90 %" and keeps the power checks: only a warning that knows
# which side wanders and that the machine does not drift reaches 90 % (make
# bench-wander-bounds; docs/measurements.md, "What widening and warnings can reach against the
# wander").
STRESS = {"A/A wander AR(1) 0.8": "beyond 20 repeats' reach: make bench-wander-bounds"}

# (scenario, what, measured, limit, passed); passed None: a stress row, reported, not checked
Check = tuple[str, str, float, str, bool | None]


def coverage_check(r: dict) -> Check:
    """The displayed interval (the look's, where the run stopped) holds the true ratio at
    its label's rate (95 % over all looks together), within COVERAGE_SLACK: one-sided, as
    repeated confidence intervals cover at least their label."""
    limit = 1 - stats.CONFIDENCE + COVERAGE_SLACK
    miss = r["interval_miss"]
    what = "interval misses the true ratio"
    return r["name"], what, miss, f"<= {limit:.1%} (label {stats.CONFIDENCE:.0%})", miss <= limit


def wander_check(r: dict) -> Check:
    """False "different" <= 5 % and the interval's coverage within COVERAGE_SLACK of its
    label, or the verdict withheld with the named warning in >= 90 % of runs."""
    name, fd, withheld = r["name"], r["false_different"], r["withheld"]
    what = "false 'different', miss (or withheld)"
    covered = coverage_check(r)[-1]
    status = f"miss {r['interval_miss']:.1%}, withheld {withheld:.0%}"
    if name in STRESS:
        return name, what, fd, f"{status}; {STRESS[name]}", None
    limit = f"<= 5 % and miss <= {1 - stats.CONFIDENCE + COVERAGE_SLACK:.1%} or withheld >= 90 %"
    ok = (fd <= LIMIT and bool(covered)) or withheld >= POWER
    return name, what, fd, f"{limit}: {status}", ok


def ranking_checks(r: dict) -> list[Check]:
    """ "X was the fastest" errs in <= 5 % of runs (the family's error); the clearly
    fastest (0.8x of the baseline) is named in >= 80 %."""
    name, wrong = r["name"], r["named_wrong"]
    out: list[Check] = [(name, "'fastest' wrong (family error)", wrong, "<= 5 %", wrong <= LIMIT)]
    if not r["aa"]:
        named = r["named"]
        out.append((name, "the fastest named", named, ">= 80 %", named >= NAMED))
    return out


def checks(rows: list[dict], method: str) -> list[Check]:
    """The PASS/FAIL table for one method's rows."""
    out: list[Check] = []
    for r in (r for r in rows if r["method"] == method):
        name, fd = r["name"], r["false_different"]
        if r["kind"] == "wander":
            out.append(wander_check(r))
            continue
        if name in CLEAN:
            fa = r["wandering"]
            out.append(
                (name, "'wandering' warned (false alarm)", fa, "<= 10 %", fa <= WANDER_ALARM)
            )
        if name in IDENTICAL:
            ta = r["tail"]
            out.append((name, "'tail' warned (false alarm)", ta, "<= 5 %", ta <= LIMIT))
        if r["kind"] == "ranking":
            out += ranking_checks(r)
            continue
        if r["kind"] == "tail":
            out += tail_checks(r)
        elif r["kind"] == "plain":
            out.append(coverage_check(r))
        if r["aa"] or fd > 0:
            what = "false 'different'" + (" (typical runs)" if r["kind"] == "tail" else "")
            out.append((name, what, fd, "<= 5 %", fd <= LIMIT))
        if r["outside_band"]:
            fe = r["false_equivalent"]
            out.append((name, "false 'equivalent'", fe, "<= 5 %", fe <= LIMIT))
        if r["power_check"]:
            out.append(power_check(r))
        elif (r["later"] or r["cut"]) and not (r["aa"] or r["on_effect_edge"]):
            what = "found (reported: " + ("--later's cost)" if r["later"] else "budget cut)")
            out.append((name, what, r["found"], "the same from the start: 1.2x, 10% noise", None))
        if r["on_effect_edge"]:
            d = r["different"]
            out.append(
                (name, "'different' (beyond the min effect)", d, "<= 2.5 %", d <= EDGE_LIMIT)
            )
    return out


def power_check(r: dict) -> Check:
    """Found within 20 repeats >= 90 %, or where POWER_BEFORE names a reference, not lower
    than it beyond the simulation's 95 % margin at this trial count."""
    what = "found within 20 repeats"
    before = POWER_BEFORE.get(r["name"])
    if before is None:
        return r["name"], what, r["found"], ">= 90 %", r["found"] >= POWER
    floor = before - 1.96 * math.sqrt(before * (1 - before) / r["trials"])
    limit = f">= {floor * 100:.1f} % (as before: {before * 100:.1f} % less the margin)"
    return r["name"], what, r["found"], limit, r["found"] >= floor


def tail_checks(r: dict) -> list[Check]:
    """The warning "tail" in >= 80 % of the runs whose repeats of A show a 2x run (checked),
    and of all runs (reported: its ceiling is the share that show one)."""
    name, shown, given = r["name"], r["tail_shown"], r["tail_given_shown"]
    return [
        (name, "'tail' warned, of runs showing a 2x run", given, ">= 80 %", given >= TAIL_FOUND),
        (name, "'tail' warned, of all runs", r["warned"], f"reach: {shown:.1%} show one", None),
    ]
