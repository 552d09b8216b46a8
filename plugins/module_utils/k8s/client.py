# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: talk to the Kubernetes API server.

Every module of this collection accepts kubernetes.core's auth options (and its ``K8S_AUTH_*`` environment), read
by kubernetes.core's rules. Requests are raw JSON (no per-object model conversion): LISTs are paginated with
``limit``/``continue`` and return plain dicts. They go through ``k8s/transport.py`` (http.client, no kubernetes
client import) when the options lead to a server and credentials it reads (a kubeconfig's certificates or token,
``host`` with ``api_key``), else through kubernetes.core's own client (exec plugins, auth providers, proxies,
impersonation, in-cluster): both behind the same ``request``.

Check mode is enforced here, once: a client built with ``check_mode=True`` refuses every mutating call
(``ReadOnlyViolation``), so a module in check mode cannot write even by mistake.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import threading

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
except ImportError:  # pragma: no cover - kubernetes.core is a declared dependency
    AUTH_ARG_SPEC = {}

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import (
    ClientError, ReadOnlyViolation, api_error, describe_path, is_api_exception, unreachable)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.transport import HttpTransport, endpoint

FIELD_MANAGER = "calico-ops"
DEFAULT_PAGE_SIZE = 500
# Metadata only (kubectl's own trick for ownerReferences and garbage collection): the server sends
# PartialObjectMetadata, never an object's content (a Secret's data, a ConfigMap's). A server that does not
# know the form (an older aggregated API) answers with the plain JSON of the second choice.
ACCEPT_METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
ACCEPT_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


def auth_argument_spec():
    """kubernetes.core's auth options (kubeconfig, context, host, api_key, ...), to merge into a spec."""
    return dict((k, dict(v)) for k, v in AUTH_ARG_SPEC.items())


def check_kubeconfig(module):
    """Fail naming the file when the kubeconfig given (option ``kubeconfig``, else ``K8S_AUTH_KUBECONFIG``) does not
    exist: kubernetes.core would only say ``Invalid kube-config file. No configuration found.``"""
    path, source = module.params.get("kubeconfig"), "kubeconfig"
    if path is None and not module.params.get("host"):
        path, source = os.environ.get("K8S_AUTH_KUBECONFIG"), "K8S_AUTH_KUBECONFIG"
    if isinstance(path, str) and path and os.pathsep not in path and not os.path.exists(os.path.expanduser(path)):
        module.fail_json(msg="%s: the kubeconfig file given does not exist" % source)  # the path itself is no_log


def api_path(api_version, plural, namespace=None, name=None, subresource=None):
    """The REST path of a collection or object: ``/api/v1/...`` or ``/apis/<group>/<version>/...``."""
    base = "/api/%s" % api_version if "/" not in api_version else "/apis/%s" % api_version
    parts = [base]
    if namespace:
        parts.append("namespaces/%s" % namespace)
    parts.append(plural)
    if name:
        parts.append(name)
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


class FirstContactFailed(Exception):
    """Nothing answered the client's first request (``cause``: the connection error, never its text alone)."""

    def __init__(self, cause):
        super(FirstContactFailed, self).__init__(type(cause).__name__)
        self.cause = cause


def _endpoint(module):
    """``endpoint()`` of the module's auth options; a bad ``CALICO_OPS_K8S_CLIENT`` fails the module naming it."""
    try:
        return endpoint(module.params)
    except ValueError as exc:
        module.fail_json(msg=str(exc))


def transport_from_module(module):
    """``HttpTransport`` when ``k8s/transport.py`` reads the auth options' shape (and ``CALICO_OPS_K8S_CLIENT`` is
    not ``kubernetes.core``), else kubernetes.core's dynamic client (``get_api_client``: its rules, its errors, its
    ``kubernetes`` library check)."""
    found = _endpoint(module)
    if found is not None:
        return HttpTransport(found)
    requires = getattr(module, "requires", None)
    if requires is not None:
        requires("kubernetes")  # kubernetes.core's own failure when the library is missing
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    return get_api_client(module=module).client


def server_url(module):
    """The API server URL the auth options lead to."""
    found = _endpoint(module)
    if found is not None:
        return found.server
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    return get_api_client(module=module).configuration.host


class Client(object):
    """A thin JSON client over a transport: ``k8s/transport.py``'s, or kubernetes.core's authenticated dynamic
    client (raw requests); anything with the ``request`` of the kubernetes ``DynamicClient``."""

    def __init__(self, dynamic_client, check_mode=False, field_manager=FIELD_MANAGER, timeout=60,
                 first_contact_fails_module=False):
        self._dyn = dynamic_client
        self.timeout = timeout
        self.check_mode = check_mode
        self.field_manager = field_manager
        self.requests = {"read": 0, "write": 0, "dry_run": 0}
        self._count_lock = threading.Lock()  # requests are sent from several threads (k8s/parallel.py)
        # the module's first request is its first contact with the API server (no request is made to build the
        # client): when nothing answers it, ``FirstContactFailed`` (not a ClientError: no job mistakes it for an
        # answer, e.g. a type "registered but unreadable") carries the cause to the module, which names its subject
        self.answered = False
        self.first_contact_fails_module = first_contact_fails_module

    @classmethod
    def from_module(cls, module, **kwargs):
        """Build from an AnsibleModule whose params hold kubernetes.core's auth options."""
        check_kubeconfig(module)
        return cls(transport_from_module(module), check_mode=module.check_mode, **kwargs)

    # -- transport -------------------------------------------------------------------------------

    def request(self, method, path, body=None, query=None, content_type=None, dry_run=False, accept=None, what=None,
                raw=False):
        """Send one request; return the decoded JSON body (or None; ``raw``: the body's text); raise ClientError.

        ``dry_run=True`` marks a server-side dry run (``dryRun=All`` is forced): it persists nothing, so it
        is allowed in check mode. ``accept``: the Accept header (default ``application/json``). ``what``: the
        object an error names, when the path does not (a POST to a collection).

        Errors are mapped once, here (``errors.api_error`` / ``errors.unreachable``): one line naming the object,
        the status, the reason and the API's message (never the response body), and what to do.
        """
        method = method.upper()
        mutating = method not in ("GET", "HEAD")
        if dry_run:
            query = dict(query or {}, dryRun="All")
        elif mutating and self.check_mode:
            raise ReadOnlyViolation("%s: check mode: refusing %s %s" % (what or describe_path(path), method, path))
        with self._count_lock:
            self.requests["dry_run" if dry_run else ("write" if mutating else "read")] += 1
        headers = {"Accept": accept or "application/json"}
        query_params = [(k, v) for k, v in (query or {}).items() if v is not None]
        error = None
        try:
            resp = self._dyn.request(method, path, body=body, serialize=False,
                                     query_params=query_params, header_params=headers,
                                     content_type=content_type or "application/json",
                                     _request_timeout=self.timeout)
            data = resp.data
            self.answered = True
        except Exception as exc:  # an error status (the API's); else connection refused, TLS, timeouts
            if is_api_exception(exc):
                self.answered = True
                error = api_error(method, path, exc.status, exc.reason, exc.body, what=what)
            elif self.first_contact_fails_module and not self.answered:
                error = FirstContactFailed(exc)
            else:
                error = unreachable(method, path, exc, what=what)
        if error is not None:
            raise error  # outside the except block: no chained exception (nor its text) travels with it
        if not data:
            return None
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        return data if raw else json.loads(data)

    # -- reads -------------------------------------------------------------------------------------

    def get(self, api_version, plural, name, namespace=None, metadata_only=False):
        """One object, or None when it does not exist. ``metadata_only``: only apiVersion, kind and metadata
        (PartialObjectMetadata), when the server can."""
        try:
            return self.request("GET", api_path(api_version, plural, namespace, name),
                                accept=ACCEPT_METADATA if metadata_only else None)
        except ClientError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, api_version, plural, namespace=None, label_selector=None, field_selector=None,
             page_size=DEFAULT_PAGE_SIZE, metadata_only=False):
        """Every object of a type, following ``continue`` tokens: one request per page.

        ``metadata_only``: each item is only its metadata (PartialObjectMetadataList, when the server can);
        ``apiVersion`` and ``kind`` are then those of the type listed (``kind`` only when the server said it:
        a metadata list does not)."""
        items = []
        token = None
        path = api_path(api_version, plural, namespace)
        while True:
            page = self.request("GET", path, query={"limit": page_size, "continue": token,
                                                    "labelSelector": label_selector,
                                                    "fieldSelector": field_selector},
                                accept=ACCEPT_METADATA_LIST if metadata_only else None)
            kind = (page.get("kind") or "").replace("List", "")
            partial = kind == "PartialObjectMetadata"
            for item in page.get("items") or []:
                if partial:
                    item.pop("apiVersion", None)
                    item.pop("kind", None)
                item.setdefault("apiVersion", api_version)
                if kind and not partial:
                    item.setdefault("kind", kind)
                items.append(item)
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def text(self, path, query=None):
        """The text a GET of ``path`` answers (a pod's log: ``.../pods/<name>/log``), or ``""``."""
        return self.request("GET", path, query=query, accept="text/plain, */*", raw=True) or ""

    def list_or_none(self, api_version, plural, **kwargs):
        """Like list(), but None when the type is not served (404)."""
        try:
            return self.list(api_version, plural, **kwargs)
        except ClientError as exc:
            if exc.status == 404:
                return None
            raise

    # -- writes (refused in check mode) -----------------------------------------------------------

    def create(self, api_version, plural, body, namespace=None, dry_run=False):
        """POST ``body``; ``dry_run``: a server-side dry run (allowed in check mode)."""
        name = (body.get("metadata") or {}).get("name")
        what = describe_path(api_path(api_version, plural, namespace, name)) if name else None
        return self.request("POST", api_path(api_version, plural, namespace), body=body,
                            query={"fieldManager": self.field_manager}, dry_run=dry_run, what=what)

    def replace(self, api_version, plural, body, namespace=None, dry_run=False):
        """PUT the whole object; with ``metadata.resourceVersion`` set the server refuses (409) a stale one.
        ``dry_run``: a server-side dry run (allowed in check mode)."""
        name = body["metadata"]["name"]
        return self.request("PUT", api_path(api_version, plural, namespace, name), body=body,
                            query={"fieldManager": self.field_manager}, dry_run=dry_run)

    def merge_patch(self, api_version, plural, name, patch, namespace=None):
        return self.request("PATCH", api_path(api_version, plural, namespace, name), body=patch,
                            content_type="application/merge-patch+json",
                            query={"fieldManager": self.field_manager})

    def json_patch(self, api_version, plural, name, ops, namespace=None):
        """JSON patch ``ops``; the answer is the patched object's metadata only (PartialObjectMetadata, when the
        server can): the jobs' JSON patches change metadata (owner references, labels, managedFields) and read
        nothing else back, so a Secret's data never comes back and a large object is not sent back whole."""
        return self.request("PATCH", api_path(api_version, plural, namespace, name), body=ops,
                            content_type="application/json-patch+json",
                            query={"fieldManager": self.field_manager}, accept=ACCEPT_METADATA)

    def apply(self, api_version, plural, body, namespace=None, force=True, dry_run=False):
        """Server-side apply under this client's field manager; ``dry_run``: a server-side dry run."""
        name = body["metadata"]["name"]
        return self.request("PATCH", api_path(api_version, plural, namespace, name), body=body,
                            content_type="application/apply-patch+yaml",
                            query={"fieldManager": self.field_manager,
                                   "force": "true" if force else None}, dry_run=dry_run)

    def delete(self, api_version, plural, name, namespace=None, precondition_uid=None):
        body = None
        if precondition_uid:
            body = {"kind": "DeleteOptions", "apiVersion": "v1",
                    "preconditions": {"uid": precondition_uid}}
        try:
            return self.request("DELETE", api_path(api_version, plural, namespace, name), body=body)
        except ClientError as exc:
            if exc.status == 404:
                return None
            raise
