"""ebpf_install/settings.py: the ebpf_install role's variables that depend on each other, each problem naming the
variable to change and what it may be (the role's validate.yml stops on them before anything is read or written)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.ebpf_install.settings import problems

CR_URL = "https://github.com/projectcalico/calico/releases/download/v3.31.4/custom-resources.yaml"


def variables(**over):
    """The role's defaults, as validate.yml passes them (the pull secrets as whether they are given)."""
    out = {"ebpf_install_variant": "Calico", "ebpf_install_pull_secret_file": False, "ebpf_install_pull_secret": False,
           "ebpf_install_installation_spec": {}, "ebpf_install_downloads_url": "https://downloads.tigera.io",
           "ebpf_install_manifest_url": "https://raw.githubusercontent.com/projectcalico/calico",
           "ebpf_install_enterprise_version": "v3.22.1", "ebpf_install_calico_version": "v3.31.4",
           "ebpf_install_timeout": 600, "ebpf_install_poll_interval": 10, "ebpf_install_readiness_window": -1,
           "ebpf_install_platform": "kubeadm", "ebpf_install_run_preflight": True}
    out.update(over)
    return out


def test_the_defaults_pass():
    assert problems(variables(), CR_URL) == []


@pytest.mark.parametrize("over, words", [
    (dict(ebpf_install_variant="TigeraSecureEnterprise"),
     "ebpf_install_pull_secret_file / ebpf_install_pull_secret: the TigeraSecureEnterprise variant needs exactly one"),
    (dict(ebpf_install_pull_secret_file=True, ebpf_install_pull_secret=True), "needs exactly one of them"),
    (dict(ebpf_install_installation_spec={"calicoNetwork": {"linuxDataplane": "Iptables"}}),
     "ebpf_install_installation_spec.calicoNetwork.linuxDataplane: must be BPF, the only value allowed here "
     "(this role sets the eBPF data plane; got \"Iptables\")"),
    (dict(ebpf_install_installation_spec={"variant": "TigeraSecureEnterprise"}),
     "ebpf_install_installation_spec.variant: must be ebpf_install_variant (Calico) or left out "
     "(got \"TigeraSecureEnterprise\")"),
    (dict(ebpf_install_manifest_url="ftp://mirror"), "ebpf_install_manifest_url: must be an http:// or https:// URL "
                                                     "(got \"ftp://mirror\")"),
    (dict(ebpf_install_downloads_url=""), "ebpf_install_downloads_url: must be an http:// or https:// URL"),
    (dict(ebpf_install_calico_version="3.31.4"), "ebpf_install_calico_version: must look like vX.Y.Z, for example "
                                                 "v3.31.4 (got \"3.31.4\")"),
    (dict(ebpf_install_enterprise_version="v3.22"), "ebpf_install_enterprise_version: must look like vX.Y.Z"),
    (dict(ebpf_install_timeout=0), "ebpf_install_timeout: must be a positive number of seconds (got 0)"),
    (dict(ebpf_install_poll_interval="soon"), "ebpf_install_poll_interval: must be a positive number of seconds"),
    (dict(ebpf_install_poll_interval=900), "ebpf_install_poll_interval (900) must not exceed ebpf_install_timeout (600)"),
    (dict(ebpf_install_readiness_window=-2), "ebpf_install_readiness_window: must be -1 (from calico-node's readiness "
                                             "probe), 0 (no window) or a positive number of seconds (got -2)"),
    (dict(ebpf_install_platform="auto", ebpf_install_run_preflight=False),
     "ebpf_install_platform: 'auto' needs the preflight's detection; set ebpf_install_run_preflight: true"),
])
def test_each_problem_names_its_variable(over, words):
    found = problems(variables(**over), CR_URL)
    assert len(found) == 1 and words in found[0], found


def test_the_derived_custom_resources_url_is_checked():
    assert problems(variables(), "file:///tmp/cr.yaml") == [
        "ebpf_install_custom_resources_url: must be an http:// or https:// URL (got \"file:///tmp/cr.yaml\")"]
    # without the derived one, the variable's own
    assert problems(variables(ebpf_install_custom_resources_url=CR_URL)) == []


def test_what_is_allowed_around_the_limits():
    assert problems(variables(ebpf_install_poll_interval=600, ebpf_install_readiness_window=0), CR_URL) == []
    assert problems(variables(ebpf_install_installation_spec={"variant": "Calico", "calicoNetwork": {
        "linuxDataplane": "BPF", "mtu": 1400}}), CR_URL) == []
    assert problems(variables(ebpf_install_platform="auto"), CR_URL) == []
    assert problems(variables(ebpf_install_run_preflight="false", ebpf_install_platform="auto"), CR_URL) != []
    enterprise = variables(ebpf_install_variant="TigeraSecureEnterprise", ebpf_install_pull_secret_file=True)
    assert problems(enterprise, CR_URL) == []


def test_several_problems_come_in_the_order_a_user_reads_them():
    found = problems(variables(ebpf_install_variant="TigeraSecureEnterprise", ebpf_install_timeout=-1,
                               ebpf_install_calico_version="latest"), CR_URL)
    assert [f.split(":")[0].split(" ")[0] for f in found] == [
        "ebpf_install_pull_secret_file", "ebpf_install_calico_version", "ebpf_install_timeout"]
