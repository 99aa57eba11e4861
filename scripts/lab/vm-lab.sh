# vm-lab.sh — sourced by scripts/test-all.sh and `make vm`: `lab_up DIR` starts the lab
# (scripts/lab/lab.ts) in DIR, exports KUBE_IPVS_LAB (its control API as the host reaches it)
# and sets LAB_VM_ARGS, the scripts/vm/run.sh options that let the guest reach it; `lab_down DIR`
# stops it.
lab_up() {
  local dir=$1 info
  info=$(node_modules/.bin/node dist/scripts/lab/lab.js up "$dir") || return 1
  eval "$(node_modules/.bin/node -e '
    const i = JSON.parse(process.argv[1]);
    const f = [`${i.guest.a}:${i.apiservers.a.port}`, `${i.guest.b}:${i.apiservers.b.port}`, `${i.guest.a}:${i.controlPort}`];
    console.log(`export KUBE_IPVS_LAB=127.0.0.1:${i.controlPort}`);
    console.log(`LAB_VM_ARGS=(${f.map((x) => `-f ${x}`).join(" ")} -e KUBE_IPVS_LAB=${i.guest.a}:${i.controlPort})`);
  ' "$info")"
}
lab_down() {
  node_modules/.bin/node dist/scripts/lab/lab.js down "$1"
}
