# calico_ops.lifecycle: the two commands are `make demo` and `make test` (see README.md).
# Everything they need is installed here: Python tooling into .venv (pinned), Go binaries into
# ~/.cache/calico_ops (built once from Go modules), nothing by hand.

SHELL := /bin/bash
# The controller's Python for .venv: the newest of 3.14, 3.13, 3.12 that runs here (PATH, then pyenv's versions):
# ansible-core 2.20 and 2.21 need 3.12 or later on the controller. `make PYTHON=/path/to/python3.12 venv` overrides.
PYTHON ?= $(shell tests/tools/find-python.sh 3.14 3.13 3.12)
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
COLLECTIONS := $(CURDIR)/.build/collections
COLLECTION_LINK := $(COLLECTIONS)/ansible_collections/calico_ops/lifecycle
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export PYTHONPATH := $(CURDIR)/tests
export ANSIBLE_NOCOLOR := 1
export PY_COLORS := 0

.PHONY: help venv collection binaries demo-binaries debian-packages cluster-up cluster-down cluster-env demo test test-prerequisites lint sanity unit \
	integration reliability molecule changelog build clean bench bench-footprint bench-switch bench-connectivity bench-fleet

help:
	@echo "make demo   - start the local control plane and run the eBPF install against it"
	@echo "make test   - lint, sanity, unit, integration, reliability and Molecule against the local control plane"
	@echo "make cluster-up / cluster-down / cluster-env - a control plane to poke at by hand"

# Every venv here is filled by uv, pinned below (pip installs only uv): the same pins as pip would install, in seconds
# rather than the minutes pip took (make test's prerequisites: 3.7 minutes with pip on 2026-12-06, mostly unpacking
# and byte-compiling the ansible package's files). $(1): the venv, $(2): what to install into it.
# Then compileall: uv, unlike pip, writes no .pyc at install, and where PYTHONDONTWRITEBYTECODE is set (this
# machine's environment sets it) Python never writes one either: every process then compiled every file it imported
# from source - ansible-playbook's start, each module process's typing_extensions and distro, ansible-lint, Molecule.
# Measured 2026-12-06 (60 tasks, CPU of the whole process tree): ansible.builtin.ping 23.3 s -> 15.9 s, objects_info
# 31.3 s -> 19.2 s, an empty play 1.33 s -> 0.6 s. Not the ansible package's collections (two thirds of .venv's
# files): Ansible's collection loader compiles those itself, and in the tests tests/tools/zipimport_cache.py keeps
# what it compiles. A file that does not compile (a package's Python 2 example) is left as it is.
UV_PIN := uv==0.13.9
define uv-install
	@$(1)/bin/pip install --quiet $(UV_PIN)
	@$(1)/bin/uv pip install --quiet --python $(1)/bin/python $(2)
	@$(1)/bin/python -m compileall -q -j 0 -x /ansible_collections/ \
		"$$($(1)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > /dev/null || true
endef

venv: $(VENV)/.installed $(VENV)/.zipimport-cache $(VENV)/.harness

# tests only: module processes of this venv keep zipimport's compiled code when CALICO_OPS_TEST_ZIPIMPORT_CACHE is
# set (tests/conftest.py and tests/run-checks.sh set it; nothing else does): tests/tools/zipimport_cache.py
$(VENV)/.zipimport-cache: tests/tools/zipimport_cache.py $(VENV)/.installed
	@site=$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
		cp tests/tools/zipimport_cache.py "$$site/_calico_ops_zipimport_cache.py" && \
		echo "import _calico_ops_zipimport_cache" > "$$site/_calico_ops_zipimport_cache.pth"
	@touch $@

# the local control plane harness (tests/localcp) on .venv's path: the tests and the benchmarks import it by its name,
# localcp, and `python -m localcp` runs from anywhere. A path entry (.venv/harness/localcp, a link to tests/localcp,
# named by a .pth), not pip's editable install: its import finder cost every Python process of .venv 14 ms at start
# (pathlib, glob and re imported by site.py; measured 2026-12-06: 30 ms to start .venv's Python, 20 ms after), and the
# tests start thousands (every module of every task, the pod runner's helpers in the nodes).
$(VENV)/.harness: tests/localcp/pyproject.toml $(VENV)/.installed
	@$(BIN)/pip uninstall --quiet --yes calico-ops-localcp 2>/dev/null || true
	@site=$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
		mkdir -p $(VENV)/harness && ln -sfn $(CURDIR)/tests/localcp $(VENV)/harness/localcp && \
		echo "$(VENV)/harness" > "$$site/_calico_ops_localcp.pth"
	@$(BIN)/python -c 'import localcp' || { echo "error: localcp is not importable from $(VENV)"; exit 1; }
	@touch $@

$(VENV)/.installed: requirements-dev.txt
	@[ -n "$(PYTHON)" ] && command -v $(PYTHON) >/dev/null || \
		{ echo "error: no Python 3.12 to 3.14 found (ansible-core 2.21 needs one on the controller)"; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' || \
		{ echo "error: Python >= 3.12 is needed for ansible 14 / ansible-core 2.21 (found $$($(PYTHON) --version))"; exit 1; }
	@echo "==> creating $(VENV) on $$($(PYTHON) --version) and installing the pinned Python tooling (requirements-dev.txt)"
	@rm -rf $(VENV)
	@$(PYTHON) -m venv $(VENV) || { echo "error: python venv failed (Debian: apt-get install python3-venv)"; exit 1; }
	$(call uv-install,$(VENV),-r requirements-dev.txt)
	@touch $@

collection: $(COLLECTION_LINK) $(COLLECTIONS)/ansible_collections/awx/awx/MANIFEST.json

$(COLLECTION_LINK):
	@mkdir -p $(dir $@)
	@ln -sfn $(CURDIR) $@

# awx.awx (requirements-awx.yml) for ansible-lint, galaxy-importer and the AWX job tests: Ansible 14 no longer carries it
$(COLLECTIONS)/ansible_collections/awx/awx/MANIFEST.json: tests/tools/awx-collection.sh $(VENV)/.installed
	@bash tests/tools/awx-collection.sh $(BIN)/pip $(COLLECTIONS)

binaries: venv debian-packages
	@echo "==> building (or finding) the local control plane's binaries in $${CALICO_OPS_CACHE:-~/.cache/calico_ops}"
	@$(BIN)/python -m localcp build

# what `make demo` runs: the control plane, the newest operator, kube-controllers, apiserver and the data plane
demo-binaries: venv debian-packages
	@echo "==> building (or finding) what the demo runs in $${CALICO_OPS_CACHE:-~/.cache/calico_ops} (cold: ~45 min on 2 cores, progress below)"
	@$(BIN)/python -m localcp build --only demo

# clang-19, libpcap-dev, ... for the data plane's build (tests/tools/debian-packages.sh says why each)
debian-packages:
	@bash tests/tools/debian-packages.sh

cluster-up: venv collection binaries
	@$(BIN)/python -m localcp up

cluster-down: venv
	@$(BIN)/python -m localcp down

cluster-env: venv
	@$(BIN)/python -m localcp env

demo: venv collection demo-binaries
	@bash tests/demo.sh

# make test runs of the matrix the oldest core's venv (sanity and units on ansible-core 2.16; .venv is the newest).
# What it needs is installed three at a time (the venvs are independent of each other; binaries waits for .venv).
test:
	@$(MAKE) --no-print-directory -j3 test-prerequisites
	@bash tests/run-checks.sh

test-prerequisites: venv collection binaries .build/venv-core-2.16/.installed importer-venv

lint: venv collection
	@bash tests/run-checks.sh lint

sanity: venv collection
	@bash tests/run-checks.sh sanity

unit: venv collection
	@bash tests/run-checks.sh unit

integration: venv collection binaries
	@bash tests/run-checks.sh integration

reliability: venv collection binaries
	@bash tests/run-checks.sh reliability

molecule: venv collection binaries
	@bash tests/run-checks.sh molecule

# Benchmarks (not part of `make test`): ours against the naive kubernetes.core loop, results in benchmarks/results/.
# Options through BENCH_ARGS, e.g. make bench BENCH_ARGS="--jobs preflight --sizes 100,1000 --naive-budget 600".
# benchmarks/ is a package run from here as modules (its layout: benchmarks/__init__.py); make bench's jobs reuse
# helpers of the integration tests, so make bench puts tests/integration on PYTHONPATH.
bench: venv collection binaries
	@PYTHONPATH=$(PYTHONPATH):$(CURDIR)/tests/integration $(BIN)/python -m benchmarks.run $(BENCH_ARGS)

# The real data plane's footprint per node (calico-node RSS, BPF maps, CPU at rest) and the time from the install's
# start to the first request answered through eBPF, for 3 and 10 nodes: benchmarks/results/footprint.md
bench-footprint: venv collection binaries
	@$(BIN)/python -m benchmarks.footprint $(BENCH_ARGS)

# data-plane switches under traffic, the collection's order against the documented one by hand (median of 3 runs)
bench-switch: venv collection binaries
	@$(BIN)/python -m benchmarks.switch $(BENCH_ARGS)

# The connectivity check's wall time on 3 and 10 nodes, 8 dials at a time against one: benchmarks/results/connectivity.md
bench-connectivity: venv collection binaries
	@$(BIN)/python -m benchmarks.connectivity $(BENCH_ARGS)

# fleet_rollout against a shell loop of install_ebpf over 5 control planes: benchmarks/results/fleet.md
bench-fleet: venv collection binaries
	@$(BIN)/python -m benchmarks.fleet $(BENCH_ARGS)

changelog: venv
	@$(BIN)/antsibull-changelog lint

build: venv
	@mkdir -p .build/dist
	@$(BIN)/ansible-galaxy collection build --force --output-path .build/dist .

clean:
	rm -rf .build tests/output

# ---- the ansible-core matrix (issues 20 and 35), ansible-test units, galaxy-importer: each extra tool in a venv of its
# own under .build, so its pins never meet those of .venv ------------------------------------------------------------
# The releases requires_ansible names (meta/runtime.yml) other than .venv's 2.21, each on the newest Python here that
# the core supports on the controller (ansible-core's support matrix): 2.16 and 2.17 run on 3.10-3.12, 2.18 and 2.19
# on 3.11-3.13, 2.20 (like 2.21) on 3.12-3.14.
MATRIX_CORES := 2.16 2.17 2.18 2.19 2.20
CORE_2.16 := 2.16.19
CORE_2.17 := 2.17.14
CORE_2.18 := 2.18.19
CORE_2.19 := 2.19.14
CORE_2.20 := 2.20.10
PYTHONS_2.16 := 3.12 3.11 3.10
PYTHONS_2.17 := 3.12 3.11 3.10
PYTHONS_2.18 := 3.13 3.12 3.11
PYTHONS_2.19 := 3.13 3.12 3.11
PYTHONS_2.20 := 3.14 3.13 3.12
MATRIX_VENVS := $(foreach c,$(MATRIX_CORES),.build/venv-core-$(c)/.installed)
IMPORTER_VENV := .build/venv-importer

.PHONY: matrix matrix-venvs units importer importer-venv

matrix-venvs: $(MATRIX_VENVS)

# ansible-core plus what the collection's modules import (the integration pass on the oldest core runs its
# ansible-playbook: tests/integration/conftest.py, CALICO_OPS_ANSIBLE_VENV)
.build/venv-core-%/.installed: tests/tools/find-python.sh
	@py=$$(tests/tools/find-python.sh $(PYTHONS_$*)) || exit 1; \
		echo "==> creating .build/venv-core-$* with ansible-core $(CORE_$*) on $$($$py --version) (ansible-test sanity and units of the matrix)"; \
		rm -rf .build/venv-core-$* && $$py -m venv .build/venv-core-$*
	$(call uv-install,.build/venv-core-$*,ansible-core==$(CORE_$*) kubernetes PyYAML jmespath)
	@touch $@

# ansible-test sanity and units on every core of requires_ansible: 2.16 to 2.20 from their venvs, 2.21 from .venv
# (make test: 2.21 and 2.16 only)
matrix: venv collection matrix-venvs
	@bash tests/run-checks.sh matrix

units: venv collection
	@bash tests/run-checks.sh units

importer-venv: $(IMPORTER_VENV)/.installed

$(IMPORTER_VENV)/.installed: tests/importer/requirements.txt
	@echo "==> creating $(IMPORTER_VENV) with galaxy-importer (tests/importer/requirements.txt)"
	@rm -rf $(IMPORTER_VENV) && $(PYTHON) -m venv $(IMPORTER_VENV)
	$(call uv-install,$(IMPORTER_VENV),-r tests/importer/requirements.txt)
	@touch $@

# galaxy-importer on the tarball of `make build`
importer: venv importer-venv
	@bash tests/run-checks.sh importer
