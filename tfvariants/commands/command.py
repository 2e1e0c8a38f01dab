"""The record a command module declares (``COMMAND``), and from which cli.py makes its
parser: every subcommand's parser is made the same way, and adding one edits no shared
file."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """A subcommand: its place in --help, its one-line help, its options and what it does.
    Its description (the top of its --help) is its module's docstring."""

    order: int
    help: str
    add_options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
