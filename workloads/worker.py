"""The worker: one fresh process runs one cell and writes one result file.

    python -m workloads.worker --request '{"kind": "tfvariants.worker_request", ...}'

The request (workloads.protocol.WorkerRequest) is built by the host; it names the
workload, the cell, the CPUs to pin to, the intra-/inter-op pool sizes and where to
write the result.

Order matters: CPU affinity and thread-pool sizes are applied before the Keras backend's
runtime initialises (TensorFlow, JAX or PyTorch: see workloads.backends), and what was
actually applied is read back and recorded. Everything the backend prints goes to
stderr/stdout as usual; the only output the host reads is the result file.
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from workloads import backends, cpuload, envprobe, iterhold, registry, steady, stepload
from workloads.protocol import (
    RESULT_KIND,
    SCHEMA_VERSION,
    RequestError,
    WorkerRequest,
    exit_now,
    write_json_atomic,
)

# Cap on recorded per-step samples: enough for distributions, small enough to read.
MAX_STEP_SAMPLES = 2000
# Steady-window mode trains into a second epoch at least (see make_timer).
MIN_EPOCHS = 2


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def parse_args(argv: list[str] | None) -> WorkerRequest:
    """The worker's one argument: ``--request JSON`` (built by the host)."""
    p = argparse.ArgumentParser(prog="python -m workloads.worker")
    p.add_argument("--request", required=True, help="the WorkerRequest as JSON")
    args = p.parse_args(argv)
    try:
        return WorkerRequest.from_json(args.request)
    except RequestError as exc:
        p.error(str(exc))
        raise  # unreachable: error() exits


def _clean(obj: Any) -> Any:
    """JSON has no NaN/inf: a diverged loss is recorded as null, not a broken file."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item"):  # numpy scalars
        return _clean(obj.item())
    return obj


def peak_rss_bytes() -> int:
    # ru_maxrss is the peak, in KiB on Linux (psutil only knows the current RSS).
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def make_timer(keras: Any, stop_when: Any = None, sampler: stepload.Sampler | None = None) -> Any:
    class EpochStepTimer(keras.callbacks.Callback):
        """Monotonic wall time of every epoch, its training phase, and every step;
        stops training once ``stop_when(all step times)`` is true (checked every 10
        steps: the check is O(steps)), but not before the second epoch. ``sampler``
        (workloads.stepload) takes its readings at batch ends and phase changes, outside
        the steps' times."""

        def __init__(self) -> None:
            super().__init__()
            self.all_steps: list[float] = []
            self.spans: list[tuple[float, float]] = []  # each step's (start, end)
            self.stopped_early = False
            self.start_gaps: list[float] = []  # epoch begin -> its first step
            self.epoch_times: list[float] = []
            self.train_times: list[float] = []
            self.steps: list[list[float]] = []
            self._epoch_t0 = 0.0
            self._step_t0 = 0.0
            self._last_train_end = 0.0
            self._next_start = 0.0  # the next step's start: after a reading, if one
            self._validated = False

        def on_train_begin(self, logs: Any = None) -> None:
            if sampler is not None:
                sampler.begin(time.perf_counter())

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.steps.append([])
            self._validated = False
            if sampler is not None:
                sampler.epoch = epoch
            self._epoch_t0 = self._last_train_end = time.perf_counter()

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self._step_t0 = time.perf_counter()
            if not self.steps[-1]:
                self.start_gaps.append(self._step_t0 - self._epoch_t0)
                if sampler is not None:
                    sampler.mark(self._step_t0, stepload.GAP)  # the epoch's start-up
                    self._step_t0 = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            end = time.perf_counter()
            # A step runs from the previous step's end (so fetching its batch counts);
            # the epoch's first step from its own begin (the epoch's start-up is apart).
            start = self._next_start if self.steps[-1] else self._step_t0
            self._last_train_end = self._next_start = end
            self.steps[-1].append(end - start)
            self.all_steps.append(self.steps[-1][-1])
            self.spans.append((start, end))
            if sampler is not None and sampler.tick(end):
                # The reading's own cost is in no step: cells compare with unsampled ones.
                self._next_start = time.perf_counter()
            # Never stop in the first epoch: the time between epochs (start-up,
            # validation) is projected from a later one, without the first's tracing.
            in_later_epoch = len(self.steps) >= MIN_EPOCHS
            if stop_when is not None and in_later_epoch and len(self.all_steps) % 10 == 0:
                if stop_when(self.all_steps):
                    self.model.stop_training = True
                    self.stopped_early = True

        def on_test_begin(self, logs: Any = None) -> None:
            # Validation inside fit: the steps before it end an interval of their own.
            self._validated = True
            if sampler is not None:
                sampler.mark(time.perf_counter(), stepload.STEPS)

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            end = time.perf_counter()
            self.epoch_times.append(end - self._epoch_t0)
            self.train_times.append(self._last_train_end - self._epoch_t0)
            if sampler is not None:
                label = stepload.GAP if self._validated else stepload.STEPS
                sampler.mark(end, label)

    return EpochStepTimer()


def _sample(values: list[float], cap: int) -> tuple[list[float], int]:
    if len(values) <= cap:
        return values, 1
    stride = math.ceil(len(values) / cap)
    return values[::stride], stride


def _final_metrics(history: dict[str, list[float]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, values in history.items():
        if values:
            out[key] = float(values[-1])
    return out


def _load_data(req: WorkerRequest, workload: Any, batch_size: int) -> tuple[Any, ...]:
    """The workload's data, capped as asked: (x, y, validation or None, training
    samples, seconds it took)."""
    samples = req.samples
    if req.steps_per_epoch:
        # A step cap is a sample cap: slicing keeps every epoch the same work.
        cap = req.steps_per_epoch * batch_size
        samples = min(samples, cap) if samples else cap
    t0 = time.perf_counter()
    data = workload.load_data(req.data, data_dir=req.data_dir, samples=samples, seed=req.seed)
    data_s = time.perf_counter() - t0
    x, y = data["x"], data["y"]
    n_train = len(y) if not isinstance(y, dict) else len(next(iter(y.values())))
    validation = None
    if data.get("x_val") is not None and data.get("y_val") is not None:
        validation = (data["x_val"], data["y_val"])
    return x, y, validation, n_train, data_s


@dataclass(frozen=True)
class _Fitted:
    """What ``run`` measured, handed to ``_record`` (which turns it into the result)."""

    workload: Any  # the workload module
    timer: Any  # make_timer's callback, after fit
    history: Any  # keras History
    usage: dict[str, Any]  # cpuload.usage over fit
    sampler: stepload.Sampler  # the readings during fit (which steps others disturbed)
    n_train: int
    batch_size: int
    full_epochs: int
    full_samples: int
    seconds: dict[str, float]  # import_tf_s, data_s, build_s
    t_start: float  # perf_counter when the worker began


def run(req: WorkerRequest, result: dict[str, Any]) -> None:
    """Train one cell (pinning, the backend's pools, the steady window) and fill in
    ``result``; the status turns ok only at the very end."""
    t_start = time.perf_counter()
    backend = backends.choose(req.backend)
    backends.prepare(backend, req.cpus, req.intra_op, req.inter_op)

    workload = registry.load(req.workload)
    spec = dict(workload.SPEC)

    loaded = backends.load(backend, req.intra_op, req.inter_op)
    keras = loaded.keras
    import_s = loaded.import_s
    result["applied"] = loaded.applied
    result["environment"] = loaded.environment

    keras.utils.set_random_seed(req.seed)
    batch_size = int(spec["batch_size"])
    full_epochs = int(spec["epochs"])
    epochs = req.epochs or full_epochs
    x, y, validation, n_train, data_s = _load_data(req, workload, batch_size)

    keras_options = dict(req.keras_options)
    t0 = time.perf_counter()
    model = workload.build_model(keras, compile_options=keras_options)
    build_s = time.perf_counter() - t0

    full_samples = spec.get("train_samples") or n_train
    window = steady.Window.requested(req)
    sampler = stepload.Sampler(req.cpus)
    if req.epochs is None:
        # Steady-window mode: stop once the window is met; on a sample of the data, run
        # as many epochs as that takes (the full schedule is projected, not run).
        epochs = full_epochs if n_train >= full_samples else 100_000

        def stop_when(steps: list[float]) -> bool:
            # Called from the second epoch on: the first epoch's length is known.
            first = len(timer.steps[0])
            return window.met(steps, first)

        timer = make_timer(keras, stop_when, sampler)
        tf_module = loaded.extra.get("module") if backend == "tensorflow" else None
        if tf_module is not None:
            iterhold.hold_tf_iterators(tf_module)
            result["applied"]["tf_data_iterators"] = "held until exit (workloads.iterhold)"
    else:
        timer = make_timer(keras, sampler=sampler)
    before = cpuload.snapshot()
    history = model.fit(
        x,
        y,
        batch_size=batch_size,
        epochs=epochs,
        validation_data=validation,
        callbacks=[timer],
        verbose=0,
        shuffle=True,
    )
    usage = cpuload.usage(before, cpuload.snapshot(), req.cpus)
    seconds = {"import_tf_s": import_s, "data_s": data_s, "build_s": build_s}
    fitted = _Fitted(
        workload,
        timer,
        history,
        usage,
        sampler,
        n_train,
        batch_size,
        full_epochs,
        full_samples,
        seconds,
        t_start,
    )
    _record(req, spec, fitted, result)


def _record(req: WorkerRequest, spec: dict[str, Any], fit: _Fitted, result: dict[str, Any]) -> None:
    """The result of a fitted cell: timing, the steady state, the projection to the
    full schedule, CPU use, FLOPs and the final metrics; status ok."""
    timer, batch_size, n_train = fit.timer, fit.batch_size, fit.n_train
    window = steady.Window.requested(req)
    full_samples, full_epochs = fit.full_samples, fit.full_epochs
    epoch_times, train_times = timer.epoch_times, timer.train_times
    steps_per_epoch = len(timer.steps[0]) if timer.steps else 0
    # The first epoch caps the warm-up only once a second one began (it is complete).
    first_epoch = steps_per_epoch if len(timer.steps) >= 2 else None
    state = window.analyse(timer.all_steps, first_epoch=first_epoch)
    step_s = state.step_mean_s
    samples_per_s = batch_size / step_s if step_s else None
    full_steps_per_epoch = math.ceil(full_samples / batch_size)
    scale = full_samples / n_train if n_train else 1.0
    # Per epoch outside the steps: its start-up (a fixed cost per epoch) and the rest
    # after training (validation: grows with the data, so scaled to full size).
    after = [e - t for e, t in zip(epoch_times, train_times, strict=True)]
    starts = timer.start_gaps[1:] or timer.start_gaps
    epoch_gap_s = (statistics.median(starts) if starts else 0.0) + (
        statistics.median(after[1:] or after) * scale if after else 0.0
    )
    full_steps = full_steps_per_epoch * full_epochs
    projection = steady.project(state, full_steps, full_epochs, epoch_gap_s)

    flops = None
    flops_fn = getattr(fit.workload, "flops_per_step", None)
    if callable(flops_fn):
        flops = flops_fn(batch_size)
    gflops_per_s = flops / step_s / 1e9 if flops and step_s else None
    step_sample, stride = _sample(timer.all_steps, MAX_STEP_SAMPLES)

    result["config"].update({"epochs": req.epochs, "samples": n_train, "batch_size": batch_size})
    result["timing"] = {
        "epoch_times_s": epoch_times,
        "train_times_s": train_times,
        **state.to_json(),
        "window": {
            # what the window asked for (nothing with whole epochs: no window)
            **(window.to_json() if req.epochs is None else dict.fromkeys(window.to_json())),
            "met": window.met(timer.all_steps, first_epoch),
            "stopped_early": timer.stopped_early,
            "mode": "steady-window" if req.epochs is None else "whole-epochs",
        },
        "steady_epoch_s": step_s * full_steps_per_epoch if step_s else None,
        "epoch_gap_s": epoch_gap_s,
        "start_gaps_s": timer.start_gaps,
        "step_times_s": step_sample,
        "step_sample_stride": stride,
        "steps_per_epoch": steps_per_epoch,
        "samples_per_epoch": n_train,
        "samples_per_s": samples_per_s,
        **fit.seconds,
        "fit_s": fit.usage["wall_s"],
        "total_s": time.perf_counter() - fit.t_start,
        **_step_load(fit, state, stride, (full_steps, full_epochs, epoch_gap_s)),
    }
    result["cpu"] = fit.usage
    result["schedule"] = {
        "full_epochs": full_epochs,
        "full_samples": full_samples,
        "full_steps": full_steps_per_epoch * full_epochs,
        "ran_epochs": len(epoch_times),
        "ran_samples": n_train,
        "ran_steps": len(timer.all_steps),
        **projection,
    }
    result["flops_per_step"] = flops
    result["gflops_per_s"] = gflops_per_s
    result["metrics"] = _final_metrics(fit.history.history)
    result["chance_accuracy"] = spec.get("chance_accuracy")
    result["status"] = "ok"


def _step_load(
    fit: _Fitted, state: steady.SteadyState, stride: int, schedule: tuple[int, int, float]
) -> dict[str, Any]:
    """``step_others_share`` (aligned with ``step_times_s``) and ``clean`` (the steady steps
    no one else's load disturbed: workloads.stepload); nothing when /proc/stat was
    unreadable, so the host reads the cell as one without them."""
    intervals = fit.sampler.intervals()
    if not intervals:
        return {}
    shares = stepload.step_shares(fit.timer.spans, intervals)
    gap = stepload.gap_share(intervals)
    return {
        "step_others_share": [None if x is None else round(x, 3) for x in shares[::stride]],
        "clean": stepload.clean_timing(state, fit.timer.all_steps, shares, schedule, gap),
    }


def main(argv: list[str] | None = None) -> int:
    req = parse_args(argv)
    result: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": RESULT_KIND,
        "cell": dict(req.cell),
        "status": "failed",
        "reason": None,
        "stderr_tail": None,
        "config": {
            "data": req.data,
            "epochs": req.epochs,
            "samples": req.samples,
            "steps_per_epoch": req.steps_per_epoch,
            "seed": req.seed,
            "keras_options": dict(req.keras_options),
        },
        "requested": dict(req.requested),
        "started_at": _now(),
    }
    return record_run(result, req.result, lambda: run(req, result))


def record_run(result: dict[str, Any], result_path: str, body: Callable[[], None]) -> int:
    """Run ``body``, then complete ``result`` (environment, peak memory, end time) and
    write it atomically: the one ending of every worker. A workload error is a result,
    not a lost cell: it is recorded as failed and the exit code is 1."""
    code = 0
    try:
        body()
    except Exception as exc:
        traceback.print_exc()
        result["status"] = "failed"
        result["reason"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        code = 1
    result.setdefault("environment", envprobe.probe())
    result["memory"] = {"peak_rss_bytes": peak_rss_bytes()}
    result["finished_at"] = _now()
    write_json_atomic(result_path, _clean(result))
    return code


if __name__ == "__main__":
    exit_now(main())
