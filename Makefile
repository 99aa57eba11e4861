# kube-ipvs — make targets. Node 24 comes from node_modules/.bin (the `node` npm package).
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
# --experimental-vm-modules: lets jest require() the ESM-only @kubernetes/client-node (jest 30
# supports require(esm) only when node:vm has SyntheticModule)
JEST := node_modules/.bin/node --experimental-vm-modules --disable-warning=ExperimentalWarning node_modules/jest/bin/jest.js
VM_TIMEOUT ?= 3000

.PHONY: all deps demo-deps image-reproducible build test unit golden vm vm-image image image-arm64 image-multiarch bench demo clean lab-up lab-down k8s format lint protobuf node-deps node-up node-down e2e

all: build

# everything: make test's and CI's (the lab's Kubernetes build included, scripts/install-deps.sh)
deps:
	bash scripts/install-deps.sh all

# only what make demo uses: the build's, the VM's and the tools the demo runs; no Go, no Kubernetes
demo-deps:
	bash scripts/install-deps.sh demo

# tsc's tree (dist/lib, dist/spec, ...) and the one-file bundle the image ships and the VM
# tests start (dist/bundle/kube-ipvs.js, scripts/bundle.ts)
build: node_modules/.bin/node dist/native/netlink_sockopt.node dist/native/malloc_trim.node
	node_modules/.bin/node node_modules/typescript/bin/tsc -p tsconfig.json
	node_modules/.bin/node dist/scripts/bundle.js

# NETLINK_EXT_ACK for the `netlink` package's sockets (lib/netlink/ext-ack.ts): a Node-API
# addon, ABI-stable, compiled against the node-api-headers package (no node-gyp download)
ADDON_FLAGS := -shared -fPIC -O2 -Wall -Wextra -Werror -std=gnu11 -DNAPI_VERSION=8 \
  -I node_modules/node-api-headers/include
dist/native/netlink_sockopt.node: native/netlink-sockopt.c node_modules/.bin/node
	mkdir -p $(@D)
	cc $(ADDON_FLAGS) -o $@ $<

# malloc_trim(0) after the daemon's quiet-time collection (lib/daemon/malloc-trim.ts)
dist/native/malloc_trim.node: native/malloc-trim.c node_modules/.bin/node
	mkdir -p $(@D)
	cc $(ADDON_FLAGS) -o $@ $<

# the same addons for the arm64 image (make image-arm64), cross-compiled
dist/arm64/native/netlink_sockopt.node: native/netlink-sockopt.c node_modules/.bin/node
	mkdir -p $(@D)
	aarch64-linux-gnu-gcc $(ADDON_FLAGS) -o $@ $<

dist/arm64/native/malloc_trim.node: native/malloc-trim.c node_modules/.bin/node
	mkdir -p $(@D)
	aarch64-linux-gnu-gcc $(ADDON_FLAGS) -o $@ $<

node_modules/.bin/node:
	bash scripts/install-deps.sh build

vm-image:
	bash scripts/vm/build-image.sh

# The container image as an OCI archive (dist/image/kube-ipvs.oci.tar, localhost/kube-ipvs:VERSION)
# for docker load / podman load / ctr images import; no registry or container runtime needed.
image: build
	bash scripts/image/build.sh

# Two image builds of this checkout into fresh folders (the cached base layer, the app layer,
# config and manifests made twice) must give byte-identical archives: the same digest
# (scripts/image/check-reproducible.sh; ~1 min a build here). CI runs it after make test.
image-reproducible: build
	bash scripts/image/check-reproducible.sh

# The arm64 image (dist/image-arm64/kube-ipvs.oci.tar), built on this amd64 host through
# qemu-user-static and binfmt_misc (scripts/image/build.sh says how)
image-arm64: build
	IMAGE_ARCH=arm64 bash scripts/image/build.sh

# Both: one OCI archive whose index lists the amd64 and arm64 images by platform
# (dist/image-multiarch/kube-ipvs.oci.tar, scripts/image/build-index.sh). `make image` stays
# amd64 only: `make test` builds it, and the arm64 build runs through qemu-user (long).
image-multiarch: image image-arm64
	bash scripts/image/build-index.sh

# Installs what is missing (idempotent), then unit tests on the host and every
# integration test inside ONE VM boot.
test: deps build image
	bash scripts/test-all.sh

# prettier over the source tree (.prettierrc.json); `make test` checks it
format:
	bash scripts/format.sh

# typescript-eslint over the source tree, type-aware (eslint.config.mjs); `make test` runs it
lint:
	bash scripts/lint.sh

unit: build
	$(JEST) --selectProjects unit

# The step files' expectations over the kernel twins (spec/golden/README.md); UPDATE=1
# rewrites spec/golden/cases/*.expected.txt from the twins instead: review the diff.
golden: build
	GOLDEN_UPDATE=$(if $(UPDATE),1,) $(JEST) dist/spec/golden/ --selectProjects unit

# VM tests only; narrow with e.g. `make vm FILTER=dist/spec/vm/ipset`. The lab runs in LAB_DIR
# (started if it is not up, left running for the next `make vm`; `make lab-down` stops it).
vm: build vm-image k8s
	. scripts/lab/vm-lab.sh && lab_up $(LAB_DIR) && out=$$(mktemp -d) && bash scripts/vm/run.sh -t $(VM_TIMEOUT) -w $$out "$${LAB_VM_ARGS[@]}" -- bash scripts/vm/guest-jest.sh $$out $(FILTER); rc=$$?; rm -rf $$out; exit $$rc

# The real Kubernetes components (scripts/k8s/build.sh; nothing to do when built)
k8s:
	bash scripts/k8s/build.sh

# lib/k8s/k8s-api-protobuf.json from the .proto files of the pinned k8s.io/api (after changing
# scripts/k8s/go.mod; a lab test fails while it differs)
protobuf: build k8s
	node_modules/.bin/node dist/scripts/k8s/gen-protobuf.js

# A real control plane on this host's loopback as kubeadm sets it up (scripts/lab/lab.ts):
# etcd, kube-apiserver with TLS, Node,RBAC and an audit log, kubeadm's kube-proxy objects.
# Prints its ports and folders as JSON; idempotent. kubectl: .k8s/bin/kubectl --kubeconfig $(LAB_DIR)/admin.conf
LAB_DIR ?= .lab/default
lab-up: build k8s
	node_modules/.bin/node dist/scripts/lab/lab.js up $(LAB_DIR)

lab-down:
	node_modules/.bin/node dist/scripts/lab/lab.js down $(LAB_DIR)

# A real one-node cluster (scripts/node/): the lab's etcd and kube-apiserver, kube-controller-manager
# and kube-scheduler on this host; containerd, runc, the CNI bridge and a kubelet in the VM; kubeadm's
# kube-proxy DaemonSet (the real kube-proxy, IPVS mode) and CoreDNS. Every part is built here from its
# Go module (scripts/node/build.sh, cached outside the clone) and every image too (scripts/node/images.sh).
NODE_DIR ?= .lab/node
node-deps: deps build image
	bash scripts/node/build.sh
	bash scripts/node/images.sh

node-up: node-deps
	node_modules/.bin/node dist/scripts/node/cluster.js up $(NODE_DIR)

node-down:
	node_modules/.bin/node dist/scripts/node/cluster.js down $(NODE_DIR)

# Kubernetes' own [sig-network] Services tests (e2e.test) with kube-proxy, then with kube-ipvs swapped
# in by `kubectl set image` under traffic, and back; prints the table (scripts/node/e2e.ts).
# E2E_ARGS: e.g. --focus='\[sig-network\] Services' --procs=2
e2e: node-up
	node_modules/.bin/node dist/scripts/node/e2e.js $(NODE_DIR) $(E2E_ARGS); rc=$$?; $(MAKE) node-down; exit $$rc

bench: deps build
	bash scripts/bench/run.sh

# Boots the VM, programs a small table with kube-ipvs and lists it as ipvsadm would.
demo: demo-deps build
	bash scripts/vm/run.sh -t 300 -- bash scripts/demo.sh

clean:
	rm -rf dist
