"""The instruction census (workloads/isacensus.py), its cache and the up-front ISA gate
(tfvariants/variants/census.py), with fake binaries and fake censuses: the AVX-512
build is skipped on an AVX2-only CPU and runs on an AVX-512 one."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tfvariants.cli import main
from tfvariants.execute import runner
from tfvariants.plan.cell import Cell
from tfvariants.store.runfolder import RunFolder
from tfvariants.variants import census, envbuild, skip_reason
from tfvariants.variants.registry import Variant
from workloads import isacensus

ROOT = Path(__file__).resolve().parents[1]

AVX2_HOST = {"sse4_1", "sse4_2", "avx", "avx2", "fma"}
AVX512_HOST = AVX2_HOST | {"avx512f", "avx512bw", "avx512vl"}

# objdump -d --no-show-raw-insn, as it prints a library with a dispatched kernel (its
# name carries the ISA) and ordinary code compiled for AVX-512 + FMA.
OBJDUMP = """
libx.so:     file format elf64-x86-64

Disassembly of section .text:

0000000000001000 <_ZN4dnnl4impl3cpu6x6422jit_avx512_core_kernelEv>:
    1000:\tvmovups (%rdi),%zmm0
    1006:\tvfmadd231ps %zmm1,%zmm2,%zmm0
    100c:\tkmovw %k1,%eax
    1010:\tret

0000000000002000 <_ZN5Eigen8internal9gebp_kernelEv>:
    2000:\tvmovups (%rdi),%zmm3
    2006:\tvaddps %ymm17,%ymm1,%ymm2{%k1}
    200c:\tvfmadd213ps %ymm1,%ymm2,%ymm3
    2012:\tvpaddd %ymm1,%ymm2,%ymm3
    2016:\tvpermilps $0x1b,%ymm1,%ymm2
    201c:\tvaddps %xmm1,%xmm2,%xmm3
    2020:\tpminsd %xmm1,%xmm2
    2024:\tmov %rdi,%rax
    2028:\tret

0000000000003000 <fmax>:
    3000:\tvmaxss %xmm1,%xmm2,%xmm0
"""


def test_classify_each_extension() -> None:
    assert isacensus.classify("vmovups", "(%rdi),%zmm0") == "AVX512"
    assert isacensus.classify("vaddps", "%xmm17,%xmm1,%xmm2") == "AVX512"  # EVEX register
    assert isacensus.classify("vaddps", "%ymm1,%ymm2,%ymm3{%k1}") == "AVX512"  # masking
    assert isacensus.classify("kmovw", "%k1,%eax") == "AVX512"
    assert isacensus.classify("vfmadd231ps", "%ymm1,%ymm2,%ymm0") == "FMA"
    assert isacensus.classify("vpaddd", "%ymm1,%ymm2,%ymm3") == "AVX2"
    assert isacensus.classify("vpaddd", "%xmm1,%xmm2,%xmm3") == "AVX"  # 128-bit: AVX
    assert isacensus.classify("vpermilps", "$0x1b,%ymm1,%ymm2") == "AVX"  # AVX has it
    assert isacensus.classify("vbroadcasti128", "(%rax),%ymm1") == "AVX2"
    assert isacensus.classify("vaddps", "%ymm1,%ymm2,%ymm3") == "AVX"
    assert isacensus.classify("pminsd", "%xmm1,%xmm2") == "SSE4"
    assert isacensus.classify("crc32q", "%rax,%rbx") == "SSE4"
    assert isacensus.classify("paddd", "%xmm1,%xmm2") is None  # SSE2: the x86-64 baseline
    assert isacensus.classify("mov", "%rdi,%rax") is None


def test_census_attributes_dispatched_kernels_and_the_rest() -> None:
    counts = isacensus.census_lines(OBJDUMP.splitlines(keepends=True))
    # The jit_avx512_core kernel is chosen at run time: its code needs nothing.
    assert counts["dispatched"] == {"SSE4": 0, "AVX": 0, "AVX2": 0, "FMA": 0, "AVX512": 3}
    # Eigen's kernel (no ISA in its name) and std::fmax ("fma" but not an ISA).
    assert counts["rest"] == {"SSE4": 1, "AVX": 3, "AVX2": 1, "FMA": 1, "AVX512": 2}
    assert counts["raw"] == {"ymm": 4, "zmm": 3, "vfmadd": 2}  # lines using them
    assert counts["raw_rest"] == {"ymm": 4, "zmm": 1, "vfmadd": 1}


def test_required_and_compiled_for_use_the_rest_only() -> None:
    n = isacensus.REQUIRED_MIN
    stock = {"rest": {"SSE4": n, "AVX": 150_000, "AVX2": 0, "FMA": 0, "AVX512": 0},
             "dispatched": {"AVX512": 7_000, "FMA": 1_000}}  # fmt: skip
    assert isacensus.required(stock) == ["SSE4", "AVX"]
    assert isacensus.compiled_for(stock) == "AVX"
    avx512 = {"rest": {"AVX": 147_420, "AVX2": 21_543, "FMA": 226, "AVX512": 14_405}}
    assert isacensus.compiled_for(avx512) == "AVX512+FMA+AVX2"
    # A few stray instructions outside named kernels do not make a requirement.
    assert isacensus.required({"rest": {"AVX512": n - 1}}) == []
    assert isacensus.compiled_for({"rest": {}}) == "SSE2"
    assert isacensus.lacking(["AVX", "AVX2", "AVX512"], AVX2_HOST) == ["AVX512"]
    assert isacensus.lacking(["AVX512"], AVX512_HOST) == []
    merged = isacensus.merge([{"rest": {"AVX": 2}}, {"rest": {"AVX": 3}, "raw": {"zmm": 1}}])
    assert merged["rest"]["AVX"] == 5 and merged["raw"]["zmm"] == 1


def test_cpu_flags_from_cpuinfo() -> None:
    text = "processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 avx512f\n"
    assert isacensus.cpu_flags(text) == {"fpu", "sse4_2", "avx", "avx2", "avx512f"}
    assert isacensus.cpu_flags("no flags here") == set()


@pytest.mark.skipif(shutil.which("objdump") is None, reason="no objdump")
def test_census_file_of_a_real_shared_object() -> None:
    # The interpreter's own math extension: small, real code.
    import math

    where = getattr(math, "__file__", None)  # absent where math is built in (Debian)
    so = Path(where) if where and where.endswith(".so") else None
    if so is None:
        pytest.skip("math is built into this interpreter")
    counts = isacensus.census_file(so)
    assert counts["file"] == so.name and counts["bytes"] == so.stat().st_size
    assert set(counts["rest"]) == set(isacensus.ISAS)


# --- the gate: a fake TensorFlow behind a fake interpreter ------------------------------


def _fake_python(tmp_path: Path, *, import_dies: str | None) -> Path:
    """An 'interpreter' that finds a fake tensorflow package and, importing it, dies
    as told (SIGILL, or TensorFlow's guard), or succeeds."""
    tf_dir = tmp_path / "site" / "tensorflow"
    tf_dir.mkdir(parents=True)
    (tf_dir / census.FRAMEWORK).write_bytes(b"\x7fELF fake framework " + os.urandom(16))
    die = {
        None: "exit 0",
        "sigill": "kill -ILL $$",
        "guard": 'echo "F cpu_feature_guard.cc:37] The TensorFlow library was compiled to '
        "use AVX512F instructions, but these aren't available on your machine.\" >&2; "
        "kill -ABRT $$",
    }[import_dies]
    script = tmp_path / "python"
    script.write_text(
        "#!/bin/sh\n"
        'case "$2" in\n'
        f"  *submodule_search_locations*) echo {tf_dir}; exit 0;;\n"
        "  *find_spec*) exit 0;;\n"
        f"  'import tensorflow') {die};;\n"
        "esac\nexit 3\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.fixture
def gate_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(census.GATE_VAR, "on")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _fake_census(framework: Path, rest: dict[str, int]) -> None:
    """Put a census of this file in the cache, as `variants census` would have."""
    path = census._census_path(census.file_hash(framework))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"rest": rest, "dispatched": {}, "raw": {}, "raw_rest": {}}))


AVX512_BUILD = {"SSE4": 2_287, "AVX": 147_420, "AVX2": 21_543, "FMA": 226, "AVX512": 14_405}


def test_gate_skips_the_avx512_build_on_an_avx2_host_from_its_census(
    tmp_path: Path, gate_on: Path
) -> None:
    python = _fake_python(tmp_path, import_dies="sigill")
    variant = Variant(name="intel-avx512-2.14", kind="venv", python=str(python))
    framework = census.tensorflow_dir(variant) / census.FRAMEWORK
    _fake_census(framework, AVX512_BUILD)
    probes: list[str] = []

    def probe(py: str) -> tuple[int, str]:
        probes.append(py)
        return 0, ""

    reason = census.gate(variant, flags=AVX2_HOST, probe=probe)
    assert reason is not None and probes == []  # the cached census decided: no import
    assert "compiled for AVX512, which this CPU lacks" in reason
    assert "14,405 AVX512 instructions outside run-time-dispatched kernels" in reason
    # On an AVX-512 host the same binary runs: the probe imports it, nothing to skip.
    assert census.gate(variant, flags=AVX512_HOST, probe=probe) is None
    assert probes == [str(python)]


def test_gate_probe_names_sigill_and_the_lacking_isa(
    tmp_path: Path, gate_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = _fake_python(tmp_path, import_dies="sigill")
    variant = Variant(name="avx512-build", kind="venv", python=str(python))
    # No census yet: the real probe process dies of SIGILL, then the census (here a
    # fake objdump result) names what the CPU lacks; the verdict is cached.
    counted: list[str] = []

    def fake_census(path: Path) -> dict:
        counted.append(path.name)
        return {"rest": AVX512_BUILD, "dispatched": {}, "raw": {}, "raw_rest": {}}

    monkeypatch.setattr(census.isacensus, "census_file", fake_census)
    reason = census.gate(variant, flags=AVX2_HOST)
    assert reason and "compiled for AVX512, which this CPU lacks" in reason
    assert counted == [census.FRAMEWORK]
    assert census.gate(variant, flags=AVX2_HOST, probe=lambda py: pytest.fail("cached")) == reason
    # Without a census that explains it, the SIGILL itself is the reason.
    monkeypatch.setattr(census.isacensus, "census_file", lambda path: {"rest": {}})
    other = tmp_path / "other"
    other.mkdir()
    bare = Variant(name="bare", kind="venv", python=str(_fake_python(other, import_dies="sigill")))
    reason = census.gate(bare, flags=AVX2_HOST)
    assert reason and reason.startswith("importing its TensorFlow dies of SIGILL")
    assert "tfvariants variants census bare --full" in reason


def test_gate_reads_tensorflows_guard(tmp_path: Path, gate_on: Path) -> None:
    python = _fake_python(tmp_path, import_dies="guard")
    variant = Variant(name="guarded", kind="venv", python=str(python))
    reason = census.gate(variant, flags=AVX2_HOST)
    assert reason and "compiled for AVX512F, which this CPU lacks" in reason
    assert "cpu_feature_guard" in reason


def test_gate_passes_a_binary_that_imports_and_can_be_turned_off(
    tmp_path: Path, gate_on: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    variant = Variant(
        name="fine", kind="venv", python=str(_fake_python(tmp_path, import_dies=None))
    )
    assert census.gate(variant, flags=AVX2_HOST) is None
    sick = tmp_path / "sick"
    sick.mkdir()
    dying = Variant(name="x", kind="venv", python=str(_fake_python(sick, import_dies="sigill")))
    monkeypatch.setenv(census.GATE_VAR, "off")
    assert census.gate(dying, flags=AVX2_HOST) is None
    # Other backends and images are not gated here.
    assert census.tensorflow_dir(Variant(name="j", kind="local", keras_backend="jax")) is None
    assert census.tensorflow_dir(Variant(name="i", kind="image", image="x")) is None


def test_a_gated_variant_is_skipped_up_front_listed_so_and_never_launched(
    tmp_path: Path,
    gate_on: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(isacensus, "cpu_flags", lambda cpuinfo=None: AVX2_HOST)
    # The listing gates every built-in too: their imports are not this test's subject.
    monkeypatch.setattr(census, "_import_probe", lambda python: (0, ""))
    python = _fake_python(tmp_path, import_dies="sigill")
    toml = tmp_path / "v.toml"
    toml.write_text(f'[variants.avx512]\nkind = "venv"\npython = "{python}"\n')
    variant = Variant(name="avx512", kind="venv", python=str(python))
    _fake_census(census.tensorflow_dir(variant) / census.FRAMEWORK, AVX512_BUILD)
    reason = skip_reason(variant)
    assert reason and "AVX512" in reason
    result = runner.run_cell(
        Cell(variant="avx512", threads=1, workload="mnist_mlp", repeat=0),
        variant,
        runner.RunOptions(),
        RunFolder(tmp_path / "run"),
    ).raw
    assert result["status"] == "skipped" and "AVX512" in result["reason"]
    assert result["runner"]["command"] is None
    assert main(["variants", "--variants-file", str(toml), "--json"]) == 0
    row = next(r for r in json.loads(capsys.readouterr().out) if r["name"] == "avx512")
    assert row["ready"] is False and row["detail"].startswith("skipped: ")


# --- the environment build's import check, and check_isa.py's --expect ---------------


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "py"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return script


def test_import_check_messages(tmp_path: Path) -> None:
    broken = _script(
        tmp_path,
        'echo "Traceback (most recent call last):" >&2\n'
        'echo "TypeError: Unable to convert function return value to a Python type" >&2\n'
        "exit 1",
    )
    with pytest.raises(envbuild.UserError) as caught:
        envbuild.import_check(broken, "tensorflow", dict(os.environ))
    assert str(caught.value) == (
        "importing tensorflow in the new environment failed: "
        "TypeError: Unable to convert function return value to a Python type"
    )
    sigill = _script(tmp_path, "kill -ILL $$")
    assert "SIGILL" in envbuild.import_check(sigill, "tensorflow", dict(os.environ))
    fine = _script(tmp_path, "echo 2.14.0 keras 2.14.0")
    assert envbuild.import_check(fine, "tensorflow", {}) == "tensorflow 2.14.0 keras 2.14.0 imports"


def _check_isa():  # noqa: ANN202 (a module loaded from a file)
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "check_isa", ROOT / "builds/compiled/check_isa.py"
    )
    assert spec is not None and spec.loader is not None
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    return check


def test_check_isa_expect_fails_when_the_cpu_lacks_it() -> None:
    check = _check_isa()
    assert check.isacensus is isacensus or check.isacensus.ISAS == isacensus.ISAS
    assert check.cpu_lacks(["AVX512F", "FMA"], AVX2_HOST) == ["AVX512F"]
    assert check.cpu_lacks(["SSE4.1", "AVX2", "ALL"], AVX2_HOST) == []
    assert check.cpu_lacks(["AVX512F"], set()) == []  # flags unreadable: the guard decides
    # The census' required set confirms instructions; dispatched kernels do not.
    counts = {"total": {"ymm": 1, "zmm": 7_000, "vfmadd": 900},
              "isa": {"required": ["SSE4", "AVX"]}}  # fmt: skip
    assert check.confirmed_by_counts(["AVX"], counts) == ["AVX"]
    assert check.confirmed_by_counts(["AVX512F"], counts) is None
    ok, why = check.verdict(["FMA"], "", counts)
    assert not ok


def test_check_isa_expect_counted_on_a_cpu_without_the_isa(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check = _check_isa()
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps({"built": {"total": {}, "isa": {"required": ["AVX", "AVX512"]}}}))
    monkeypatch.setattr(check.isacensus, "cpu_flags", lambda cpuinfo=None: AVX2_HOST)
    assert check.main(["--expect", "counted", "--counts", str(counts)]) == 1
    assert "check_isa: FAILED: this CPU lacks AVX512F" in capsys.readouterr().err
    # An import that dies of SIGILL is named as such (not blamed on logging).
    monkeypatch.setattr(check.isacensus, "cpu_flags", lambda cpuinfo=None: AVX512_HOST)
    monkeypatch.setattr(check, "_import_log", lambda: (-4, ""))
    assert check.main(["--expect", "AVX512F", "--counts", str(counts)]) == 1
    assert "importing TensorFlow died of SIGILL" in capsys.readouterr().err


def test_dispatched_names_without_an_isa_word() -> None:
    # HighwayHash's AVX2 (<4>) and SSE4.1 (<2>) targets are chosen at run time; the
    # portable one (<1>) is not a kernel; BoringSSL's AVX2 assembly has plain names.
    assert isacensus.dispatched_name("_ZNK11highwayhash11HighwayHashILj4EEclERA4_KmPKcmPA4_m")
    assert isacensus.dispatched_name("_ZN11highwayhash15HighwayHashCatTILj2EE6AppendEPKcm")
    assert not isacensus.dispatched_name("_ZNK11highwayhash11HighwayHashILj1EEclERA4_KmPKcm")
    assert isacensus.dispatched_name("poly_Rq_mul")
    assert isacensus.dispatched_name("_ZN4dnnl4impl3cpu6x6422jit_avx512_core_kernelEv")
    assert not isacensus.dispatched_name("fmax") and not isacensus.dispatched_name("main")
