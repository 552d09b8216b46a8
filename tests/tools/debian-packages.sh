#!/usr/bin/env bash
# Installs the Debian packages the local data plane needs, if any is missing (`make binaries` runs it):
#   clang-19 llvm-19 libelf-dev zlib1g-dev: Felix's BPF programs and the libbpf it links (build-calico-felix.sh:
#     with Debian's default clang 14 the kernel's verifier rejects the IP defragmentation program);
#   libpcap-dev: calico-node and Felix link libpcap (cgo) and need it at run time; make gcc: the build itself;
#   iproute2 util-linux: ip (network namespaces, veths, routes) and nsenter/unshare (a node's namespaces).
#   iptables nftables ipset: Felix runs iptables-nft-save, nft and ipset in each node namespace even in eBPF mode (it
#     panics without them: "Failed to find iptables command", "Failed to update IP sets"); kube-proxy (iptables mode)
#     runs iptables-restore;
#   bpftool: the calico/node image ships it; Felix leaving eBPF mode lists its BPF programs and maps with it ("Failed
#     to list BPF maps, assuming there's nothing to clean up" without it: its TCX programs stayed attached and every
#     packet of the node was dropped after disable_ebpf - seen in tests/integration/test_switch_under_traffic.py).
#   conntrack: the calico/node image ships it; Felix deletes the kernel's conntrack entries of a workload that went
#     and of a Service's old backends with it ("Failed to remove conntrack flows ... executable file not found"
#     without it, in every node's log).
# Root installs with apt-get; anyone else gets the command to run.
set -euo pipefail
packages=(clang-19 llvm-19 libelf-dev zlib1g-dev libpcap-dev make gcc iproute2 util-linux iptables nftables ipset bpftool
          conntrack)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "error: the data plane's build needs ${missing[*]} (no apt-get here: install them with your package manager)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "error: missing Debian packages ${missing[*]}: run  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "==> installing Debian packages for the data plane's build: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
  apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
