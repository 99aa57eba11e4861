#!/bin/bash
# demo.sh — runs inside the VM (make demo): programs a small kube-proxy-like table with
# kube-ipvs's ipvsadm-compatible restore, lists it with `npx kube-ipvs ipvsadm -Ln`, and
# shows that real ipvsadm 1.31 prints the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PWD/node_modules/.bin:$PATH
kube_ipvs() { node dist/lib/cli/main.js "$@"; }
kube_ipvs ipvsadm -R <<'RULES'
-A -t 10.96.0.1:443 -s rr -p 10800
-a -t 10.96.0.1:443 -r 192.168.0.1:6443 -m -w 1
-A -t 10.96.0.10:53 -s rr
-a -t 10.96.0.10:53 -r 172.17.0.2:53 -m -w 1
-a -t 10.96.0.10:53 -r 172.17.0.3:53 -m -w 1
-A -u 10.96.0.10:53 -s rr
-a -u 10.96.0.10:53 -r 172.17.0.2:53 -m -w 1
-a -u 10.96.0.10:53 -r 172.17.0.3:53 -m -w 0
-A -t [fd00:10:96::a]:80 -s mh -b mh-port
-a -t [fd00:10:96::a]:80 -r [fd00:10:244::5]:8080 -m -w 1
RULES
echo '$ npx kube-ipvs ipvsadm -Ln'
npx --no-install kube-ipvs ipvsadm -Ln 2>/dev/null | tee /tmp/ours
ipvsadm -Ln > /tmp/theirs
if cmp -s /tmp/ours /tmp/theirs; then echo '(byte-identical to ipvsadm -Ln)'; else echo 'DIFFERS from ipvsadm -Ln:'; diff /tmp/ours /tmp/theirs; exit 1; fi
