"""docs/cluster.md's study sequence (the 2017 study from zero on GCP spot) stays true
without a cloud: every `tfvariants` command in it, those inside `ray exec` too, runs as
`--help` or as a dry run of the same options and writes nothing (a --resume is parsed:
it needs the run); every `ray` line names an existing recipe; the bill the doc shows is
what the dry run prints. (The loopback run of the preset: tests/test_ray_cluster.py.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tfvariants.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "cluster.md").read_text(encoding="utf-8")
SECTION = DOC[DOC.index("## The 2017 study from zero on GCP spot") :]
SECTION = SECTION[: SECTION.index("\n## ", 4)]
BLOCKS = re.findall(r"```\n(.*?)```", SECTION, flags=re.S)
SEQUENCE, BILL = BLOCKS[0].splitlines(), BLOCKS[1].splitlines()


def _tfvariants(line: str) -> list[str] | None:
    """The tfvariants argv of a line, run directly or through `ray exec`."""
    words = shlex.split(line)
    if words[:2] == ["ray", "exec"]:
        inner = words[-1].split("&&")[-1].strip()
        words = shlex.split(inner)
        words[0] = Path(words[0]).name
    if words[:1] != ["tfvariants"]:
        return None
    # the recipes' files, wherever the test runs
    return [str(ROOT / w) if w.startswith("docs/") else w for w in words[1:]]


@pytest.fixture
def sealed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    import tfvariants.variants as variants_pkg

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"the documented sequence built something: {args!r}")

    monkeypatch.setattr(variants_pkg, "ensure_built", refuse)
    return tmp_path


def test_the_sequence_is_whole() -> None:
    starts = [shlex.split(line)[:2] for line in SEQUENCE]
    assert ["ray", "up"] in starts and ["ray", "down"] in starts
    assert ["ray", "rsync-down"] in starts
    runs = [_tfvariants(line) for line in SEQUENCE if line.startswith("ray exec")]
    assert runs and all(runs)
    assert any("--dry-run" in (_tfvariants(line) or []) for line in SEQUENCE)


@pytest.mark.parametrize("line", [ln for ln in SEQUENCE if ln.startswith("ray ")])
def test_every_ray_line_names_a_recipe(line: str) -> None:
    recipe = shlex.split(line)[3 if "--tmux" in line or "-y" in line else 2]
    assert (ROOT / recipe).is_file(), line


@pytest.mark.parametrize("line", [ln for ln in SEQUENCE if _tfvariants(ln)])
def test_every_tfvariants_command_runs_dry(line: str, sealed: Path, capsys) -> None:
    argv = _tfvariants(line)
    assert argv is not None
    if "--resume" in argv:
        build_parser().parse_args(argv)  # needs the run: its options must parse
        return
    if "--help" not in argv and "--dry-run" not in argv:
        argv = [a for a in argv if a not in ("--tmux",)] + ["--dry-run"]
    try:
        code = main(argv)
    except SystemExit as exc:  # --help
        code = exc.code
    err = capsys.readouterr().err
    assert code == 0, f"`{line}`: {err[-2000:]}"
    assert list(sealed.iterdir()) == [], f"`{line}` wrote {list(sealed.iterdir())}"


def test_the_bill_shown_is_the_dry_runs(sealed: Path, capsys) -> None:
    (argv,) = [_tfvariants(ln) for ln in SEQUENCE if "--dry-run" in ln]
    assert argv is not None and main(argv) == 0
    printed = " ".join(capsys.readouterr().out.split())
    for line in BILL:
        for part in line.split("..."):
            part = " ".join(part.split())
            assert part in printed, f"docs/cluster.md shows {part!r}; the dry run does not"


@pytest.mark.parametrize("recipe", ["gcp.yaml", "aws.yaml"])
def test_the_recipes_load_no_images_as_the_docs_and_dry_run_say(recipe: str) -> None:
    """docs/cluster.md and the dry run (commands/nodeprep.py) say the recipes load no
    images, so an image variant's cells are skipped: a recipe that starts loading one
    must change both."""
    text = (ROOT / "docs" / "cluster" / recipe).read_text(encoding="utf-8")
    assert not re.search(r"\b(podman|docker)\s+(load|pull|build|import)\b", text), recipe
    said = "the recipes load none: the dry run says those cells will be skipped"
    assert said in " ".join(DOC.split())
