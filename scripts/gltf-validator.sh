#!/usr/bin/env bash
# Installs the Khronos glTF validator (npm `gltf-validator`, pinned) into target/gltf-validator,
# where the glTF-output tests find it (TEXSET_GLTF_VALIDATOR overrides the folder). Needs node and
# npm; `.ci/run` calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/gltf-validator
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --silent gltf-validator@2.0.0-dev.3.10
node -e "require('$PWD/$dir/node_modules/gltf-validator'); console.log('gltf-validator', require('$PWD/$dir/node_modules/gltf-validator/package.json').version)"
