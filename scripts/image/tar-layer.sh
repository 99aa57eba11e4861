# tar-layer.sh — sourced by scripts/image/build.sh and scripts/node/images.sh: one way to make a
# layer tar, so every image the project builds is made the same way.
# deterministic tar: sorted names, numeric owners, no atime/ctime
# (the top-level entries by name, never ".": a layer must not carry the root directory's mode)
tar_layer() { # DIR OUT.tar [extra tar options...]
  local dir=$1 out=$2; shift 2
  local top; mapfile -t top < <(cd "$dir" && ls -A | LC_ALL=C sort)
  tar -C "$dir" --sort=name --numeric-owner --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime "$@" -cf "$out" -- "${top[@]}"
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
