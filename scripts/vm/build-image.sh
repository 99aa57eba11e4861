#!/bin/bash
# build-image.sh — fetch a stock Debian kernel (which has IPVS as modules)
# and build a tiny initramfs that boots it, mounts the *host* root filesystem
# read-only over virtio-9p (with a tmpfs overlay on top so it is writable in the
# VM), loads the IPVS/netfilter/ipset/dummy/veth modules and runs a job command
# chrooted into the host root.  Used by scripts/vm/run.sh.
#
# Needs (Debian bookworm):
#   apt-get install -y --no-install-recommends qemu-system-x86 busybox-static kmod \
#       ipvsadm ipset iptables      (scripts/install-deps.sh does it)
# (the kernel .deb is only *downloaded* and unpacked, never installed).
# Idempotent: does nothing when the image is already built from this script.
#
# Env:  VM_DIR   output dir            (default: <repo>/.vm)
#       KPKG     kernel package name   (default: whatever linux-image-amd64 depends on)
set -euo pipefail

VM_DIR=${VM_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/.vm}
mkdir -p "$VM_DIR"
STAMP=$VM_DIR/image.stamp
SELF_SUM=$(sha256sum "$0" | cut -d' ' -f1)
if [ -s "$VM_DIR/initramfs.cpio.gz" ] && [ -s "$VM_DIR/kernel/vmlinux" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$SELF_SUM" ]; then
  exit 0
fi
KROOT=$VM_DIR/kernel            # unpacked kernel .deb (boot/ + lib/modules/)
STAGE=$VM_DIR/initramfs.d
OUT=$VM_DIR/initramfs.cpio.gz

for t in busybox depmod modprobe dpkg-deb apt-get gzip xz grep; do
  command -v "$t" >/dev/null || { echo "missing tool: $t (apt-get install busybox-static kmod)" >&2; exit 1; }
done
BUSYBOX=$(command -v busybox)
file -L "$BUSYBOX" 2>/dev/null | grep -q 'dynamically' && { echo "busybox must be static (busybox-static)" >&2; exit 1; }

# ---------------------------------------------------------------- kernel ----
if ! ls "$KROOT"/boot/vmlinuz-* >/dev/null 2>&1; then
  KPKG=${KPKG:-$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')}
  [ -n "$KPKG" ] || { echo "cannot resolve kernel package (apt-get update?)" >&2; exit 1; }
  echo ">> downloading $KPKG"
  mkdir -p "$VM_DIR/deb"
  ( cd "$VM_DIR/deb" && rm -f ./*.deb && apt-get download "$KPKG" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true )
  ls "$VM_DIR"/deb/"$KPKG"_*.deb >/dev/null
  echo ">> unpacking"
  rm -rf "$KROOT.tmp"; dpkg-deb -x "$VM_DIR"/deb/"$KPKG"_*.deb "$KROOT.tmp"
  rm -rf "$KROOT"; mv "$KROOT.tmp" "$KROOT"
fi
KVER=$(basename "$(ls -d "$KROOT"/lib/modules/*/ | head -1)")
MODDIR=$KROOT/lib/modules/$KVER
[ -s "$MODDIR/modules.dep" ] || depmod -b "$KROOT" "$KVER"
ln -sf "boot/vmlinuz-$KVER" "$KROOT/vmlinuz"
echo "$KVER" > "$VM_DIR/kver"
# Uncompressed ELF vmlinux: QEMU boots it directly through its PVH entry point
# (CONFIG_PVH=y), skipping SeaBIOS real-mode setup + in-guest xz decompression,
# which under TCG saves ~4 s per boot.  Debian compresses with xz.
if [ ! -s "$KROOT/vmlinux" ]; then
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$KROOT/boot/vmlinuz-$KVER" | head -1 | cut -d: -f1)
  [ -n "$off" ] || { echo "no xz payload in vmlinuz" >&2; exit 1; }
  tail -c +$((off + 1)) "$KROOT/boot/vmlinuz-$KVER" > "$KROOT/vmlinux.xz"
  xz -dc --single-stream "$KROOT/vmlinux.xz" > "$KROOT/vmlinux.tmp"; rm -f "$KROOT/vmlinux.xz"
  head -c 4 "$KROOT/vmlinux.tmp" | grep -q ELF || { echo "vmlinux extraction failed" >&2; exit 1; }
  mv "$KROOT/vmlinux.tmp" "$KROOT/vmlinux"
fi
grep -q '^CONFIG_IP_VS=[ym]' "$KROOT/boot/config-$KVER" || { echo "kernel lacks IPVS" >&2; exit 1; }

# resolve "modprobe -> ordered insmod list" on the host, relative to $MODDIR
resolve() {
  local m
  for m in "$@"; do
    modprobe -d "$KROOT" -S "$KVER" --show-depends "$m" | while read -r kw path _opts; do
      case $kw in
        insmod) echo "${path#"$MODDIR"/}" ;;
        builtin) ;;   # compiled in, nothing to do
        *) echo "unexpected: $kw $path" >&2; exit 1 ;;
      esac
    done
  done | awk '!seen[$0]++'
}

# 1) modules needed *before* the host root is reachable: they live in the initramfs
BOOT_MODS="virtio_pci 9pnet_virtio 9p overlay"
# 2) everything the kube-proxy replacement needs; insmod'ed from the 9p-mounted
#    module tree in this order (kernel autoload via busybox modprobe covers the rest)
NET_MODS="
  ip_vs ip_vs_rr ip_vs_wrr ip_vs_lc ip_vs_wlc ip_vs_lblc ip_vs_lblcr ip_vs_dh
  ip_vs_sh ip_vs_sed ip_vs_nq ip_vs_mh ip_vs_fo ip_vs_ovf
  nf_conntrack nf_nat nf_conntrack_netlink dummy veth
  ip_set ip_set_hash_ip ip_set_hash_ipport ip_set_hash_ipportip ip_set_hash_ipportnet
  ip_set_hash_net ip_set_hash_netport ip_set_bitmap_port ip_set_list_set xt_set
  ip_tables iptable_filter iptable_nat iptable_mangle iptable_raw
  ip6_tables ip6table_filter ip6table_nat ip6table_mangle ip6table_raw
  xt_tcpudp xt_MASQUERADE xt_mark xt_comment xt_addrtype xt_conntrack xt_nat
  xt_multiport xt_statistic xt_ipvs xt_physdev xt_REDIRECT xt_NFLOG xt_limit xt_recent
  nf_tables nft_compat nft_chain_nat nft_ct nft_nat nft_masq nft_redir nft_reject_inet
  nft_limit nft_hash nft_numgen nft_fib_inet nft_fib_ipv4 nft_fib_ipv6
  br_netfilter tun virtio_net
"

echo ">> staging initramfs for $KVER"
rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,sbin,etc,proc,sys,dev,run,tmp,lower,upper,newroot,lib/modules/"$KVER"}
cp "$BUSYBOX" "$STAGE/bin/busybox"
for a in sh mount umount mkdir insmod modprobe cat echo sleep poweroff sync chroot ln ip hostname sysctl; do
  ln -s busybox "$STAGE/bin/$a"
done
ln -s ../bin/busybox "$STAGE/sbin/modprobe"   # kernel.modprobe (autoload) target

resolve $BOOT_MODS > "$STAGE/etc/boot-modules"
while read -r rel; do
  mkdir -p "$STAGE/lib/modules/$KVER/$(dirname "$rel")"
  cp "$MODDIR/$rel" "$STAGE/lib/modules/$KVER/$rel"
done < "$STAGE/etc/boot-modules"
# shellcheck disable=SC2086
resolve $NET_MODS > "$STAGE/etc/net-modules"
cp "$STAGE/etc/boot-modules" "$VM_DIR/boot-modules.txt"
cp "$STAGE/etc/net-modules" "$VM_DIR/net-modules.txt"
echo "$KVER" > "$STAGE/etc/kver"

cat > "$STAGE/init" <<'EOF'
#!/bin/sh
# PID 1 inside the VM.  Kernel cmdline: ipvsvm.job=<host dir>  ipvsvm.rw=<n of extra rw shares>
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
KVER=$(cat /etc/kver)
ts() { read -r up _ </proc/uptime; echo "ipvs-vm: [$up] $*" >/dev/ttyS0; }
die() { echo "ipvs-vm init: $*" >/dev/ttyS0; echo "ipvs-vm init: $*" >/dev/ttyS1 2>/dev/null; poweroff -f; sleep 5; exit 1; }

JOB= NRW=0 NNET=0 CACHE=loose MOVEROOT=0
for arg in $(cat /proc/cmdline); do
  case $arg in
    ipvsvm.job=*) JOB=${arg#ipvsvm.job=} ;;
    ipvsvm.rw=*) NRW=${arg#ipvsvm.rw=} ;;
    ipvsvm.cache=*) CACHE=${arg#ipvsvm.cache=} ;;
    ipvsvm.net=*) NNET=${arg#ipvsvm.net=} ;;
    ipvsvm.moveroot=*) MOVEROOT=${arg#ipvsvm.moveroot=} ;;
  esac
done
[ -n "$JOB" ] || die "no ipvsvm.job= on cmdline"

for m in $(cat /etc/boot-modules); do insmod /lib/modules/$KVER/$m || die "insmod $m"; done

O=trans=virtio,version=9p2000.L,msize=262144
# host / read-only; tmpfs overlay on top so the VM can write anywhere (writes are discarded)
mount -t 9p -o $O,ro,cache=$CACHE hostroot /lower || die "mount hostroot"
mount -t tmpfs -o size=50% tmpfs /upper
mkdir -p /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w overlay /newroot || die "overlay"
R=/newroot
# job dir (command, exit code, outputs) read-write at the same path as on the host
mkdir -p "$R$JOB"; mount -t 9p -o $O,cache=none job "$R$JOB" || die "mount job"
i=0
while [ $i -lt "$NRW" ]; do
  p=$(sed -n "$((i+1))p" "$R$JOB/rw-dirs")
  mkdir -p "$R$p"; mount -t 9p -o $O,cache=none rw$i "$R$p" || die "mount rw$i at $p"
  i=$((i+1))
done

# full module tree of the guest kernel comes from the host (unpacked .deb)
MT=$(cat "$R$JOB/moddir")
mkdir -p /lib/modules/$KVER "$R/lib/modules/$KVER"
mount --bind "$R$MT" /lib/modules/$KVER
mount --bind "$R$MT" "$R/lib/modules/$KVER"
echo /sbin/modprobe > /proc/sys/kernel/modprobe
ts "root mounted, loading modules"
for m in $(cat /etc/net-modules); do insmod /lib/modules/$KVER/$m || echo "ipvs-vm: warn: insmod $m failed" >/dev/ttyS0; done

ts "modules loaded"
mount -t proc proc "$R/proc"
mount -t sysfs sysfs "$R/sys"
mount -t devtmpfs devtmpfs "$R/dev"
mkdir -p "$R/dev/pts" "$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$R/dev/pts"
mount -t tmpfs tmpfs "$R/dev/shm"
mount -t tmpfs -o mode=755 tmpfs "$R/run"
mount -t cgroup2 cgroup2 "$R/sys/fs/cgroup" 2>/dev/null
mount -t bpf bpf "$R/sys/fs/bpf" 2>/dev/null
hostname ipvs-vm
ip link set lo up
# QEMU's user network (run.sh -f): the guest is 10.0.2.15; the forwarded addresses are on-link
if [ "$NNET" != 0 ]; then
  { ip addr add 10.0.2.15/24 dev eth0 && ip link set eth0 up; } || echo "ipvs-vm: warn: eth0 not configured" >/dev/ttyS0
fi
busybox stty -F /dev/ttyS1 raw -echo 2>/dev/null   # no CR/LF mangling on the output channel

ts "running job"
# run the job; its stdout/stderr go to ttyS1 (= qemu stdio on the host)
# (env.sh/cmd.sh are written with bash's printf %q, so they need bash, which the host has)
# run.sh -R: the root moved over the initramfs, as switch_root does, so it is the mount
# namespace's root: a process that joins the namespace (setns, as `runc exec` does for
# `kubectl exec`) lands in it, not in the initramfs. Without it the root is a chroot.
if [ "$MOVEROOT" = 1 ]; then
  cd "$R" && mount --move . / && R=. || die "move the root over the initramfs"
fi
chroot "$R" /bin/bash -c ". \"$JOB/env.sh\"; cd \"\$IPVSVM_CWD\" 2>/dev/null || cd /; exec /bin/bash \"$JOB/cmd.sh\"" </dev/null >/dev/ttyS1 2>&1
rc=$?
ts "job exited rc=$rc"
echo $rc > "$R$JOB/exit_code"
sync
poweroff -f
sleep 10
EOF
chmod 755 "$STAGE/init"

echo ">> packing $OUT"
( cd "$STAGE" && find . | LC_ALL=C sort | busybox cpio -o -H newc 2>/dev/null ) | gzip -9 > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$SELF_SUM" > "$STAMP"
ls -la "$OUT" "$KROOT/vmlinuz"
echo ">> boot modules: $(wc -l < "$VM_DIR/boot-modules.txt"), net modules: $(wc -l < "$VM_DIR/net-modules.txt")"
