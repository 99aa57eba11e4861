#!/bin/sh
# /usr/local/bin/kube-ipvs in the image, and /usr/local/bin/kube-proxy (a symlink: kubeadm's
# DaemonSet command): kube-proxy's flags, or `kube-ipvs ipvsadm ...`, `kube-ipvs cleanup`.
# exec: the kubelet's SIGTERM reaches node itself.
exec /usr/local/bin/node --max-semi-space-size=16 --expose-gc /opt/kube-ipvs/dist/bundle/kube-ipvs.js "$@"
