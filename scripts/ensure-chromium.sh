#!/usr/bin/env bash
# Make sure a system Chromium exists for the browser tests (Playwright drives it;
# it cannot download its own browser here), with a CJK font so that the cookbook's
# Chinese comments render in the screenshots. Installs Debian's packages if missing.
set -euo pipefail
packages=()
if ! command -v chromium >/dev/null 2>&1 && [ -z "${CHROMIUM_PATH:-}" ]; then
  packages+=(chromium)
fi
if ! command -v fc-list >/dev/null 2>&1 || [ -z "$(fc-list :lang=zh 2>/dev/null)" ]; then
  packages+=(fonts-wqy-zenhei)
fi
[ "${#packages[@]}" -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if ! command -v apt-get >/dev/null 2>&1; then
  if [[ " ${packages[*]} " == *" chromium "* ]]; then
    echo "Browser tests need Chromium: install it, or set CHROMIUM_PATH to its binary." >&2
    exit 1
  fi
  exit 0  # the font only matters for screenshots
fi
echo "Installing Debian's ${packages[*]} for the browser tests..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${packages[@]}" >/dev/null
