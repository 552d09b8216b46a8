# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reads of a diagnostics archive and the archive itself.

Every read is a GET or a paginated LIST (one per kind and namespace; a log is one GET per container). What the
credentials may not read (403), a type the cluster does not serve, a log the API server cannot get (a node that does
not answer) is written down in the archive's ``summary.json`` and in the result's ``problems`` instead of failing:
an archive is collected when something is already wrong. The API server not answering at all fails the module.

The archive is a gzipped tar written next to its final path and renamed into place (``records/files.atomic_write``),
mode 0600 from the start, so no other user can read it at any moment, and a failed write leaves the old one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os
import tarfile
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.diagnostics import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError, api_path
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.read import read_objects
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import in_order
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.files import atomic_write
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.location import check_file


class DiagnosticsError(Exception):
    pass


def _read_or_problem(read, what, problems, default=None):
    try:
        return read()
    except ClientError as exc:
        if exc.status in (403, 404):
            problems.append("%s: %s" % (what, exc))
            return default
        raise


def _objects(client, entries, workers, problems):
    got = read_objects(client, [e for _f, e in entries], workers, allow_forbidden=True)["objects"]
    files = {}
    for (name, _entry), obj in zip(entries, got):
        if obj["forbidden"]:
            problems.append("%s: forbidden to this identity" % obj["label"])
        elif not obj["served"]:
            problems.append("%s: not served by this cluster" % obj["label"])
        files[name] = {"api_version": obj["api_version"], "kind": obj["kind"], "namespace": obj["namespace"],
                       "name": obj["name"], "served": obj["served"], "forbidden": obj["forbidden"],
                       "items": obj["resources"]}
    return files


def _logs(client, pods, log_lines, workers, problems):
    """``{(namespace, pod, container): text}``: the last ``log_lines`` lines of each container's current log."""
    jobs = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        for name, _kind in rules.containers(pod):
            jobs.append((meta.get("namespace"), meta.get("name"), name))

    def get(job):
        ns, pod, container = job
        path = api_path("v1", "pods", ns, pod, subresource="log")
        try:
            return client.text(path, query={"container": container, "tailLines": log_lines})
        except ClientError as exc:
            problems.append("log of %s/%s container %s: %s" % (ns, pod, container, exc))
            return rules.log_problem(exc.status, exc) + "\n"

    out = {}
    for job, (text, exc) in zip(jobs, in_order(get, jobs, workers)):
        if exc is not None:
            raise exc
        out[job] = text
    return out


def collect(client, namespaces, log_lines=300, workers=8, entries=None, record_paths=(), redact_text=None):
    """Everything the archive holds, as ``{member name: text}``, and the summary's counts and problems."""
    redact_text = redact_text or (lambda text: text)
    problems = []
    entries = entries or rules.object_entries()
    files = _objects(client, entries, workers, problems)
    members = dict(("objects/%s.json" % name, rules.as_json(rules.redact(body))) for name, body in files.items())
    nodes = _read_or_problem(lambda: client.list("v1", "nodes"), "nodes", problems, [])
    members["nodes.json"] = rules.as_json([rules.slim_node(n) for n in nodes])
    pods_by_ns, all_pods, events = {}, [], 0
    for ns in namespaces:
        pods = _read_or_problem(lambda: client.list("v1", "pods", namespace=ns), "pods of %s" % ns, problems, [])
        evs = _read_or_problem(lambda: client.list("v1", "events", namespace=ns), "events of %s" % ns, problems, [])
        evs.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        members[rules.member_name("namespaces", ns, "pods.json")] = rules.as_json(rules.redact(pods))
        members[rules.member_name("namespaces", ns, "events.json")] = rules.as_json(rules.redact(evs))
        pods_by_ns[ns] = len(pods)
        all_pods.extend(pods)
        events += len(evs)
    logs = _logs(client, all_pods, log_lines, workers, problems) if log_lines > 0 else {}
    for (ns, pod, container), text in logs.items():
        members[rules.member_name("namespaces", ns, "logs", pod, container + ".log")] = rules.redact_tokens(text)
    for path in record_paths or ():
        try:
            with open(os.path.expanduser(path)) as handle:
                members[rules.member_name("record-files", os.path.basename(path))] = rules.redact_tokens(handle.read())
        except (IOError, OSError) as exc:
            problems.append("record file %s: %s" % (path, exc.strerror or exc))
    members = dict((name, redact_text(text)) for name, text in members.items())
    counts = {"objects": dict((name, len(body["items"])) for name, body in files.items()), "nodes": len(nodes),
              "pods": pods_by_ns, "events": events, "logs": len(logs), "log_lines": log_lines,
              "records": len(files.get("records", {}).get("items") or []),
              "record_files": sum(1 for n in members if n.startswith("record-files/"))}
    return members, counts, [redact_text(p) for p in problems]


def write_archive(path, members, top):
    """Write ``members`` under the directory ``top`` into the gzipped tar ``path`` (0600, atomically)."""
    path = os.path.abspath(os.path.expanduser(path))
    buf = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in sorted(members):
            data = members[name].encode("utf-8")
            info = tarfile.TarInfo("%s/%s" % (top, name))
            info.size, info.mode, info.mtime = len(data), 0o600, now
            tar.addfile(info, io.BytesIO(data))
    atomic_write(path, buf.getvalue())
    return path, os.path.getsize(path)


def validate(path, namespaces, log_lines, workers, prefix=""):
    """Raise DiagnosticsError naming each option (``prefix``: a role's variables) that is bad, before any read."""
    bad = rules.problems(path, namespaces, log_lines, workers, prefix)
    where = check_file(path, names={"path": prefix + "path"}, what="the archive") if path else None
    if bad or where:
        raise DiagnosticsError("; ".join(bad + ([where] if where else [])) + "; nothing was collected")


def run_diagnostics(client, path, namespaces, log_lines=300, workers=8, entries=None, record_paths=(), job="",
                    reason="", server=None, check_mode=False, redact_text=None, prefix=""):
    """Collect and write the archive; the result says where it is, what it holds and what could not be read.
    ``prefix``: put before an option's name in a failure (a role's variable prefix)."""
    validate(path, namespaces, log_lines, workers, prefix)
    redact_text = redact_text or (lambda text: text)
    started = time.time()
    members, counts, problems = collect(client, namespaces, log_lines, workers, entries, record_paths, redact_text)
    base = os.path.basename(path)
    top = base[:-len(".tar.gz")] if base.endswith(".tar.gz") else base[:-len(".tgz")]
    summary = {"collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)), "server": server,
               "job": redact_text(job or ""), "reason": redact_text(rules.redact_tokens(reason or "")),
               "namespaces": list(namespaces), "counts": counts, "problems": problems,
               "api_requests": dict(client.requests), "members": sorted(members)}
    members["summary.json"] = rules.as_json(summary)
    result = dict(counts, path=os.path.abspath(os.path.expanduser(path)), problems=problems, size=0,
                  members=sorted(members), written=False, api_requests=dict(client.requests))
    if not check_mode:
        result["path"], result["size"] = write_archive(path, members, top)
        result["written"] = True
    result["changed"] = result["written"]
    result["lines"] = rules.summary_lines(result)
    return result
