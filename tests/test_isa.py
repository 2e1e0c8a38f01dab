"""Compiler-flag derivation for the compiled variant (tfvariants/isa.py)."""

from __future__ import annotations

import pytest

from tfvariants.errors import UserError
from tfvariants.variants import isa


@pytest.mark.parametrize(
    ("level", "copts", "must_include"),
    [
        ("sse4.2", "-msse4.2", ["SSE4.1", "SSE4.2"]),
        ("avx", "-mavx", ["SSE4.2", "AVX"]),
        ("avx2-fma", "-mavx2 -mfma", ["AVX", "AVX2", "FMA"]),
        (
            "avx512",
            "-mavx512f -mavx512cd -mavx512vl -mavx512bw -mavx512dq -mavx2 -mfma",
            ["AVX2", "FMA", "AVX512F"],
        ),
    ],
)
def test_levels(level: str, copts: str, must_include: list[str]) -> None:
    choice = isa.derive(level)
    assert choice.name == level
    assert choice.copts_string == copts
    for name in must_include:
        assert name in choice.expected
    assert isa.ALL not in choice.expected


def test_levels_are_cumulative_in_what_they_check() -> None:
    # Each level's expected instructions contain the previous level's.
    names = ["sse4.2", "avx", "avx2-fma", "avx512"]
    for lower, higher in zip(names, names[1:], strict=False):
        assert set(isa.derive(lower).expected) <= set(isa.derive(higher).expected), higher


def test_level_names_are_case_and_space_insensitive() -> None:
    assert isa.derive("  AVX2-FMA ").copts == ("-mavx2", "-mfma")


def test_native_checks_everything() -> None:
    choice = isa.derive("native")
    assert choice.copts == ("-march=native",)
    assert choice.expected == (isa.ALL,)


def test_explicit_copts() -> None:
    choice = isa.derive("-mavx2 -mfma -mf16c")
    assert choice.name == "custom"
    assert choice.copts == ("-mavx2", "-mfma", "-mf16c")
    assert {"AVX2", "FMA"} <= set(choice.expected)
    assert isa.bazel_copt_args(choice.copts) == ["--copt=-mavx2", "--copt=-mfma", "--copt=-mf16c"]


def test_explicit_march_native_among_flags() -> None:
    assert isa.derive("-O3 -march=native").expected == (isa.ALL,)


@pytest.mark.parametrize(
    "bad",
    ["", "   ", "avx3", "haswell", "-mavx2; rm -rf /", "-mavx2 $(id)", "-mavx2 `id`", "-mavx2 'x"],
)
def test_bad_input_is_a_user_error(bad: str) -> None:
    with pytest.raises(UserError):
        isa.derive(bad)


def test_cli_prints_copts_and_expectations(capsys: pytest.CaptureFixture[str]) -> None:
    assert isa.main(["copts", "avx2-fma"]) == 0
    assert capsys.readouterr().out.strip() == "-mavx2 -mfma"
    assert isa.main(["expect", "native"]) == 0
    assert capsys.readouterr().out.strip() == "ALL"
    assert isa.main(["bazel", "avx"]) == 0
    assert capsys.readouterr().out.strip() == "--copt=-mavx"


def test_cli_bad_level_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert isa.main(["copts", "bogus"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "unknown ISA level 'bogus'" in captured.err


def test_microarchitecture_levels() -> None:
    v3, v4 = isa.derive("x86-64-v3"), isa.derive("x86-64-v4")
    assert v3.copts == ("-march=x86-64-v3",) and v4.copts == ("-march=x86-64-v4",)
    assert v3.expected == ("SSE4.1", "SSE4.2", "AVX", "AVX2", "FMA")
    assert v4.expected == (*v3.expected, "AVX512F")


@pytest.mark.parametrize(
    ("flag", "expect"),
    [("-march=x86-64-v3", "SSE4.1 SSE4.2 AVX AVX2 FMA"), ("-mavx512vnni", "AVX512F AVX512_VNNI")],
)
def test_cli_takes_one_flag_as_the_isa(
    flag: str, expect: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["copts", flag], ["copts", "--", flag]):
        assert isa.main(argv) == 0
        assert capsys.readouterr().out.strip() == flag
    assert isa.main(["expect", flag]) == 0
    assert capsys.readouterr().out.strip() == expect
