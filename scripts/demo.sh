#!/bin/bash
# demo.sh — runs inside the VM (make demo): the kube-ipvs daemon programs a small cluster's
# Services from the project's fake API server (real list/watch), then shows the table with
# `npx kube-ipvs ipvsadm -Ln` (checked byte-identical to ipvsadm 1.31) and curls a pod through
# its ClusterIP and its NodePort.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/node_modules/.bin:$PATH
DIR=$(mktemp -d)
cleanup() { kill "$DAEMON" "$API" "$WEB" 2>/dev/null || true; ip netns del pod1 2>/dev/null || true; ip netns del client 2>/dev/null || true; }
trap cleanup EXIT

# a "pod" (network namespace) serving HTTP on 10.244.1.2:8080, and a client pod
ip netns add pod1; ip link add veth-pod1 type veth peer name eth0 netns pod1
ip addr add 10.244.1.1/24 dev veth-pod1; ip link set veth-pod1 up
ip -n pod1 link set lo up; ip -n pod1 addr add 10.244.1.2/24 dev eth0; ip -n pod1 link set eth0 up; ip -n pod1 route add default via 10.244.1.1
ip netns add client; ip link add veth-client type veth peer name eth0 netns client
ip addr add 192.0.2.1/24 dev veth-client; ip link set veth-client up
ip -n client link set lo up; ip -n client addr add 192.0.2.2/24 dev eth0; ip -n client link set eth0 up; ip -n client route add default via 192.0.2.1
ip netns exec pod1 node -e "require('http').createServer((q,s)=>s.end('hello from pod1, you are '+q.socket.remoteAddress+'\n')).listen(8080,'10.244.1.2')" &
WEB=$!

node dist/scripts/fake-apiserver.js --port 16443 --host 127.0.0.1 --fixtures scripts/demo/cluster.json --kubeconfig-out "$DIR/kubeconfig" > "$DIR/api.log" 2>&1 &
API=$!
for _ in $(seq 1 240); do grep -q 'listening on' "$DIR/api.log" && break; sleep 0.5; done
cat > "$DIR/config.conf" <<CONF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: ipvs
clientConnection:
  kubeconfig: $DIR/kubeconfig
hostnameOverride: demo-node
clusterCIDR: 10.244.0.0/16
nodePortAddresses: [192.0.2.0/24]
ipvs:
  scheduler: rr
CONF
echo "\$ kube-ipvs --config config.conf   (fake API server: 3 Services, 3 EndpointSlices)"
node dist/bundle/kube-ipvs.js --config "$DIR/config.conf" > "$DIR/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 1 480); do grep -q '"sync done"' "$DIR/daemon.log" && break; sleep 0.5; done
grep '"sync done"' "$DIR/daemon.log" | head -1
echo
echo '$ npx kube-ipvs ipvsadm -Ln'
npx --no-install kube-ipvs ipvsadm -Ln 2>/dev/null | tee "$DIR/ours"
ipvsadm -Ln > "$DIR/theirs"
if cmp -s "$DIR/ours" "$DIR/theirs"; then echo '(byte-identical to ipvsadm -Ln)'; else echo 'DIFFERS from ipvsadm -Ln:'; diff "$DIR/ours" "$DIR/theirs"; exit 1; fi
echo
echo '$ curl http://10.96.0.20/          (ClusterIP, from the node)'
curl -sS --max-time 10 http://10.96.0.20/
echo '$ curl http://192.0.2.1:30080/     (NodePort, from an external client)'
ip netns exec client curl -sS --max-time 10 http://192.0.2.1:30080/
