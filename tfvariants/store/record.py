"""run.json as one frozen, typed record (:class:`RunRecord`): structured once, where the
file is loaded (store/runfile.py ``read_run``, store/rundir.py ``load_run_dir``), so that
every reader (analyze/, rounds/, commands/, render/) reads attributes and none reads the
stored dict by string keys. The writers (store/runfile.py ``write_run`` and the
``store_``/``update_`` functions) still merge plain records: this is the reading side.

Lenient by design: validate_run (store/runfile.py) refuses what is malformed; what is
absent (an old run folder, a test's few fields) reads as None or empty here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tfvariants.options.declare import RunOptionsBase, declared
from tfvariants.options.preset import PresetRecord, preset_record
from tfvariants.plan.tasks import task_of
from tfvariants.store.adaptiveplans import (
    DesignRecord,
    LookPlan,
    WindowPlan,
    design_record,
    look_plan,
    window_plan,
)
from tfvariants.store.rawfields import whole_number as _int

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else _EMPTY


def _tuple(value: object) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, list | tuple) else ()


def _text(value: object) -> str | None:
    return str(value) if value else None


def _number(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None  # type: ignore[arg-type]


@dataclass(frozen=True)
class VariantInfo:
    """What compare learned about one variant before the sweep (commands/variant_probe.py)
    and the peaks measured for it (store/runfile.py ``store_peaks``)."""

    device: str | None = None  # cpu | gpu, when declared
    backend: str | None = None  # None: its probe never ran
    base: str | None = None
    requirements: tuple[str, ...] = ()
    overlay_env: Mapping[str, Any] = field(default_factory=dict)
    compiled_for: str | None = None
    # the oneDNN probe's judgement (variants/noop.py)
    onednn: Mapping[str, Any] = field(default_factory=dict)
    # thread count (as text) -> the peak record (variants/peak/run.py)
    peak: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def _variant_info(entry: Mapping[str, Any]) -> VariantInfo:
    return VariantInfo(
        device=_text(entry.get("device")),
        backend=None if entry.get("backend") is None else str(entry["backend"]),
        base=_text(entry.get("base")),
        requirements=tuple(str(r) for r in _tuple(entry.get("requirements"))),
        overlay_env=_dict(entry.get("overlay_env")),
        compiled_for=_text(entry.get("compiled_for")),
        onednn=_dict(entry.get("onednn")),
        peak={str(t): _dict(p) for t, p in _dict(entry.get("peak")).items()},
    )


@dataclass(frozen=True)
class AdaptiveRecord:
    """run.json's "adaptive": the stopping rule (commands/rounds.py ``record``,
    commands/serve.py), its budget, the rounds and looks made, why it stopped, the
    planned steady window (training) and the last look's plan (serving)."""

    min_repeats: int | None = None
    max_repeats: int | None = None
    looks: tuple[Any, ...] | None = None  # None: not a list (read as a fixed count)
    budget_s: float | None = None
    rounds: tuple[Mapping[str, Any], ...] = ()
    looks_made: tuple[Mapping[str, Any], ...] = ()
    stopped: str | None = None
    spent_s: float | None = None
    window_plan: WindowPlan | None = None
    look_plan: LookPlan | None = None
    # The measurement design the first look chose (analyze/training/design.py design_of)
    design: DesignRecord | None = None


def _adaptive(record: Mapping[str, Any]) -> AdaptiveRecord:
    looks = record.get("looks")
    return AdaptiveRecord(
        min_repeats=_int(record.get("min_repeats")),
        max_repeats=_int(record.get("max_repeats")),
        looks=tuple(looks) if isinstance(looks, list) else None,
        budget_s=_number(record.get("budget_s")),
        rounds=tuple(_dict(r) for r in _tuple(record.get("rounds"))),
        looks_made=tuple(_dict(r) for r in _tuple(record.get("looks_made"))),
        stopped=record.get("stopped") if isinstance(record.get("stopped"), str) else None,
        spent_s=_number(record.get("spent_s")),
        window_plan=window_plan(record.get("window_plan")),
        look_plan=look_plan(record.get("look_plan")),
        design=design_record(record.get("design")),
    )


@dataclass(frozen=True)
class Host:
    """A host the run declared (store/runfile.py ``local_host``, store/runhosts.py)."""

    host_id: str
    kind: str
    label: str = ""


@dataclass(frozen=True)
class RunRecord:
    """A run folder's run.json, typed. ``present``: False when the folder has none (then
    every field is empty)."""

    present: bool = False
    task: str | None = None  # "serve"; None: training
    options: RunOptionsBase | None = None  # None: the run stored no options
    stored_options: tuple[str, ...] = ()  # the declared option names run.json holds
    variants: tuple[str, ...] = ()
    threads: tuple[int, ...] = ()
    workloads: tuple[str, ...] = ()
    repeats: int = 0
    # a variant run at one thread count only (``--variants twin@2``)
    fixed_threads: Mapping[str, int] = field(default_factory=dict)
    models: tuple[str, ...] = ()  # serving: the matrix's models, scenarios, ...
    scenarios: tuple[str, ...] = ()
    concurrency: tuple[int, ...] = ()
    paths: tuple[str, ...] = ()
    batching: tuple[tuple[Any, ...], ...] = ()
    logical_cpus: int | None = None
    started_at: str | None = None
    variant_info: Mapping[str, VariantInfo] = field(default_factory=dict)
    adaptive: AdaptiveRecord | None = None  # None: no adaptive record
    preset: PresetRecord | None = None
    hosts: tuple[Host, ...] = ()
    workload_files: Mapping[str, str] = field(default_factory=dict)

    def options_as_stored(self) -> dict[str, Any]:
        """The options run.json holds, by name (those it does not hold left out): a
        resume's stored layer (options/declare.py ``resolve``), so that an old run's
        missing option still falls to the command's own default."""
        if self.options is None:
            return {}
        return {n: getattr(self.options, n) for n in self.stored_options}


EMPTY_RUN = RunRecord()


def run_record(data: Mapping[str, Any]) -> RunRecord:
    """The typed record of a run.json mapping (validated by store/runfile.py
    ``validate_run`` when read from a file; a test's few fields read as given)."""
    if not data:
        return EMPTY_RUN
    stored = _dict(data.get("options"))
    cls = task_of(data).options  # the task's class (plan/tasks.py)
    logical = _int(data.get("logical_cpus"))
    return RunRecord(
        present=True,
        task=_text(data.get("task")),
        options=cls.from_record(stored) if stored else None,
        stored_options=tuple(n for n, v in stored.items() if n in declared(cls) and v is not None),
        variants=tuple(str(v) for v in _tuple(data.get("variants"))),
        threads=tuple(t for t in _tuple(data.get("threads")) if _int(t) is not None),
        workloads=tuple(str(w) for w in _tuple(data.get("workloads"))),
        repeats=_int(data.get("repeats")) or 0,
        fixed_threads={str(v): t for v, t in _dict(data.get("fixed_threads")).items()},
        models=tuple(str(m) for m in _tuple(data.get("models"))),
        scenarios=tuple(str(s) for s in _tuple(data.get("scenarios"))),
        concurrency=tuple(_tuple(data.get("concurrency"))),
        paths=tuple(str(p) for p in _tuple(data.get("paths"))),
        batching=tuple(tuple(_tuple(b)) for b in _tuple(data.get("batching"))),
        logical_cpus=logical,
        started_at=_text(data.get("started_at")),
        variant_info={
            str(v): _variant_info(entry)
            for v, entry in _dict(data.get("variant_info")).items()
            if isinstance(entry, dict)
        },
        adaptive=_adaptive(data["adaptive"]) if _dict(data.get("adaptive")) else None,
        preset=preset_record(stored.get("preset")),
        hosts=tuple(
            Host(str(h["host_id"]), str(h["kind"]), str(h.get("label") or ""))
            for h in _tuple(data.get("hosts"))
            if isinstance(h, dict) and h.get("host_id") and h.get("kind")
        ),
        workload_files=_dict(data.get("workload_files")),
    )
