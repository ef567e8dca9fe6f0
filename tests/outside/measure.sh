#!/usr/bin/env bash
# What a host pays for each feature set: crates compiled, a clean debug and release build of
# this crate (a library host and its one-run program), and the release program's size.
# Reproduces the table in docs/embedding.md:
#   bash tests/outside/measure.sh > /tmp/embedding-cost.md
# Each set builds in a fresh target directory under $TMPDIR (about 20 minutes on 2 cores).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
manifest="$here/Cargo.toml"
tmp=${TMPDIR:-/tmp}
echo "| features of \`wayline\` | crates | debug build | release build | release binary |"
echo "|---|---|---|---|---|"
for set in "" "http" "http,response-schemas" "everything-default"; do
  case "$set" in
    "") label="registry, executor" ;;
    everything-default) label="default (everything but mcp, worker, testing)" ;;
    *) label="registry, executor, ${set//,/, }" ;;
  esac
  flags=()
  if [ -n "$set" ]; then flags=(--features "$set"); fi
  crates=$(cargo tree --manifest-path "$manifest" "${flags[@]}" -e normal,build --prefix none \
    | sed 's/ (\*)//' | sort -u | wc -l)
  target="$tmp/wayline-measure-${set:-minimal}"
  rm -rf "$target"
  start=$(date +%s)
  cargo build -q --manifest-path "$manifest" "${flags[@]}" --target-dir "$target"
  debug=$(( $(date +%s) - start ))
  start=$(date +%s)
  cargo build -q --release --manifest-path "$manifest" "${flags[@]}" --target-dir "$target"
  release=$(( $(date +%s) - start ))
  size=$(stat -c %s "$target/release/outside-host")
  rm -rf "$target"
  printf '| %s | %s | %s s | %s s | %s MB |\n' "$label" "$crates" "$debug" "$release" \
    "$(awk -v b="$size" 'BEGIN { printf "%.1f", b / 1000000 }')"
done
