# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A cluster's K8S_AUTH_* settings (``calico_k8s_auth``) as the action group's module options (k8s/auth_settings.py):
every role's ``module_defaults`` takes them, so no setting goes through a task's environment."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import auth_settings


def k8s_auth_options(settings, kubeconfig="", context=""):
    try:
        return auth_settings.module_options(settings, kubeconfig=kubeconfig, context=context)
    except ValueError as exc:  # the message names keys, never a value
        raise AnsibleFilterError(str(exc))


def k8s_auth_problems(settings, name=auth_settings.VARIABLE):
    return auth_settings.problems(settings, name=name)


class FilterModule(object):
    def filters(self):
        return {
            "k8s_auth_options": k8s_auth_options,
            "k8s_auth_problems": k8s_auth_problems,
        }
