# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Where a long job keeps its durable record (calico_ops.lifecycle.records): ConfigMaps in the cluster and a
    file on the controller. The record's name is each module's own option (its default names the job)."""

    DOCUMENTATION = r"""
options:
  record_namespace:
    description:
      - Namespace of the record ConfigMaps. It must exist, and the module's identity must be allowed to create, get
        and update ConfigMaps there; both are proven by a server-side dry run before the first write (see
        O(variable_prefix)).
    type: str
    default: kube-system
  record_path:
    description:
      - Path of the record's JSON file on the host that runs the module (the controller with the C(local)
        connection).
      - Defaults to C(~/.calico_ops/records/<record_name>-<cluster id>.json), where the cluster id is the UID of
        namespace C(kube-system). A file that belongs to another cluster is refused.
    type: path
"""
