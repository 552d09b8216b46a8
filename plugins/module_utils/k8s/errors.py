# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes layer's errors, and the one mapper from any exception to a failure message.

``ClientError`` is a failed API request: its message is one line naming the object (``<resource>[.<group>]
<namespace>/<name>``), the HTTP status and reason, the API's own ``message`` (never the response body: a 409 or
422 body can echo the object, a Secret's data included), the request, and what to do. ``ReadOnlyViolation`` is
the check-mode guard's refusal of a write.

``failure_message(exc)`` turns anything a module meets into that kind of line: a ``ClientError``; an
``ApiException`` of the kubernetes client; a connection failure of urllib3 (the API server stopped, a TLS
mismatch, a name that does not resolve); a kubeconfig the kubernetes client cannot load (``ConfigException``,
kubernetes.core's ``CoreException``: their text names local files, which are replaced by ``<path>``); any other
exception (its type and first line, also without local paths). No traceback, ever: the module base calls
``fail_json`` outside the ``except`` block, so Ansible adds none either.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import redact_api_message

# What to do, per HTTP status (0: the API server was not reached).
ADVICE = {
    0: "check that the API server runs and that the kubeconfig (or K8S_AUTH_HOST) points at it, then re-run",
    400: "the request was malformed: check the task's options",
    401: "the credentials were refused: renew the token or client certificate of the kubeconfig "
         "(or K8S_AUTH_API_KEY)",
    403: "the identity lacks an RBAC permission: bind it to the roles docs/rbac.yml lists for this job",
    404: "it does not exist: check its name and namespace (and that its CRD or API group is installed)",
    405: "the API server does not allow this verb on it",
    409: "it was changed or created meanwhile: re-run the task (it reads the object again)",
    410: "the list expired while it was read: re-run the task",
    415: "the API server does not accept this patch type for it",
    422: "the API server refused the object as invalid: fix the fields the message names",
    429: "the API server is throttling requests: re-run the task later",
    500: "the API server failed: check its log, then re-run",
    503: "the API server (or the aggregated API behind it) is unavailable: check it, then re-run",
    504: "the API server timed out: check its load, then re-run",
}
REASONS = {0: "not reached", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
           405: "Method Not Allowed", 409: "Conflict", 410: "Gone", 415: "Unsupported Media Type",
           422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
           503: "Service Unavailable", 504: "Gateway Timeout"}
MAX_MESSAGE = 600  # characters of the API's message kept (one line)

# A local file path (``/home/me/.kube/config``, ``~/.kube/config``, ``C:\\...``) in a message.
_PATH = re.compile(r"(?<![\w/.:-])(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]*[\w@+-]|[A-Za-z]:\\[^\s'\",;]+")


def describe_object(api_version, plural, namespace=None, name=None):
    """``configmaps kube-system/x``, ``daemonsets.apps kube-system/kube-proxy``, ``nodes`` (see describe_path)."""
    base = "/api/%s" % api_version if "/" not in (api_version or "") else "/apis/%s" % api_version
    parts = [base] + (["namespaces", namespace] if namespace else []) + [plural] + ([name] if name else [])
    return describe_path("/".join(parts))


def one_line(text, limit=MAX_MESSAGE):
    """``text`` on one line (every run of whitespace, newlines included, one space), at most ``limit`` chars."""
    text = re.sub(r"\s+", " ", "%s" % (text,)).strip()
    if limit and len(text) > limit:
        text = text[:limit - 3].rstrip() + "..."
    return text


def scrub_paths(text):
    """``text`` with every local file path replaced by ``<path>`` (a kubeconfig's location, a certificate's)."""
    return _PATH.sub("<path>", "%s" % (text,))


def status_counts(statuses):
    """``403 Forbidden x53, 503 Service Unavailable x1``: how many failures of each status."""
    counts = {}
    for status in statuses:
        counts[status or 0] = counts.get(status or 0, 0) + 1
    return ", ".join("%s %s x%d" % (s, REASONS.get(s, ""), n) if s else "%s x%d" % (REASONS[0], n)
                     for s, n in sorted(counts.items()))


def advice(status):
    if status in ADVICE:
        return ADVICE[status]
    if 500 <= (status or 0) < 600:
        return ADVICE[500]
    return "check the object and the task's options, then re-run"


def describe_path(path):
    """What a REST path names: ``configmaps kube-system/x``, ``daemonsets.apps kube-system/kube-proxy``,
    ``configmaps in namespace x`` (a collection), ``nodes/n/status``, ``API projectcalico.org/v3``."""
    parts = [p for p in (path or "").split("?")[0].strip("/").split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
        version = parts[1]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return "API %s" % ("/" + "/".join(parts) if parts else "/")
    namespace = None
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return "API %s" % ("%s/%s" % (group, version) if group else version)
    resource = rest[0] + ("." + group if group else "")
    if len(rest) == 1:
        return "%s in namespace %s" % (resource, namespace) if namespace else resource
    name = rest[1] if not namespace else "%s/%s" % (namespace, rest[1])
    sub = "/" + "/".join(rest[2:]) if len(rest) > 2 else ""
    return "%s %s%s" % (resource, name, sub)


def api_message(body):
    """Only the ``message`` of a Status response body (one line), or "" when the body is not a Status: the rest of
    a body (``details``, an echoed object) is never kept."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        doc = json.loads(body) if isinstance(body, str) else body
    except ValueError:
        return ""
    if isinstance(doc, dict) and isinstance(doc.get("message"), str):
        return one_line(doc["message"])
    return ""


class ClientError(Exception):
    """An API request failed; ``status`` is the HTTP status (0 when the server was not reached), ``reason`` the
    HTTP reason (or why it was not reached), ``api_message`` the API's own message, ``what`` the object."""

    def __init__(self, message, status=0, reason="", api_message="", what=""):
        super(ClientError, self).__init__(message)
        self.status = status
        self.reason = reason
        self.api_message = api_message
        self.what = what


class ReadOnlyViolation(ClientError):
    """A mutating request was attempted by a read-only (check mode) client."""


def api_error(method, path, status, reason, body=None, what=None):
    """The ``ClientError`` of an API response with an error status: one line, the API's message only."""
    what = what or describe_path(path)
    status = int(status or 0)
    reason = one_line(reason or "", 80)
    # a 422 quotes the object it refused (a Secret with its data): redacted (k8s/redact.py)
    detail = redact_api_message(api_message(body), secret="/secrets" in (path or "").split("?")[0])
    todo = advice(status)
    if status == 409 and ("conflict with" in detail or "Apply failed" in detail):
        todo = ("another field manager owns these fields: leave them to it, hand them over (field_ownership), or "
                "force the apply (force_conflicts)")
    text = "%s: %s %s%s (%s %s); %s" % (what, status, reason, ": " + detail if detail else "",
                                        method, path.split("?")[0], todo)
    return ClientError(one_line(text, 0), status=status, reason=reason, api_message=detail, what=what)


def unreachable_reason(exc):
    """Why a request did not reach the API server, in a few words, from a urllib3 / socket / ssl exception
    (never its text: it holds object addresses and, for TLS, local certificate paths)."""
    text = "%s %r" % (exc, getattr(exc, "reason", ""))
    lowered = text.lower()
    for needle, words in (("connection refused", "connection refused"),
                          ("certificate verify failed", "TLS certificate not trusted"),
                          ("wrong version number", "TLS handshake failed"),
                          ("ssl", "TLS error"),
                          ("timed out", "timed out"), ("timeout", "timed out"),
                          ("name or service not known", "host name not resolved"),
                          ("nodename nor servname", "host name not resolved"),
                          ("temporary failure in name resolution", "host name not resolved"),
                          ("no route to host", "no route to host"),
                          ("network is unreachable", "network unreachable"),
                          ("connection reset", "connection reset"),
                          ("remotedisconnected", "connection closed by the server"),
                          ("connection aborted", "connection closed by the server")):
        if needle in lowered:
            return words
    return type(exc).__name__


def _server_of(exc):
    """``https://host:port`` of a urllib3 pool error, when it says."""
    pool = getattr(exc, "pool", None)
    host, port = getattr(pool, "host", None), getattr(pool, "port", None)
    if host:
        return "%s://%s%s" % (getattr(pool, "scheme", "https"), host, ":%s" % port if port else "")
    return ""


def unreachable(method, path, exc, what=None):
    """The ``ClientError`` (status 0) of a request that did not reach the API server."""
    what = what or describe_path(path)
    reason = unreachable_reason(exc)
    server = _server_of(exc)
    text = "%s: the API server%s was not reached (%s) (%s %s); %s" % (
        what, " at " + server if server else "", reason, method, path.split("?")[0], advice(0))
    return ClientError(text, status=0, reason=reason, what=what)


def is_api_exception(exc):
    """An API response with an error status: the kubernetes client's ``ApiException``/``DynamicApiError``,
    transport.py's ``HttpError``."""
    return isinstance(getattr(exc, "status", None), int) and hasattr(exc, "reason") and hasattr(exc, "body")


def _is_config_error(exc):
    names = set(k.__name__ for k in type(exc).__mro__)
    return bool(names & {"ConfigException", "CoreException"})


def _is_connection_error(exc):
    module = type(exc).__module__ or ""
    return (module.split(".")[0] in ("urllib3", "ssl", "socket", "http")
            or isinstance(exc, (ConnectionError, TimeoutError)))


def failure_message(exc, what="", prefix="", building=False):
    """One line for any exception a module meets (see the module docstring); ``what``: the object or step it
    was about, when the exception does not say. ``building``: raised while the client was built from the
    kubeconfig / K8S_AUTH_* options, so anything but a connection or API error is the configuration's."""
    if isinstance(exc, ClientError):
        return one_line(prefix + str(exc), 0)
    if is_api_exception(exc):
        return prefix + str(api_error("request", getattr(exc, "path", "") or "", exc.status, exc.reason,
                                      getattr(exc, "body", None), what=what or "the API request"))
    if _is_config_error(exc) or (building and not _is_connection_error(exc)
                                 and not isinstance(exc, EnvironmentError)):
        return one_line("%s%scannot load the Kubernetes configuration (%s); check the kubeconfig (and context) or "
                        "the K8S_AUTH_* options" % (prefix, what + ": " if what else "",
                                                    scrub_paths(one_line(exc, 300)) or type(exc).__name__), 0)
    if _is_connection_error(exc):
        reason = unreachable_reason(exc)
        server = _server_of(exc)
        return one_line("%s%sthe API server%s was not reached (%s); %s" % (
            prefix, what + ": " if what else "", " at " + server if server else "", reason, advice(0)), 0)
    if isinstance(exc, EnvironmentError):  # a local file (a certificate the kubeconfig names): never its path
        return one_line("%s%sa local file cannot be read or written (%s): check the files the kubeconfig or the task's "
                        "options name" % (prefix, what + ": " if what else "",
                                          getattr(exc, "strerror", None) or type(exc).__name__), 0)
    return one_line("%s%sunexpected %s: %s; re-run with the same options, and if it persists report it to "
                    "calico_ops.lifecycle with this message" % (
                        prefix, what + ": " if what else "", type(exc).__name__,
                        scrub_paths(one_line(exc, 300)) or "(no message)"), 0)
