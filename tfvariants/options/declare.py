"""How a run option is declared: once, as a field of a frozen dataclass (one class per
task: training.py, serving.py), with everything the rest of the code needs to know
about it in the field's metadata.

From that one declaration come the command-line option (``add_arguments``), the value
a command uses (``resolve``: given on the command line, else the stored run's, else a
preset's, else the default), the run.json ``options`` record (``record``) and the check of a stored
value against its bounds (``stored_problems``, called by store/runfile.py).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

# What a resume does with an option (``Option.resume``), said once, in its declaration:
SAME = "same"  # part of what a cell measures: a resume must not change it (checked)
KEPT = "kept"  # the stored value, unless given again (a serving resume: given the same)
CHANGEABLE = "changeable"  # a resume may give a new value (the budget, the last look)
THIS_COMMAND = "this command"  # the resuming command's own value, never the stored one
# How cells are judged, not measured: compare --resume may give a new value, which
# replaces the stored one and judges every cell of the report (said); serve --resume,
# which takes its arguments again, refuses a different one (its matrix identity).
REJUDGED = "rejudged"
RESUMES = (SAME, KEPT, CHANGEABLE, THIS_COMMAND, REJUDGED)
OptionsT = TypeVar("OptionsT", bound="RunOptionsBase")


@dataclasses.dataclass(frozen=True)
class Option:
    """What is declared about one option besides its name, type and default."""

    help: str
    flag: str | None = None  # the command-line flag; None: derived, never typed
    parse: Callable[[str], Any] | None = None  # command-line text -> value (argtypes)
    problem: Callable[[Any], str | None] | None = None  # a stored value out of bounds?
    resume: str = KEPT  # what a resume does with it (RESUMES)
    stored: bool = True  # kept in run.json's "options"
    omit_none: bool = False  # left out of the record while None (as older runs wrote it)
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    default_words: str = ""  # the help's "(default ...)"; a command may say its own
    switch: bool = False  # a flag that takes no value (given: True)
    # The word that gives the option no value (--budget off): it wins over the stored,
    # preset and default layers, where not giving the option lets them speak.
    off: str | None = None
    # A value that is a record, not JSON: how run.json holds it, and how it is read back
    # (from_record; a resume's stored layer is read through it too).
    to_json: Callable[[Any], Any] | None = None
    of_json: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        assert self.resume in RESUMES, self.resume

    def as_written(self, stored: object) -> object:
        """A stored value as this version writes it (a record's older form, read and
        written again), so that a resume compares like with like."""
        if stored is None or self.of_json is None or self.to_json is None:
            return stored
        return self.to_json(self.of_json(stored))

    def bound(self) -> Callable[[Any], str | None] | None:
        """The check of a stored value: the declared ``problem``, else the ``choices``."""
        if self.problem is not None or self.choices is None:
            return self.problem
        choices = self.choices
        return lambda value: None if value in choices else f"one of {', '.join(choices)}"


def option(default: T, help: str, **declared: Any) -> T:
    """A field of an options class: its default and its :class:`Option` declaration."""
    field: T = dataclasses.field(default=default, metadata={"option": Option(help, **declared)})
    return field


def declared(cls: type[RunOptionsBase]) -> dict[str, Option]:
    """Field name -> declaration, in declaration order (read-only: shared per class)."""
    found = _DECLARED.get(cls)
    if found is None:
        fields = dataclasses.fields(cls)
        found = _DECLARED[cls] = {
            f.name: f.metadata["option"] for f in fields if "option" in f.metadata
        }
    return found


_DECLARED: dict[type, dict[str, Option]] = {}


def defaults(cls: type[RunOptionsBase]) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls)}


def add_arguments(
    p: argparse.ArgumentParser | Any,
    cls: type[RunOptionsBase],
    names: tuple[str, ...],
    default_words: Mapping[str, str] | None = None,
    *,
    parse_later: bool = False,
) -> None:
    """Add the named options of ``cls`` to a parser, each as declared (``default_words``:
    a command's own "(default ...)" per option). The parsed default is None (not given),
    so that a resume can tell "not given" from a value. ``parse_later``: keep the text
    for :func:`resolve` to parse, so a bad value is told as the command's other checks
    are (one UserError line) rather than as argparse's usage error."""
    opts = declared(cls)
    for name in names:
        o = opts[name]
        assert o.flag is not None, f"{name} is not a command-line option"
        words = (default_words or {}).get(name, o.default_words)
        text = f"{o.help} (default {words})" if words else o.help
        if o.switch:  # not given: None, like every option (a resume tells the two apart)
            p.add_argument(o.flag, dest=name, action="store_const", const=True, help=text)
            continue
        p.add_argument(
            o.flag,
            dest=name,
            type=str if parse_later else _parser(o),
            default=None,
            choices=o.choices,
            metavar=o.metavar,
            help=text,
        )


def _parser(o: Option) -> Callable[[str], Any]:
    """The command line's parser of an option: its declared one, and its ``off`` word
    kept as text for :func:`resolve`."""
    parse = o.parse or str
    if o.off is None:
        return parse
    off = o.off
    return lambda text: off if says_off(o, text) else parse(text)


def says_off(o: Option, value: object) -> bool:
    """The value is the option's ``off`` word (as the command line gave it)."""
    return o.off is not None and isinstance(value, str) and value.strip().lower() == o.off


@dataclasses.dataclass(frozen=True)
class RunOptionsBase:
    """A task's run options: typed attributes for the code; run.json's record of them
    (``record``) and the part a resume must not change (``identity``). Frozen: nothing
    changes them during a run."""

    def record(self) -> dict[str, Any]:
        """run.json's "options": the stored options (without the unset omitted ones)."""
        out = {}
        for name, o in declared(type(self)).items():
            value = getattr(self, name)
            if o.stored and not (o.omit_none and value is None):
                out[name] = o.to_json(value) if o.to_json and value is not None else value
        return out

    def identity(self) -> dict[str, Any]:
        """The options a resume must not change."""
        return {n: getattr(self, n) for n, o in declared(type(self)).items() if o.resume == SAME}

    @classmethod
    def from_record(cls: type[OptionsT], values: Mapping[str, Any]) -> OptionsT:
        """The options structured from a stored run's record (run.json's "options",
        checked by store/runfile.py validate_run) or a test's few values: declared
        names only, the rest at their defaults (a stored null is "not set": the default)."""
        known = declared(cls)
        read = {k: known[k].of_json or (lambda v: v) for k in values if k in known}
        return cls(**{k: read[k](v) for k, v in values.items() if k in known and v is not None})


def resolve(
    cls: type[RunOptionsBase],
    given: Mapping[str, Any],
    stored: Mapping[str, Any],
    fallback: Mapping[str, Any],
    preset: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Each option's value: given on the command line (text is parsed as declared: a
    value from a test or a preset may be text), else the stored run's (a resume; not
    for an option declared ``THIS_COMMAND``), else the ``preset``'s (a command's
    --preset: its own defaults), else ``fallback`` (a default that depends on other
    options), else the declared default. An option given as its ``off`` word is None,
    whatever the other layers hold."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        o = f.metadata["option"]
        value = given.get(f.name)
        if says_off(o, value):
            out[f.name] = None
            continue
        value = _parsed(o, value)
        if value is None and o.resume != THIS_COMMAND:
            value = stored.get(f.name)
        if value is None and preset is not None:
            value = preset.get(f.name)
        if value is None:
            value = fallback.get(f.name, f.default)
        out[f.name] = value
    return out


def _parsed(o: Option, value: object) -> object:
    from tfvariants.errors import UserError

    if value is not None and isinstance(value, str) and o.parse is not None:
        try:
            return o.parse(value)
        except argparse.ArgumentTypeError as exc:
            raise UserError(f"{o.flag}: {exc}") from None
    return value


def kept_changes(
    cls: type[RunOptionsBase], given: Mapping[str, Any], values: Mapping[str, Any], before: Any
) -> None:
    """Refuse (one line) a resume that gives an option declared ``kept`` another value
    than the run's (``before``: its stored options): the rest of the run is measured as
    it began. ``values``: the resolved ones, ``given``: what the command line named."""
    from tfvariants.errors import UserError, one_line

    for name, o in declared(cls).items():
        if o.resume != KEPT or o.flag is None or given.get(name) is None:
            continue
        if values[name] != getattr(before, name):
            raise UserError(
                f"--resume: {o.flag} {one_line(values[name])[:60]} differs from the run's "
                f"{one_line(getattr(before, name))[:60]}: a resume measures the rest of the "
                "run as it began (give the same value, or none)"
            )


def stored_problems(
    cls: type[RunOptionsBase], options: Mapping[str, Any]
) -> Iterator[tuple[str, str, Any]]:
    """(name, what was expected, value) for each stored value outside its bounds (None:
    not set, never out of bounds)."""
    for name, o in declared(cls).items():
        value = options.get(name)
        bound = o.bound()
        if value is not None and bound is not None:
            problem = bound(value)
            if problem:
                yield name, problem, value
