# tfvariants: set-up, image builds, benchmarks, tests.
# Everything runs from the project's own virtualenv (.venv), made by `make install`.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TFV := $(BIN)/tfvariants

.PHONY: help install compare compare-compiled report bench-decide bench-wander-bounds bench-noise bench-duet bench-peak-aa build-variant _variant-name test test-fast lint clean bench-serve

help:
	@echo "make install         .venv with tfvariants + TensorFlow (tensorflow-cpu 2.21) + dev tools (EXTRAS=all: every extra)"
	@echo "make compare         install if needed, run the built-in quick compare (mnist_cnn, cifar10_cnn; ~10 min budget), write an HTML report"
	@echo "make compare-compiled  is TensorFlow compiled for this CPU faster? stock 2.14 vs the compiled builds this CPU can run (compare --preset compiled)"
	@echo "make bench-decide    simulated false-positive rate and power of the verdicts (fake runner)"
	@echo "make bench-wander-bounds  what widening and warnings reach against a configuration that wanders on its own (~2.5 min)"
	@echo "make bench-noise     the quick compare (+ an A/A twin) under a CPU hog: bursts, then nice 19, each after a quiet run (~60 min; BENCH_NOISE_ARGS=\"--scenarios quiet --runs 3\": the quiet A/A twin alone; \"--scenarios membw\": a memory-bandwidth and cache hog at nice 19; \"steal\": a wandering real-time one no priority holds off, root only; \"twin-membw\": the quiet twin under membw)"
	@echo "make bench-duet     does duet measurement (A and B at once on two CPUs) narrow the interval? 1 thread, A/A (~8 min)"
	@echo "make build-variant NAME=tf-2.18   environment of a requirement-spec variant (cached)"
	@echo "make build-pip       container image with the stock TensorFlow wheel"
	@echo "make build-compiled  TensorFlow built from source for ISA=avx2-fma|avx|sse4.2|avx512|native"
	@echo "make build-gpu       GPU container image"
	@echo "make test            all tests: unit, real TensorFlow, containers, headless browser"
	@echo "make test-fast       unit tests only"
	@echo "make lint            ruff + mypy (setup.cfg [mypy]) + hadolint"
	@echo "make bench-peak-aa   A/A: the same small compare with and without the peak probe (is it out of the timed cells?)"
	@echo "make bench-serve     the serving harness's own ceiling on this host (no-op model QPS, HTTP overhead)"

# Extras installed by `make install`: TensorFlow and the dev tools by default;
# EXTRAS=all adds every optional extra (CI exercises them all).
OPTIONAL_EXTRAS := ray,serve
EXTRAS ?= tf,dev
ifeq ($(EXTRAS),all)
override EXTRAS := tf,dev,$(OPTIONAL_EXTRAS)
endif
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python setup.cfg pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $@

install: $(STAMP)

# The built-in quick compare: the two convolutional workloads at 1..CPUs threads, with
# the quick scale's 10-minute budget. All six workloads at the same rules need about
# 60 cells before the first look (15-20 min on 2 cores): `tfvariants compare --quick`.
QUICK_WORKLOADS ?= mnist_cnn,cifar10_cnn
compare: install
	$(TFV) compare --quick --workloads $(QUICK_WORKLOADS)

# The compiled-vs-stock question on this CPU: builds the TensorFlow 2.14 environments
# (stock, intel, intel-avx512) on first use and leaves out what this CPU cannot run.
compare-compiled: install
	$(TFV) compare --preset compiled

bench-decide: install
	PYTHONPATH=. $(BIN)/python benchmarks/decide.py --trials 2000 --jobs $$(nproc)

# The widening and warning bounds behind bench-decide's AR(1) 0.8 stress row (docs/measurements.md).
bench-wander-bounds: install
	PYTHONPATH=. $(BIN)/python benchmarks/wander_bounds.py --trials 1000

# Real cells under a bounded CPU hog on the same CPUs (benchmarks/noise.py): random
# bursts at normal priority, then a sustained nice-19 load (or, with --scenarios membw,
# numpy streaming over buffers beyond the last-level cache, or with --scenarios steal the
# same at real-time priority for a wandering share of each CPU: benchmarks/noise_hog.py).
# BENCH_NOISE_ARGS adds options, e.g. BENCH_NOISE_ARGS="--runs 3" or "--workloads mnist_cnn".
BENCH_NOISE_ARGS ?=
bench-noise: install
	PYTHONPATH=. $(BIN)/python benchmarks/noise.py --out results/bench-noise-$$(date +%Y%m%d-%H%M%S) $(BENCH_NOISE_ARGS)

# Sequential vs duet rounds of the same two 1-thread configurations (benchmarks/duet.py,
# docs/methods.md). BENCH_DUET_ARGS adds options, e.g. "--hog bursts" or "--b tf-2.14".
BENCH_DUET_ARGS ?=
bench-duet: install
	PYTHONPATH=. $(BIN)/python benchmarks/duet.py --out results/bench-duet-$$(date +%Y%m%d-%H%M%S) $(BENCH_DUET_ARGS)

report: install
	@test -n "$(RUN)" || (echo "usage: make report RUN=results/<run>" && exit 2)
	$(TFV) report $(RUN)

# `make test` runs every marker; set TFV_REQUIRE_CONTAINER=1 / TFV_REQUIRE_BROWSER=1
# to turn "skipped: no podman/chromium" into failures (CI does).
# The name is checked before `install` runs (prerequisites run left to right).
build-variant: _variant-name install
	$(TFV) variants build $(NAME)

_variant-name:
	@test -n "$(NAME)" || (echo "usage: make build-variant NAME=tf-2.18 (see: tfvariants variants)" >&2 && exit 2)

test: install
	TFV_REQUIRE_TF=1 $(BIN)/python -m pytest -o addopts="" -q -rs --durations=15

test-fast: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check tfvariants workloads tests benchmarks
	$(BIN)/ruff format --check tfvariants workloads tests benchmarks
	$(BIN)/mypy
	$(BIN)/hadolint builds/*/Dockerfile

# The same small compare twice, with the peak probe (its cache cleared) and with
# --no-peak: the cells' times and the ratio of step times (benchmarks/peak_aa.py).
bench-peak-aa: install
	PYTHONPATH=. $(BIN)/python benchmarks/peak_aa.py $(BENCH_PEAK_AA_ARGS)

# Not a test: what the serving harness itself can measure here (a few seconds).
bench-serve: install
	PYTHONPATH=. $(BIN)/python benchmarks/serve_ceiling.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache

# Image builds (build-pip, build-compiled, build-gpu) live with the Dockerfiles.
-include builds/builds.mk
