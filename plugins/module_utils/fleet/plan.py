# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the fleet rollout's plan, on the controller before any cluster is written (pure).

docs/fleet.md: one job over the clusters of an inventory group, a canary first, then the rest in batches that stop
when too many of a batch fail their health gate. ``plan(settings)`` checks the input, each problem naming the variable
(and the host), and settles the canary, the batch size Ansible's ``serial`` takes, and the clusters of this run
(``fleet_rollout_scope``). A cluster host's credentials reach it only to be checked by key: no value is ever in what
it returns.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import auth_settings

JOBS = ("install_ebpf", "enable_ebpf", "upgrade", "disable_ebpf")
ROLLED_BACK = ("install_ebpf", "enable_ebpf")  # disable_ebpf on the failed cluster
_COUNT = re.compile(r"^[0-9]+$")
_PERCENT = re.compile(r"^[0-9]+([.][0-9]+)?%$")
_NUMBER = re.compile(r"^[0-9]+([.][0-9]+)?$")


def canary_given(value):
    """``fleet_rollout_canary`` as a list: a comma-separated string or a list."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return list(value or [])


def _connected(kubeconfig, context, auth):
    keys = auth.keys() if isinstance(auth, dict) else ()
    return bool(kubeconfig) or bool(context) or any(k in auth_settings.CONNECTING for k in keys)


def _host_problems(s):
    hosts = [c[0] for c in s.get("connections") or []]
    out = []
    unconnected = [host for host, kubeconfig, context, auth in s.get("connections") or []
                   if not _connected(kubeconfig, context, auth)]
    if unconnected:
        out.append("cluster host %s of group %s has no connection settings: set calico_kubeconfig, calico_context, "
                   "or calico_k8s_auth with K8S_AUTH_KUBECONFIG or K8S_AUTH_HOST"
                   % (", ".join(unconnected), s.get("group")))
    for host, _kubeconfig, _context, auth in s.get("connections") or []:
        out += auth_settings.problems(auth, "cluster host %s: calico_k8s_auth" % host)
    return hosts, out


def _number_problems(s):
    out = []
    batch = str(s.get("batch")).strip()
    if not ((_COUNT.match(batch) and int(batch) >= 1) or (_PERCENT.match(batch) and 0 < float(batch[:-1]) <= 100)):
        out.append("fleet_rollout_batch is %s: give a count of clusters (1 or more) or a percentage of them (above 0%% "
                   "and at most 100%%)" % json.dumps(batch))
    fail = str(s.get("max_fail_percentage"))
    if not (_NUMBER.match(fail) and float(fail) <= 100):
        out.append("fleet_rollout_max_fail_percentage is %s: give a percentage, 0 to 100" % json.dumps(fail))
    for name in ("gate_timeout", "poll_interval"):
        value = str(s.get(name))
        if not (_COUNT.match(value) and int(value) > 0):
            out.append("fleet_rollout_%s is %s: give seconds, 1 or more" % (name, json.dumps(value)))
    return out


def problems(s):
    """Everything wrong with the input, in the order the user should read it (``settings`` as ``plan`` takes)."""
    hosts, host_problems = _host_problems(s)
    out = [] if s.get("job") in JOBS else ["fleet_rollout_job is %s: choose one of %s" % (
        json.dumps(str(s.get("job"))), ", ".join(JOBS))]
    if not hosts:
        out.append("fleet_rollout_group %s has no hosts in the inventory: name the group whose hosts are clusters "
                   "(inventories/fleet/hosts.yml)" % json.dumps(s.get("group")))
    strangers = [c for c in canary_given(s.get("canary")) if c not in hosts]
    if strangers:
        out.append("fleet_rollout_canary names %s, not a host of group %s" % (", ".join(strangers), s.get("group")))
    out += host_problems + _number_problems(s)
    if s.get("rollback_failed") and s.get("job") not in ROLLED_BACK:
        out.append("fleet_rollout_rollback_failed is true, but job %s has no rollback here: only install_ebpf and "
                   "enable_ebpf (disable_ebpf on the failed cluster)" % s.get("job"))
    return out


def plan(settings):
    """The rollout's plan. ``settings``: ``job``, ``group``, ``connections`` (the group's hosts in inventory order,
    each ``[host, calico_kubeconfig, calico_context, calico_k8s_auth]``), ``canary``, ``batch``,
    ``max_fail_percentage``, ``gate_timeout``, ``poll_interval``, ``rollback_failed``, ``scope`` (``all``, ``canary``
    or ``rest``). Returns ``problems``, ``canary``, ``serial`` (the batch as Ansible's ``serial`` takes it),
    ``in_canary`` and ``in_rest`` (the clusters of this run) and ``line`` (the plan in words)."""
    s = dict(settings)
    hosts = [c[0] for c in s.get("connections") or []]
    found = problems(s)
    canary = canary_given(s.get("canary")) or hosts[:1]
    batch = str(s.get("batch")).strip()
    scope = s.get("scope") or "all"
    in_canary = canary if scope in ("all", "canary") else []
    in_rest = [h for h in hosts if h not in canary] if scope in ("all", "rest") else []
    line = ("%s on %d of the %d clusters of group %s (scope %s): canary %s, then %d more in batches of %s; later "
            "batches stop when more than %s%% of a batch fails its gate (a failed canary stops all of them)" % (
                s.get("job"), len(in_canary) + len(in_rest), len(hosts), s.get("group"), scope,
                ", ".join(in_canary) or "none in this run", len(in_rest), batch, s.get("max_fail_percentage")))
    return {"problems": found, "canary": canary, "serial": int(batch) if _COUNT.match(batch) else batch,
            "in_canary": in_canary, "in_rest": in_rest, "line": line}
