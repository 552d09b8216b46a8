# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Attributes shared by this collection's modules."""

    # calico_ops.lifecycle.attributes: the modules of the action group (meta/runtime.yml)
    DOCUMENTATION = r"""
options: {}
requirements:
  - kubernetes >= 24.2.0
attributes:
  action_group:
    description: Use C(group/calico_ops.lifecycle.k8s) in C(module_defaults) to set the connection options
      (O(kubeconfig), O(context), ...) once for this module, the collection's other Kubernetes modules and
      kubernetes.core's.
    support: full
    membership:
      - calico_ops.lifecycle.k8s
"""

    # calico_ops.lifecycle.attributes.read_only: modules that never write
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to diff.
"""
