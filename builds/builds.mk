# Image builds for the pip, compiled and gpu variants. Included from the top-level
# Makefile (`include builds/builds.mk`); every variable can be overridden on the
# command line, e.g. `make build-compiled ISA=avx512 ENGINE=podman`.

PYTHON ?= python3
TF_VERSION ?= 2.21.0
# Instruction-set level for the compiled build: sse4.2, avx, avx2-fma, x86-64-v3, avx512,
# x86-64-v4, native, or compiler flags ("-mavx2 -mfma -mf16c", or one: -march=haswell).
ISA ?= avx2-fma
# The Python the compiled wheel is built for (bazel's hermetic Python) and, unless
# RUNTIME_IMAGE says otherwise, the runtime image's (python:$(PYTHON_VERSION)-slim-bookworm).
PYTHON_VERSION ?= 3.11
# Compiler of the compiled build: hermetic (the Clang TensorFlow's bazel toolchain
# downloads: Clang 18 for 2.21) or local (--config=clang_local with the image's clang).
TF_COMPILER ?= hermetic
# docker or podman: the same choice `tfvariants` makes ($TFVARIANTS_ENGINE, else the
# engine that can run containers here).
ENGINE ?= $(shell $(PYTHON) -m tfvariants.variants.engine 2>/dev/null || echo docker)
# Extra `build` flags. Host networking lets apt/pip in the build reach a proxy on
# hosts where the engine's default build network cannot; docker accepts it too.
BUILD_FLAGS ?= --network host

PIP_IMAGE ?= tfvariants/pip:$(TF_VERSION)
COMPILED_IMAGE ?= tfvariants/compiled:$(TF_VERSION)
GPU_IMAGE ?= tfvariants/gpu:$(TF_VERSION)

# Bazel limits for the compiled build (see docs/builds.md for what a build needs).
BAZEL_JOBS ?= 2
BAZEL_RAM_MB ?= 12288

# Base images: each Dockerfile has a public, pinned default; pass BASE_IMAGE to use another
# (CI uses a locally bootstrapped Debian image). For build-compiled, BASE_IMAGE is the
# build stage and RUNTIME_IMAGE, independently, the final image (it needs Python
# $(PYTHON_VERSION) and python3-venv).
BASE_IMAGE ?=
RUNTIME_IMAGE ?=
_base_arg = $(if $(strip $(BASE_IMAGE)),--build-arg BASE_IMAGE=$(BASE_IMAGE))
_runtime_arg = $(if $(strip $(RUNTIME_IMAGE)),--build-arg RUNTIME_IMAGE=$(RUNTIME_IMAGE))

# Derived by the tested function in tfvariants/variants/isa.py (recursive variables: only
# evaluated when build-compiled runs, so other targets never call Python for them).
TF_COPTS = $(shell $(PYTHON) -m tfvariants.variants.isa copts -- '$(ISA)')
TF_EXPECT_ISA = $(shell $(PYTHON) -m tfvariants.variants.isa expect -- '$(ISA)')

.PHONY: build-pip build-compiled build-gpu

build-pip:
	$(ENGINE) build $(BUILD_FLAGS) $(_base_arg) \
		--build-arg TF_VERSION=$(TF_VERSION) \
		-t $(PIP_IMAGE) -f builds/pip/Dockerfile builds/pip

build-compiled:
	$(if $(strip $(TF_COPTS)),,$(error ISA '$(ISA)' gives no compiler flags: see `$(PYTHON) -m tfvariants.variants.isa copts -- '$(ISA)'`))
	$(if $(filter hermetic local,$(TF_COMPILER)),,$(error TF_COMPILER must be hermetic or local, not '$(TF_COMPILER)'))
	$(ENGINE) build $(BUILD_FLAGS) $(_base_arg) $(_runtime_arg) \
		--build-arg TF_VERSION=$(TF_VERSION) \
		--build-arg PYTHON_VERSION=$(PYTHON_VERSION) \
		--build-arg TF_COMPILER=$(TF_COMPILER) \
		--build-arg TF_ISA='$(ISA)' \
		--build-arg TF_COPTS='$(TF_COPTS)' \
		--build-arg TF_EXPECT_ISA='$(TF_EXPECT_ISA)' \
		--build-arg BAZEL_JOBS=$(BAZEL_JOBS) \
		--build-arg BAZEL_RAM_MB=$(BAZEL_RAM_MB) \
		-t $(COMPILED_IMAGE) -f builds/compiled/Dockerfile builds/compiled

build-gpu:
	$(ENGINE) build $(BUILD_FLAGS) $(_base_arg) \
		--build-arg TF_VERSION=$(TF_VERSION) \
		-t $(GPU_IMAGE) -f builds/gpu/Dockerfile builds/gpu
