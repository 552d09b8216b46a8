# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes layer: reach the API server over HTTPS without importing the kubernetes Python client.

Which server and which credentials is decided as kubernetes.core decides it (``get_api_client``): its auth options
first, then its ``K8S_AUTH_*`` environment; ``host`` with ``api_key`` or with a client certificate and key skips the
kubeconfig; otherwise the kubeconfig (``kubeconfig`` option, else ``KUBECONFIG``, else ``~/.kube/config``) and its
context (``context`` option, else ``current-context``), with the options given overriding what it says.

Only the shapes that a kubeconfig or the options state outright are read here: a server URL, its CA (a file or
``certificate-authority-data``) or ``insecure-skip-tls-verify``, a client certificate and key (files or data) and a
bearer token (``token``, ``tokenFile``, ``api_key``). ``endpoint()`` answers ``None`` for anything else - exec
credential plugins, auth providers, username and password, proxies, impersonation, in-cluster ServiceAccounts,
several kubeconfig files, ``persist_config``, a kubeconfig that does not load - and ``Client.from_module`` then
builds kubernetes.core's own client, so those behave exactly as in kubernetes.core.

Why: importing the kubernetes client (its config loader pulls oauthlib, requests, pydantic, ...) costs about 0.45 s
of CPU at every module start, more than all the rest of a typical module's work, and a merge patch through its
urllib3 path about twice the CPU of this one (benchmarks/results/design-measurements.md).

``HttpTransport.request`` has the signature of the kubernetes ``DynamicClient.request`` that ``Client`` calls, so
``Client`` sends through either; an error status raises ``HttpError`` (``status``, ``reason``, ``body``, as the
kubernetes client's ``ApiException``), a connection failure ``Unreachable`` (naming the server).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import select
import ssl
import tempfile
import threading

try:
    import http.client as http_client
    from urllib.parse import urlencode, urlsplit
except ImportError:  # pragma: no cover - Python 2 has no lean path: kubernetes.core's client is used
    http_client = None

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_MAP, AUTH_ARG_SPEC
except ImportError:  # pragma: no cover - kubernetes.core is a declared dependency
    AUTH_ARG_MAP, AUTH_ARG_SPEC = {}, {}

USER_AGENT = "calico-ops/lifecycle (python http.client)"
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"
CLUSTER_KEYS = frozenset(("server", "certificate-authority", "certificate-authority-data",
                          "insecure-skip-tls-verify", "extensions"))
USER_KEYS = frozenset(("client-certificate", "client-certificate-data", "client-key", "client-key-data",
                       "token", "tokenFile", "extensions"))
# The one switch to kubernetes.core's client (docs/architecture.md, "Which client sends the requests"): with
# CALICO_OPS_K8S_CLIENT=kubernetes.core in the environment of the modules, every module of the collection sends
# its requests through kubernetes.core's own client, for an environment where this transport misbehaves; "lean"
# (the default) uses this transport wherever ``endpoint()`` reads the auth options' shape.
CLIENT_ENV = "CALICO_OPS_K8S_CLIENT"
CLIENT_CHOICES = ("lean", "kubernetes.core")
# options kubernetes.core supports that only its own client implements (proxy_headers comes from the environment)
HANDED_OVER = ("username", "password", "proxy", "no_proxy", "persist_config", "proxy_headers")
IMPERSONATION = ("impersonate_user", "impersonate_groups")


class HttpError(Exception):
    """An API response with an error status (as the kubernetes client's ``ApiException``)."""

    def __init__(self, status, reason, body):
        super(HttpError, self).__init__("%s %s" % (status, reason))
        self.status, self.reason, self.body = status, reason, body


class _Server(object):
    def __init__(self, scheme, host, port):
        self.scheme, self.host, self.port = scheme, host, port


class Unreachable(ConnectionError):
    """The request did not get an answer; ``reason`` is the socket/TLS exception, ``pool`` names the server (as
    urllib3's errors do, for ``errors.unreachable``)."""

    def __init__(self, exc, server):
        super(Unreachable, self).__init__("%s: %s" % (type(exc).__name__, exc))
        self.reason = exc
        self.pool = server


class Endpoint(object):
    """Where to send and how to authenticate. ``ca``/``cert``/``key``: ``("file", path)`` or ``("data", bytes)``."""

    def __init__(self, server, verify=True, ca=None, cert=None, key=None, token=None, token_file=None):
        self.server = server.rstrip("/")
        self.verify, self.ca, self.cert, self.key = verify, ca, cert, key
        self.token, self.token_file = token, token_file

    def bearer(self):
        if self.token:
            return self.token
        if self.token_file:
            with open(self.token_file) as handle:
                return handle.read().strip()
        return None


# -- which server, which credentials (kubernetes.core's rules) --------------------------------------------------

def auth_options(params, environ=None):
    """kubernetes.core's auth settings by their true names (``verify_ssl``, ``ssl_ca_cert``, ...): an option given,
    else ``K8S_AUTH_<OPTION>`` or ``K8S_AUTH_<TRUE NAME>`` (as ``_create_auth_spec`` reads them)."""
    environ = os.environ if environ is None else environ
    auth = {}
    for true_name, arg_name in AUTH_ARG_MAP.items():
        if params.get(arg_name) is not None:
            auth[true_name] = params.get(arg_name)
        elif arg_name == "proxy_headers":
            if any(k.startswith("K8S_AUTH_PROXY_HEADERS_") for k in environ):
                auth[true_name] = True
        else:
            value = environ.get("K8S_AUTH_%s" % arg_name.upper()) or environ.get("K8S_AUTH_%s" % true_name.upper())
            if value is not None:
                if (AUTH_ARG_SPEC.get(arg_name) or {}).get("type") == "bool":
                    value = value.lower() not in ("0", "false", "no")
                auth[true_name] = value
    for name in IMPERSONATION:
        value = params.get(name) if params.get(name) is not None else environ.get("K8S_AUTH_%s" % name.upper())
        if value:
            auth[name] = value
    return auth


def client_choice(environ=None):
    """``lean`` or ``kubernetes.core``: the value of ``CALICO_OPS_K8S_CLIENT`` (unset or empty: ``lean``); any other
    value raises ValueError naming the variable and the values allowed."""
    environ = os.environ if environ is None else environ
    value = (environ.get(CLIENT_ENV) or "lean").strip()
    if value not in CLIENT_CHOICES:
        raise ValueError("%s is %r: choose one of %s (unset means lean)" % (CLIENT_ENV, value,
                                                                            ", ".join(CLIENT_CHOICES)))
    return value


def endpoint(params, environ=None):
    """The ``Endpoint`` the auth options lead to, or ``None`` when kubernetes.core's own client must do it (or
    ``CALICO_OPS_K8S_CLIENT`` says so)."""
    environ = os.environ if environ is None else environ
    if client_choice(environ) == "kubernetes.core" or http_client is None:
        return None
    auth = auth_options(params, environ)
    if any(auth.get(name) for name in HANDED_OVER + IMPERSONATION):
        return None
    host = auth.get("host")
    if host and (auth.get("api_key") or (auth.get("cert_file") and auth.get("key_file"))):
        found = Endpoint(host)
    elif auth.get("kubeconfig") or auth.get("context"):
        found = from_kubeconfig(auth.get("kubeconfig"), auth.get("context"), environ)
    elif environ.get(IN_CLUSTER_ENV):
        return None  # in-cluster ServiceAccount first: kubernetes.core's rule, its client
    else:
        found = from_kubeconfig(None, None, environ)
    if found is None:
        return None
    return _override(found, auth)


def _override(found, auth):
    """The options given win over the kubeconfig (kubernetes.core sets them on the configuration it loaded)."""
    if auth.get("host"):
        found.server = auth["host"].rstrip("/")
    if auth.get("api_key"):
        found.token, found.token_file = auth["api_key"], None
    if auth.get("ssl_ca_cert"):
        found.ca = ("file", auth["ssl_ca_cert"])
    if auth.get("cert_file"):
        found.cert = ("file", auth["cert_file"])
    if auth.get("key_file"):
        found.key = ("file", auth["key_file"])
    if auth.get("verify_ssl") is not None:
        found.verify = bool(auth["verify_ssl"])
    if (found.cert is None) != (found.key is None):
        return None  # half a client certificate: kubernetes.core's client says what is wrong
    return found


def _named(entries, name, key):
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name and isinstance(entry.get(key), dict):
            return entry[key]
    return None


def from_kubeconfig(kubeconfig, context, environ):
    """An ``Endpoint`` from a kubeconfig (a path, or a dict as kubernetes.core accepts), or ``None`` when it is not
    one of the shapes read here (or does not load: kubernetes.core's client then reports why)."""
    base = None
    if isinstance(kubeconfig, dict):
        doc = kubeconfig
    else:
        path = kubeconfig or environ.get("KUBECONFIG") or "~/.kube/config"
        if not isinstance(path, str) or os.pathsep in path:
            return None  # several files are merged by the kubernetes client
        path = os.path.expanduser(path)
        try:
            import yaml
            with open(path) as handle:
                # libyaml's parser where PyYAML has it (the same safe constructor; a tenth of the pure-Python time)
                doc = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except Exception:  # unreadable or not YAML: kubernetes.core's client says so
            return None
        base = os.path.dirname(os.path.abspath(path))
    if not isinstance(doc, dict):
        return None
    context = context or doc.get("current-context")
    ctx = _named(doc.get("contexts"), context, "context")
    if not ctx:
        return None
    cluster = _named(doc.get("clusters"), ctx.get("cluster"), "cluster")
    user = _named(doc.get("users"), ctx.get("user"), "user") if ctx.get("user") else {}
    if not cluster or user is None or not cluster.get("server"):
        return None
    if set(cluster) - CLUSTER_KEYS or set(user) - USER_KEYS:
        return None  # tls-server-name, proxy-url, exec, auth-provider, username, impersonation, ...
    try:
        return Endpoint(
            cluster["server"],
            verify=not cluster.get("insecure-skip-tls-verify", False),
            ca=_material(cluster, "certificate-authority", base),
            cert=_material(user, "client-certificate", base),
            key=_material(user, "client-key", base),
            token=user.get("token"),
            token_file=_relative(user.get("tokenFile"), base) if not user.get("token") else None)
    except (TypeError, ValueError):  # bad base64: kubernetes.core's client says so
        return None


def _relative(path, base):
    if not path:
        return None
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) or base is None else os.path.join(base, path)


def _material(section, key, base):
    """``("data", bytes)`` from ``<key>-data`` (base64), else ``("file", path)`` from ``<key>`` (relative to the
    kubeconfig's directory, as the kubernetes client reads it), else None."""
    if section.get(key + "-data"):
        return ("data", base64.b64decode(section[key + "-data"]))
    if section.get(key):
        return ("file", _relative(section[key], base))
    return None


# -- the transport ----------------------------------------------------------------------------------------------

def _ssl_context(ep):
    """The server's certificate checked against the kubeconfig's CA only, when it names one (as kubectl and the
    kubernetes client do: the system's CA store is not also trusted, nor read - about 15-30 ms a process); against
    the system's CA store when it names none; not at all with insecure-skip-tls-verify."""
    if not ep.verify:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif ep.ca:
        kind, value = ep.ca
        if kind == "data":
            ctx = ssl.create_default_context(cadata=value.decode("utf-8"))
        else:
            ctx = ssl.create_default_context(cafile=value)
    else:
        ctx = ssl.create_default_context()
    # Python 3.13 made create_default_context() strict (VERIFY_X509_STRICT: RFC 5280 conformance, e.g. refusing a
    # certificate without an Authority Key Identifier). kubectl (Go) and kubernetes.core's client (urllib3's own
    # context) accept such clusters; this transport verifies as they do, so a controller on Python 3.13 reaches the
    # same clusters as one on 3.12 (chain, expiry and host name are verified either way).
    if ep.verify and hasattr(ssl, "VERIFY_X509_STRICT"):
        ctx.verify_flags &= ~ssl.VERIFY_X509_STRICT
    if ep.cert:
        _load_cert_chain(ctx, ep.cert, ep.key)
    return ctx


def _load_cert_chain(ctx, cert, key):
    """ssl reads a client certificate and key from files only: data is written to private temporary files (0600,
    in a directory of mode 0700) for the call, and removed at once (the kubernetes client keeps such files until
    the process ends)."""
    if cert[0] == "file" and key[0] == "file":
        ctx.load_cert_chain(cert[1], key[1])
        return
    tmp = tempfile.mkdtemp(prefix="calico-ops-")
    paths = []
    try:
        for name, (kind, value) in (("cert", cert), ("key", key)):
            if kind == "file":
                paths.append(value)
                continue
            path = os.path.join(tmp, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(value)
            paths.append(path)
        ctx.load_cert_chain(paths[0], paths[1])
    finally:
        for name in ("cert", "key"):
            try:
                os.unlink(os.path.join(tmp, name))
            except OSError:
                pass
        os.rmdir(tmp)


class HttpTransport(object):
    """One keep-alive connection per thread (``k8s/parallel.py`` sends from several), JSON in and out."""

    def __init__(self, ep):
        self.endpoint = ep
        url = urlsplit(ep.server)
        self.scheme = url.scheme or "https"
        self.host = url.hostname
        self.port = url.port or (443 if self.scheme == "https" else 80)
        self.prefix = url.path.rstrip("/")
        self.server = _Server(self.scheme, self.host, self.port)
        self.context = _ssl_context(ep) if self.scheme == "https" else None
        self.bearer = ep.bearer()
        self._local = threading.local()

    def _connection(self, timeout):
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None:
            readable = select.select([conn.sock], [], [], 0)[0]
            if readable:  # the server closed it (or sent what nobody asked for): start afresh
                conn.close()
                conn = None
        if conn is None:
            if self.scheme == "https":
                conn = http_client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
            else:
                conn = http_client.HTTPConnection(self.host, self.port, timeout=timeout)
            self._local.conn = conn
            self._local.fresh = True
        return conn

    def request(self, method, path, body=None, serialize=False, query_params=None, header_params=None,
                content_type=None, _request_timeout=None, **_ignored):
        """Send one request; return an object with ``data`` (bytes); raise ``HttpError`` or ``Unreachable``."""
        url = self.prefix + path
        if query_params:
            url += "?" + urlencode(list(query_params))
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        headers.update(header_params or {})
        if self.bearer:
            headers["Authorization"] = "Bearer %s" % self.bearer
        payload = None
        if body is not None:
            payload = body if isinstance(body, bytes) else (
                body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8"))
            headers["Content-Type"] = content_type or "application/json"
        for attempt in (1, 2):
            conn = self._connection(_request_timeout)
            reused = not getattr(self._local, "fresh", False)
            try:
                conn.request(method, url, body=payload, headers=headers)
                self._local.fresh = False
                resp = conn.getresponse()
                data = resp.read()
            except (http_client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                conn.close()
                self._local.conn = None
                # a keep-alive connection the server had closed: the request never reached it; once more on a new
                # one (not a POST: a create is never sent twice)
                if attempt == 1 and reused and method != "POST":
                    continue
                raise Unreachable(exc, self.server)
            except (OSError, http_client.HTTPException, ssl.SSLError) as exc:
                conn.close()
                self._local.conn = None
                raise Unreachable(exc, self.server)
            if resp.status >= 400:
                raise HttpError(resp.status, resp.reason, data)
            return _Response(data)
        return None  # pragma: no cover - the loop returns or raises


class _Response(object):
    def __init__(self, data):
        self.data = data
