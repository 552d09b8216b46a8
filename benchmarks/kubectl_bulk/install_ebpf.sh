#!/usr/bin/env bash
# The kubectl bulk contender of `make bench`, job install_ebpf: Calico's "Install in eBPF mode" (the operator
# install) scripted with kubectl alone, one process per step, as the documented commands are.
#   the release files downloaded; the kubernetes-services-endpoint ConfigMap created in tigera-operator before the
#   operator starts; operator-crds.yaml and tigera-operator.yaml applied server-side with forced conflicts; a wait
#   for the Installation CRD to be Established; custom-resources.yaml created with linuxDataplane: BPF edited into
#   the Installation; kube-proxy kept off the Calico nodes by a non-matching nodeSelector (a merge patch).
# Prints "wait_s <seconds>" (the time of `kubectl wait`, which the benchmark subtracts, as it does ours' waits).
# Usage: install_ebpf.sh MANIFEST_BASE HOST PORT WORK_DIR (KUBECONFIG and PATH name the cluster and kubectl)
set -euo pipefail
base=$1 host=$2 port=$3 work=$4
cd "$work"
curl -fsS -O "$base/operator-crds.yaml" -O "$base/tigera-operator.yaml" -O "$base/custom-resources.yaml"
kubectl create namespace tigera-operator --dry-run=client -o yaml | kubectl apply --server-side -f - >/dev/null
kubectl create configmap kubernetes-services-endpoint -n tigera-operator --dry-run=client -o yaml \
  --from-literal=KUBERNETES_SERVICE_HOST="$host" --from-literal=KUBERNETES_SERVICE_PORT="$port" \
  | kubectl apply --server-side -f - >/dev/null
kubectl apply --server-side --force-conflicts -f operator-crds.yaml -f tigera-operator.yaml >/dev/null
start=$(date +%s.%N)
kubectl wait --for=condition=Established crd/installations.operator.tigera.io --timeout=120s >/dev/null
end=$(date +%s.%N)
sed -i 's/^\( *\)calicoNetwork:$/&\n\1  linuxDataplane: BPF/' custom-resources.yaml
grep -q "linuxDataplane: BPF" custom-resources.yaml
kubectl create -f custom-resources.yaml >/dev/null
kubectl patch daemonset kube-proxy -n kube-system --type merge \
  -p '{"spec": {"template": {"spec": {"nodeSelector": {"non-calico": "true"}}}}}' >/dev/null
awk -v a="$start" -v b="$end" 'BEGIN { printf "wait_s %.3f\n", b - a }'
