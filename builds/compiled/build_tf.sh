#!/usr/bin/env bash
# Build a TensorFlow CPU wheel from source with bazel, for chosen compiler flags.
#
# Follows tensorflow.org/install/source for TensorFlow 2.16+: bazelisk runs the Bazel
# version pinned in the source tree's .bazelversion, Clang is the compiler, Python is
# hermetic (HERMETIC_PYTHON_VERSION), the target is //tensorflow/tools/pip_package:wheel
# with --config=opt, and the instruction-set flags go in as --copt. The compiler is the
# hermetic Clang TensorFlow's toolchain downloads (Clang 18 for 2.21) unless
# --compiler local, which adds --config=clang_local and the Clang at --clang; the one
# used is printed after the build and recorded by TensorFlow (tf.version.COMPILER_VERSION). The flags come
# already derived (tfvariants/variants/isa.py, via `python -m tfvariants.variants.isa copts LEVEL`), so
# this script never guesses them.
#
# --dry-run prints the commands instead of running them (tested in tests/).
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: build_tf.sh --copts "-mavx2 -mfma" [options]

  --tf-version V      TensorFlow release to build (git tag vV)      [2.21.0]
  --copts FLAGS       compiler flags for the target CPU (required)
  --jobs N            bazel --jobs                                  [2]
  --ram-mb MB         bazel --local_ram_resources, in MB            [12288]
  --disk-cache DIR    bazel --disk_cache (reused across builds)     [none]
  --python-version V  hermetic Python the wheel is built for        [3.11]
  --compiler MODE     hermetic (TensorFlow's bazel toolchain) or local [hermetic]
  --clang PATH        Clang executable for --compiler local         [/usr/lib/llvm-18/bin/clang]
  --src DIR           source tree (cloned if missing)               [/src/tensorflow]
  --out DIR           where the wheel is copied                     [/wheels]
  --extra-bazel-args  further bazel build arguments (one string)
  --expunge           after copying the wheel: bazel clean --expunge, delete the sources
  --dry-run           print the commands, run nothing
USAGE
}

TF_VERSION=2.21.0
COPTS=""
JOBS=2
RAM_MB=12288
DISK_CACHE=""
PYTHON_VERSION=3.11
CLANG=/usr/lib/llvm-18/bin/clang
SRC=/src/tensorflow
OUT=/wheels
EXTRA_BAZEL_ARGS=""
COMPILER=hermetic
EXPUNGE=0
DRY_RUN=0

while [ $# -gt 0 ]; do
    case "$1" in
        --tf-version) TF_VERSION="$2"; shift 2 ;;
        --copts) COPTS="$2"; shift 2 ;;
        --jobs) JOBS="$2"; shift 2 ;;
        --ram-mb) RAM_MB="$2"; shift 2 ;;
        --disk-cache) DISK_CACHE="$2"; shift 2 ;;
        --python-version) PYTHON_VERSION="$2"; shift 2 ;;
        --clang) CLANG="$2"; shift 2 ;;
        --compiler) COMPILER="$2"; shift 2 ;;
        --expunge) EXPUNGE=1; shift ;;
        --src) SRC="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --extra-bazel-args) EXTRA_BAZEL_ARGS="$2"; shift 2 ;;
        --dry-run) DRY_RUN=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "build_tf.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done

die() { echo "build_tf.sh: error: $*" >&2; exit 2; }

[ -n "$COPTS" ] || die "--copts is required (e.g. from: python -m tfvariants.variants.isa copts avx2-fma)"
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer, got '$JOBS'"
[[ "$RAM_MB" =~ ^[1-9][0-9]*$ ]] || die "--ram-mb must be a positive integer, got '$RAM_MB'"
[[ "$PYTHON_VERSION" =~ ^3\.[0-9]+$ ]] || die "--python-version must look like 3.11"
[[ "$COMPILER" =~ ^(hermetic|local)$ ]] || die "--compiler must be hermetic or local, got '$COMPILER'"
[[ "$TF_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-?rc[0-9]+)?$ ]] || die "bad --tf-version '$TF_VERSION'"

# One --copt per flag. Flags must look like compiler flags: they reach bazel unquoted.
copt_args=()
for flag in $COPTS; do
    [[ "$flag" =~ ^-[A-Za-z0-9][A-Za-z0-9=.,_+-]*$ ]] || die "not a compiler flag: '$flag'"
    copt_args+=("--copt=$flag")
done

bazel_args=(
    build //tensorflow/tools/pip_package:wheel
    --repo_env=WHEEL_NAME=tensorflow_cpu
    # Needed by the wheel rules since 2.20 (harmless before).
    --repo_env=USE_PYWRAP_RULES=1
    --repo_env=HERMETIC_PYTHON_VERSION="$PYTHON_VERSION"
    --config=opt
    "${copt_args[@]}"
    --jobs="$JOBS"
    # Bazel's own accounting; the container's memory limit is what really caps it.
    --local_ram_resources="$RAM_MB"
    --verbose_failures
)
[ -n "$DISK_CACHE" ] && bazel_args+=(--disk_cache="$DISK_CACHE")
[ "$COMPILER" = local ] && bazel_args+=(--config=clang_local)
if [ -n "$EXTRA_BAZEL_ARGS" ]; then
    read -r -a extra <<<"$EXTRA_BAZEL_ARGS"
    bazel_args+=("${extra[@]}")
fi

# ./configure reads these instead of prompting. The ISA flags are passed as --copt on
# the command line rather than through CC_OPT_FLAGS so they are visible in one place.
configure_env=(
    PYTHON_BIN_PATH="$(command -v python3 || echo /usr/bin/python3)"
    USE_DEFAULT_PYTHON_LIB_PATH=1
    TF_PYTHON_VERSION="$PYTHON_VERSION"
    HERMETIC_PYTHON_VERSION="$PYTHON_VERSION"
    TF_NEED_CLANG=1
    TF_NEED_CUDA=0
    TF_NEED_ROCM=0
    TF_SET_ANDROID_WORKSPACE=0
    CC_OPT_FLAGS=-Wno-sign-compare
)

# The local Clang is configured only when it is the one used: a hermetic build ignores it.
[ "$COMPILER" = local ] && configure_env+=(CLANG_COMPILER_PATH="$CLANG")

run() {
    if [ "$DRY_RUN" = 1 ]; then
        printf '%q ' "$@" | sed 's/ $//'
        printf '\n'
    else
        "$@"
    fi
}

if [ ! -d "$SRC/.git" ] || [ "$DRY_RUN" = 1 ]; then
    run git clone --depth 1 --branch "v$TF_VERSION" https://github.com/tensorflow/tensorflow.git "$SRC"
fi
if [ "$DRY_RUN" = 0 ]; then
    cd "$SRC"
    if [ "$COMPILER" = local ]; then
        [ -x "$CLANG" ] || die "Clang not found at $CLANG (see install_build_deps.sh)"
        echo "build_tf.sh: Bazel $(cat .bazelversion) (via bazelisk), local $("$CLANG" --version | head -n 1)" >&2
    else
        echo "build_tf.sh: Bazel $(cat .bazelversion) (via bazelisk), hermetic Clang (TensorFlow's toolchain)" >&2
    fi
else
    echo "cd $SRC"
fi
run env "${configure_env[@]}" ./configure
run bazel "${bazel_args[@]}"
run mkdir -p "$OUT"
if [ "$DRY_RUN" = 1 ]; then
    echo "cp bazel-bin/tensorflow/tools/pip_package/wheel_house/*.whl $OUT/"
else
    cp bazel-bin/tensorflow/tools/pip_package/wheel_house/*.whl "$OUT/"
    ls -l "$OUT"
fi
if [ "$EXPUNGE" = 1 ]; then
    # Bazel's output base is tens of GB; the disk cache (a cache mount) keeps what a
    # rebuild reuses.
    run bazel clean --expunge
    run rm -rf "$SRC"
fi
