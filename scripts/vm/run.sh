#!/bin/bash
# run.sh — run a command inside a throw-away QEMU VM whose kernel has
# IPVS/ipset/iptables/dummy/veth, with the host's root filesystem as the VM's
# root (read-only 9p + tmpfs overlay: the VM can write, writes are discarded).
# Exit status = the command's exit status (or 125 if the VM failed / timed out).
#
# usage: scripts/vm/run.sh [options] [--] command [args...]
#   -a kvm|tcg|auto   accelerator (default auto: kvm only with real VT-x/AMD-V, else tcg)
#   -t SECONDS        hard wall-clock limit for the whole VM (default 600)
#   -m MEM            guest memory (default 2G)
#   -c CPUS           guest vCPUs (default 2)
#   -w DIR            share DIR read-write at the same path (repeatable)
#   -k                keep the job dir (console.log etc.) even on success
#   -f IP:PORT        give the guest a network (QEMU user networking, restricted: nothing
#                     else is reachable) where a TCP connection to IP:PORT reaches the host's
#                     127.0.0.1:PORT (repeatable; the lab's API servers, scripts/lab/)
#   -F HPORT:GPORT    with -f: a TCP connection to the host's 127.0.0.1:HPORT reaches the guest's
#                     port GPORT (QEMU hostfwd; repeatable: the API server to a kubelet, scripts/node/)
#   -e NAME=VALUE     export NAME=VALUE in the guest command's environment (repeatable)
#   -R                the guest's root moved over the initramfs (switch_root's way) instead of a
#                     chroot, so it is its mount namespace's root (a real node: runc exec joins it)
# The command runs as root under bash in the current directory ($PWD), with the
# host's PATH.  stdout+stderr stream back here (guest ttyS1 -> qemu stdio).
# Guest kernel log + init timestamps: $JOB/console.log (tail printed on failure;
# job dirs of failed runs are kept).  Env: IPVSVM_VERBOSE=1 prints accel/wall
# time; IPVSVM_APPEND adds kernel args (e.g. loglevel=7); VM_DIR (no spaces)
# is where build-image.sh put kernel/, kver and initramfs.cpio.gz.
set -euo pipefail

VM_DIR=${VM_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/.vm}
ACCEL=auto TIMEOUT=600 MEM=2G CPUS=2 KEEP=0 MOVEROOT=0 RW=() FWD=() HFWD=() GENV=()
while getopts "a:t:m:c:w:f:F:e:kRh" o; do
  case $o in
    a) ACCEL=$OPTARG ;; t) TIMEOUT=$OPTARG ;; m) MEM=$OPTARG ;; c) CPUS=$OPTARG ;;
    w) RW+=("$(realpath "$OPTARG")") ;; k) KEEP=1 ;; R) MOVEROOT=1 ;;
    f) [[ $OPTARG =~ ^[0-9.]+:[0-9]+$ ]] || { echo "-f wants IP:PORT, not $OPTARG" >&2; exit 2; }; FWD+=("$OPTARG") ;;
    F) [[ $OPTARG =~ ^[0-9]+:[0-9]+$ ]] || { echo "-F wants HOSTPORT:GUESTPORT, not $OPTARG" >&2; exit 2; }; HFWD+=("$OPTARG") ;;
    e) [[ $OPTARG =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "-e wants NAME=VALUE, not $OPTARG" >&2; exit 2; }; GENV+=("$OPTARG") ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [opts] -- command..." >&2; exit 2; }

KERNEL=${IPVSVM_KERNEL:-$VM_DIR/kernel/vmlinux}   # ELF -> PVH direct boot
INITRD=$VM_DIR/initramfs.cpio.gz
[ -e "$KERNEL" ] && [ -e "$INITRD" ] || { echo "run scripts/vm/build-image.sh first (make vm-image)" >&2; exit 2; }
KVER=$(cat "$VM_DIR/kver")
QEMU=$(command -v qemu-system-x86_64) || { echo "apt-get install qemu-system-x86" >&2; exit 2; }

if [ "$ACCEL" = auto ]; then
  # Real hardware-assisted KVM only.  /dev/kvm alone is not enough: on PVM hosts
  # (kvm_pvm, no vmx/svm) a stock kernel hangs or dies with "emulation failure".
  if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo &&
     { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
    ACCEL=kvm
  else
    ACCEL=tcg
  fi
fi
# IPVSVM_TCG_OPTS adds TCG options (e.g. ",tb-size=4096"). Measured 2026-12-03, 4 kernel-only VM
# files, ABAB in one boot each: the default 1 GiB translation cache flushes about every 30-40 s
# under the tests' node processes, but 4 GiB (2 flushes instead of 5) left the guest's busy
# CPU-s where they were (302 and 318 against 326 and 298), so the default stays
case $ACCEL in
  kvm) ACCEL_ARGS=(-accel kvm -cpu host) ;;
  tcg) ACCEL_ARGS=(-accel "tcg,thread=multi${IPVSVM_TCG_OPTS:-}" -cpu max) ;;
  *) echo "bad accel $ACCEL" >&2; exit 2 ;;
esac

mkdir -p "$VM_DIR/jobs"
JOB=$(mktemp -d "$VM_DIR/jobs/job.XXXXXX")
cleanup() { if [ "$KEEP" = 0 ] && [ "${RC:-1}" = 0 ]; then rm -rf "$JOB"; fi; }
trap cleanup EXIT

# the command, quoted exactly as given; first, the name-service files that getprotobyname()
# and getservbyname() open on every call (ipset opens /etc/protocols once per restore or save
# line: 38 s for 1,000 hash:ip,port lines) are copied up into the tmpfs overlay (touch does
# that), so those opens stay in the guest, as on a node's local disk, not a 9p round trip each
{
  printf 'touch -c /etc/protocols /etc/services /etc/nsswitch.conf /etc/resolv.conf /etc/hosts /etc/host.conf 2>/dev/null\n'
  printf 'exec'; printf ' %q' "$@"; printf '\n'
} > "$JOB/cmd.sh"
{
  printf 'export PATH=%q\n' "$PATH"
  printf 'export HOME=/root TERM=dumb LANG=C.UTF-8 IPVSVM=1\n'
  printf 'export IPVSVM_JOB=%q IPVSVM_CWD=%q\n' "$JOB" "$PWD"
  for kv in "${GENV[@]+"${GENV[@]}"}"; do printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"; done
} > "$JOB/env.sh"
printf '%s\n' "${RW[@]+"${RW[@]}"}" > "$JOB/rw-dirs"

FS=(-fsdev "local,id=fs0,path=/,security_model=none,readonly=on,multidevs=remap"
    -device "virtio-9p-pci,fsdev=fs0,mount_tag=hostroot"
    -fsdev "local,id=fs1,path=$JOB,security_model=none"
    -device "virtio-9p-pci,fsdev=fs1,mount_tag=job")
i=0
for d in "${RW[@]+"${RW[@]}"}"; do
  FS+=(-fsdev "local,id=rwfs$i,path=$d,security_model=none" -device "virtio-9p-pci,fsdev=rwfs$i,mount_tag=rw$i")
  i=$((i + 1))
done

# the guest's network: none, or QEMU's user network restricted to the forwarded addresses (a
# socat per connection carries each to the host's loopback; the guest is 10.0.2.15)
NET=(-nic none)
if [ ${#FWD[@]} -gt 0 ]; then
  command -v socat >/dev/null || { echo "apt-get install socat (scripts/install-deps.sh)" >&2; exit 2; }
  nd=user,id=n0,restrict=on
  for f in "${FWD[@]}"; do nd+=",guestfwd=tcp:$f-cmd:socat - TCP:127.0.0.1:${f##*:}"; done
  for f in "${HFWD[@]+"${HFWD[@]}"}"; do nd+=",hostfwd=tcp:127.0.0.1:${f%%:*}-10.0.2.15:${f##*:}"; done
  NET=(-netdev "$nd" -device virtio-net-pci,netdev=n0,romfile=)   # no iPXE option ROM: nothing boots from it
fi

MODDIR=$VM_DIR/kernel/lib/modules/$KVER
echo "$MODDIR" > "$JOB/moddir"
APPEND="console=ttyS0 loglevel=4 panic=-1 ipvsvm.job=$JOB ipvsvm.rw=${#RW[@]} ipvsvm.net=${#FWD[@]} ipvsvm.moveroot=$MOVEROOT ${IPVSVM_APPEND:-}"

T0=$(date +%s.%N)
set +e
timeout --kill-after=10 "$TIMEOUT" "$QEMU" \
  -nodefaults -no-user-config -nographic -no-reboot \
  -M pc "${ACCEL_ARGS[@]}" -smp "$CPUS" -m "$MEM" \
  -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" \
  -serial "file:$JOB/console.log" -chardev stdio,id=out,signal=off -serial chardev:out \
  -monitor none "${NET[@]}" "${FS[@]}" </dev/null
QRC=$?
set -e
T1=$(date +%s.%N)

if [ -s "$JOB/exit_code" ]; then
  RC=$(cat "$JOB/exit_code")
else
  RC=125
  echo "ipvs-vm: VM ended without exit code (qemu rc=$QRC$([ $QRC = 124 ] && echo ', TIMEOUT')). console log:" >&2
  tail -n 60 "$JOB/console.log" >&2 || true
fi
if [ "${IPVSVM_VERBOSE:-0}" = 1 ]; then
  printf 'ipvs-vm: accel=%s rc=%s wall=%.2fs job=%s\n' "$ACCEL" "$RC" "$(awk "BEGIN{print $T1 - $T0}")" "$JOB" >&2
fi
exit "$RC"
