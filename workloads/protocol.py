"""The contracts shared by worker and host (stdlib only, no TensorFlow): the worker
request going in and the result file coming out.

The host imports this module too, so the schema version lives in exactly one place.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
RESULT_KIND = "tfvariants.cell"
STATUSES = ("ok", "failed", "timeout", "skipped")


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """Write JSON so that a reader sees either the old file or the whole new one:
    temp file in the same folder, fsync, rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2, sort_keys=False, allow_nan=False, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def exit_now(code: int) -> None:
    """End a worker process without the interpreter's teardown, once its result is on
    disk. Unloading TensorFlow/Keras (module teardown, thread pools, freeing the heap)
    took 1-3 s per cell at 1 thread, all of it inside the cell's wall time and none of it
    measured. Only the standard streams need flushing (the host keeps them as the log)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


# ---- the worker request: what the host asks one worker process to do ----


def request_json(request: Any, kind: str) -> str:
    """A request dataclass as the one JSON argument a worker takes."""
    data = asdict(request)
    data["cpus"] = list(data.get("cpus") or ())
    return json.dumps({"kind": kind, **data}, sort_keys=True)


def request_fields(text: str, kind: str, cls: type, what: str) -> dict[str, Any]:
    """The fields of a request of ``kind`` read from JSON: the kind checked and removed,
    no field that ``cls`` does not have. Types are the caller's to check."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RequestError(f"{what} is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.pop("kind", None) != kind:
        raise RequestError(f"not a tfvariants {what}")
    unknown = sorted(set(data) - {f.name for f in fields(cls)})
    if unknown:
        raise RequestError(f"{what}: unknown field(s) {', '.join(unknown)}")
    return data


REQUEST_KIND = "tfvariants.worker_request"
# The one task the envelope itself knows: a probe of the variant (workloads.envprobe,
# workloads.onednn, which take only ``--result``). Every other task is a name its own
# worker checks (``from_json(text, task)``); none is listed here.
PROBE = "probe"


class RequestError(ValueError):
    """A worker request that is not valid JSON or lacks a field of the right type."""


@dataclass(frozen=True)
class WorkerRequest:
    """The one envelope of every worker process, whatever its task: built by the host,
    passed as one JSON argument (``--request``; a probe takes ``--result`` only), read
    by the worker. A container launcher rewrites the paths on the object
    (``dataclasses.replace``), never by re-parsing a command line.

    ``task`` says which worker reads it: "train" (workloads.worker: the training fields
    below), a task's name (its worker, e.g. workloads.serving.worker: ``workload`` is the
    model, ``payload`` its own request's fields) or "probe" (only ``result``).

    ``intra_op`` is the size of the backend's intra-op pool (for TensorFlow,
    ``intra_op_parallelism_threads``); the cell's ``threads`` is the vCPU count it
    emulates. They are usually equal, but they are different things.
    """

    workload: str  # a registered name or a path to a .py file
    cell: dict[str, Any]  # echoed into the result: variant, threads, workload, repeat
    result: str  # where the worker writes its one result file
    intra_op: int
    inter_op: int = 1
    cpus: tuple[int, ...] = ()  # pin to these CPUs (empty: leave the affinity alone)
    data: str = "synthetic"
    data_dir: str | None = None
    seed: int = 0
    epochs: int | None = None
    samples: int | None = None
    steps_per_epoch: int | None = None
    keras_options: dict[str, Any] = field(default_factory=dict)  # model.compile() options
    # The steady window (workloads.steady): without ``epochs``, training stops once at
    # least min_steady_s seconds AND min_steady_steps steps followed the warm-up.
    min_steady_s: float = 10.0
    min_steady_steps: int = 100
    warmup_max_s: float | None = None  # the warm-up ends within this many seconds
    requested: dict[str, Any] = field(default_factory=dict)  # the host's pinning plan
    backend: str | None = None  # Keras backend: tensorflow, jax, torch (None: $KERAS_BACKEND)
    task: str = "train"  # the task's name, whose worker reads it (or PROBE)
    payload: dict[str, Any] | None = None  # the task's own request, as its worker reads it

    @classmethod
    def probe(cls, result: str) -> WorkerRequest:
        """A probe of the variant (its modules take only where to write their result)."""
        return cls(workload="", cell={}, result=result, intra_op=1, task=PROBE)

    def to_json(self) -> str:
        return request_json(self, REQUEST_KIND)

    def to_argv(self) -> list[str]:
        if self.task == PROBE:
            return ["--result", self.result]
        return ["--request", self.to_json()]

    @classmethod
    def from_json(cls, text: str, task: str = "train") -> WorkerRequest:
        """Read a request, which must be for ``task`` (the reading worker's)."""
        data = request_fields(text, REQUEST_KIND, cls, "worker request")
        asked = data.get("task", "train")
        if asked != task:
            raise RequestError(f"worker request: task {asked!r}, this worker runs {task!r}")
        if data.get("payload") is not None and not isinstance(data["payload"], dict):
            raise RequestError("worker request: 'payload' must be an object")
        for name in ("workload", "result"):
            if not isinstance(data.get(name), str) or not data[name]:
                raise RequestError(f"worker request: '{name}' must be a non-empty string")
        if not isinstance(data.get("cell"), dict):
            raise RequestError("worker request: 'cell' must be an object")
        for name in ("intra_op", "inter_op", "seed", "epochs", "samples", "steps_per_epoch"):
            value = data.get(name)
            if value is None and name not in ("intra_op",):
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise RequestError(f"worker request: '{name}' must be a whole number >= 0")
        steady_s = data.get("min_steady_s", 10.0)
        if (
            not isinstance(steady_s, (int, float))
            or isinstance(steady_s, bool)
            or not 0 <= steady_s < 1e6
        ):
            raise RequestError("worker request: 'min_steady_s' must be a number of seconds >= 0")
        cap = data.get("warmup_max_s")
        if cap is not None and (
            not isinstance(cap, (int, float)) or isinstance(cap, bool) or not 0 < cap < 1e7
        ):
            raise RequestError("worker request: 'warmup_max_s' must be a number of seconds > 0")
        steps = data.get("min_steady_steps", 100)
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise RequestError("worker request: 'min_steady_steps' must be a whole number >= 1")
        cpus = data.get("cpus", [])
        if not isinstance(cpus, list) or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus
        ):
            raise RequestError("worker request: 'cpus' must be a list of CPU ids")
        data["cpus"] = tuple(cpus)
        if data.get("backend") not in (None, "tensorflow", "jax", "torch"):
            raise RequestError("worker request: 'backend' must be tensorflow, jax or torch")
        for name in ("keras_options", "requested"):
            if not isinstance(data.get(name, {}), dict):
                raise RequestError(f"worker request: '{name}' must be an object")
        return cls(**data)
