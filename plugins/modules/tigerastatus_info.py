#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tigerastatus_info
short_description: Read, or wait for, the Tigera operator's TigeraStatus components
version_added: 0.1.0
description:
  - Lists C(TigeraStatus) (C(operator.tigera.io/v1), cluster-scoped) once and reports each component's
    C(Available), C(Progressing) and C(Degraded) conditions.
  - >-
    With O(wait=true) the action plugin polls until every component is Available, not Progressing and not
    Degraded (and every name in O(expected) exists), printing one progress line per poll such as
    C(calico: Progressing (ResourceNotReady: ...)). On timeout it fails quoting each component's reason and
    message as the operator wrote them.
  - >-
    The C(calico) component reports on the Installation C(default): while its conditions' C(observedGeneration)
    is older than the Installation's C(metadata.generation) (the Installation was just changed and the operator
    has not reconciled it yet), it is not ready and its state is V(Pending), whatever the older conditions say.
    Operators that report no C(observedGeneration) are judged by their conditions alone.
  - Read-only; never writes to the cluster.
author:
  - calico_ops maintainers (@calico-ops)
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
  - calico_ops.lifecycle.attributes.read_only
  - calico_ops.lifecycle.wait
options:
  expected:
    description: Component names that must exist (for example V(calico), V(apiserver)).
    type: list
    elements: str
    default: []
  fail_on_reasons:
    description:
      - With O(wait=true), stop waiting and fail once a component has stayed Degraded with one of these reasons (for
        example V(MigrationError), which the operator keeps until the user acts) for O(fail_after) seconds.
    type: list
    elements: str
    default: []
  fail_after:
    description: Seconds a component must stay Degraded with a reason of O(fail_on_reasons) before the wait fails.
    type: int
    default: 60
attributes:
  action:
    support: full
    description: The wait loop runs in an action plugin on the controller, so progress is shown per poll.
"""

EXAMPLES = r"""
- name: Wait for every Calico component to be Available
  calico_ops.lifecycle.tigerastatus_info:
    expected: [calico]
    wait: true
    wait_timeout: 900

- name: Read the status table once
  calico_ops.lifecycle.tigerastatus_info:
  register: status
"""

RETURN = r"""
installed:
  description: Whether the TigeraStatus CRD is served.
  returned: always
  type: bool
ready:
  description: Every component Available (not Progressing, not Degraded) and every expected name present.
  returned: always
  type: bool
missing:
  description: Expected names that have no TigeraStatus yet.
  returned: always
  type: list
  elements: str
components:
  description: One entry per TigeraStatus.
  returned: always
  type: list
  elements: dict
  sample:
    - name: calico
      available: "True"
      progressing: "False"
      degraded: "False"
      state: Available
      reason: AllObjectsAvailable
      message: All objects are available
      ready: true
lines:
  description: One line per component, as printed while waiting.
  returned: always
  type: list
  elements: str
waited:
  description: Seconds waited (with O(wait=true)).
  returned: when wait
  type: int
polls:
  description: Number of polls made (with O(wait=true)).
  returned: when wait
  type: int
"""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.tigerastatus import read
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import describe_object
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.wait import argument_spec as wait_argument_spec


def main():
    K8sModule(dict(
        wait_argument_spec(),
        expected=dict(type="list", elements="str", default=[]),
        fail_on_reasons=dict(type="list", elements="str", default=[]),
        fail_after=dict(type="int", default=60),
    ), error_prefix="reading TigeraStatus failed: ",
        subject=lambda p: describe_object("operator.tigera.io/v1", "tigerastatuses")).run(lambda m: read(m.client(), m.params["expected"]))


if __name__ == "__main__":
    main()
