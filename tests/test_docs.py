"""The user docs stay true: every relative link and heading anchor in README.md and
docs/*.md resolves, every `tfvariants ... --help` and `--dry-run` example in their code
blocks runs (exit 0, nothing built, run or written), and the README and the `compare`
guide stay short enough to read (issue 41)."""

from __future__ import annotations

import re
import shlex
import subprocess
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from tfvariants.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^()\s]+)\)")
CODE_SPAN = re.compile(r"`[^`]*`")


def _split(text: str) -> tuple[list[str], list[list[str]]]:
    """The prose lines (code spans blanked) and the fenced code blocks of a markdown file."""
    prose: list[str] = []
    blocks: list[list[str]] = []
    block: list[str] | None = None
    for line in text.splitlines():
        if FENCE.match(line):
            if block is None:
                block = []
            else:
                blocks.append(block)
                block = None
        elif block is not None:
            block.append(line)
        else:
            prose.append(CODE_SPAN.sub("``", line))
    return prose, blocks


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    kept = "".join(
        ch
        for ch in text
        if ch in " -_" or unicodedata.category(ch)[0] in ("L", "N") or ch.isdigit()
    )
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file, with GitHub's -1, -2 for repeats."""
    seen: dict[str, int] = {}
    result: set[str] = set()
    prose, _ = _split(path.read_text())
    for line in prose:
        match = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        # the heading as written (code spans were blanked in prose: read it again)
        slug = github_slug(_heading_text(path, line))
        count = seen.get(slug, 0)
        result.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return result


def _heading_text(path: Path, blanked: str) -> str:
    for line in path.read_text().splitlines():
        if CODE_SPAN.sub("``", line) == blanked:
            return re.sub(r"^#{1,6}\s+", "", line).rstrip("# ").replace("`", "")
    raise AssertionError(blanked)


def relative_links() -> list[tuple[Path, str]]:
    found = []
    for doc in DOCS:
        prose, _ = _split(doc.read_text())
        for line in prose:
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                    continue
                found.append((doc, target))
    return found


def test_the_docs_have_links_to_check() -> None:
    assert len(relative_links()) > 50


@pytest.mark.parametrize(
    ("doc", "target"), relative_links(), ids=lambda v: v if isinstance(v, str) else v.name
)
def test_every_relative_link_resolves(doc: Path, target: str) -> None:
    path, _, anchor = target.partition("#")
    dest = (doc.parent / path).resolve() if path else doc
    assert dest.exists(), f"{doc.name}: link to a missing file: {target}"
    if anchor:
        assert dest.suffix == ".md", f"{doc.name}: an anchor into a non-markdown file: {target}"
        assert anchor in anchors(dest), f"{doc.name}: no heading #{anchor} in {dest.name}"


def test_the_slug_rule_matches_github() -> None:
    assert (
        github_slug("Focus and a budget that holds (compare --preset compiled)")
        == "focus-and-a-budget-that-holds-compare---preset-compiled"
    )
    assert github_slug("Where the compiled preset's noise comes from (2 threads on 2 CPUs)") == (
        "where-the-compiled-presets-noise-comes-from-2-threads-on-2-cpus"
    )


def example_commands() -> list[tuple[str, str]]:
    """`tfvariants` lines of the docs' code blocks (continuations joined, comments cut)."""
    found = []
    for doc in DOCS:
        _, blocks = _split(doc.read_text())
        for block in blocks:
            joined: list[str] = []
            for line in block:
                if joined and joined[-1].endswith("\\"):
                    joined[-1] = joined[-1][:-1] + " " + line.strip()
                else:
                    joined.append(line.strip())
            for line in joined:
                command = re.sub(r"^(\$ )?(\.venv/bin/)?", "", line)
                if command.startswith("tfvariants "):
                    command = re.sub(r"\s+#.*$", "", command)
                    found.append((doc.name, command))
    return found


def _is_synopsis(command: str) -> bool:
    """A synopsis, not an example: optional parts in brackets, alternatives, an ellipsis."""
    return "..." in command or " [" in command or "|" in command


def runnable_examples() -> list[tuple[str, str]]:
    return [
        (doc, command)
        for doc, command in example_commands()
        if ("--help" in command or "--dry-run" in command) and not _is_synopsis(command)
    ]


def test_the_docs_have_examples_to_run() -> None:
    commands = [command for _, command in runnable_examples()]
    assert sum("--dry-run" in c for c in commands) >= 3
    assert any("compare --preset compiled" in c for c in commands) or any(
        "--preset study-2017" in c for c in commands
    )


@pytest.fixture
def sealed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A tmp folder to run in, where building a variant or starting a process fails."""
    import tfvariants.variants as variants_pkg

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TFVARIANTS_ISA_GATE", "off")
    monkeypatch.setenv("COLUMNS", "120")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a documented dry run or --help built something: {args!r}")

    real_popen = subprocess.Popen

    def probe_only(argv: Any, *args: Any, **kwargs: Any) -> Any:
        # Every build (pip, uv, an image) and every cell or probe of TensorFlow starts a
        # process; a dry run may only ask an interpreter what it is (`python -c ...`).
        argv = list(argv) if not isinstance(argv, str) else [argv]
        if len(argv) == 3 and argv[1] == "-c" and "tensorflow" not in argv[2]:
            return real_popen(argv, *args, **kwargs)
        raise AssertionError(f"a documented dry run or --help started {argv!r}")

    monkeypatch.setattr(variants_pkg, "ensure_built", refuse)
    monkeypatch.setattr(subprocess, "Popen", probe_only)
    return tmp_path


@pytest.mark.parametrize(("doc", "command"), runnable_examples())
def test_every_help_and_dry_run_example_runs(
    doc: str, command: str, sealed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the checkout's own files (docs/cluster/variants.toml), wherever the test runs
    argv = [str(ROOT / a) if a.startswith("docs/") else a for a in shlex.split(command)[1:]]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, f"{doc}: `{command}` exited {code}: {captured.err[-2000:]}"
    assert list(sealed.iterdir()) == [], f"{doc}: `{command}` wrote {list(sealed.iterdir())}"


def test_the_readme_and_the_compare_guide_stay_short() -> None:
    readme = (ROOT / "README.md").read_text().splitlines()
    guide = (ROOT / "docs" / "compare.md").read_text().splitlines()
    assert len(readme) < 200, len(readme)
    assert len(guide) < 500, len(guide)
    # the first lines are the two commands a new user needs
    assert readme[2] == "```sh" and readme[3].startswith("make compare ")
    assert readme[4].startswith("make test ")


@pytest.mark.parametrize(
    ("doc", "command"),
    [(d, c) for d, c in example_commands() if not _is_synopsis(c) and "--help" not in c],
)
def test_every_example_command_parses(doc: str, command: str) -> None:
    """The examples that run for real (a compare, a build) are not run here; their
    options must still be the ones the command line accepts."""
    from tfvariants.cli import build_parser

    try:
        build_parser().parse_args(shlex.split(command)[1:])
    except SystemExit as exc:
        pytest.fail(f"{doc}: `{command}` does not parse (exit {exc.code})")
