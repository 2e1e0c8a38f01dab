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

# A compiled wheel instead of a bazel build: a pip spec (intel-tensorflow-avx512==2.14.0)
# or a local .whl. The image gets the same runtime stage, its ISA check ("counted": the
# instructions the wheel's census says it requires) and labels; ISA/TF_COPTS are unused.
# WHEEL_PINS: what the wheel needs beside it (every published compiled wheel is
# TensorFlow <= 2.14: numpy<2). Such an image is tagged tfvariants/compiled:wheel unless
# COMPILED_IMAGE says otherwise.
WHEEL ?=
WHEEL_PINS ?= numpy<2
# The compiled build's context, staged: builds/compiled, workloads/isacensus.py (the
# census check_isa.py uses) and, with WHEEL, the wheel.
COMPILED_CONTEXT ?= build/compiled-context
ifneq ($(strip $(WHEEL)),)
COMPILED_IMAGE := $(if $(filter command line,$(origin COMPILED_IMAGE)),$(COMPILED_IMAGE),tfvariants/compiled:wheel)
# The wheel's version (name==X.Y.Z, or the second field of a .whl file name): the label.
WHEEL_VERSION := $(if $(filter %.whl,$(WHEEL)),$(word 2,$(subst -, ,$(notdir $(WHEEL)))),$(lastword $(subst ==, ,$(WHEEL))))
endif

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
	$(if $(strip $(WHEEL)),,$(if $(strip $(TF_COPTS)),,$(error ISA '$(ISA)' gives no compiler flags: see `$(PYTHON) -m tfvariants.variants.isa copts -- '$(ISA)'`)))
	$(if $(filter hermetic local,$(TF_COMPILER)),,$(error TF_COMPILER must be hermetic or local, not '$(TF_COMPILER)'))
	rm -rf $(COMPILED_CONTEXT) && mkdir -p $(COMPILED_CONTEXT)/wheels
	cp builds/compiled/* workloads/isacensus.py $(COMPILED_CONTEXT)/
ifneq ($(strip $(WHEEL)),)
	$(if $(filter %.whl,$(WHEEL)),cp '$(WHEEL)' $(COMPILED_CONTEXT)/wheels/,$(PYTHON) -m pip download --quiet --no-deps --only-binary=:all: --python-version $(PYTHON_VERSION) -d $(COMPILED_CONTEXT)/wheels '$(WHEEL)')
	$(ENGINE) build $(BUILD_FLAGS) $(_base_arg) $(_runtime_arg) \
		--build-arg WHEEL_FROM=given-wheel \
		--build-arg WHEEL_PINS='$(WHEEL_PINS)' \
		--build-arg TF_VERSION='$(WHEEL_VERSION)' \
		--build-arg PYTHON_VERSION=$(PYTHON_VERSION) \
		--build-arg TF_ISA='see the census in /opt/tfvariants-build/isa-check.json' \
		--build-arg TF_PACKAGE='$(notdir $(WHEEL))' \
		--build-arg TF_COPTS='(a given wheel: see its census in /opt/tfvariants-build/isa-check.json)' \
		--build-arg TF_EXPECT_ISA=counted \
		-t $(COMPILED_IMAGE) -f $(COMPILED_CONTEXT)/Dockerfile $(COMPILED_CONTEXT)
else
	$(ENGINE) build $(BUILD_FLAGS) $(_base_arg) $(_runtime_arg) \
		--build-arg TF_VERSION=$(TF_VERSION) \
		--build-arg PYTHON_VERSION=$(PYTHON_VERSION) \
		--build-arg TF_COMPILER=$(TF_COMPILER) \
		--build-arg TF_ISA='$(ISA)' \
		--build-arg TF_COPTS='$(TF_COPTS)' \
		--build-arg TF_EXPECT_ISA='$(TF_EXPECT_ISA)' \
		--build-arg BAZEL_JOBS=$(BAZEL_JOBS) \
		--build-arg BAZEL_RAM_MB=$(BAZEL_RAM_MB) \
		-t $(COMPILED_IMAGE) -f $(COMPILED_CONTEXT)/Dockerfile $(COMPILED_CONTEXT)
endif

build-gpu:
	$(ENGINE) build $(BUILD_FLAGS) $(_base_arg) \
		--build-arg TF_VERSION=$(TF_VERSION) \
		-t $(GPU_IMAGE) -f builds/gpu/Dockerfile builds/gpu
