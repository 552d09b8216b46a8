# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A cluster's ``K8S_AUTH_*`` settings (a fleet host's ``calico_k8s_auth``) as module options, never as environment.

Given to a play as its ``environment:``, ansible-core puts each value on the command line of every task's process
(``/bin/sh -c 'K8S_AUTH_API_KEY=... python ...'``): printed in the ``EXEC`` lines at ``-vvv`` and readable in
``/proc/<pid>/cmdline`` by any user of the controller while the task runs. As options of the action group
``calico_ops.lifecycle.k8s`` (``module_defaults``) they travel in the module's arguments, ``api_key`` ``no_log``.

Only the settings every module of the group takes are accepted: this collection's modules take all of
kubernetes.core's auth options, but the group also holds kubernetes.core's ``helm`` modules, which take these six
and refuse any other. A setting outside them is refused naming its key (never its value): silently dropped, the
job would reach a cluster with other credentials; kept in the environment, it would leak again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

VARIABLE = "calico_k8s_auth"
# K8S_AUTH_* name (kubernetes.core's, either spelling) -> the module option
OPTIONS = {
    "K8S_AUTH_KUBECONFIG": "kubeconfig",
    "K8S_AUTH_CONTEXT": "context",
    "K8S_AUTH_HOST": "host",
    "K8S_AUTH_API_KEY": "api_key",
    "K8S_AUTH_SSL_CA_CERT": "ca_cert",
    "K8S_AUTH_CA_CERT": "ca_cert",
    "K8S_AUTH_VERIFY_SSL": "validate_certs",
    "K8S_AUTH_VALIDATE_CERTS": "validate_certs",
}
# the settings that lead to a cluster on their own (the fleet's plan refuses a host with none of them)
CONNECTING = ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT", "K8S_AUTH_HOST")


def problems(settings, name=VARIABLE):
    """What is wrong with ``settings`` (a dict of ``K8S_AUTH_*`` names), one message each; never a value."""
    if settings in (None, ""):
        return []
    if not isinstance(settings, dict):
        return ["%s must be a dictionary of K8S_AUTH_* settings (%s), not a %s"
                % (name, ", ".join(sorted(OPTIONS)), type(settings).__name__)]
    out = []
    unknown = sorted(str(k) for k in settings if k not in OPTIONS)
    if unknown:
        out.append("%s: %s not taken (the settings are module options, never environment variables: %s); "
                   "a kubeconfig (K8S_AUTH_KUBECONFIG) holds any other way to connect - client certificates, "
                   "proxies, impersonation" % (name, ", ".join(unknown), ", ".join(sorted(OPTIONS))))
    for option in sorted(set(OPTIONS.values())):
        given = sorted(k for k in settings if OPTIONS.get(k) == option and not _empty(settings[k]))
        if len(given) > 1:
            out.append("%s: %s say the same (module option %s): give one" % (name, " and ".join(given), option))
    return out


def module_options(settings, kubeconfig="", context=""):
    """The options of the action group ``calico_ops.lifecycle.k8s`` for a cluster: ``kubeconfig`` and ``context``
    (a role's own variables) when given, else the settings'; ``host``, ``api_key``, ``ca_cert`` and
    ``validate_certs`` from the settings. Settings left empty are left out (the module's own defaults then: the
    controller's ``K8S_AUTH_*`` environment, ``~/.kube/config``). Bad settings raise ValueError (``problems``)."""
    found = problems(settings)
    if found:
        raise ValueError("; ".join(found))
    options = {}
    for key, value in (settings or {}).items():
        if not _empty(value):
            options[OPTIONS[key]] = _bool(value) if OPTIONS[key] == "validate_certs" else _plain(value)
    for option, value in (("kubeconfig", kubeconfig), ("context", context)):
        if not _empty(value):
            options[option] = value
    return options


def _empty(value):
    return value is None or (isinstance(value, str) and not value.strip())


def _plain(value):
    """A value as the module takes it: text stays as it is; anything else but a mapping (a vaulted value of an
    older ansible-core, which ``str`` decrypts) becomes text."""
    return value if isinstance(value, (str, dict)) else str(value)


def _bool(value):
    """kubernetes.core's reading of a boolean ``K8S_AUTH_*`` variable: false for 0, false and no, else true."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() not in ("0", "false", "no")
