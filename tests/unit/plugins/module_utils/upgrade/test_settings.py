"""upgrade/settings.py: the upgrade role's variables, each problem naming the variable and what it accepts (the role's
validate.yml stops on them before anything is read or written)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.upgrade.settings import problems


def variables(**over):
    """The role's defaults as validate.yml passes them (the etcd TLS files as whether each is given)."""
    out = {"upgrade_target_version": "v3.31.4", "upgrade_current_version": "", "upgrade_allow_untested_target": False,
           "upgrade_manifest_url": "https://raw.githubusercontent.com/projectcalico/calico",
           "upgrade_chart_repo_url": "https://docs.tigera.io/calico/charts",
           "upgrade_calicoctl_url": "https://github.com/projectcalico/calico/releases/download",
           "upgrade_etcd_endpoints": None, "upgrade_timeout": 600, "upgrade_poll_interval": 10,
           "upgrade_calicoctl_install": False, "upgrade_calicoctl_checksum": "", "upgrade_etcd_key": False,
           "upgrade_etcd_cert": False, "upgrade_etcd_ca": False, "upgrade_datastore": "", "upgrade_flavor": "",
           "upgrade_alp_deployments": []}
    out.update(over)
    return out


def test_the_defaults_pass():
    assert problems(variables()) == []


@pytest.mark.parametrize("over, words", [
    (dict(upgrade_target_version="3.31.4"), "upgrade_target_version"),
    (dict(upgrade_current_version="v3.29"), "upgrade_current_version"),
    (dict(upgrade_target_version="v3.14.0"), "upgrade_target_version"),
    (dict(upgrade_target_version="v3.99.0"), "upgrade_allow_untested_target"),
    (dict(upgrade_manifest_url="ftp://mirror"), "upgrade_manifest_url"),
    (dict(upgrade_etcd_endpoints=["etcd:2379"]), "upgrade_etcd_endpoints"),
    (dict(upgrade_etcd_endpoints=[]), "upgrade_etcd_endpoints is an empty list"),
    (dict(upgrade_target_version=""), "upgrade_target_version must be set (vX.Y.Z)"),
    (dict(upgrade_timeout=0), "upgrade_timeout and upgrade_poll_interval must be positive whole seconds, the interval "
                              "not above the timeout (got 0 and 10)"),
    (dict(upgrade_poll_interval=900), "(got 600 and 900)"),
    (dict(upgrade_calicoctl_install=True), "upgrade_calicoctl_checksum is required with upgrade_calicoctl_install"),
    (dict(upgrade_calicoctl_install=True, upgrade_calicoctl_checksum="abc"), "upgrade_calicoctl_checksum is required"),
    (dict(upgrade_etcd_key=True), "upgrade_etcd_key and upgrade_etcd_cert go together"),
    (dict(upgrade_datastore="kubernetes", upgrade_etcd_ca=True), "are for the etcd datastore: upgrade_datastore is "
                                                                 "kubernetes"),
    (dict(upgrade_datastore="kubernetes", upgrade_flavor="calico-etcd.yaml"),
     "upgrade_flavor calico-etcd.yaml is an etcd datastore manifest"),
    (dict(upgrade_alp_deployments=[{"namespace": "shop"}]),
     "upgrade_alp_deployments: an entry without a name: {'namespace': 'shop'}"),
])
def test_each_problem_names_its_variable(over, words):
    found = problems(variables(**over))
    assert found and all(words in f for f in found[-1:]), found


def test_what_is_allowed():
    assert problems(variables(upgrade_target_version="v3.99.0", upgrade_allow_untested_target=True)) == []
    assert problems(variables(upgrade_calicoctl_install=True, upgrade_calicoctl_checksum="sha256:ab12")) == []
    assert problems(variables(upgrade_etcd_key=True, upgrade_etcd_cert=True, upgrade_datastore="etcd",
                              upgrade_etcd_endpoints=["https://10.0.0.5:2379"], upgrade_flavor="calico-etcd.yaml")) == []
    assert problems(variables(upgrade_alp_deployments=[{"name": "cart", "namespace": "shop"}])) == []
