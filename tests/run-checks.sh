#!/usr/bin/env bash
# Run the project's checks; with no argument, all of them (what `make test` and CI run).
# Reliability tests share one local control plane; integration workers and Molecule scenarios start their own.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/.venv/bin
export PATH="$BIN:$PATH"
export PYTHONPATH="$ROOT/tests"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections"
# module processes compile the AnsiballZ payload's source once per source text, not on every task (tests only:
# tests/tools/zipimport_cache.py, which `make venv` installs into .venv)
export CALICO_OPS_TEST_ZIPIMPORT_CACHE="${CALICO_OPS_TEST_ZIPIMPORT_CACHE:-$ROOT/.build/zipimport-cache}"
steps=("$@")
# The static checks first, one after another (not beside the integration pool: measured 2026-11-26, the pool alone
# keeps both CPUs busy - vmstat idle ~6% - so nothing is gained, and galaxy-importer's own 180 s limit on its
# ansible-lint call was hit under that load); then the integration pool; then reliability beside Molecule.
# `bash tests/run-checks.sh static` runs the static ones as one step.
# Of the ansible-core matrix (tests/README, README "Supported ansible-core"), make test runs the newest and the
# oldest core: `sanity` and `units` (ansible-test units) on .venv's 2.21, `matrix_reduced` sanity and units on 2.16.
# `unit` (pytest tests/unit in .venv) runs the same tests as `units` on the same core, so only `make unit` runs it;
# `project` is pytest tests/project (the playbooks, EE files, inventories and tools of the repository).
# The integration pool runs the main jobs' tests with the oldest core's ansible-playbook (issue 35; step `oldest_core`
# runs only them). Reliability and Molecule run side by side: each mostly waits on controllers, and Molecule's
# scenarios run three at a time (CI's budget is 90 minutes)
# The static checks run in two lanes side by side (static_a: lint, sanity, project; static_b: changelog, importer,
# matrix_reduced, units; about 4 minutes each): each check is mostly one process on one CPU, so one lane alone left the other CPU idle for
# the whole static part (tests/README.md has each step's time).
[ ${#steps[@]} -gt 0 ] || steps=(static_a+static_b integration reliability+molecule)

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
  echo "==> starting the local control plane (shared by the reliability tests)"
  local envs
  envs=$("$BIN/python" -m localcp up) || { echo "error: the local control plane did not start"; return 1; }
  eval "$envs"
  started_cp=$LOCALCP_RUN_DIR
}

step_lint() {
  ansible-lint --version | head -1
  ansible-lint
}

# lint, changelog, sanity, unit, units, importer and matrix_reduced one after another (each reported); fails when any
# failed, after running all of them. static_a and static_b are its two halves, which make test runs side by side.
step_static() {
  static_lane lint changelog sanity units project importer matrix_reduced
}
step_static_a() {
  static_lane lint sanity project
}
step_static_b() {
  static_lane changelog importer matrix_reduced units
}
static_lane() {
  local s rc=0 start results=()
  for s in "$@"; do
    echo "---------- $s"
    start=$(date +%s)
    if "step_$s"; then results+=("$s: ok ($(( $(date +%s) - start ))s)")
    else results+=("$s: FAILED ($(( $(date +%s) - start ))s)"); rc=1; fi
  done
  printf '%s\n' "${results[@]}"
  return $rc
}

step_changelog() {
  antsibull-changelog lint
}

# A copy of the collection at <root>/ansible_collections/calico_ops/lifecycle, where ansible-test needs it: what
# the collection ships plus tests/unit and tests/sanity (the local control plane harness, the pytest integration,
# reliability and project suites are not part of the collection: build_ignore), with kubernetes.core beside it
# (from the ansible package in .venv), as its own git repository (ansible-test lists files with git).
collection_copy() {
  local top=$1 dest=$1/ansible_collections/calico_ops/lifecycle
  rm -rf "$top" && mkdir -p "$dest"
  if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$ROOT" ls-files -co --exclude-standard 2>/dev/null
  else
    (cd "$ROOT" && find . -type f -not -path './.venv/*' -not -path './.build/*' -not -path './.git/*' | sed 's|^\./||')
  fi | grep -vE '^(tests/localcp/|tests/integration/|tests/reliability/|tests/project/|tests/conftest.py|tests/run-checks.sh|tests/demo.sh|tests/tools/|benchmarks/|\.ci/|Makefile|pytest.ini|requirements-dev.txt)' \
     | while IFS= read -r f; do [ -f "$ROOT/$f" ] && mkdir -p "$dest/$(dirname "$f")" && cp -p "$ROOT/$f" "$dest/$f"; done
  local site
  site=$("$BIN/python" -c 'import ansible_collections.kubernetes.core as k, os; print(os.path.dirname(os.path.dirname(k.__path__[0])))')
  cp -a "$site/kubernetes" "$top/ansible_collections/kubernetes"
  (cd "$dest" && git init -q . && git add -A >/dev/null 2>&1)
}

# ansible-test <command> --venv on this machine's Python, with the ansible-test of the venv in $1 (.venv: the
# pinned ansible-core; .build/venv-core-<x.y>: the matrix), in a copy of its own under .build/ansible-test.
ansible_test_in_copy() {
  local venv=$1 cmd=$2 label=$3; shift 3
  local top=$ROOT/.build/ansible-test/$label-$cmd
  collection_copy "$top" || return 1
  "$venv/bin/python" tests/tools/ansible_test_pip_bootstrap.py || return 1
  echo "ansible-core $("$venv/bin/python" -c 'import ansible; print(ansible.__version__)'): ansible-test $cmd"
  (cd "$top/ansible_collections/calico_ops/lifecycle" && \
   "$venv/bin/ansible-test" "$cmd" --venv --python "$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
     --color no "$@" 2>&1)
}

step_sanity() {
  ansible_test_in_copy "$ROOT/.venv" sanity core-pinned
}

step_unit() {
  # tests/unit: the collection's unit tests with pytest in .venv (make test runs them with ansible-test: step units),
  # then tests/project. Two runs: a project test that loads ansible-core's collection finder in the process would
  # change how tests/unit's imports of the collection resolve.
  pytest tests/unit -q && step_project
}

step_project() {
  pytest tests/project -q
}

step_integration() {
  # Tests are spread over pytest-xdist workers in groups, longest first (tests/integration/conftest.py: a file with
  # module fixtures is one group, test_upgrade's and test_ebpf_paths' tests one group each); each worker starts
  # a control plane of its own (the session fixture `cluster`, LOCALCP_RUN_DIR unset), so tests that touch
  # cluster-wide singletons (Installation default, kube-proxy, CRDs) never meet. CALICO_OPS_TEST_WORKERS
  # overrides the count (default: one more than the CPUs, 3 to 4).
  local workers=${CALICO_OPS_TEST_WORKERS:-}
  if [ -z "$workers" ]; then
    # one more worker than CPUs (3 to 4): most of a test's time is spent waiting on controllers (the real Tigera
    # operator's reconcile, calico-kube-controllers, kwok), not on this machine's CPUs
    workers=$(( $(nproc 2>/dev/null || echo 2) + 1 ))
    [ "$workers" -lt 3 ] && workers=3
    [ "$workers" -gt 4 ] && workers=4
  fi
  local oldest
  oldest=$(oldest_core_venv) || return 1
  echo "pytest-xdist: $workers workers, a control plane each; the tests marked oldest_core on $("$oldest/bin/ansible" --version | head -1)"
  # the fault matrix (tests/reliability/test_faults.py: every case on two control planes of its own) runs in this
  # pool too, its cases first (the longest), so no suite waits on another's tail
  # --no-loadscope-reorder: xdist would otherwise hand out the groups by their number of tests (most first), which
  # put the heaviest single-test groups (the fault matrix, the upgrades) at the end of the run, one worker busy and
  # the others idle; the order of tests/integration/conftest.py (longest first) is kept instead
  env -u LOCALCP_RUN_DIR CALICO_OPS_OLDEST_CORE_VENV="$oldest" \
    pytest tests/integration tests/reliability/test_faults.py -q -m integration -n "$workers" \
    --dist loadgroup --no-loadscope-reorder --durations=40
}

# The main jobs' tests (preflight, install_ebpf, upgrade of each install method, owner_references) with the oldest
# ansible-core of requires_ansible running the playbooks and the modules: the floor proven against the control plane,
# not only by sanity and units (issue 35). They run in the integration pool (mark oldest_core,
# tests/integration/conftest.py); this step runs only them, two workers, a control plane each.
oldest_core_venv() {
  local venv=$ROOT/.build/venv-core-2.16
  [ -x "$venv/bin/ansible-playbook" ] || { echo "error: $venv missing (make .build/venv-core-2.16/.installed)" >&2; return 1; }
  echo "$venv"
}

step_oldest_core() {
  local venv
  venv=$(oldest_core_venv) || return 1
  echo "ansible-playbook of $("$venv/bin/ansible" --version | head -1) on $("$venv/bin/python" --version)"
  env -u LOCALCP_RUN_DIR CALICO_OPS_OLDEST_CORE_VENV="$venv" pytest tests/integration -q -m "integration and oldest_core" \
    -n 2 --dist loadgroup --no-loadscope-reorder
}

step_reliability() {
  # bad input, faults (the API server stopped mid-job, on control planes of the tests' own), least privilege,
  # secrets, check mode: tests/reliability (issue 10); expected failures (-rx) are listed with their reasons
  need_cluster || return 1
  pytest tests/reliability -q -m integration -rx --ignore tests/reliability/test_faults.py  # faults: in integration's pool
}

step_molecule() {
  if ! ls extensions/molecule/*/molecule.yml >/dev/null 2>&1; then
    echo "no Molecule scenarios yet"
    return 0
  fi
  # Each scenario on a control plane of its own (create.yml starts it, destroy.yml stops it; about 5 s): the
  # scenarios install and remove the real Tigera operator and Calico's CRDs, and on one shared control plane what
  # one scenario's cleanup leaves (seen: install_ebpf after enable_ebpf and host_endpoints met TigeraStatus
  # ippools Degraded, "no matches for kind IPPool in version projectcalico.org/v3") decided the next one's result.
  # So they can also run side by side: CALICO_OPS_MOLECULE_JOBS at a time (default 3 since 2026-12-06: beside the
  # reliability suite, two at a time made Molecule the step's tail by 400 s, 915 s against reliability's 514 s; three
  # at a time took 759 s, reliability 639 s: the step 2.6 minutes shorter; most of a scenario's time is
  # spent waiting on the operator and kwok), each `molecule test -s <scenario>` into a log of its own, printed
  # whole when it ends. Molecule's own state and Ansible's temporary files under .build, not in the user's
  # ~/.ansible.
  local jobs=${CALICO_OPS_MOLECULE_JOBS:-3} logs=$ROOT/.build/molecule-logs scenarios=() s
  for s in extensions/molecule/*/molecule.yml; do s=${s%/molecule.yml}; scenarios+=("${s##*/}"); done
  [ -n "${CALICO_OPS_MOLECULE_SCENARIOS:-}" ] && read -r -a scenarios <<< "$CALICO_OPS_MOLECULE_SCENARIOS"
  rm -rf "$logs" && mkdir -p "$logs"
  echo "molecule: ${#scenarios[@]} scenarios, $jobs at a time (${scenarios[*]})"
  printf '%s\n' "${scenarios[@]}" | xargs -P "$jobs" -I{} bash -c '
    s=$1; logs=$2; t0=$(date +%s)
    if (cd extensions && env -u LOCALCP_RUN_DIR ANSIBLE_HOME="$3/.build/ansible-home" molecule test -s "$s") \
        > "$logs/$s.log" 2>&1; then r=ok; else r=FAILED; fi
    echo "$r $(( $(date +%s) - t0 ))s" > "$logs/$s.result"
    echo "-- molecule $s: $r ($(( $(date +%s) - t0 ))s)"' _ {} "$logs" "$ROOT"
  local failed_scenarios=()
  for s in "${scenarios[@]}"; do
    echo; echo "---------- molecule scenario $s ($(cat "$logs/$s.result" 2>/dev/null || echo 'did not run'))"
    cat "$logs/$s.log" 2>/dev/null
    grep -q '^ok ' "$logs/$s.result" 2>/dev/null || failed_scenarios+=("$s")
  done
  echo
  for s in "${scenarios[@]}"; do echo "molecule $s: $(cat "$logs/$s.result" 2>/dev/null || echo 'did not run')"; done
  [ ${#failed_scenarios[@]} -eq 0 ] || { echo "failed scenarios: ${failed_scenarios[*]}"; return 1; }
}

# ---- issue 20: ansible-test units, the ansible-core matrix, galaxy-importer, ansible-builder create ----------------
step_units() {
  # tests/unit the ansible-test way (its own venv with tests/unit/requirements.txt), on the pinned ansible-core
  ansible_test_in_copy "$ROOT/.venv" units core-pinned
}

# The ansible-core releases of requires_ansible, each from its venv under .build (make matrix-venvs), 2.21 from .venv:
# CALICO_OPS_MATRIX, a list of <core>:<command>, default every core with sanity and units (make matrix);
# make test runs the reduced set named in the README (the oldest here, the newest in steps sanity and units).
MATRIX_FULL="2.16:sanity 2.16:units 2.17:sanity 2.17:units 2.18:sanity 2.18:units 2.19:sanity 2.19:units
2.20:sanity 2.20:units 2.21:sanity 2.21:units"
step_matrix() {
  local item core cmd failed_items=() results=()
  for item in ${CALICO_OPS_MATRIX:-$MATRIX_FULL}; do
    core=${item%%:*}; cmd=${item#*:}
    local venv=$ROOT/.build/venv-core-$core t0
    [ "$core" = "$("$BIN/python" -c 'import ansible; print(ansible.__version__.rsplit(".", 1)[0])')" ] && venv=$ROOT/.venv
    [ -x "$venv/bin/ansible-test" ] || { echo "error: $venv missing (make matrix-venvs)"; return 1; }
    echo "---------- ansible-core $core: $cmd"
    t0=$(date +%s)
    if ansible_test_in_copy "$venv" "$cmd" "core-$core"; then
      results+=("$core $cmd: ok ($(( $(date +%s) - t0 ))s)")
    else
      results+=("$core $cmd: FAILED ($(( $(date +%s) - t0 ))s)"); failed_items+=("$item")
    fi
  done
  printf '%s\n' "${results[@]}"
  [ ${#failed_items[@]} -eq 0 ]
}

# what make test runs of the matrix beyond .venv's core (the whole of it took 16.5 minutes here): sanity and
# the unit tests on the oldest ansible-core of requires_ansible
step_matrix_reduced() {
  CALICO_OPS_MATRIX=${CALICO_OPS_MATRIX:-2.16:sanity 2.16:units} step_matrix
}

step_importer() {
  # galaxy-importer (what Galaxy and Automation Hub run on upload: ansible-doc of every plugin, ansible-lint with the
  # production profile, the changelog, role READMEs, metadata) on the tarball of `make build`, from its own venv.
  # Its ansible-doc and ansible-lint see only the collection; kubernetes.core (the dependency of galaxy.yml: the
  # modules' shared doc fragment) and awx.awx (the optional one of requirements-awx.yml: the modules of
  # playbooks/awx/configure.yml; `make collection` puts it under .build/collections) are put on its Python path, where ansible-core finds collections. Fails on any
  # ERROR or WARNING line of its log.
  local venv=$ROOT/.build/venv-importer work=$ROOT/.build/importer tarball
  [ -x "$venv/bin/python" ] || { echo "error: $venv missing (make importer-venv)"; return 1; }
  rm -rf "$work" && mkdir -p "$work/tmp" "$work/home" "$work/dist" "$work/deps/ansible_collections" || return 1
  ansible-galaxy collection build --force --output-path "$work/dist" "$ROOT" || return 1
  tarball=$(ls "$work"/dist/*.tar.gz)
  local site
  site=$("$BIN/python" -c 'import ansible_collections.kubernetes.core as k, os; print(os.path.dirname(os.path.dirname(k.__path__[0])))')
  cp -a "$site/kubernetes" "$work/deps/ansible_collections/kubernetes"
  cp -a "$ROOT/.build/collections/ansible_collections/awx" "$work/deps/ansible_collections/awx"
  (cd "$work" && env -u ANSIBLE_COLLECTIONS_PATH HOME="$work/home" PATH="$venv/bin:/usr/bin:/bin" PYTHONPATH="$work/deps" \
     GALAXY_IMPORTER_TMP_ROOT_DIR="$work/tmp" GALAXY_IMPORTER_ANSIBLE_LOCAL_TMP="$work/tmp/ansible" \
     "$venv/bin/python" -m galaxy_importer.main "$tarball" > "$work/importer.log" 2>&1)
  local rc=$?
  grep -vE '^(INFO: *)?$' "$work/importer.log" | grep -vE '^(Loading |Finding content|Getting doc strings)' || true
  echo "galaxy-importer exit $rc; log: $work/importer.log"
  if grep -nE '^(ERROR|WARNING)|error|warning' "$work/importer.log" | grep -vE '^[0-9]+:(Loading|INFO)'; then
    echo "error: galaxy-importer reported the lines above"; return 1
  fi
  [ $rc -eq 0 ]
}

# A step named a+b runs the steps a and b side by side (each into a log of its own, printed whole when both end):
# make test runs reliability (on one shared control plane) beside Molecule (a control plane per scenario), both
# mostly waiting on controllers rather than on this machine's CPUs.
run_step() {
  local s=$1 start
  echo
  echo "==================== $s ===================="
  start=$(date +%s)
  if "step_$s"; then
    echo "---- $s: ok ($(( $(date +%s) - start ))s)"
  else
    echo "---- $s: FAILED ($(( $(date +%s) - start ))s)"; return 1
  fi
}

# every step's output is kept in a log of its own, from which the summary at the end quotes the failures
step_logs=$ROOT/.build/step-logs
rm -rf "$step_logs" && mkdir -p "$step_logs"

# What a failed step said about its failures, repeated after everything else (CI shows the end of a long output):
# pytest's FAILED/ERROR lines and its summary line, Molecule's failed scenarios and tasks, or else the log's tail.
failure_summary() {
  local name=$1 log=$step_logs/$1.log lines
  echo "---------- why $name failed (from $log)"
  # (not Ansible's "FAILED - RETRYING" lines of a wait that went on to pass)
  lines=$(grep -E '^(FAILED|ERROR) |^=+ .*(failed|error).* =+$|^-- molecule .*: FAILED|^failed scenarios:|^fatal: |^[a-z_ ]+: FAILED|^error: |Timeout|^E +[A-Za-z]*(Error|Exception|assert)|\[localcp\] up failed' "$log" 2>/dev/null | grep -v '^FAILED - RETRYING' | cut -c1-400 | tail -60)
  if [ -n "$lines" ]; then echo "$lines"; else tail -30 "$log" 2>/dev/null | cut -c1-400; fi
  # a task's failure is printed on the lines after its "fatal:" (its msg, the command's stderr): the last few, whole
  if grep -q '^fatal: ' "$log" 2>/dev/null; then
    echo "---------- the last failed tasks of $name, with what they printed"
    grep -A12 '^fatal: ' "$log" | cut -c1-400 | tail -40
  fi
}

for group in "${steps[@]}"; do
  IFS=+ read -r -a members <<< "$group"
  # a control plane the steps share is started here, in this shell (a step runs in a subshell of its own, and the
  # members of a group side by side: need_cluster in each would race, and the cleanup would not know of it)
  for m in "${members[@]}"; do [ "$m" = reliability ] && { need_cluster || true; }; done
  if [ ${#members[@]} -eq 1 ]; then
    # printed as it runs, and kept for the summary of failures at the end
    if run_step "$group" 2>&1 | tee "$step_logs/$group.log"; then passed=$((passed + 1))
    else failed=$((failed + 1)); failed_names+=("$group"); fi
    continue
  fi
  echo
  echo "==================== ${members[*]} (side by side) ===================="
  pids=()
  for m in "${members[@]}"; do
    run_step "$m" > "$step_logs/$m.log" 2>&1 & pids+=($!)
    echo "started $m (log: $step_logs/$m.log)"
  done
  for i in "${!members[@]}"; do
    if wait "${pids[$i]}"; then rc=0; else rc=1; fi
    cat "$step_logs/${members[$i]}.log"
    if [ $rc -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names+=("${members[$i]}"); fi
  done
done
echo
for name in "${failed_names[@]}"; do failure_summary "$name"; done
[ $failed -eq 0 ] || echo "failed checks: ${failed_names[*]}"
echo "checks: $passed passed, $failed failed"
[ $failed -eq 0 ]
