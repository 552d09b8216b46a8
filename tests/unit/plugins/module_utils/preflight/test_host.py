"""preflight/host.py: host fact gathering for the eBPF preflight, on fake /proc, /sys, /etc and /lib trees (no host
changed)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight.host import gather, run_host_preflight


MOUNTS_GOOD = """sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0
bpf /sys/fs/bpf bpf rw,nosuid,nodev,noexec,relatime,mode=700 0 0
"""
FILESYSTEMS = "nodev\tsysfs\nnodev\tbpf\nnodev\tcgroup\nnodev\tcgroup2\n\text4\n"


def tree(tmp_path, kernel="5.15.0-105-generic", os_release='PRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\n',
         mounts=MOUNTS_GOOD, filesystems=FILESYSTEMS, vxlan="dep", vlans=()):
    def write(rel, text):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if kernel is not None:
        write("proc/sys/kernel/osrelease", kernel + "\n")
    if os_release is not None:
        write("etc/os-release", os_release)
    write("proc/mounts", mounts)
    if filesystems is not None:
        write("proc/filesystems", filesystems)
    moddir = "lib/modules/%s/" % kernel
    if vxlan == "loaded":
        (tmp_path / "sys/module/vxlan").mkdir(parents=True)
    elif vxlan == "builtin":
        write(moddir + "modules.builtin", "kernel/drivers/net/vxlan/vxlan.ko\n")
    elif vxlan == "dep":
        write(moddir + "modules.dep", "kernel/net/ipv4/udp_tunnel.ko.zst:\n"
                                      "kernel/drivers/net/vxlan/vxlan.ko.zst: kernel/net/ipv4/udp_tunnel.ko.zst\n")
    elif vxlan == "missing":
        write(moddir + "modules.dep", "kernel/net/ipv4/udp_tunnel.ko.zst:\n")
    write("sys/class/net/eth0/uevent", "INTERFACE=eth0\nIFINDEX=2\n")
    for name in vlans:
        write("sys/class/net/%s/uevent" % name, "DEVTYPE=vlan\nINTERFACE=%s\n" % name)
    return str(tmp_path)


def test_a_good_host(tmp_path):
    result = run_host_preflight(tree(tmp_path), machine="x86_64")
    assert result["verdict"] == "ok", result
    assert result["facts"]["vxlan_available"] == "module kernel/drivers/net/vxlan/vxlan.ko.zst"
    assert result["facts"]["cgroup2_mount"] == "/sys/fs/cgroup"
    assert result["facts"]["architecture"] == "amd64"


@pytest.mark.parametrize("kwargs, check, expected", [
    ({"mounts": "sysfs /sys sysfs rw 0 0\n"}, "bpffs", "warn"),
    ({"mounts": "sysfs /sys sysfs rw 0 0\n", "filesystems": "nodev\tsysfs\n"}, "bpffs", "fail"),
    ({"mounts": "sysfs /sys sysfs rw 0 0\n", "filesystems": None}, "bpffs", "warn"),
    ({"mounts": "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"}, "cgroup_v2", "ok"),
    ({"vxlan": "loaded"}, "vxlan_module", "ok"),
    ({"vxlan": "builtin"}, "vxlan_module", "ok"),
    ({"vxlan": "missing"}, "vxlan_module", "fail"),
    ({"vxlan": None}, "vxlan_module", "warn"),
    ({"vlans": ["eth0.100", "bond0.20"]}, "vlan_devices", "fail"),
    ({"kernel": "4.18.0-147.el8.x86_64",
      "os_release": 'NAME="Red Hat Enterprise Linux"\nVERSION_ID="8.1"\nPRETTY_NAME="Red Hat Enterprise Linux 8.1 (Ootpa)"\n'},
     "os_kernel", "fail"),
    ({"os_release": 'ID=talos\nPRETTY_NAME="Talos (v1.6.4)"\n', "kernel": "6.1.74-talos"}, "immutable_os", "warn"),
    ({"os_release": None}, "host_facts", "warn"),
])
def test_host_checks(tmp_path, kwargs, check, expected):
    result = run_host_preflight(tree(tmp_path, **kwargs), machine="x86_64")
    assert result["checks"][check]["verdict"] == expected, result["checks"][check]


def test_vlan_devices_are_named(tmp_path):
    result = run_host_preflight(tree(tmp_path, vlans=["eth0.100"]), machine="aarch64")
    assert result["checks"]["vlan_devices"]["objects"] == ["eth0.100"]
    assert result["facts"]["architecture"] == "arm64"


def test_ignore_and_cgroup_path(tmp_path):
    root = tree(tmp_path, os_release='PRETTY_NAME="Flatcar Container Linux by Kinvolk 3815.2.0 (Oklo)"\n',
                kernel="6.1.77-flatcar", vlans=["eth0.7"])
    result = run_host_preflight(root, cgroup_v2_path="/run/calico/cgroup", ignore=["vlan_devices"],
                                machine="x86_64")
    assert result["checks"]["immutable_os"]["verdict"] == "ok"
    assert result["checks"]["vlan_devices"]["verdict"] == "warn"
    assert result["verdict"] == "warn"


def test_this_machine_can_be_read():
    facts, host = gather("/")
    assert facts["kernel"]
    assert host["bpffs_supported"] in (True, False)
