#!/usr/bin/env bash
# Run the project's checks; with no argument, all of them (what `make test` and CI run).
# One local control plane serves the integration tests and the Molecule scenarios of a run.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/.venv/bin
export PATH="$BIN:$PATH"
export PYTHONPATH="$ROOT/tests"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(lint changelog sanity unit integration reliability molecule)

passed=0; failed=0; failed_names=()
started_cp=""

cleanup() {
  if [ -n "$started_cp" ]; then
    echo "==> stopping the local control plane"
    "$BIN/python" -m localcp down --dir "$started_cp" || true
  fi
}
trap cleanup EXIT

need_cluster() {
  if [ -n "${LOCALCP_RUN_DIR:-}" ] && [ -f "$LOCALCP_RUN_DIR/state.json" ]; then
    return 0
  fi
  echo "==> starting the local control plane (shared by integration tests and Molecule)"
  local envs
  envs=$("$BIN/python" -m localcp up) || { echo "error: the local control plane did not start"; return 1; }
  eval "$envs"
  started_cp=$LOCALCP_RUN_DIR
}

step_lint() {
  ansible-lint --version | head -1
  ansible-lint
}

step_changelog() {
  antsibull-changelog lint
}

step_sanity() {
  # ansible-test needs the collection at .../ansible_collections/<namespace>/<name>. The copy holds what the
  # collection ships (plus tests/unit and tests/sanity); the local control plane harness and the pytest
  # integration suites are not part of the collection (build_ignore) and are checked by ansible-lint/pytest.
  local dest=$ROOT/.build/sanity/ansible_collections/calico_ops/lifecycle
  rm -rf "$ROOT/.build/sanity" && mkdir -p "$dest"
  if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$ROOT" ls-files -co --exclude-standard 2>/dev/null
  else
    (cd "$ROOT" && find . -type f -not -path './.venv/*' -not -path './.build/*' -not -path './.git/*' | sed 's|^\./||')
  fi | grep -vE '^(tests/localcp/|tests/integration/|tests/reliability/|tests/conftest.py|tests/run-checks.sh|tests/demo.sh|tests/tools/|benchmarks/|\.ci/|Makefile|pytest.ini|requirements-dev.txt)' \
     | while IFS= read -r f; do [ -f "$ROOT/$f" ] && mkdir -p "$dest/$(dirname "$f")" && cp -p "$ROOT/$f" "$dest/$f"; done
  # dependencies (kubernetes.core) beside it, from the ansible package in .venv
  local site
  site=$("$BIN/python" -c 'import ansible_collections.kubernetes.core as k, os; print(os.path.dirname(os.path.dirname(k.__path__[0])))')
  cp -a "$site/kubernetes" "$ROOT/.build/sanity/ansible_collections/kubernetes"
  "$BIN/python" tests/tools/ansible_test_pip_bootstrap.py || return 1
  (cd "$dest" && git init -q . && git add -A >/dev/null 2>&1; \
   ansible-test sanity --venv --python "$("$BIN/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
     --color no 2>&1)
}

step_unit() {
  pytest tests/unit -q
}

step_integration() {
  # Test files are spread over pytest-xdist workers (whole files together: module fixtures); each worker starts
  # a control plane of its own (the session fixture `cluster`, LOCALCP_RUN_DIR unset), so tests that touch
  # cluster-wide singletons (Installation default, kube-proxy, CRDs) never meet. CALICO_OPS_TEST_WORKERS
  # overrides the count (default: the CPUs, 2 to 4).
  local workers=${CALICO_OPS_TEST_WORKERS:-}
  if [ -z "$workers" ]; then
    workers=$(nproc 2>/dev/null || echo 2)
    [ "$workers" -lt 2 ] && workers=2
    [ "$workers" -gt 4 ] && workers=4
  fi
  echo "pytest-xdist: $workers workers, a control plane each"
  env -u LOCALCP_RUN_DIR pytest tests/integration -q -m integration -n "$workers" --dist loadfile
}

step_reliability() {
  # bad input, faults (the API server stopped mid-job, on control planes of the tests' own), least privilege,
  # secrets, check mode: tests/reliability (issue 10); expected failures (-rx) are listed with their reasons
  need_cluster || return 1
  pytest tests/reliability -q -m integration -rx
}

step_molecule() {
  if ! ls extensions/molecule/*/molecule.yml >/dev/null 2>&1; then
    echo "no Molecule scenarios yet"
    return 0
  fi
  need_cluster || return 1
  # Molecule's own state and Ansible's temporary files under .build, not in the user's ~/.ansible
  (cd extensions && ANSIBLE_HOME="$ROOT/.build/ansible-home" molecule test --all)
}

for s in "${steps[@]}"; do
  echo
  echo "==================== $s ===================="
  start=$(date +%s)
  if "step_$s"; then
    passed=$((passed + 1)); echo "---- $s: ok ($(( $(date +%s) - start ))s)"
  else
    failed=$((failed + 1)); failed_names+=("$s"); echo "---- $s: FAILED ($(( $(date +%s) - start ))s)"
  fi
done
echo
[ $failed -eq 0 ] || echo "failed checks: ${failed_names[*]}"
echo "checks: $passed passed, $failed failed"
[ $failed -eq 0 ]
