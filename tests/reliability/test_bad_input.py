"""Bad input: every case fails (rc != 0), with a message naming the variable or the cause, before any write (the
audit log shows no create/update/patch/delete by the identity the case uses).

The cases run in one ``ansible-playbook`` process, one play and one inventory host per case (the role entry point
or module the case names, the case's variables as that host's variables: reliability_support.run_cases), so no case
shares a task or a ``run_once`` with another. Each test id judges its case on its own host's result and on the writes
made while its play ran.

Targets: ``role:<name>[/<entry point>]`` (meta/argument_specs.yml and the role's own checks), ``module:<name>``.
Placeholders in values: {missing_kubeconfig} (no such file), {unreachable_kubeconfig} (the server is a closed
port), {expired_kubeconfig} / {expired_token} (a service-account token signed by the cluster's own key, expired an
hour ago), {invalid_kubeconfig} (a token no one signed), {server}, {ca}.
"""

import re

import pytest
import yaml

from reliability_support import ca_file, kubeconfig_with, run_cases, signed_token

pytestmark = pytest.mark.integration

# id, target, variables, what the message must say (a regular expression: the variable or the cause)
CASES = [
    # -- preflight -------------------------------------------------------------------------------------------------
    ("preflight-unknown-platform", "role:preflight", {"preflight_platform": "k3s"},
     r"preflight_platform.*must be one (or more )?of"),
    ("preflight-unknown-check-name", "role:preflight", {"preflight_ignore": ["os_kernel", "kernel_version"]},
     r"preflight_ignore.*must be one or more of.*kernel_version"),
    ("preflight-page-size-not-a-number", "role:preflight", {"preflight_page_size": "many"},
     r"preflight_page_size.*int"),
    ("preflight-missing-kubeconfig", "role:preflight", {"preflight_kubeconfig": "{missing_kubeconfig}"},
     r"kubeconfig: the kubeconfig file given does not exist"),
    ("preflight-unreachable-api-server", "role:preflight", {"preflight_kubeconfig": "{unreachable_kubeconfig}"},
     r"(?i)(connection refused|max retries|failed to establish|unreachable)"),
    ("preflight-expired-token", "role:preflight", {"preflight_kubeconfig": "{expired_kubeconfig}"},
     r"(?i)(401|unauthori[sz]ed)"),
    ("preflight-invalid-token", "role:preflight", {"preflight_kubeconfig": "{invalid_kubeconfig}"},
     r"(?i)(401|unauthori[sz]ed)"),
    ("ebpf-preflight-module-unknown-check", "module:ebpf_preflight_info", {"ignore": ["bpf_everything"]},
     r"ignore.*must be one (or more )?of"),
    # -- services_endpoint ----------------------------------------------------------------------------------------
    ("services-endpoint-port-0", "role:services_endpoint",
     {"services_endpoint_host": "api.example.com", "services_endpoint_port": 0}, r"services_endpoint_port"),
    ("services-endpoint-port-70000", "role:services_endpoint",
     {"services_endpoint_host": "api.example.com", "services_endpoint_port": 70000}, r"services_endpoint_port"),
    ("services-endpoint-host-with-scheme", "role:services_endpoint",
     {"services_endpoint_host": "https://api.example.com"}, r"services_endpoint_host"),
    ("services-endpoint-host-with-port", "role:services_endpoint",
     {"services_endpoint_host": "api.example.com:6443"}, r"services_endpoint_host"),
    ("services-endpoint-unknown-platform", "role:services_endpoint", {"services_endpoint_platform": "gke"},
     r"services_endpoint_platform.*must be one (or more )?of"),
    ("services-endpoint-poll-above-timeout", "role:services_endpoint",
     {"services_endpoint_timeout": 5, "services_endpoint_poll_interval": 60}, r"services_endpoint_poll_interval"),
    # -- kube_proxy -------------------------------------------------------------------------------------------------
    ("kube-proxy-unknown-state", "role:kube_proxy", {"kube_proxy_state": "removed"},
     r"kube_proxy_state.*must be one (or more )?of"),
    ("kube-proxy-unknown-platform", "role:kube_proxy", {"kube_proxy_platform": "rancher"},
     r"kube_proxy_platform.*must be one (or more )?of"),
    ("kube-proxy-missing-kubeconfig", "role:kube_proxy",
     {"kube_proxy_platform": "kubeadm", "kube_proxy_kubeconfig": "{missing_kubeconfig}"},
     r"kubeconfig: the kubeconfig file given does not exist"),
    # -- ebpf_install (install_ebpf.yml, enable_ebpf.yml) -------------------------------------------------------------
    ("install-wrong-variant", "role:ebpf_install", {"ebpf_install_variant": "Enterprise"},
     r"ebpf_install_variant.*must be one (or more )?of"),
    ("install-unknown-platform", "role:ebpf_install", {"ebpf_install_variant": "Calico", "ebpf_install_platform": "gke"},
     r"ebpf_install_platform.*must be one (or more )?of"),
    ("install-version-without-patch", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_calico_version": "3.31"}, r"ebpf_install_calico_version"),
    ("install-version-four-parts", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_calico_version": "v3.31.4.1"}, r"ebpf_install_calico_version"),
    ("install-enterprise-version-no-v", "role:ebpf_install",
     {"ebpf_install_pull_secret": '{"auths": {}}', "ebpf_install_enterprise_version": "3.22.2"},
     r"ebpf_install_enterprise_version"),
    ("install-ftp-downloads-url", "role:ebpf_install",
     {"ebpf_install_pull_secret": '{"auths": {}}', "ebpf_install_downloads_url": "ftp://downloads.tigera.io"},
     r"ebpf_install_downloads_url"),
    ("install-file-manifest-url", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_manifest_url": "file:///srv/calico"}, r"ebpf_install_manifest_url"),
    ("install-custom-resources-url-without-scheme", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_custom_resources_url": "example.com/custom-resources.yaml"},
     r"ebpf_install_custom_resources_url"),
    ("install-enterprise-without-pull-secret", "role:ebpf_install", {"ebpf_install_variant": "TigeraSecureEnterprise"},
     r"ebpf_install_pull_secret"),
    ("install-two-pull-secrets", "role:ebpf_install",
     {"ebpf_install_pull_secret": '{"auths": {}}', "ebpf_install_pull_secret_file": "/etc/hostname"},
     r"ebpf_install_pull_secret.*exactly one"),
    ("install-poll-above-timeout", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_timeout": 10, "ebpf_install_poll_interval": 60},
     r"ebpf_install_poll_interval"),
    ("install-timeout-zero", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_timeout": 0, "ebpf_install_poll_interval": 0},
     r"ebpf_install_(timeout|poll_interval)"),
    ("install-felix-window-below-minus-one", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_readiness_window": -5},
     r"ebpf_install_readiness_window: must be -1"),
    ("enable-felix-window-not-a-number", "role:ebpf_install/enable",
     {"ebpf_install_variant": "Calico", "ebpf_install_readiness_window": "soon"},
     r"ebpf_install_readiness_window"),
    ("install-bottlerocket-not-a-choice", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_bottlerocket": "yes"}, r"ebpf_install_bottlerocket"),
    ("enable-wrong-variant", "role:ebpf_install/enable", {"ebpf_install_variant": "calico"},
     r"ebpf_install_variant.*must be one (or more )?of"),
    ("enable-unknown-platform", "role:ebpf_install/enable",
     {"ebpf_install_variant": "Calico", "ebpf_install_platform": "tkg"}, r"ebpf_install_platform.*must be one (or more )?of"),
    # -- upgrade (upgrade.yml) --------------------------------------------------------------------------------------
    ("upgrade-version-without-patch", "role:upgrade", {"upgrade_target_version": "3.31"}, r"upgrade_target_version"),
    ("upgrade-version-four-parts", "role:upgrade", {"upgrade_target_version": "v3.31.4.1"}, r"upgrade_target_version"),
    ("upgrade-current-version-garbage", "role:upgrade", {"upgrade_current_version": "latest"},
     r"upgrade_current_version"),
    ("upgrade-ftp-manifest-url", "role:upgrade", {"upgrade_manifest_url": "ftp://mirror.example.com/calico"},
     r"upgrade_manifest_url"),
    ("upgrade-empty-etcd-endpoint", "role:upgrade", {"upgrade_etcd_endpoints": [""]}, r"upgrade_etcd_endpoints"),
    ("upgrade-etcd-endpoint-not-a-url", "role:upgrade", {"upgrade_etcd_endpoints": ["10.0.0.5:2379"]},
     r"upgrade_etcd_endpoints"),
    ("upgrade-etcd-key-without-cert", "role:upgrade", {"upgrade_etcd_key": "-----BEGIN PRIVATE KEY-----"},
     r"upgrade_etcd_key.*upgrade_etcd_cert"),
    ("upgrade-unknown-method", "role:upgrade", {"upgrade_method": "kustomize"}, r"upgrade_method.*must be one (or more )?of"),
    # issue 23: an empty list where one item is needed; a target beyond the tested range without the opt-in
    ("upgrade-etcd-endpoints-empty-list", "role:upgrade", {"upgrade_etcd_endpoints": []},
     r"upgrade_etcd_endpoints is an empty list"),
    ("upgrade-target-untested", "role:upgrade", {"upgrade_target_version": "v3.32.0"},
     r"upgrade_target_version v3.32.0 is newer than v3.31.4.*upgrade_allow_untested_target"),
    # -- owner_references, host_endpoint_migration (roles of owner_references.yml, migrate_host_endpoints.yml; modules)
    ("owner-references-role-unknown-state", "role:owner_references", {"owner_references_state": "deleted"},
     r"owner_references_state.*must be one of"),
    ("host-endpoints-role-unknown-datastore", "role:host_endpoint_migration", {"host_endpoint_migration_datastore": "consul"},
     r"host_endpoint_migration_datastore.*must be one of"),
    ("host-endpoints-role-timeout-not-a-number", "role:host_endpoint_migration",
     {"host_endpoint_migration_wait_timeout": "soon"}, r"host_endpoint_migration_wait_timeout"),
    ("owner-references-unknown-state", "module:owner_references", {"state": "removed"}, r"state.*must be one (or more )?of"),
    ("owner-references-role-negative-report-limit", "role:owner_references", {"owner_references_report_limit": -1},
     r"owner_references_report_limit is -1: .*0 or more"),
    ("host-endpoints-role-negative-report-limit", "role:host_endpoint_migration",
     {"host_endpoint_migration_report_limit": -5}, r"host_endpoint_migration_report_limit is -5: .*0 or more"),
    ("owner-references-negative-report-limit", "module:owner_references", {"state": "detached", "report_limit": -1},
     r"report_limit is -1: .*0 or more"),
    ("host-endpoints-negative-report-limit", "module:host_endpoint_migration", {"report_limit": -2},
     r"report_limit is -2: .*0 or more"),
    ("owner-references-role-empty-api-versions", "role:owner_references", {"owner_references_owner_api_versions": []},
     r"owner_references_owner_api_versions is an empty list"),
    ("owner-references-empty-api-versions", "module:owner_references", {"state": "detached", "owner_api_versions": []},
     r"owner_api_versions is an empty list"),
    ("owner-references-missing-kubeconfig", "module:owner_references",
     {"state": "detached", "kubeconfig": "{missing_kubeconfig}"},
     r"kubeconfig: the kubeconfig file given does not exist"),
    ("owner-references-unreachable-api-server", "module:owner_references",
     {"state": "detached", "host": "https://127.0.0.1:1", "api_key": "unused-token-of-an-unreachable-server", "ca_cert": "{ca}"},
     r"(?i)(connection refused|max retries|failed to establish)"),
    ("owner-references-expired-token", "module:owner_references",
     {"state": "detached", "host": "{server}", "api_key": "{expired_token}", "ca_cert": "{ca}"},
     r"(?i)(401|unauthori[sz]ed)"),
    ("host-endpoints-unknown-conflict-policy", "module:host_endpoint_migration", {"label_conflicts": "merge"},
     r"label_conflicts.*must be one (or more )?of"),
    ("host-endpoints-unknown-api-version", "module:host_endpoint_migration", {"api_version": "projectcalico.org/v1"},
     r"api_version.*must be one (or more )?of"),
    ("host-endpoints-etcd-without-calicoctl", "module:host_endpoint_migration",
     {"datastore": "etcd", "calicoctl_path": "calicoctl-not-installed-here"}, r"calicoctl_path:.*calicoctl-not-installed-here"),
    ("host-endpoints-invalid-token", "module:host_endpoint_migration", {"kubeconfig": "{invalid_kubeconfig}"},
     # the error mapper's one line: what was read, the API's status, the request, and what to do
     r"^cannot read projectcalico.org/v3: API projectcalico.org/v3: 401 Unauthorized: .*\(GET /apis/projectcalico.org/v3\); "
     r"the credentials were refused: renew the token"),
    # disable_ebpf.yml (role ebpf_rollback, issue 22): each refused before any write, naming the variable
    ("rollback-services-endpoint-unknown", "role:ebpf_rollback", {"ebpf_rollback_services_endpoint": "delete"},
     r"ebpf_rollback_services_endpoint must be one of: keep, remove, got: delete"),
    ("rollback-platform-upper-case", "role:ebpf_rollback", {"ebpf_rollback_platform": "EKS"},
     r"ebpf_rollback_platform must be one of: auto, kubeadm, .*got: EKS"),
    ("rollback-timeout-zero", "role:ebpf_rollback", {"ebpf_rollback_timeout": 0},
     r"ebpf_rollback_timeout \(0\) and ebpf_rollback_poll_interval \(10\) must be positive"),
    ("rollback-empty-node-selector", "role:ebpf_rollback", {"ebpf_rollback_kube_proxy_node_selector": {}},
     r"ebpf_rollback_kube_proxy_node_selector: must name the nodeSelector"),
    ("rollback-override-keeps-bpf", "role:ebpf_rollback",
     {"ebpf_rollback_installation_spec": {"calicoNetwork": {"linuxDataplane": "BPF"}}},
     r"ebpf_rollback_installation_spec.calicoNetwork.linuxDataplane: must be Iptables \(or unset\), got \"BPF\""),
    # migrate_datastore.yml (role datastore_migration, issue 22): each refused before any write, naming the variable
    ("migrate-datastore-etcd-flavor", "role:datastore_migration", {"datastore_migration_manifest": "calico-etcd.yaml"},
     r"datastore_migration_manifest must be one of: calico.yaml, calico-typha.yaml, canal.yaml, "
     r"calico-policy-only.yaml, got: calico-etcd.yaml"),
    ("migrate-datastore-endpoint-no-scheme", "role:datastore_migration",
     {"datastore_migration_etcd_endpoints": ["https://10.0.0.1:2379", "10.0.0.2:2379"]},
     r"datastore_migration_etcd_endpoints: each must be an http:// or https:// URL, got: 10.0.0.2:2379$"),
    ("migrate-datastore-key-without-cert", "role:datastore_migration",
     {"datastore_migration_etcd_key": "-----BEGIN PRIVATE KEY-----\nbad-input-key\n-----END PRIVATE KEY-----"},
     r"datastore_migration_etcd_key and datastore_migration_etcd_cert: give both \(PEM text\) or neither; only the "
     r"key was given$"),
    ("migrate-datastore-version-short", "role:datastore_migration", {"datastore_migration_version": "3.31"},
     r"datastore_migration_version: empty \(calico-node's image tag\) or vX.Y.Z, got: 3.31"),
    ("migrate-datastore-timeout-zero", "role:datastore_migration", {"datastore_migration_timeout": 0},
     r"datastore_migration_timeout \(0\) and datastore_migration_poll_interval \(5\) must be positive"),
    # migrate_to_operator.yml (role operator_migration, issue 22): each refused before any write, naming the variable
    ("operator-migration-manifest-etcd", "role:operator_migration", {"operator_migration_manifest": "calico-etcd.yaml"},
     r"operator_migration_manifest must be one of: calico.yaml, calico-typha.yaml, got: calico-etcd.yaml"),
    ("operator-migration-version-no-v", "role:operator_migration", {"operator_migration_version": "3.31.4"},
     r"operator_migration_version: empty \(calico-node's image tag\) or vX.Y.Z, got: 3.31.4"),
    ("operator-migration-url-with-space", "role:operator_migration",
     {"operator_migration_manifest_url": "http://mirror.example/calico releases"},
     r"operator_migration_manifest_url: an http:// or https:// URL without spaces, got: http://mirror.example/calico "
     r"releases"),
    ("operator-migration-namespace-upper-case", "role:operator_migration", {"operator_migration_namespace": "Kube-System"},
     r"operator_migration_namespace: a Kubernetes name .*got: 'Kube-System'"),
    ("operator-migration-overrides-a-list", "role:operator_migration",
     {"operator_migration_installation_overrides": ["calicoNetwork"]},
     r"operator_migration_installation_overrides.*dict"),
    ("operator-migration-poll-zero", "role:operator_migration", {"operator_migration_poll_interval": 0},
     r"operator_migration_timeout \(900\) and operator_migration_poll_interval \(0\) must be positive"),
    # -- issue 18: the categories across the playbooks, each naming the variable and what it allows ----------------
    # enum values in the wrong case (Ansible's choices are case-sensitive: only the documented spelling is valid)
    ("kube-proxy-state-capitalised", "role:kube_proxy", {"kube_proxy_state": "Disabled"},
     r"kube_proxy_state must be one of: disabled, enabled, got: Disabled"),
    ("kube-proxy-platform-upper-case", "role:kube_proxy", {"kube_proxy_platform": "KUBEADM"},
     r"kube_proxy_platform must be one of: auto, generic, kubeadm, .*got: KUBEADM"),
    ("preflight-platform-mixed-case", "role:preflight", {"preflight_platform": "Eks"},
     r"preflight_platform must be one of: auto, .*eks.*got: Eks"),
    ("preflight-ignore-upper-case-name", "role:preflight", {"preflight_ignore": ["OS_KERNEL"]},
     r"preflight_ignore must be one or more of: architecture, os_kernel.*Got no match for: OS_KERNEL"),
    ("services-endpoint-platform-upper-case", "role:services_endpoint", {"services_endpoint_platform": "EKS"},
     r"services_endpoint_platform must be one of: auto, .*eks.*got: EKS"),
    ("install-variant-upper-case", "role:ebpf_install", {"ebpf_install_variant": "CALICO"},
     r"ebpf_install_variant must be one of: Calico, TigeraSecureEnterprise, got: CALICO"),
    ("install-bootstrap-camel-case", "role:ebpf_install", {"ebpf_install_variant": "Calico",
                                                            "ebpf_install_bootstrap": "ConfigMap"},
     r"ebpf_install_bootstrap must be one of: configmap, operator, got: ConfigMap"),
    # ("False" is Ansible's boolean spelling: it maps onto the choice false; "Auto" is no choice)
    ("install-bottlerocket-capitalised", "role:ebpf_install", {"ebpf_install_variant": "Calico",
                                                                "ebpf_install_bottlerocket": "Auto"},
     r"ebpf_install_bottlerocket must be one of: auto, true, false, got: Auto"),
    ("install-linux-dataplane-lower-case", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_installation_spec": {"calicoNetwork": {"linuxDataplane": "bpf"}}},
     r"ebpf_install_installation_spec.calicoNetwork.linuxDataplane: must be BPF.*got \"bpf\""),
    ("install-linux-dataplane-mixed-case", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_installation_spec": {"calicoNetwork": {"linuxDataplane": "Bpf"}}},
     r"ebpf_install_installation_spec.calicoNetwork.linuxDataplane: must be BPF.*got \"Bpf\""),
    ("enable-bootstrap-upper-case", "role:ebpf_install/enable", {"ebpf_install_variant": "Calico",
                                                                  "ebpf_install_bootstrap": "OPERATOR"},
     r"ebpf_install_bootstrap must be one of: configmap, operator, got: OPERATOR"),
    ("upgrade-method-capitalised", "role:upgrade", {"upgrade_method": "Helm"},
     r"upgrade_method must be one of: , helm, operator, manifest, got: Helm"),
    ("upgrade-datastore-upper-case", "role:upgrade", {"upgrade_datastore": "KUBERNETES"},
     r"upgrade_datastore must be one of: , kubernetes, etcd, got: KUBERNETES"),
    ("upgrade-calicoctl-arch-alias", "role:upgrade", {"upgrade_calicoctl_arch": "x86_64"},
     r"upgrade_calicoctl_arch must be one of: amd64, arm64, ppc64le, s390x, got: x86_64"),
    ("owner-references-state-capitalised", "role:owner_references", {"owner_references_state": "Attached"},
     r"owner_references_state must be one of: detached, attached, got: Attached"),
    ("host-endpoints-label-conflicts-capitalised", "role:host_endpoint_migration",
     {"host_endpoint_migration_label_conflicts": "Overwrite"},
     r"host_endpoint_migration_label_conflicts must be one of: fail, overwrite, skip, got: Overwrite"),
    # versions with and without the leading v
    ("install-version-without-v", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_calico_version": "3.31.4"},
     r"ebpf_install_calico_version: must look like vX.Y.Z.*got \"3.31.4\""),
    ("install-version-capital-v", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_calico_version": "V3.31.4"},
     r"ebpf_install_calico_version: must look like vX.Y.Z.*got \"V3.31.4\""),
    ("upgrade-version-without-v", "role:upgrade", {"upgrade_target_version": "3.31.4"}, r"upgrade_target_version.*vX.Y.Z"),
    ("upgrade-current-version-without-v", "role:upgrade", {"upgrade_current_version": "3.27.5"},
     r"upgrade_current_version.*vX.Y.Z"),
    # types
    ("kube-proxy-timeout-not-a-number", "role:kube_proxy", {"kube_proxy_state": "disabled", "kube_proxy_timeout": "1m"},
     r"kube_proxy_timeout.*int"),
    # (a string "key=value" is Ansible's shorthand for a dict: a list is no dict)
    ("kube-proxy-node-selector-a-list", "role:kube_proxy", {"kube_proxy_node_selector": ["non-calico=true"]},
     r"kube_proxy_node_selector.*dict"),
    ("install-installation-spec-a-string", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_installation_spec": "calicoNetwork"},
     r"ebpf_install_installation_spec.*dict"),
    ("owner-references-require-record-not-a-bool", "role:owner_references", {"owner_references_require_record": "maybe"},
     r"owner_references_require_record.*bool"),
    # URLs
    ("upgrade-chart-repo-url-without-scheme", "role:upgrade", {"upgrade_chart_repo_url": "projectcalico.docs.tigera.io/charts"},
     r"upgrade_chart_repo_url.*http"),
    ("upgrade-calicoctl-url-with-space", "role:upgrade", {"upgrade_calicoctl_url": "https://github.com/ projectcalico"},
     r"upgrade_calicoctl_url.*http"),
    # ports with spaces
    ("services-endpoint-port-with-space", "role:services_endpoint",
     {"services_endpoint_host": "api.example.com", "services_endpoint_port": "64 43"}, r"services_endpoint_port.*int"),
    ("services-endpoint-host-with-space", "role:services_endpoint", {"services_endpoint_host": "api.example .com"},
     r"services_endpoint_host"),
    ("upgrade-etcd-endpoint-port-with-space", "role:upgrade", {"upgrade_etcd_endpoints": ["https://10.0.0.5: 2379"]},
     r"upgrade_etcd_endpoints"),
    # empty lists and maps
    ("kube-proxy-empty-node-selector", "role:kube_proxy", {"kube_proxy_node_selector": {}},
     r"kube_proxy_node_selector: must have at least one key"),
    ("kube-proxy-empty-configmaps", "role:kube_proxy", {"kube_proxy_platform": "kubeadm", "kube_proxy_configmaps": []},
     r"kube_proxy_configmaps is an empty list: name at least one ConfigMap"),
    ("services-endpoint-empty-aws-nameservers", "role:services_endpoint",
     {"services_endpoint_host": "api.example.com", "services_endpoint_aws_dns": True,
      "services_endpoint_aws_dns_nameservers": []},
     r"services_endpoint_aws_dns_nameservers is an empty list: give at least one DNS server address"),
    # unknown names in ignore lists
    ("install-preflight-ignore-unknown-name", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "preflight_ignore": ["kernel"]},
     r"preflight_ignore must be one or more of: architecture, os_kernel.*Got no match for: kernel"),
    # conflicting options
    ("install-installation-spec-iptables", "role:ebpf_install",
     {"ebpf_install_variant": "Calico",
      "ebpf_install_installation_spec": {"calicoNetwork": {"linuxDataplane": "Iptables"}}},
     r"ebpf_install_installation_spec.calicoNetwork.linuxDataplane: must be BPF"),
    ("install-installation-spec-other-variant", "role:ebpf_install",
     {"ebpf_install_variant": "Calico", "ebpf_install_installation_spec": {"variant": "TigeraSecureEnterprise"}},
     r"ebpf_install_installation_spec.variant: must be ebpf_install_variant \(Calico\)"),
    ("upgrade-kubernetes-datastore-with-etcd-endpoints", "role:upgrade",
     {"upgrade_datastore": "kubernetes", "upgrade_etcd_endpoints": ["https://10.0.0.5:2379"]},
     r"upgrade_etcd_endpoints, .*are for the etcd datastore: upgrade_datastore is kubernetes"),
    ("upgrade-etcd-flavor-with-kubernetes-datastore", "role:upgrade",
     {"upgrade_datastore": "kubernetes", "upgrade_flavor": "calico-etcd.yaml"}, r"upgrade_flavor calico-etcd.yaml is an etcd datastore manifest: upgrade_datastore must be etcd or empty"),
    # -- issue 36: the record location and calicoctl's datastore, proven before the first write ---------------------
    ("owner-references-role-record-namespace-missing", "role:owner_references",
     {"owner_references_state": "detached", "owner_references_record_namespace": "no-such-namespace",
      "owner_references_record_path": "{workdir}/oref-record.json"},
     r"^owner_references_record_namespace: the record namespace 'no-such-namespace' does not exist .*; nothing was "
     r"written$"),
    ("owner-references-attach-record-namespace-missing", "module:owner_references",
     {"state": "attached", "record_namespace": "no-such-namespace", "record_path": "{workdir}/oref-record.json"},
     r"record_namespace: the record namespace 'no-such-namespace' does not exist .*nothing was written"),
    ("owner-references-record-path-under-a-file", "module:owner_references",
     {"state": "detached", "record_path": "{a_file}/record.json"},
     r"record_path: the record file .*/record.json cannot be created: .* is not a directory; nothing was written"),
    ("host-endpoints-role-restore-record-namespace-missing", "role:host_endpoint_migration",
     {"host_endpoint_migration_state": "restored", "host_endpoint_migration_record_namespace": "no-such-namespace",
      "host_endpoint_migration_record_path": "{workdir}/hep-record.json"},
     r"host_endpoint_migration_record_namespace: the record namespace 'no-such-namespace' does not exist"),
    ("host-endpoints-role-record-path-a-directory", "role:host_endpoint_migration",
     {"host_endpoint_migration_state": "restored", "host_endpoint_migration_record_path": "{workdir}"},
     r"host_endpoint_migration_record_path: .* is a directory, not a file for the record"),
    ("host-endpoints-role-etcd-unconfigured-calicoctl", "role:host_endpoint_migration",
     {"host_endpoint_migration_datastore": "etcd", "host_endpoint_migration_calicoctl_path": "{calicoctl}"},
     r"host_endpoint_migration_datastore is etcd but calicoctl has no etcd settings: .*fall back to the Kubernetes "
     r"datastore; set host_endpoint_migration_calicoctl_config"),
    ("host-endpoints-etcd-calicoctl-config-of-kubernetes", "module:host_endpoint_migration",
     {"datastore": "etcd", "calicoctl_path": "{calicoctl}", "calicoctl_config": "{kdd_calicoctl_config}"},
     r"datastore is etcd but calicoctl's configuration .* is of the kubernetes datastore"),
    ("operator-migration-record-namespace-missing", "role:operator_migration",
     {"operator_migration_record_namespace": "no-such-namespace"},
     r"operator_migration_record_namespace: the record namespace 'no-such-namespace' does not exist"),
    ("datastore-migration-record-namespace-missing", "role:datastore_migration",
     {"datastore_migration_record_namespace": "no-such-namespace"},
     r"datastore_migration_record_namespace: the record namespace 'no-such-namespace' does not exist"),
    # -- issue 39: the diagnostics archive, refused before anything is read or written ------------------------------
    ("diagnostics-negative-log-lines", "role:diagnostics",
     {"diagnostics_log_lines": -1, "diagnostics_path": "{workdir}/diag.tar.gz"},
     r"^diagnostics_log_lines: 0 \(no logs\) to 100000 lines per container, got -1; nothing was collected$"),
    ("diagnostics-no-namespace", "role:diagnostics",
     {"diagnostics_namespaces": [], "diagnostics_path": "{workdir}/diag.tar.gz"},
     r"^diagnostics_namespaces: a list of namespace names is needed, got \[\]; nothing was collected$"),
    ("diagnostics-path-under-a-file", "role:diagnostics", {"diagnostics_path": "{a_file}/diag.tar.gz"},
     r"^diagnostics_path: the archive .*/diag.tar.gz cannot be created: .* is not a directory; nothing was collected$"),
    ("diagnostics-path-not-an-archive", "role:diagnostics", {"diagnostics_path": "{workdir}/diag.zip"},
     r"^diagnostics_path: .*/diag.zip must end in .tar.gz or .tgz"),
    ("diagnostics-module-too-many-log-lines", "module:diagnostics_archive",
     {"path": "{workdir}/diag.tar.gz", "log_lines": 200000}, r"^log_lines: 0 \(no logs\) to 100000"),
    # -- issue 39: the connectivity check, refused before anything is deployed ------------------------------------
    ("connectivity-unknown-check", "role:connectivity", {"connectivity_checks": ["pod_to_pod", "ping"]},
     r"connectivity_checks.*must be one (or more )?of"),
    ("connectivity-selector-matches-no-node", "role:connectivity", {"connectivity_node_selector": {"pool": "none"}},
     r'connectivity_node_selector \{"pool": "none"\} matches no Ready Linux node \(\d+ nodes, 0 matched the labels\)'
     r"; nothing was deployed"),
    ("connectivity-negative-probe-interval", "role:connectivity", {"connectivity_probe_interval": -1},
     r"connectivity_probe_interval is -1.0: give a number of at least 0.1"),
    ("connectivity-negative-policy-timeout", "role:connectivity", {"connectivity_policy_timeout": -5},
     r"connectivity_policy_timeout is -5: give a number of at least 1"),
    ("connectivity-ready-timeout-zero", "role:connectivity", {"connectivity_ready_timeout": 0},
     r"connectivity_ready_timeout \(0\) and connectivity_cleanup_timeout \(120\) must be whole seconds above 0"),
    ("connectivity-probe-dir-under-a-file", "role:connectivity",
     {"connectivity_action": "start", "connectivity_measure": True, "connectivity_probe_dir": "{a_file}/probes"},
     r"connectivity_probe_dir: the prober's file .*/probes/prober-.*\.jsonl cannot be created: .* is not a directory"),
    ("connectivity-module-port-out-of-range", "module:connectivity_info", {"stage": "plan", "http_port": 70000},
     r"http_port is 70000: give a TCP port, 1 to 65535"),
    ("connectivity-service-port-is-the-host-port", "role:connectivity", {"connectivity_service_port": 8083},
     r"connectivity_service_port and connectivity_host_port are both 8083: give two ports"),
    # -- fleet_rollout (the plan, on the controller; the clusters' own cases in integration/test_fleet.py) ----------
    ("fleet-unknown-job", "role:fleet_rollout", {"fleet_rollout_job": "reinstall"},
     r"fleet_rollout_job must be one of: install_ebpf, enable_ebpf, upgrade, disable_ebpf"),
    ("fleet-group-without-hosts", "role:fleet_rollout",
     {"fleet_rollout_job": "enable_ebpf", "fleet_rollout_group": "no-such-group"},
     r"fleet_rollout_group \"no-such-group\" has no hosts in the inventory"),
    ("fleet-canary-outside-the-group", "role:fleet_rollout",
     {"fleet_rollout_job": "enable_ebpf", "fleet_rollout_group": "all", "fleet_rollout_canary": "cluster-nowhere"},
     r"fleet_rollout_canary names cluster-nowhere, not a host of group all"),
    ("fleet-batch-0", "role:fleet_rollout", {"fleet_rollout_job": "upgrade", "fleet_rollout_batch": 0},
     r"fleet_rollout_batch is \"0\": give a count of clusters"),
    ("fleet-batch-over-100-percent", "role:fleet_rollout", {"fleet_rollout_job": "upgrade", "fleet_rollout_batch": "101%"},
     r"fleet_rollout_batch is \"101%\""),
    ("fleet-max-fail-over-100", "role:fleet_rollout",
     {"fleet_rollout_job": "upgrade", "fleet_rollout_max_fail_percentage": 150},
     r"fleet_rollout_max_fail_percentage is \"150\": give a percentage, 0 to 100"),
    ("fleet-rollback-of-an-upgrade", "role:fleet_rollout",
     {"fleet_rollout_job": "upgrade", "fleet_rollout_rollback_failed": True},
     r"fleet_rollout_rollback_failed is true, but job upgrade has no rollback"),
]

CASE_IDS = [c[0] for c in CASES]
assert len(set(CASE_IDS)) == len(CASES) >= 30
# Cases that get past validation into a ``run_once`` task (the preflight's API scan): a failed run_once task fails
# every host of its play, and ansible-playbook then ends the whole run, so each of these gets a process of its own.
OWN_PROCESS = {"preflight-missing-kubeconfig", "preflight-unreachable-api-server", "preflight-expired-token",
               "preflight-invalid-token"}


def _fill(value, subst):
    if isinstance(value, str):
        for key, repl in subst.items():
            value = value.replace("{%s}" % key, repl)
        return value
    if isinstance(value, list):
        return [_fill(v, subst) for v in value]
    if isinstance(value, dict):
        return dict((k, _fill(v, subst)) for k, v in value.items())
    return value


def host_vars(target, variables, subst, workdir):
    """The host variables of a case (see reliability_support.case_play)."""
    if target.startswith("role:"):
        out = {"preflight_report_dir": str(workdir / "reports"), "ebpf_install_artifacts_dir": str(workdir / "artifacts")}
        out.update(_fill(variables, subst))
        return out
    return {"case_args": _fill(variables, subst)}


@pytest.fixture(scope="module")
def bad_input_run(cluster, tmp_path_factory):
    """Every case of CASES, in one ansible-playbook process."""
    work = tmp_path_factory.mktemp("bad-input")
    for number in range(len(OWN_PROCESS) + 1):
        (work / ("run-%d" % number)).mkdir()
    subst = {
        "missing_kubeconfig": str(work / "no-such-dir" / "kubeconfig"),
        "unreachable_kubeconfig": kubeconfig_with(cluster, work / "unreachable.kubeconfig", server="https://127.0.0.1:1"),
        "expired_token": signed_token(cluster, lifetime=-3600),
        "invalid_kubeconfig": kubeconfig_with(cluster, work / "invalid.kubeconfig", token="not-a-token-anyone-signed"),
        "server": cluster.server,
        "ca": ca_file(cluster, work / "ca.crt"),
        "workdir": str(work),
        "a_file": str(work / "a-file"),  # a regular file: a record path below it cannot be created
        "calicoctl": cluster.bin("calicoctl"),
        "kdd_calicoctl_config": str(work / "kdd-calicoctl.cfg"),
    }
    (work / "a-file").write_text("not a directory\n")
    (work / "kdd-calicoctl.cfg").write_text(yaml.safe_dump({
        "apiVersion": "projectcalico.org/v3", "kind": "CalicoAPIConfig", "metadata": {},
        "spec": {"datastoreType": "kubernetes", "kubeconfig": cluster.kubeconfig}}))
    subst["expired_kubeconfig"] = kubeconfig_with(cluster, work / "expired.kubeconfig", token=subst["expired_token"])
    cases = dict((cid, (target, host_vars(target, variables, subst, work))) for cid, target, variables, _m in CASES)
    batches = [dict((cid, c) for cid, c in cases.items() if cid not in OWN_PROCESS)]
    batches += [{cid: cases[cid]} for cid in CASE_IDS if cid in OWN_PROCESS]
    runs = {}
    for number, batch in enumerate(batches):
        run = run_cases(cluster, batch, work / ("run-%d" % number), users=("admin",))
        assert run.result.rc != 0
        assert run.result.data.get("plays"), "no JSON output:\n%s\n%s" % (run.result.stdout[-3000:],
                                                                          run.result.stderr[-3000:])
        print("%d case(s) in one ansible-playbook process: %.1fs" % (len(batch), run.ended - run.started))
        runs.update((cid, run) for cid in batch)
    return runs


@pytest.mark.parametrize("case_id, target, variables, expected", CASES, ids=CASE_IDS)
def test_bad_input_fails_before_any_write_naming_the_cause(bad_input_run, case_id, target, variables, expected):
    run = bad_input_run[case_id]
    failure = run.failure(case_id)
    assert failure is not None, "case %s (%s) was not refused" % (case_id, target)
    task, msg = failure
    assert re.search(expected, msg, re.S), "case %s failed in %r with a message that does not say %r:\n%s" % (
        case_id, task, expected, msg[:2000])
    writes = run.writes_of(case_id)
    assert writes == [], ["%s %s" % (e["verb"], e["requestURI"]) for e in writes]
    assert run.result.stats.get(case_id, {}).get("failures") == 1
