"""Command-line entry point: argparse wiring only.

Each subcommand lives in ``tfvariants/commands/<name>.py`` and declares a ``COMMAND``
(tfvariants.commands.command.Command: its place in --help, help, options and run; its
description is the module's docstring); it is found here by discovery, so adding one
edits no shared file, and its parser is made here, the same way for each. Nothing here
(or in any command module at import time) imports TensorFlow, so ``tfvariants --help``
stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import pkgutil
import signal
import sys
from types import ModuleType
from typing import NoReturn

import tfvariants.commands
from tfvariants import __version__
from tfvariants.errors import UserError, one_line
from tfvariants.store import lock


def commands() -> list[ModuleType]:
    """Every command module, in --help order: those of tfvariants.commands that declare
    a COMMAND."""
    found = [
        importlib.import_module(f"tfvariants.commands.{info.name}")
        for info in pkgutil.iter_modules(tfvariants.commands.__path__)
    ]
    return sorted((m for m in found if hasattr(m, "COMMAND")), key=lambda m: m.COMMAND.order)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line + exit 2, like UserError
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tfvariants",
        description="Benchmark TensorFlow builds (pip, compiled, GPU) across vCPU counts "
        "and report which trains your Keras model fastest and cheapest.",
    )
    parser.add_argument("--version", action="version", version=f"tfvariants {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in commands():
        name, command = module.__name__.rsplit(".", 1)[1], module.COMMAND
        p = sub.add_parser(name, help=command.help, description=module.__doc__)
        command.add_options(p)
        p.set_defaults(func=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a bad option (one line already printed), --help, --version
        return int(exc.code or 0)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    args.argv = list(sys.argv[1:] if argv is None else argv)  # a resume command repeats it
    try:  # every relative path (a default results folder too) hangs off it
        os.getcwd()
    except OSError as exc:
        print(f"tfvariants: error: the working folder is gone ({exc.strerror}): cd into "
              "an existing folder and run again", file=sys.stderr)  # fmt: skip
        return 2
    # SIGHUP (the terminal closed) like SIGTERM: stop cleanly, keep what is finished.
    handled = (signal.SIGTERM, signal.SIGHUP) if _main_thread() else ()
    previous = {sig: signal.signal(sig, _terminate) for sig in handled}
    closed = sys.stdout is None  # started with standard output closed (`>&-`)
    if closed:
        sys.stdout = io.StringIO()  # what would have been shown: lost, and said so
    try:
        code = int(args.func(args) or 0)
        if closed and code == 0 and sys.stdout.tell():
            print("tfvariants: error: standard output is closed: nothing could be shown",
                  file=sys.stderr)  # fmt: skip
            return 2
        return code
    except UserError as exc:
        print(f"tfvariants: error: {one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tfvariants: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `tfvariants prices | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        lock.release_all()  # the run folders this command held (tfvariants.store.lock)
        if closed:
            sys.stdout = None
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM ends a command like Ctrl-C: the worker's group is stopped, scratch
    folders removed, the lock released, and finished cells kept for --resume."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    raise SystemExit(main())
