#!/usr/bin/env bash
# The kubectl bulk contender of `make bench`, job preflight: the eBPF preflight a skilled operator would script with
# kubectl alone, reading what ours reads (Calico's "Enabling the eBPF data plane" and its "Supported" kernels).
#   one `kubectl get` of the nodes, Services and Pods (kubectl's pages of 500), one of the kube-proxy ConfigMap and
#   DaemonSet, one of Calico's FelixConfigurations and policy types and one of the operator's ApplicationLayers when
#   the cluster serves them (kubectl's cached discovery says so); every node judged with jq: architecture amd64 or
#   arm64, a RHEL 8 kernel 4.18.0-193 or newer, any other kernel 5.3 or newer.
# Prints the names of the failing nodes, one per line; the feature findings go to WORK_DIR.
# Usage: preflight.sh WORK_DIR (KUBECONFIG and PATH name the cluster and kubectl)
set -euo pipefail
work=$1
kubectl get nodes,services,pods -A -o json > "$work/core.json"
kubectl get configmap,daemonset -n kube-system kube-proxy --ignore-not-found -o json > "$work/kube-proxy.json"
served=$(kubectl api-resources -o name)
calico=
for t in felixconfigurations networkpolicies globalnetworkpolicies stagednetworkpolicies stagedglobalnetworkpolicies; do
  grep -qx "$t.crd.projectcalico.org" <<<"$served" && calico="$calico${calico:+,}$t.crd.projectcalico.org"
done
if [ -n "$calico" ]; then
  kubectl get "$calico" -A -o json > "$work/calico.json"
fi
if grep -qx "applicationlayers.operator.tigera.io" <<<"$served"; then
  kubectl get applicationlayers.operator.tigera.io -o json > "$work/applicationlayers.json"
fi
# findings: SCTP Services, pods with floating IPs (the policy and ApplicationLayer findings need the files above)
jq -r '.items[] | select(.kind == "Service") | select(any(.spec.ports[]?; .protocol == "SCTP"))
       | "sctp-service \(.metadata.namespace)/\(.metadata.name)"' "$work/core.json" > "$work/findings.txt"
jq -r '.items[] | select(.kind == "Node") | .metadata.name as $n | .status.nodeInfo as $i
  | ($i.architecture | ascii_downcase | if . == "x86_64" then "amd64" elif . == "aarch64" then "arm64" else . end)
      as $arch
  | ($i.kernelVersion | capture("^(?<a>[0-9]+)\\.(?<b>[0-9]+)\\.(?<c>[0-9]+)(-(?<r>[0-9]+))?")
     | [(.a | tonumber), (.b | tonumber), (.c | tonumber), ((.r // "0") | tonumber)]) as $k
  | ($i.osImage | test("Red Hat Enterprise Linux|CentOS|Rocky|AlmaLinux"; "i")) as $rhel
  | select(($arch != "amd64" and $arch != "arm64")
           or (if $rhel and $k[0:3] == [4, 18, 0] then $k[3] < 193 else $k[0:2] < [5, 3] end))
  | $n' "$work/core.json"
