"""Platform facts in one place (issue 53 item 3): every role's and module's choice of platform is the platform
package's (``platform/facts.py``: the jobs take the supported platforms, the preflight names the unsupported ones too),
and no module_utils file re-exports another's names (an import kept only for others to import from it, marked unused)."""

from pathlib import Path

import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.platform import facts

ROOT = Path(__file__).resolve().parents[2]
# the preflight detects and names the platforms the eBPF data plane does not support, to refuse them with a reason
ALL_PLATFORMS = {"preflight_platform": facts.PLATFORM_CHOICES, "platform@ebpf_preflight_info": facts.PLATFORM_CHOICES}


def _role_platform_options():
    for spec_file in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        role = spec_file.parent.parent.name
        for entry, spec in (yaml.safe_load(spec_file.read_text())["argument_specs"] or {}).items():
            for name, option in (spec.get("options") or {}).items():
                if name.endswith("_platform") and "choices" in option:
                    yield "%s/%s %s" % (role, entry, name), name, option["choices"]


def _module_platform_options():
    for path in sorted((ROOT / "plugins" / "modules").glob("*.py")):
        text = path.read_text()
        if 'DOCUMENTATION = r"""' not in text:
            continue
        doc = yaml.safe_load(text.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0])
        option = (doc.get("options") or {}).get("platform")
        if option and "choices" in option:
            yield "module " + path.stem, "platform@" + path.stem, option["choices"]


def test_every_choice_of_platform_is_the_platform_packages():
    found = list(_role_platform_options()) + list(_module_platform_options())
    assert len(found) >= 9, found  # five roles (ebpf_install twice, services_endpoint twice), three modules
    for where, name, choices in found:
        wanted = ALL_PLATFORMS.get(name, facts.SUPPORTED_CHOICES)
        assert choices[0] == "auto" and sorted(choices) == sorted(wanted), (where, choices, wanted)


def test_no_module_utils_file_re_exports_another_files_names():
    shims = ["%s:%d" % (path.relative_to(ROOT), number)
             for path in sorted((ROOT / "plugins").rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if "noqa: F401" in line or "disable=unused-import" in line]
    assert shims == [], "imports kept only for others to import from (import from the defining module instead): %s" \
        % shims
