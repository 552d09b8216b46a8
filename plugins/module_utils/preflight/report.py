# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the eBPF preflight report - merge the API result with the host results, render it.

Used on the controller by the ``calico_ops.lifecycle.preflight_*`` filters (the preflight role): the
verdicts come from ``rules``, ``node_rules`` and ``cluster_rules``; this file only combines and formats them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import rules

_RESULT_NOISE = ("changed", "failed", "invocation", "warnings", "deprecations", "_ansible_no_log",
                 "_ansible_verbose_always", "ansible_loop_var", "item", "_ansible_item_label",
                 "_ansible_delegated_vars")


def _host_entry(result, ignore):
    """One host's entry from one registered loop result (unreachable and failed hosts fail host_facts)."""
    if result.get("unreachable"):
        checks = {"host_facts": rules.verdict(rules.FAIL, "unreachable: %s" % result.get("msg", ""))}
    elif result.get("failed") or "checks" not in result:
        checks = {"host_facts": rules.verdict(rules.FAIL, "the host check failed: %s"
                                              % (result.get("msg") or "no result"))}
    else:
        return {"verdict": result.get("verdict") or rules.worst(result["checks"].values()),
                "checks": result["checks"], "facts": result.get("facts") or {}}
    rules.apply_ignore(checks, ignore)
    return {"verdict": rules.worst(checks.values()), "checks": checks, "facts": {}}


def _plain(value):
    """A copy of a registered result's value as plain dicts and lists. Not ``copy.deepcopy``: on the controller the
    value is Ansible's lazy container, whose deep copy also copies every value's tags and origin (measured on
    ansible-core 2.21: 1.4 s of CPU for a 7 kB report on three nodes, against milliseconds for this)."""
    if isinstance(value, dict):
        return dict((k, _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def merge(cluster, host_results=None, ignore=None):
    """The whole report: the ``ebpf_preflight_info`` result plus ``hosts`` (from the registered results of an
    ``ebpf_host_preflight_info`` loop), with the summary, verdict and ``eligible`` recomputed over both."""
    report = dict((k, _plain(v)) for k, v in (cluster or {}).items() if k not in _RESULT_NOISE)
    ignore = ignore if ignore is not None else report.get("ignored") or []
    hosts = {}
    for result in host_results or []:
        name = result.get(result.get("ansible_loop_var") or "item") or result.get("_ansible_item_label")
        hosts[str(name)] = _host_entry(result, ignore)
    report["hosts"] = hosts
    report["summary"] = rules.summarise(report.get("nodes") or {}, report.get("checks") or {}, hosts)
    report["eligible"] = report["summary"]["eligible"]
    report["verdict"] = report["summary"]["verdict"]
    return report


# -- rendering ----------------------------------------------------------------------------------------

def _cell(text):
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def _first_problem(report, check):
    """The first non-ok reason of a check, with where it was seen."""
    checks = report.get("checks") or {}
    if check in checks:
        v = checks[check]
        return v["reason"] if v["verdict"] != rules.OK else ""
    for kind, entries in (("node", report.get("nodes") or {}), ("host", report.get("hosts") or {})):
        for name in sorted(entries):
            v = (entries[name].get("checks") or {}).get(check)
            if v and v["verdict"] != rules.OK:
                return "%s %s: %s" % (kind, name, v["reason"])
    return ""


def _platform_line(report):
    p = report.get("platform") or {}
    if not p:
        return "unknown"
    line = "%s (%s)" % (p.get("title") or p.get("name"), "set by the user" if p.get("source") == "override"
                        else "detected")
    detected = (p.get("detected") or {}).get("name")
    if p.get("source") == "override" and detected and detected != p.get("name"):
        line += "; detection said %s" % detected
    return line


def _check_order(report):
    by_check = (report.get("summary") or {}).get("by_check") or {}
    return [c for c in rules.CHECK_NAMES if c in by_check]


def table_lines(report, width=100):
    """A compact text table for the play output: one line per check, counts and the first problem."""
    s = report.get("summary") or {}
    nodes = s.get("nodes") or {}
    head = "eBPF preflight: %s (%s) - platform %s - %d nodes: %d ok, %d warn, %d fail" % (
        "ELIGIBLE" if s.get("eligible") else "NOT ELIGIBLE", s.get("verdict"), _platform_line(report),
        nodes.get("total", 0), nodes.get("ok", 0), nodes.get("warn", 0), nodes.get("fail", 0))
    if s.get("hosts"):
        h = s["hosts"]
        head += " - %d hosts: %d ok, %d warn, %d fail" % (h["total"], h["ok"], h["warn"], h["fail"])
    lines = [head, "%-26s %5s %5s %5s  %s" % ("check", "ok", "warn", "fail", "first problem")]
    for check in _check_order(report):
        row = s["by_check"][check]
        detail = _first_problem(report, check)
        room = max(20, width - 46)
        if len(detail) > room:
            detail = detail[:room - 3] + "..."
        lines.append("%-26s %5d %5d %5d  %s" % (check, row["ok"], row["warn"], row["fail"], detail))
    if s.get("ignored"):
        lines.append("ignored (downgraded to warnings): %s" % ", ".join(s["ignored"]))
    return lines


def to_markdown(report):
    """The report as Markdown: verdict, platform, per-check counts, failures, warnings, cluster findings,
    every node and host."""
    s = report.get("summary") or {}
    out = ["# Calico eBPF preflight: %s" % ("eligible" if s.get("eligible") else "NOT eligible"), ""]
    out += _summary_lines(report, s)
    out += _requirement_lines(report.get("platform") or {})
    out += ["", "## Checks", "", "| Check | ok | warn | fail | First problem |", "|---|---:|---:|---:|---|"]
    for check in _check_order(report):
        row = s["by_check"][check]
        out.append("| %s | %d | %d | %d | %s |" % (check, row["ok"], row["warn"], row["fail"],
                                                   _cell(_first_problem(report, check))))
    for title, items in (("Failures", s.get("failing")), ("Warnings", s.get("warnings"))):
        if items:
            out += ["", "## %s" % title, ""] + ["- %s" % _cell(i) for i in items]
    out += _cluster_check_lines(report.get("checks") or {})
    out += _node_lines(report)
    out.append("")
    return "\n".join(out)


def _summary_lines(report, s):
    """The bullet list under the title: verdict, platform, node and host counts, kube-proxy, Calico, requests."""
    p = report.get("platform") or {}
    nodes = s.get("nodes") or {}
    out = ["- Verdict: **%s**" % s.get("verdict"), "- Platform: %s" % _platform_line(report)]
    ev = (p.get("detected") or {}).get("evidence") or []
    if ev:
        out.append("- Platform evidence: %s" % "; ".join(ev))
    out.append("- Nodes: %d (ok %d, warn %d, fail %d)" % (nodes.get("total", 0), nodes.get("ok", 0),
                                                          nodes.get("warn", 0), nodes.get("fail", 0)))
    if s.get("hosts"):
        h = s["hosts"]
        out.append("- Hosts checked: %d (ok %d, warn %d, fail %d)" % (h["total"], h["ok"], h["warn"], h["fail"]))
    kp = report.get("kube_proxy") or {}
    if kp:
        mode = "mode %s (%s)" % (kp.get("mode") or "default", kp.get("source") or "mode not set")
        out.append("- kube-proxy: %s" % (mode if kp.get("present") else "not found"))
    calico = report.get("calico") or {}
    if calico:
        out.append("- Calico: %s (%s)" % ("installed" if calico.get("installed") else "not installed",
                                          calico.get("api_version")))
    if s.get("ignored"):
        out.append("- Ignored (downgraded to warnings): %s" % ", ".join(s["ignored"]))
    requests = report.get("api_requests") or {}
    if requests:
        out.append("- API requests: %d reads, %d writes" % (requests.get("read", 0), requests.get("write", 0)))
    return out


def _requirement_lines(p):
    """The section "Platform requirements" (empty when the platform needs nothing)."""
    requirements = []
    for key, value in sorted((p.get("installation") or {}).items()):
        requirements.append("Installation `spec.%s: %s`" % (key, value))
    for key, value in sorted((p.get("felix_configuration") or {}).items()):
        requirements.append("FelixConfiguration default `spec.%s: %s`" % (key, str(value).lower()))
    for ns in p.get("operator_dns_nameservers") or []:
        requirements.append("tigera-operator Deployment `dnsConfig.nameservers: [%s]`" % ns)
    if not requirements and not p.get("notes"):
        return []
    return (["", "## Platform requirements", ""] + ["- %s" % r for r in requirements]
            + ["- %s" % n for n in p.get("notes") or []])


def _cluster_check_lines(checks):
    out = ["", "## Cluster checks", "", "| Check | Verdict | Reason | Objects (count) |", "|---|---|---|---|"]
    for check in rules.CLUSTER_CHECKS:
        if check in checks:
            v = checks[check]
            objects = ""
            if v.get("count"):
                objects = "%s (%d)" % (", ".join(v.get("objects") or []), v["count"])
            out.append("| %s | %s | %s | %s |" % (check, v["verdict"], _cell(v["reason"]), _cell(objects)))
    return out


def _node_lines(report):
    """The sections "Nodes" and "Hosts": one row each, with the problems of the checks that did not pass."""
    out = []
    for title, entries, names in (("Nodes", report.get("nodes") or {}, rules.NODE_CHECKS),
                                  ("Hosts", report.get("hosts") or {}, rules.NODE_CHECKS + rules.HOST_CHECKS)):
        if not entries:
            continue
        out += ["", "## %s" % title, "", "| Name | Verdict | Architecture | OS | Kernel | Problems |",
                "|---|---|---|---|---|---|"]
        for name in sorted(entries):
            e = entries[name]
            facts = e.get("facts") or e
            problems = ["%s: %s" % (c, e["checks"][c]["reason"]) for c in names
                        if c in e.get("checks", {}) and e["checks"][c]["verdict"] != rules.OK]
            out.append("| %s | %s | %s | %s | %s | %s |" % (
                _cell(name), e.get("verdict"), _cell(facts.get("architecture")), _cell(facts.get("os_image")),
                _cell(facts.get("kernel")), _cell("; ".join(problems))))
    return out
