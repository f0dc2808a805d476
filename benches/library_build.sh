#!/usr/bin/env bash
# What a library user pays for `mcpwire` with default features: a fresh crate outside the
# repository (`mcpwire` as a path dependency, serde, serde_json, tokio) whose binaries are the
# server and client quick starts of docs/library.md as written, built clean (dev profile, a
# fresh target dir) under /usr/bin/time. Prints one JSON line per build: the checkout, the number
# of crates in `cargo tree -e normal`, whether it lists an application's dependency (clap,
# tracing-subscriber, toml, toml_edit, redis, rcgen), wall and CPU seconds, the load average.
#
#   benches/library_build.sh [--rounds N] [CHECKOUT ...]
#
# CHECKOUT: an mcpwire source tree (default: this repository); several are built in
# alternating rounds (default 2), e.g. this repository and a worktree of an older commit:
#   git worktree add /tmp/mcpwire-old OLD_COMMIT && benches/library_build.sh . /tmp/mcpwire-old
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=2
if [ "${1:-}" = --rounds ]; then ROUNDS=${2:?--rounds needs a number}; shift 2; fi
CHECKOUTS=("$@")
[ ${#CHECKOUTS[@]} -eq 0 ] && CHECKOUTS=(.)
DOCS=$PWD/docs/library.md
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

i=0
for checkout in "${CHECKOUTS[@]}"; do
  src=$(cd "$checkout" && pwd)
  crate=$WORK/fresh$i
  mkdir -p "$crate/src/bin"
  cat >"$crate/Cargo.toml" <<EOF
[package]
name = "fresh$i"
version = "0.1.0"
edition = "2021"

[dependencies]
mcpwire = { path = "$src" }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
tokio = { version = "1", features = ["macros", "rt-multi-thread"] }

[workspace]
EOF
  cp "$src/Cargo.lock" "$crate/Cargo.lock"
  # The quick starts as a reader copies them: the lines a doctest hides (`# `) left out; the
  # client's, shown without its `main`, wrapped in one.
  python3 - "$DOCS" "$crate" <<'PY'
import re, sys
docs, crate = sys.argv[1:]
blocks = re.findall(r"```rust\n(.*?)```", open(docs).read(), re.S)
visible = lambda b: [l for l in b.split("\n") if not (l.startswith("# ") or l == "#")]
open(f"{crate}/src/bin/server.rs", "w").write("\n".join(visible(blocks[0])))
client = visible(blocks[2])
uses = [l for l in client if l.startswith("use ")]
body = [l for l in client if l.strip() and not l.startswith("use ")]
main = "#[tokio::main]\nasync fn main() -> Result<(), Box<dyn std::error::Error>> {\n"
open(f"{crate}/src/bin/client.rs", "w").write(
    "\n".join(uses) + "\n\n" + main + "\n".join("    " + l for l in body) + "\n    Ok(())\n}\n")
PY
  i=$((i + 1))
done

for round in $(seq "$ROUNDS"); do
  i=0
  for checkout in "${CHECKOUTS[@]}"; do
    crate=$WORK/fresh$i
    rm -rf "$crate/target"
    tree=$(cd "$crate" && cargo tree -e normal --prefix none | sed 's/ (.*//' | sort -u)
    crates=$(wc -l <<<"$tree")
    apps=$(grep -cE '^(clap|tracing-subscriber|toml|toml_edit|redis|rcgen) ' <<<"$tree" || true)
    load=$(cut -d' ' -f1 /proc/loadavg)
    (cd "$crate" && /usr/bin/time -f "%e %U %S" -o "$WORK/time" cargo build --quiet --bins)
    read -r wall user sys <"$WORK/time"
    printf '{"round":%s,"checkout":"%s","commit":"%s","crates":%s,"application_crates":%s,"wall_s":%s,"cpu_s":%s,"load":%s}\n' \
      "$round" "$checkout" "$(git -C "$checkout" rev-parse --short HEAD)" "$crates" "$apps" "$wall" \
      "$(python3 -c "print(round($user + $sys, 1))")" "$load"
    i=$((i + 1))
  done
done
