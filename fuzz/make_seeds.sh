#!/usr/bin/env bash
# Builds the seed corpora of the fuzz targets under fuzz/corpus/ (not committed: rebuilt from
# the project's own sample textures). Needs a built `texset` (cargo build --workspace) and
# ImageMagick's `convert` for the image seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
texset=target/debug/texset
out=fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/bundle_reader" "$out/ingest_image" "$tmp/tiny"

# Bundle seeds: real bundles, one small material (16x16 maps) and a two-material library.
for kind in basecolor roughness normal; do
  convert sample_textures/wood/wood_$kind.png -resize 16x16! "$tmp/tiny/tiny_$kind.png"
done
"$texset" compress "$tmp/tiny" -o "$out/bundle_reader/tiny.texset" --steps 5 >/dev/null 2>&1
"$texset" compress "$tmp/tiny" -o "$out/bundle_reader/tiny_2bit.texset" --steps 5 --latent-bits 2 >/dev/null 2>&1
"$texset" compress sample_textures/fabric_indigo sample_textures/fabric_ochre -o "$out/bundle_reader/library.texset" --steps 5 >/dev/null 2>&1

# Image seeds: the first byte picks the file name the target gives (0 png, 1 jpg, 2 tga, 3 exr).
seed() { # selector source-args... output-extension name
  local sel=$1 src=$2 ext=$3 name=$4
  convert $src "$tmp/img.$ext"
  { printf "\\x$sel"; cat "$tmp/img.$ext"; } > "$out/ingest_image/$name"
}
seed 00 "sample_textures/wood/wood_basecolor.png -resize 8x8!" png rgb8.png
seed 00 "sample_textures/wood/wood_roughness.png -resize 8x8! -colorspace gray" png gray8.png
seed 00 "sample_textures/wood/wood_basecolor.png -resize 8x8! -depth 16" png rgb16.png
seed 00 "sample_textures/wood/wood_basecolor.png -resize 8x8! -alpha set" png rgba8.png
seed 01 "sample_textures/wood/wood_normal.png -resize 8x8!" jpg normal.jpg
seed 02 "sample_textures/wood/wood_roughness.png -resize 8x8!" tga rough.tga
seed 03 "sample_textures/wood/wood_height.png -resize 8x8!" exr height.exr
ls -la "$out"/*
