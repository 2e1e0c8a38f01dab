"""A cell's container, when the engine leaves it behind (a killed engine client, a worker
that outlived ``--rm``): found by the name the launcher gave it and removed."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from tfvariants.execute.process import Leftover


def container_name(command: Sequence[str]) -> str | None:
    if "--name" not in command or len(command) < 2 or command[1] != "run":
        return None
    return command[command.index("--name") + 1]


def remove_container(command: Sequence[str]) -> Leftover | None:
    """Remove the cell's container if the engine left it (a killed client, a worker
    that outlived ``--rm``); a Leftover when it was still running."""
    name = container_name(command)
    if name is None:
        return None
    engine = command[0]

    def call(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(
                [engine, *args],
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None  # best effort: the cell's result already says what happened

    state = call("container", "inspect", "--format", "{{.State.Running}}", name)
    if state is None or state.returncode != 0:
        return None  # gone (``--rm`` did its work), or no engine to ask
    call("rm", "-f", "--time", "2", name)
    running = state.stdout.strip().lower() == "true"
    return Leftover(0, name, "container", " ".join(command[:2])) if running else None
