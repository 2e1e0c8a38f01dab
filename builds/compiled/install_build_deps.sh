#!/usr/bin/env bash
# Install what build_tf.sh needs, skipping whatever the base image already has:
# the tensorflow/build images ship Clang and bazelisk; a plain Debian/Ubuntu base does not.
set -euo pipefail

CLANG_VERSION="${CLANG_VERSION:-18}"
BAZELISK_VERSION="${BAZELISK_VERSION:-1.25.0}"
export DEBIAN_FRONTEND=noninteractive

apt-get update
# Build tools TensorFlow's configure/bazel rules call, and python3-dev for the host Python.
apt-get install -y --no-install-recommends \
    ca-certificates curl git gnupg patch unzip zip python3 python3-dev python3-venv \
    build-essential

# The Clang TensorFlow's release builds use (tensorflow.org/install/source, "Tested
# build configurations"), from LLVM's own apt repository when the distribution's is older.
if [ ! -x "/usr/lib/llvm-${CLANG_VERSION}/bin/clang" ]; then
    codename="$(. /etc/os-release && echo "${VERSION_CODENAME}")"
    curl -fsSL https://apt.llvm.org/llvm-snapshot.gpg.key | gpg --dearmor -o /usr/share/keyrings/llvm.gpg
    echo "deb [signed-by=/usr/share/keyrings/llvm.gpg] http://apt.llvm.org/${codename}/ llvm-toolchain-${codename}-${CLANG_VERSION} main" \
        > /etc/apt/sources.list.d/llvm.list
    apt-get update
    apt-get install -y --no-install-recommends "clang-${CLANG_VERSION}" "lld-${CLANG_VERSION}"
fi

# bazelisk, installed as `bazel`: it downloads exactly the Bazel in the source's .bazelversion.
if ! command -v bazel >/dev/null 2>&1; then
    curl -fsSL -o /usr/local/bin/bazel \
        "https://github.com/bazelbuild/bazelisk/releases/download/v${BAZELISK_VERSION}/bazelisk-linux-amd64"
    chmod +x /usr/local/bin/bazel
fi

rm -rf /var/lib/apt/lists/*
