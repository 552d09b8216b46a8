"""Helpers of the reliability suite: credentials that fail in known ways, a runner that plays many bad-input cases in
one ``ansible-playbook`` process (one inventory host per case), and the attribution of audit events to cases."""

import base64
import json
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from localcp.audit import WRITE_VERBS
from localcp.fixtures import PlaybookResult
from localcp.mirror import REPO_ROOT

HERE = Path(__file__).resolve().parent
ISSUER = "https://kubernetes.default.svc.cluster.local"  # --service-account-issuer of tests/localcp/cluster.py


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed_token(cluster, sub="system:serviceaccount:default:default", lifetime=-3600, issued_ago=7200):
    """A service-account JWT signed with the control plane's own signing key: valid in every way but its times
    (``lifetime`` < 0: expired that many seconds ago)."""
    key = serialization.load_pem_private_key(Path(cluster.run_dir, "pki", "sa.key").read_bytes(), password=None)
    now = int(time.time())
    header = {"alg": "RS256", "typ": "JWT"}
    claims = {"iss": ISSUER, "aud": [ISSUER], "sub": sub, "iat": now - issued_ago, "nbf": now - issued_ago,
              "exp": now + lifetime, "jti": uuid.uuid4().hex}
    head = _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
    sig = key.sign(head.encode(), padding.PKCS1v15(), hashes.SHA256())
    return head + "." + _b64url(sig)


def kubeconfig_with(cluster, path, server=None, token=None):
    """A kubeconfig for ``server`` (default: the control plane) authenticating with ``token`` (default: the admin
    client certificate of the control plane's kubeconfig)."""
    cfg = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    if server:
        cfg["clusters"][0]["cluster"]["server"] = server
    if token is not None:
        cfg["users"][0]["user"] = {"token": token}
    Path(path).write_text(yaml.safe_dump(cfg))
    Path(path).chmod(0o600)
    return str(path)


def ca_file(cluster, path):
    cfg = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    Path(path).write_bytes(base64.b64decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"]))
    return str(path)


def _ts(text):
    """An RFC 3339 timestamp (audit events, ansible.posix.json durations) as a UTC epoch float."""
    text = text.rstrip("Z")
    if "+" in text[10:]:
        text = text[:10] + text[10:].split("+")[0]
    if "." in text:
        base, frac = text.split(".")
        text = base + "." + frac[:6]
        fmt = "%Y-%m-%dT%H:%M:%S.%f"
    else:
        fmt = "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc).timestamp()


class CaseRun(object):
    """The outcome of one batch: per case (inventory host) its failed task and message, and its writes."""

    def __init__(self, result, writes, started, ended):
        self.result = result
        self.writes = writes
        self.started = started
        self.ended = ended

    def failure(self, case_id):
        """(task name, message) of the case's failed task, or None when it did not fail."""
        for task in self.result.tasks:
            res = task["result"]
            if task["host"] == case_id and res.get("failed"):
                # a loop's failed items: "failed" set (ansible-core <= 2.20), or only "exception" and "msg" (2.21's
                # JSON callback leaves "failed" out of the items of a failed loop)
                msgs = [res.get("msg") or ""] + [item.get("msg") or "" for item in res.get("results") or []
                                                 if isinstance(item, dict) and (item.get("failed") or "exception" in item)]
                return task["task"], "\n".join(m if isinstance(m, str) else json.dumps(m) for m in msgs)
        return None

    def window(self, case_id):
        """The times (epoch) between which the case's tasks ran."""
        starts, ends = [], []
        for play in self.result.data.get("plays", []):
            for task in play.get("tasks", []):
                if case_id in task.get("hosts", {}):
                    starts.append(_ts(task["task"]["duration"]["start"]))
                    ends.append(_ts(task["task"]["duration"]["end"]))
        return (min(starts), max(ends)) if starts else (self.started, self.ended)

    def writes_of(self, case_id):
        """Writes made while the case's tasks ran (cases run in parallel: a write is charged to every case whose
        window holds it, so a case is never cleared of a write another one might have made)."""
        start, end = self.window(case_id)
        return [ev for ev in self.writes if start - 0.5 <= _ts(ev["requestReceivedTimestamp"]) <= end + 0.5]


MODULE_PARAMS = {
    "owner_references": ["state", "owner_api_versions", "record_namespace", "record_name", "record_path", "page_size",
                         "report_limit", "kubeconfig", "host", "api_key", "ca_cert"],
    "host_endpoint_migration": ["state", "datastore", "api_version", "calicoctl_path", "calicoctl_config",
                                "label_conflicts", "wait_timeout", "poll_interval", "record_namespace", "record_path",
                                "report_limit", "kubeconfig"],
    "ebpf_preflight_info": ["platform", "ignore", "kubeconfig"],
    "diagnostics_archive": ["path", "namespaces", "log_lines", "workers", "kubeconfig"],
    "connectivity_info": ["stage", "http_port", "node_selector", "kubeconfig"],
}


def case_play(case_id, target):
    """The play of one case: ``role:<name>[/<entry point>]`` (the case's variables are host variables of its inventory
    host) or ``module:<name>`` (with the host variable ``case_args``). Host ``sentinel`` is in every play and does
    nothing: ansible-playbook ends the whole run once every host of a play has failed."""
    kind, _sep, name = target.partition(":")
    if kind == "role":
        role, _sep, entry = name.partition("/")
        task = {"name": "Role %s (%s)" % (role, entry or "main"),
                "ansible.builtin.include_role": {"name": "calico_ops.lifecycle." + role, "tasks_from": entry or "main"}}
    else:
        task = {"name": "Module " + name,
                "calico_ops.lifecycle." + name: dict((p, "{{ case_args.%s | default(omit) }}" % p)
                                                     for p in MODULE_PARAMS[name])}
    task["when"] = "inventory_hostname != 'sentinel'"
    return {"name": "Case " + case_id, "hosts": case_id + ":sentinel", "gather_facts": False, "tasks": [task]}


def run_cases(cluster, cases, workdir, users, timeout=900):
    """Play every case (id -> (target, host variables)) in one ansible-playbook process: one play and one inventory
    host per case, so no case shares a task (or a run_once) with another; the process's rc is non-zero as soon as
    one case fails, and each case's outcome is its own host's."""
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                         "hosts": dict([("sentinel", {})] + [(cid, dict(hv)) for cid, (_t, hv) in cases.items()])}}
    inv = Path(workdir) / "cases-inventory.yml"
    inv.write_text(yaml.safe_dump(inventory))
    play = Path(workdir) / "cases.yml"
    play.write_text(yaml.safe_dump([case_play(cid, target) for cid, (target, _hv) in cases.items()], sort_keys=False))
    env = dict(cluster.env)
    env.update({"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0", "HOME": str(workdir),
                # as localcp/fixtures.py runs playbooks: the module on stdin, the JSON on one line (its C encoder)
                "ANSIBLE_PIPELINING": "1", "ANSIBLE_JSON_INDENT": "0"})
    mark = cluster.audit.mark()
    started = time.time()
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(play), "-i", str(inv)],
                          capture_output=True, text=True, env=env, cwd=str(workdir), timeout=timeout, check=False)
    ended = time.time()
    (Path(workdir) / "cases-output.json").write_text(proc.stdout)
    (Path(workdir) / "cases-stderr.txt").write_text(proc.stderr)
    data = {}
    start = proc.stdout.find("{")
    if start >= 0:
        try:
            data = json.loads(proc.stdout[start:])
        except ValueError:
            data = {}
    writes = [ev for ev in cluster.audit.events_since(mark, users=None)
              if ev.get("verb") in WRITE_VERBS and (ev.get("user") or {}).get("username") in users
              and "dryRun=" not in (ev.get("requestURI") or "")]
    return CaseRun(PlaybookResult(proc.returncode, proc.stdout, proc.stderr, data), writes, started, ended)


def playbook_path(name):
    return str(REPO_ROOT / "playbooks" / name)
