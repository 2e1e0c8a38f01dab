"""Thread counts this host cannot emulate: a cell of N threads pinned to fewer than N
CPUs measures N threads taking turns on the CPUs there are (oversubscription), not an
N-vCPU machine. compare and serve stop before any probe or cell when asked for one on
the local executor, unless the user opts in (``--oversubscribe``)."""

from __future__ import annotations

from collections.abc import Collection, Iterable


def beyond_host(
    configurations: Iterable[tuple[str, int]], cpus: int, gpu_variants: Collection[str] = ()
) -> list[int]:
    """The distinct thread counts above ``cpus`` among the CPU configurations, ascending
    (a GPU variant's count is its instance's vCPUs: its cells do not emulate them here)."""
    return sorted({t for v, t in configurations if t > cpus and v not in gpu_variants})


def _words(counts: list[int]) -> str:
    text = [str(c) for c in counts]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]


def refusal(command: str, counts: list[int], cpus: int, fitting: list[int]) -> str:
    """One line: which counts do not fit, what they would measure, the ways on (compare
    has a cluster executor; serve does not)."""
    fit = ",".join(str(t) for t in fitting) or "1"
    ray = "; --executor ray on instances that have the CPUs" if command == "compare" else ""
    verb = "does" if len(counts) == 1 else "do"
    return (
        f"--threads: {_words(counts)} {verb} not fit this host's {cpus} CPU(s): such cells "
        f"would measure {counts[-1]} threads taking turns on {cpus} CPU(s) "
        f"(oversubscription), not a {counts[-1]}-vCPU machine. Ways on: --threads {fit} "
        f"(what fits here){ray}; --dry-run for the cloud bill; or --oversubscribe to run "
        "them anyway, marked as such"
    )
