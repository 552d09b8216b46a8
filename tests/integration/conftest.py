"""How `make test` spreads the integration tests (and the fault matrix of tests/reliability/test_faults.py, which
runs in the same pool) over pytest-xdist workers (``--dist loadgroup``).

Each worker has a control plane of its own. A file whose tests share a module-scoped fixture (a second,
kubeadm-shaped control plane in test_install_ebpf, Calico's CRDs, AWX templates) stays on one worker as one group;
the tests of the files listed in ``PER_TEST`` (function-scoped fixtures only, each test installs and removes what it
needs) are groups of their own, so the longest file is no longer one worker's tail. Groups are handed out
longest first: ``WEIGHTS`` holds rough seconds per test or file, measured with ``--durations`` (2026-11-25, 3 workers
on 2 CPUs; some again on 2026-12-06); they decide only the order, never a result. A test not listed counts ``DEFAULT_WEIGHT``; a parametrized
case may have a weight of its own (``name[id]``). make test passes ``--no-loadscope-reorder``: xdist's default
reorders the groups by their number of tests, most first, which undoes this order (measured 2026-11-26: the
heaviest single tests ran last, on one worker, while the others idled).

Without xdist (a plain ``pytest tests/integration``) the order is this one, longest first, on one control plane.

The oldest ansible-core of requires_ansible runs the main jobs' tests (mark ``oldest_core``: preflight, install_ebpf,
the upgrade of each install method, owner_references; issue 35) in the same pool:
with ``CALICO_OPS_OLDEST_CORE_VENV`` naming its venv (tests/run-checks.sh step integration: .build/venv-core-2.16),
those tests run that venv's ``ansible-playbook`` and modules (localcp/fixtures.py ``ansible_venv``), the others
.venv's. Until 2026-12-06 they ran twice, once in the pool on the newest core and again in a step of their own
(``oldest_core``, 265 to 796 s beside reliability and Molecule); the newest core runs the same jobs in the fault
matrix (tests/reliability/test_faults.py: install_ebpf, the operator, Helm and manifest upgrades, owner_references,
each to the end and again) and in the other tests of these files. ``bash tests/run-checks.sh oldest_core`` runs
only them.
"""

import os

import pytest

from localcp.fixtures import ANSIBLE_VENV_ENV

OLDEST_CORE_VENV_ENV = "CALICO_OPS_OLDEST_CORE_VENV"


@pytest.fixture(autouse=True)
def _ansible_core_under_test(request, monkeypatch):
    """The oldest core's venv for the tests marked ``oldest_core`` when ``CALICO_OPS_OLDEST_CORE_VENV`` names it
    (before any fixture of the test's own runs a playbook: autouse fixtures come first in their scope)."""
    venv = os.environ.get(OLDEST_CORE_VENV_ENV)
    if venv and request.node.get_closest_marker("oldest_core"):
        monkeypatch.setenv(ANSIBLE_VENV_ENV, venv)
        request.node.user_properties.append(("ansible_core_venv", venv))

PER_TEST = {"test_upgrade.py", "test_ebpf_paths.py", "test_faults.py", "test_datastore_migration.py"}

DEFAULT_WEIGHT = 30

# whole files (one group each)
FILE_WEIGHTS = {
    "test_install_ebpf.py": 1900,
    # a data-plane control plane of its own: install_ebpf with the real calico-node, then traffic (2026-11-28: 160 s;
    # 2026-12-06 with issue 51's DNS cases, a calico-node that cannot start and its restore: about 550 s alone,
    # setup 252 s in make test's pool), so it starts early rather than as the pool's tail
    "test_dataplane.py": 800,
    # a data-plane control plane of its own with the real kube-proxy: six switches under traffic, each calico-node
    # rollout one node at a time behind Felix's readiness (2026-11-28: ~600 s; 2026-12-06, in make test: ~1250 s),
    # and issue 51's broken networks (a rollback with every Felix hung, a refused enable_ebpf: ~400 s alone)
    "test_switch_under_traffic.py": 1650,
    "test_awx_jobs.py": 900,
    # four control planes of its own at once: a rollout of install_ebpf in check mode, then halted by a degraded
    # cluster, a re-run, five bad-input runs
    "test_fleet.py": 510,
    "test_disable_ebpf.py": 420,
    "test_kube_proxy.py": 450,
    "test_owner_references.py": 450,
    "test_rbac.py": 350,
    "test_operator_migration.py": 450,
    "test_host_endpoint_migration.py": 350,
    "test_services_endpoint.py": 300,
    "test_calico_facts.py": 200,
    "test_preflight.py": 200,
    "test_packaging.py": 100,
    "test_control_plane.py": 60,
    "test_localcp_failures.py": 60,
}

# tests of the PER_TEST files (name without parameters)
TEST_WEIGHTS = {
    # tests/reliability/test_faults.py: every case runs its job three times on two control planes of its own
    # (per case: 2026-11-26, loaded; the default for a case not listed)
    "test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run": 400,
    "test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run[install_ebpf-kube-apiserver]": 560,
    "test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run[upgrade_operator-kube-apiserver]": 560,
    "test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run[upgrade_helm-kube-apiserver]": 510,
    "test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run[enable_ebpf-kube-apiserver]": 365,
    "test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run[upgrade_manifest-kube-apiserver]": 275,
    "test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run[owner_references-etcd]": 220,
    "test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run[host_endpoint_migration-kube-apiserver]": 150,
    "test_a_rerun_after_a_fault_mid_job_ends_as_an_undisturbed_run[kube_proxy_enabled-kube-apiserver]": 130,
    "test_install_ebpf_operator_path_bootstrap_and_kube_proxy_by_the_operator": 610,
    "test_operator_upgrade": 420,
    "test_enable_ebpf_switches_an_iptables_install_and_the_operator_rerenders": 380,
    "test_helm_upgrade": 410,
    "test_a_rerun_after_an_interruption_finishes": 340,
    "test_a_changed_endpoint_reaches_calico_node_through_the_operator_restart": 330,
    "test_alp_allow_all_upgrade_and_calicoctl_config": 290,
    "test_post_check_waits_for_cluster_information": 200,
    "test_install_fails_quoting_the_operators_degraded_status": 200,
    "test_rollout_timeout_quotes_the_daemonset_status": 220,
    "test_real_calicoctl_reads_the_etcd_datastore_after_the_upgrade": 150,
    "test_the_mix_the_operator_refuses_is_refused_before_any_write": 120,
    "test_manifest_upgrade": 110,
    # test_datastore_migration.py (2026-12-06, its four tests on 3 workers)
    "test_migrates_etcd_to_the_kubernetes_datastore_in_the_documented_order": 70,
    "test_a_rerun_after_an_import_cut_short_removes_it_and_finishes": 180,
    "test_abort_after_the_switch_puts_calico_back_on_etcd_unlocked": 200,
    "test_refuses_calico_resources_it_did_not_import_before_any_write": 20,
}


def group_of(nodeid):
    """The group of a test id: its file, or the test itself in a ``PER_TEST`` file."""
    nodeid = nodeid.split("@")[0]
    path = nodeid.split("::")[0]
    return nodeid if path.rsplit("/", 1)[-1] in PER_TEST else path


def _weight(item):
    if item.path.name in PER_TEST:
        return TEST_WEIGHTS.get(item.name, TEST_WEIGHTS.get(item.originalname or item.name, DEFAULT_WEIGHT))
    return FILE_WEIGHTS.get(item.path.name, DEFAULT_WEIGHT * 5)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` hands out the groups of ``group_of`` (xdist's own ``xdist_group`` marks do nothing with
    pytest 9: the test id suffix xdist relies on is not kept), in the order of the collection below."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return group_of(nodeid)

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """Groups longest first (equal weights keep pytest's order); within a group, pytest's order."""
    here = [i for i in items if "integration" in i.path.parts or i.path.name in PER_TEST]
    if not here:
        return
    groups = {}
    for item in here:
        groups.setdefault(group_of(item.nodeid), (_weight(item), []))[1].append(item)  # a file group: its weight
    ordered = sorted(groups.values(), key=lambda g: -g[0])
    chosen = set(id(i) for i in here)
    others = [i for i in items if id(i) not in chosen]
    items[:] = [i for _w, members in ordered for i in members] + others


def pytest_terminal_summary(terminalreporter):
    """The probers' tables of the switches under traffic (test_switch_under_traffic.py, ``record_property("prober",
    ...)``), at the end of the run's output whatever the verbosity: the counts are a result, not a log."""
    seen = []
    for key in ("passed", "failed", "error"):
        for report in terminalreporter.stats.get(key, []):
            for name, value in getattr(report, "user_properties", ()) or ():
                if name == "prober" and report.when == "call":
                    seen.append((report.nodeid.split("::")[-1], value))
    if seen:
        terminalreporter.section("switches under traffic: what the probers counted")
        for test, text in seen:
            terminalreporter.write_line(test)
            terminalreporter.write_line(text)
