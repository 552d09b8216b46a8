"""A module's documented options against its argument spec, the record and workers options included (their type and
default come from the doc fragments calico_ops.lifecycle.records and .workers, which Ansible merges with the module's
own description)."""

import yaml

from ansible_collections.calico_ops.lifecycle.plugins.doc_fragments import (
    records as records_fragment, report as report_fragment, variable_prefix as variable_prefix_fragment, workers as workers_fragment)

RECORDED_JOB_FRAGMENTS = ["kubernetes.core.k8s_auth_options", "calico_ops.lifecycle.records", "calico_ops.lifecycle.report",
                          "calico_ops.lifecycle.variable_prefix", "calico_ops.lifecycle.workers"]


def assert_documented_options_match(module, fragments):
    """Every documented option is in the argument spec with the same type, default, choices, elements and
    required; the module extends ``fragments``, and the options of this collection's fragments match them too."""
    doc = yaml.safe_load(module.DOCUMENTATION)
    spec = module.argument_spec()
    own = dict((k, v) for k, v in spec.items() if k in doc["options"])
    assert sorted(own) == sorted(doc["options"])
    # workers: its description here, its type and default from the fragment (Ansible merges the two)
    workers = yaml.safe_load(workers_fragment.ModuleDocFragment.DOCUMENTATION)["options"]["workers"]
    assert set(doc["options"]["workers"]) == {"description"}
    doc["options"]["workers"] = dict(workers, **doc["options"]["workers"])
    for name, opt in doc["options"].items():
        assert spec[name]["type"] == opt["type"], name
        assert spec[name].get("default") == opt.get("default"), name
        assert spec[name].get("choices") == opt.get("choices"), name
        assert spec[name].get("elements") == opt.get("elements"), name
        assert bool(spec[name].get("required")) == bool(opt.get("required")), name
    assert "kubeconfig" in spec  # the auth options of kubernetes.core
    assert doc["extends_documentation_fragment"] == fragments
    for fragment_module, option in ((report_fragment, "report_limit"), (variable_prefix_fragment, "variable_prefix"),
                                    (records_fragment, "record_namespace"), (records_fragment, "record_path")):
        fragment = yaml.safe_load(fragment_module.ModuleDocFragment.DOCUMENTATION)["options"][option]
        assert (spec[option]["type"], spec[option].get("default")) == (fragment["type"], fragment.get("default"))
    for section in (module.EXAMPLES, module.RETURN):
        assert yaml.safe_load(section)
    return doc
