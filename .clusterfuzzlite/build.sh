#!/bin/bash -eu
# Builds the cargo-fuzz targets of fuzz/ unchanged, for ClusterFuzzLite / OSS-Fuzz:
# one binary per target in $OUT, with the committed seeds as
# $OUT/<target>_seed_corpus.zip.
#
# Inside the base-builder-rust image $SRC, $OUT and $SANITIZER are set and cargo
# runs on nightly with the sanitizer's flags. Outside it (no Docker), simulate:
#   SRC=/path/to/parent-of-seglog OUT=/tmp/cflite-out SANITIZER=none .clusterfuzzlite/build.sh
# SANITIZER=none builds with `cargo fuzz build -s none` (stable works);
# anything else is cargo-fuzz's default sanitizer build (nightly).
cd "$SRC/seglog/fuzz"

sanitizer_args=()
if [[ "${SANITIZER:-address}" == none ]]; then
  sanitizer_args=(-s none)
fi
cargo fuzz build -O --debug-assertions "${sanitizer_args[@]}"

release="target/x86_64-unknown-linux-gnu/release"
targets=$(cargo fuzz list)
if [[ -z "$targets" ]]; then
  echo "no fuzz targets in fuzz/" >&2
  exit 1
fi
for target in $targets; do
  cp "$release/$target" "$OUT/$target"
  seeds=(corpus/"$target"/seed-*)
  if [[ -e "${seeds[0]}" ]]; then
    rm -f "$OUT/${target}_seed_corpus.zip"
    zip -q -j "$OUT/${target}_seed_corpus.zip" "${seeds[@]}"
  fi
done
echo "built: $targets"
