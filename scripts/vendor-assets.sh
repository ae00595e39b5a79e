#!/usr/bin/env bash
# Refresh the vendored front-end assets under static/vendor/ from the npm registry.
#
# For each pinned package: `npm pack` it into a temporary folder, copy the built
# file and its LICENSE into static/vendor/<lib>/, and record name, version, file
# and sha256 in static/vendor/VERSIONS.txt. Nothing is fetched at run time or in CI;
# run this by hand to upgrade, review the diff, commit.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENDOR="$ROOT/static/vendor"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# lib-dir  npm-spec           file-in-package            license-file
PACKAGES=(
  "htmx     htmx.org@2.0.11   dist/htmx.min.js           LICENSE"
  "chartjs  chart.js@4.6.1    dist/chart.umd.min.js      LICENSE.md"
)

mkdir -p "$VENDOR"
{
  echo "# Vendored front-end assets; refreshed by scripts/vendor-assets.sh (npm pack). Do not edit by hand."
  echo "# name version file sha256"
} > "$TMP/VERSIONS.txt"

for line in "${PACKAGES[@]}"; do
  read -r lib spec file license <<<"$line"
  work="$TMP/$lib"
  mkdir -p "$work"
  tarball="$(cd "$work" && npm pack --silent "$spec" | tail -1)"
  tar -xzf "$work/$tarball" -C "$work"
  name="${spec%@*}"
  version="$(node -p "require('$work/package/package.json').version" 2>/dev/null || echo "${spec##*@}")"
  mkdir -p "$VENDOR/$lib"
  cp "$work/package/$file" "$VENDOR/$lib/$(basename "$file")"
  cp "$work/package/$license" "$VENDOR/$lib/LICENSE"
  sum="$(sha256sum "$VENDOR/$lib/$(basename "$file")" | cut -d' ' -f1)"
  echo "$name $version $lib/$(basename "$file") $sum" >> "$TMP/VERSIONS.txt"
  echo "vendored $name $version -> static/vendor/$lib/$(basename "$file")"
done
cp "$TMP/VERSIONS.txt" "$VENDOR/VERSIONS.txt"
