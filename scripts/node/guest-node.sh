#!/bin/bash
# guest-node.sh — inside the VM (scripts/vm/run.sh): a real Kubernetes node. containerd 2.4 with
# runc and the CNI bridge (a pod CIDR of its own, portmap), and a kubelet registered with the
# lab's kube-apiserver on the host; every image imported from archives built on the host
# (scripts/node/images.sh), nothing pulled. scripts/node/cluster.ts writes STATE/node.env and
# the kubelet's files before the boot, and ends the node by creating STATE/stop.
#   usage: guest-node.sh STATE   (STATE is shared read-write with the host: logs land there)
set -uo pipefail
S=$1
. "$S/node.env" # NODE_NAME POD_CIDR NODE_IP BIN IMAGES KUBE_IPVS_ARCHIVE RELAY_PORT ROOT
ts() { echo "guest-node: [$(cut -d' ' -f1 /proc/uptime)] $*"; }
fail() { ts "FAILED: $*"; echo "$*" > "$S/failed"; exit 1; }

# overlayfs cannot use the 9p-backed root as its upperdir: containerd's snapshots, the kubelet's
# volumes and the pods' logs live on tmpfs, as does a copy of the binaries (run from RAM, not 9p)
for d in /var/lib/containerd /var/lib/kubelet /var/log/pods /var/log/containers /opt/node /run/containerd; do
  mkdir -p "$d" && mount -t tmpfs -o mode=755 tmpfs "$d" || fail "tmpfs on $d"
done
mkdir -p /opt/node/bin /opt/cni/bin /etc/cni/net.d /etc/containerd
cp "$BIN"/{containerd,containerd-shim-runc-v2,ctr,runc,kubelet,crictl} /opt/node/bin/ || fail "copy binaries"
cp "$BIN"/{bridge,host-local,loopback,portmap} /opt/cni/bin/ || fail "copy CNI plugins"
export PATH=/opt/node/bin:$PATH
ts "binaries on tmpfs"

# what kubeadm's preflight asks of a node
modprobe br_netfilter overlay 2>/dev/null
sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 net.bridge.bridge-nf-call-iptables=1 \
  net.bridge.bridge-nf-call-ip6tables=1 || fail "sysctls"
# the kubelet's cgroups (cgroupfs driver): every controller available to the children of the root
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; done
# a route the kubelet's node-IP detection and the pods' egress take (QEMU's user network)
ip route replace default via 10.0.2.2 dev eth0 2>/dev/null
hostname "$NODE_NAME"
echo "$NODE_NAME" > /etc/hostname

cat > /etc/containerd/config.toml <<EOF
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "registry.k8s.io/pause:3.10.2"
[plugins.'io.containerd.cri.v1.runtime']
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "/opt/node/bin/runc"
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/opt/cni/bin"]
    conf_dir = "/etc/cni/net.d"
EOF
# the bridge every pod joins; hairpin so a pod reaches itself through a Service
cat > /etc/cni/net.d/10-kube-ipvs-lab.conflist <<EOF
{"cniVersion": "1.0.0", "name": "kube-ipvs-lab", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF

containerd --config /etc/containerd/config.toml > "$S/containerd.log" 2>&1 &
for _ in $(seq 120); do ctr version > /dev/null 2>&1 && break; sleep 0.5; done
ctr version > /dev/null 2>&1 || fail "containerd did not start (containerd.log)"
ts "containerd ready"
for a in "$IMAGES"/*.oci.tar "$KUBE_IPVS_ARCHIVE"; do
  t0=$(date +%s)
  ctr -n k8s.io images import --snapshotter=overlayfs "$a" > /dev/null || fail "import $a"
  ts "imported $(basename "$a") in $(($(date +%s) - t0)) s"
done
ctr -n k8s.io images ls -q > "$S/images.txt"

# the API server's tunnels to pods and Services (pods/proxy), carried from the host (cluster.ts)
"$ROOT/node_modules/.bin/node" "$ROOT/dist/scripts/node/guest-relay.js" "$NODE_IP" "$RELAY_PORT" > "$S/relay.log" 2>&1 &
kubelet --config="$S/kubelet.yaml" --kubeconfig="$S/kubelet.conf" --node-ip="$NODE_IP" \
  --hostname-override="$NODE_NAME" --root-dir=/var/lib/kubelet --v="${KUBELET_V:-1}" > "$S/kubelet.log" 2>&1 &
KUBELET=$!
ts "kubelet started"
touch "$S/started"
# until the host says stop (or the kubelet dies); every 30 s the node's memory and load, and
# the resident size of its own processes, into STATE/resources.log
n=0
while [ ! -e "$S/stop" ]; do
  kill -0 $KUBELET 2> /dev/null || fail "kubelet exited (kubelet.log)"
  if [ $((n % 30)) = 0 ]; then
    { echo "t=$(cut -d' ' -f1 /proc/uptime) load=$(cut -d' ' -f1-3 /proc/loadavg) $(free -m | awk '/^Mem:/ { print "used_mb=" $3 " available_mb=" $7 }')"
      ps -eo rss=,comm= | awk '{ kb[$2] += $1 } END { for (c in kb) if (kb[c] > 20000) printf "  %s %d MB\n", c, kb[c] / 1024 }' | sort; } >> "$S/resources.log"
  fi
  n=$((n + 1))
  sleep 1
done
ts "stopping"
kill $KUBELET 2> /dev/null
crictl --runtime-endpoint unix:///run/containerd/containerd.sock ps -a > "$S/containers.txt" 2>&1
wait $KUBELET 2> /dev/null
exit 0
