#!/usr/bin/env bash
# The kubectl bulk contender of `make bench`, job host_endpoint_migration: Calico's "Migrate to automatic host
# endpoints" scripted with kubectl alone. One process per step, one request per object.
#   the old all-interfaces endpoints of the round listed once; their labels put on their nodes with one
#   `kubectl apply --server-side` (a PATCH per node); KubeControllersConfiguration default's autoCreate Enabled;
#   the endpoints listed every second until calico-kube-controllers has created each node's <node>-auto-hep with
#   the labels (as Calico reads them from crd.projectcalico.org/v1: metadata.labels, then the labels kept in the
#   projectcalico.org/metadata annotation, which win); the old endpoints deleted with one `kubectl delete` (a DELETE each).
# Usage: host_endpoint_migration.sh ROUND WORK_DIR (KUBECONFIG and PATH name the cluster and kubectl)
set -euo pipefail
round=$1 work=$2
heps=hostendpoints.crd.projectcalico.org
kubectl get "$heps" -l "bench-round=$round" -o json > "$work/old.json"
jq '{apiVersion: "v1", kind: "List", items: [.items[] | select(.spec.interfaceName == "*")
      | {apiVersion: "v1", kind: "Node", metadata: {name: .spec.node, labels: ((.metadata.labels // {})
          + ((.metadata.annotations["projectcalico.org/metadata"] // "{}") | fromjson | .labels // {}))}}]}' \
  "$work/old.json" > "$work/nodes.json"
kubectl apply --server-side --field-manager=hep-bulk -f "$work/nodes.json" -o name | wc -l
kubectl patch kubecontrollersconfigurations.crd.projectcalico.org default --type merge \
  -p '{"spec": {"controllers": {"node": {"hostEndpoint": {"autoCreate": "Enabled"}}}}}'
want=$(jq '[.items[] | select(.spec.interfaceName == "*")] | length' "$work/old.json")
for _ in $(seq 600); do
  have=$(kubectl get "$heps" -o json | jq --arg r "$round" '[.items[] | select(.metadata.name | endswith("-auto-hep"))
      | select((.metadata.labels // {})
               + ((.metadata.annotations["projectcalico.org/metadata"] // "{}") | fromjson | .labels // {})
               | .["bench-round"] == $r)] | length')
  [ "$have" -ge "$want" ] && break
  sleep 1
done
[ "$have" -ge "$want" ] || { echo "only $have of $want automatic endpoints after 600 s" >&2; exit 1; }
jq -r '.items[] | select(.spec.interfaceName == "*") | .metadata.name' "$work/old.json" > "$work/old.names"
xargs -a "$work/old.names" kubectl delete "$heps" --wait=false -o name | wc -l
