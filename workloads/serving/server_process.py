"""The model server of the ``http`` path: a child process of the serving worker on the
same CPUs and in the same environment, killed with the worker however the worker dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workloads.protocol import WorkerRequest
from workloads.serving.request import ServeRequest


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGKILL when this process dies, however it dies
    (the training runner does the same for its workers). The parent's pid is taken now,
    before the fork: a parent that died before ``prctl`` took effect is seen at once."""
    parent = os.getpid()

    def preexec() -> None:
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return  # not Linux: the process group (the host's timeout) still covers it
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class ServerProcess:
    """The model server as a child process (same CPUs, same environment)."""

    def __init__(self, req: ServeRequest, args: WorkerRequest, folder: Path) -> None:
        self.port_file = folder / "server.port.json"
        self.log_path = folder / "server.log"
        command = [
            sys.executable,
            "-m",
            "workloads.serving.http_server",
            "--model",
            req.model,
            "--port-file",
            str(self.port_file),
            "--threads",
            str(args.intra_op),
            "--inter-op",
            str(args.inter_op),
            "--max-batch-size",
            str(req.max_batch_size),
            "--batch-timeout-ms",
            str(req.batch_timeout_ms),
        ]
        self.log = open(self.log_path, "wb")
        # Dies with this worker on every exit path (a SIGKILLed host kills the worker the
        # same way): a server left running would load the CPUs of the cells after it.
        self.proc = subprocess.Popen(
            command,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent(),
        )

    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.port_file.exists():
                return json.loads(self.port_file.read_text(encoding="utf-8"))
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace").strip().splitlines()[-1:]
                raise RuntimeError(
                    f"model server exited ({self.proc.returncode}): {' '.join(tail)}"
                )
            time.sleep(0.1)
        raise RuntimeError(f"model server not ready within {timeout_s:g} s")

    def cpu_seconds(self) -> float:
        """The server child's CPU time so far (/proc; 0 where unreadable): counted as the
        cell's own, not as another process's interference."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
