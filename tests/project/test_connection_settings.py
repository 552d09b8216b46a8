"""A cluster's connection reaches every module as module options, never through the environment (issue 51, item 6).

A play's or task's ``environment:`` is put by ansible-core on the command line of each task's process
(``/bin/sh -c 'K8S_AUTH_API_KEY=... python ...'``): shown at ``-vvv`` and in ``/proc/<pid>/cmdline``. So:

* no play, block or task of the playbooks and roles has an ``environment`` (the Molecule scenarios' stand-in
  cluster aside: extensions/ is not the collection);
* every ``module_defaults`` of the action group ``calico_ops.lifecycle.k8s`` is the one expression that maps a fleet
  host's ``calico_k8s_auth`` (and the role's kubeconfig and context) to the options (filter ``k8s_auth_options``);
* every kubernetes.core task hides its result when a token is given: kubernetes.core's action plugins put the task's
  arguments, ``api_key`` unmasked, in the result whenever the module returns no ``invocation`` of its own (a module
  that fails by an exception, e.g. an API server not reached; any result on ansible-core 2.21).

tests/integration/test_connection_secrets.py proves it on a job run at ``-vvv`` against the control plane.
"""

import re

import yaml
from task_tree import FILES, ROOT, entries

GROUP = "group/calico_ops.lifecycle.k8s"
OPTIONS = re.compile(r"^\{\{ calico_k8s_auth \| default\(\{\}\) \| calico_ops\.lifecycle\.k8s_auth_options\("
                     r"(\w+|calico_kubeconfig \| default\(''\)), (\w+|calico_context \| default\(''\))\) \}\}$")
NO_LOG = "{{ (calico_k8s_auth | default({})).K8S_AUTH_API_KEY | default('', true) | length > 0 }}"
KCORE = re.compile(r"^kubernetes\.core\.")


def _all():
    for path in FILES:
        for entry in entries(yaml.safe_load(path.read_text())):
            yield path.relative_to(ROOT).as_posix(), entry


def test_no_play_block_or_task_sets_an_environment():
    assert [(p, e.get("name")) for p, e in _all() if "environment" in e] == []


def test_every_module_defaults_of_the_group_maps_calico_k8s_auth_to_options():
    seen = []
    for path, entry in _all():
        defaults = entry.get("module_defaults") or {}
        if GROUP in defaults:
            seen.append(path)
            assert isinstance(defaults[GROUP], str) and OPTIONS.match(defaults[GROUP].strip()), (path, defaults[GROUP])
    assert len(seen) >= 15 and "roles/fleet_rollout/tasks/cluster.yml" in seen


def test_every_kubernetes_core_task_hides_its_result_when_a_token_is_given():
    tasks = [(p, e) for p, e in _all() if any(KCORE.match(k) for k in e)]
    # 19 on 2026-12-06, after three waits moved from kubernetes.core.k8s_info into the collection's modules
    assert len(tasks) >= 15
    assert [(p, e.get("name")) for p, e in tasks if e.get("no_log") != NO_LOG] == []
