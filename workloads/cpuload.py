"""What else the machine was doing while a cell ran (stdlib only, Linux files where
readable; anything unreadable is simply left out).

A snapshot before and after the measured part gives: this process's CPU time (so CPU
utilisation = CPU time / wall time / CPUs pinned), the busy share of the pinned CPUs
taken by OTHER processes, the hypervisor's steal share, the load average, the current
CPU frequency, and this process's run-queue wait share.

Others' share counts every cycle someone else used, also those our threads did not
want (between steps, while one thread of two waits on the other). That is the harm
when everything runs at one priority, but a worker raised above the others
(tfvariants.execute.priority) takes its CPU back as soon as it wants it: then the
run-queue wait (schedstat: the time our threads were ready to run but waited for a
CPU, summed over threads, per pinned CPU-second) is what the neighbours cost it. It
includes waits behind our own threads, the share a quiet machine shows too.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Sequence
from typing import Any


def proc_stat() -> dict[int, list[int]]:
    """Per-CPU jiffies from /proc/stat: user nice system idle iowait irq softirq steal."""
    out: dict[int, list[int]] = {}
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("cpu") and line[3].isdigit():
                    name, *vals = line.split()
                    out[int(name[3:])] = [int(v) for v in vals[:8]]
    except (OSError, ValueError, IndexError):
        return {}
    return out


def cpu_seconds() -> float:
    """This process's CPU seconds so far (user + system, all its threads)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run_delays(task_dir: str = "/proc/self/task") -> dict[str, int] | None:
    """Each of this process's threads' run-queue wait so far, in ns (the second field of
    /proc/<pid>/task/<tid>/schedstat); None where the kernel does not keep it."""
    out: dict[str, int] = {}
    try:
        tids = os.listdir(task_dir)
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"{task_dir}/{tid}/schedstat", encoding="ascii") as fh:
                out[tid] = int(fh.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue  # a thread that just ended
    return out or None


def snapshot() -> dict[str, Any]:
    return {
        "wall": time.perf_counter(),
        "cpu_s": cpu_seconds(),
        "stat": proc_stat(),
        "delays": run_delays(),
    }


def _loadavg() -> list[float] | None:
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            return [float(x) for x in fh.read().split()[:3]]
    except (OSError, ValueError):
        return None


def _freq_mhz(cpus: Sequence[int]) -> list[float] | None:
    out = []
    for c in cpus:
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq") as fh:
                out.append(int(fh.read().strip()) / 1000)
        except (OSError, ValueError):
            return None
    return out or None


def pinned_cpus(cpus: Sequence[int]) -> list[int]:
    """The CPUs the worker runs on: those asked for, else its affinity."""
    if cpus:
        return list(cpus)
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def others_cpu_s(busy: float, total_s: float, own_cpu_s: float) -> float:
    """Busy time on our CPUs that was not ours (``busy_shares``' busy share of
    ``total_s`` CPU-seconds, less this process's own): other processes competing."""
    return max(busy * total_s - own_cpu_s, 0.0)


def usage(before: dict[str, Any], after: dict[str, Any], cpus: Sequence[int]) -> dict[str, Any]:
    """CPU utilisation of this process and the machine's interference between snapshots."""
    wall = after["wall"] - before["wall"]
    cpu_s = after["cpu_s"] - before["cpu_s"]
    pinned = pinned_cpus(cpus)
    out: dict[str, Any] = {
        "wall_s": wall,
        "process_cpu_s": cpu_s,
        "cpus_pinned": len(pinned) or None,
        "utilisation": cpu_s / wall / len(pinned) if wall > 0 and pinned else None,
        "loadavg": _loadavg(),
        "freq_mhz": _freq_mhz(pinned),
    }
    shares = busy_shares(before.get("stat") or {}, after.get("stat") or {}, pinned)
    if shares is not None:
        busy, steal, total_s = shares
        out["steal_share"] = steal
        out["others_share"] = others_cpu_s(busy, total_s, cpu_s) / total_s
    wait = runq_wait_s(before.get("delays"), after.get("delays"))
    if wait is not None and wall > 0 and pinned:
        out["runq_wait_share"] = wait / (wall * len(pinned))
    return out


def runq_wait_s(before: dict[str, int] | None, after: dict[str, int] | None) -> float | None:
    """Seconds this process's threads waited on a run queue between two readings: a
    thread's growth since the first reading, or all of it for one started since (a
    thread that ended in between is missed: its wait is gone with it)."""
    if before is None or after is None:
        return None
    ns = sum(max(d - before.get(tid, 0), 0) for tid, d in after.items())
    return ns / 1e9


def busy_shares(
    before: dict[int, list[int]], after: dict[int, list[int]], cpus: Sequence[int]
) -> tuple[float, float, float] | None:
    """(busy share, steal share, CPU-seconds elapsed) of ``cpus`` between two
    ``proc_stat()`` readings; None when a CPU is unreadable or no time passed. Busy is
    everything but idle, iowait and steal (the host's quiet wait reads it as others')."""
    if not cpus or not all(c in after and c in before for c in cpus):
        return None
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = busy = steal = 0
    for c in cpus:
        d = [x - y for x, y in zip(after[c], before[c], strict=False)]
        total += sum(d)
        steal += d[7] if len(d) > 7 else 0
        busy += sum(d) - d[3] - d[4] - (d[7] if len(d) > 7 else 0)
    if total <= 0:
        return None
    return busy / total, steal / total, total / hz
