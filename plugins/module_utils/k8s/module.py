# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one module base: what every module of this collection does around its job, written once.

A module keeps its DOCUMENTATION, EXAMPLES and RETURN, its own options, and a ``main`` of a few lines::

    def main():
        K8sModule(argument_spec(), error_prefix="merge patch: ").run(
            lambda m: run_merge_patch(m.client(), ...))

``K8sModule`` adds kubernetes.core's auth options to the spec (``k8s_argument_spec``), builds the module
(check mode supported by every module: the ``Client`` refuses writes in check mode), builds the client
(a missing kubeconfig named, any other failure as ``cannot build a Kubernetes client``), maps errors to
``fail_json`` through ``errors.failure_message`` (a ``ClientError`` with its HTTP status; a job's error with the
result it carries; anything else, the kubernetes client's and urllib3's exceptions included, as one line too)
and shapes the result (``changed`` false unless the job says otherwise, ``warnings`` shown as Ansible
warnings). Every failure is one line, and ``fail_json`` is called outside any ``except`` block, so no traceback
reaches the result (ansible-core before 2.19 adds the pending exception's at -vvv).
``FileModule`` is the same for the modules that only read and write files (no cluster).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
except ImportError:  # pragma: no cover - kubernetes.core is a declared dependency
    AnsibleK8SModule = AnsibleModule

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import (
    Client, ClientError, FirstContactFailed, auth_argument_spec, check_kubeconfig, server_url)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import failure_message, one_line
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import Redactor


def _redact_exits(module, redactor):
    """Every way out of the module - its result, its failure, its warnings - goes through ``redactor`` (Secret
    data, sensitive keys, and the secret values given to the module in any form; see ``k8s/redact.py``), whoever
    calls them: the base, a job, kubernetes.core."""
    exit_json, fail_json, warn = module.exit_json, module.fail_json, module.warn

    def redacted_exit(**result):
        exit_json(**redactor.value(result))

    def redacted_fail(msg=None, **result):
        result = redactor.value(result)
        fail_json(msg=redactor.text(msg if msg is None or isinstance(msg, str) else str(msg)), **result)

    def redacted_warn(warning):
        warn(redactor.text(warning))

    module.exit_json, module.fail_json, module.warn = redacted_exit, redacted_fail, redacted_warn


def k8s_argument_spec(options):
    """kubernetes.core's auth options (kubeconfig, context, host, ...) plus the module's own ``options``."""
    spec = auth_argument_spec()
    spec.update(options)
    return spec


class _Deferred(Exception):
    """``fail()`` called while an exception is being handled: failed by ``run`` once the ``except`` block is left
    (ansible-core before 2.19 puts the pending exception's traceback in the result at -vvv)."""

    def __init__(self, msg, result):
        super(_Deferred, self).__init__(msg)
        self.msg = msg
        self.result = result


class _Base(object):
    """Error mapping and result shaping, shared by both kinds of module."""

    module_class = AnsibleModule

    def __init__(self, argument_spec, error_prefix="", errors=(), sensitive_keys=(), **kwargs):
        self.module = self.module_class(argument_spec=argument_spec, supports_check_mode=True, **kwargs)
        self.params = self.module.params
        self.error_prefix = error_prefix
        self.errors = tuple(errors)
        self.redactor = Redactor.for_module(self.module, argument_spec, sensitive_keys)
        _redact_exits(self.module, self.redactor)

    @property
    def check_mode(self):
        return self.module.check_mode

    @property
    def diff(self):
        return self.module._diff

    def fail(self, msg, **result):
        """Fail with ``msg`` (on one line); ``result`` is returned along (its ``warnings`` shown as warnings)."""
        if sys.exc_info()[1] is not None:
            raise _Deferred(msg, result)
        for warning in result.pop("warnings", None) or []:
            self.module.warn(warning)
        self.module.fail_json(msg=one_line(msg, 0), **result)

    def run_command(self, argv, data=None, timeout=None, environ_update=None):
        """``(rc, stdout, stderr)`` of a command, run by AnsibleModule.run_command (the module's own way: its
        environment, no shell), with ``data`` on its standard input and ``environ_update`` added to its environment.
        ``timeout`` seconds at most, through coreutils' ``timeout`` (rc 124 when reached; run_command has no limit
        of its own). A command that cannot be started raises OSError."""
        inner = getattr(self.module, "_module", self.module)  # kubernetes.core's AnsibleK8SModule wraps one
        argv = list(argv)
        if timeout:
            limit = inner.get_bin_path("timeout")
            if limit:
                argv = [limit, "--kill-after=5", str(int(timeout))] + argv
        return inner.run_command(argv, data=data, binary_data=True, environ_update=environ_update or {},
                                 handle_exceptions=False)

    def run(self, work):
        """``work(self)`` returns the result; errors become ``fail_json``; the result is returned with
        ``exit_json``."""
        failure = None
        try:
            result = work(self)
        except _Deferred as exc:
            failure = (exc.msg, exc.result)
        except ClientError as exc:
            failure = (self.error_prefix + str(exc), {"status": exc.status})
        except FirstContactFailed as exc:  # the API server not reached at all: named as the module's subject
            failure = (failure_message(exc.cause, what=self.what(), prefix=self.error_prefix, building=True),
                       {"status": 0})
        except self.errors as exc:  # a job's own error: its message, and what it did (``result``) if it says
            failure = (str(exc), dict(getattr(exc, "result", None) or {}))
        except Exception as exc:  # anything else (a bug, the kubernetes client's own exceptions): one line
            failure = (failure_message(exc, prefix=self.error_prefix), {})
        if failure is not None:  # outside the except block: fail_json adds no traceback of a pending exception
            self.fail(failure[0], **failure[1])
        result.setdefault("changed", False)
        for warning in result.pop("warnings", None) or []:
            self.module.warn(warning)
        self.module.exit_json(**result)


class K8sModule(_Base):
    """A module that talks to the Kubernetes API server (kubernetes.core's auth options are added)."""

    module_class = AnsibleK8SModule

    def __init__(self, options, error_prefix="", errors=(), subject=None, **kwargs):
        """``subject(params)``: what the module works on (``configmaps kube-system/x``), named by a failure that
        happens before any request can name its object (the API server not reached, a kubeconfig not loaded)."""
        if self.module_class is not AnsibleModule:
            # kubernetes.core's checks (of kubernetes, and of PyYAML: its version lookup imports every library it
            # knows) import the kubernetes library at every start (its cost: benchmarks/results/design-measurements.md);
            # it is needed only where kubernetes.core's own client is built, and checked there (k8s/client.py)
            kwargs.setdefault("check_k8s", False)
            kwargs.setdefault("check_pyyaml", False)
        super(K8sModule, self).__init__(k8s_argument_spec(options), error_prefix, errors, **kwargs)
        self.subject = subject

    def client(self, **kwargs):
        """The collection's ``Client`` (read-only in check mode)."""
        kwargs.setdefault("first_contact_fails_module", True)
        return self._build(lambda: Client.from_module(self.module, **kwargs))

    def server_url(self):
        """The API server URL the auth options lead to (kubernetes.core's rules; k8s/transport.py)."""
        return self._build(lambda: server_url(self.module))

    def _build(self, make):
        """``make()``, or a one-line failure: kubernetes.core's client reads the kubeconfig (its errors name the
        file: never shown) and asks the API server its version (connection refused when it is stopped)."""
        check_kubeconfig(self.module)
        failure = None
        try:
            return make()
        except ClientError:
            raise
        except Exception as exc:  # kubeconfig / auth errors from kubernetes.core, urllib3 connection errors
            failure = failure_message(exc, what=self.what(), building=True)
        self.fail(self.error_prefix + failure)

    def what(self):
        """The module's ``subject`` for these parameters (or ``the Kubernetes client``)."""
        try:
            return (self.subject(self.params) if self.subject else "") or "the Kubernetes client"
        except Exception:  # a description must never fail the failure
            return "the Kubernetes client"


class FileModule(_Base):
    """A module that reads and writes files only (no cluster)."""
