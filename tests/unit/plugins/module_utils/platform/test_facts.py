"""platform/facts.py: the platform table is consistent (each name its title, the unsupported ones among the known
ones, the choices the modules and roles offer)."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import facts


def test_facts():
    assert set(facts.UNSUPPORTED_PLATFORMS) <= set(facts.PLATFORMS) and facts.PLATFORM_CHOICES[0] == "auto"
    assert facts.DEFAULT_PORTS["openshift"] == 6443 and facts.MKE_HOST == "proxy.local"


def test_every_platform_has_a_title_and_the_choices_are_auto_then_the_platforms():
    assert sorted(facts.PLATFORM_TITLES) == sorted(facts.PLATFORMS)
    assert facts.PLATFORM_CHOICES == ("auto",) + facts.PLATFORMS
    assert len(set(facts.PLATFORMS)) == len(facts.PLATFORMS)


def test_the_ports_and_aws_platforms_are_known_supported_platforms():
    supported = set(facts.PLATFORMS) - set(facts.UNSUPPORTED_PLATFORMS)
    assert set(facts.DEFAULT_PORTS) <= supported
    assert set(facts.AWS_PLATFORMS) <= supported
    assert all(isinstance(p, int) and 0 < p < 65536 for p in facts.DEFAULT_PORTS.values())
    assert facts.KOPS_HOST_PREFIX.endswith(".")
