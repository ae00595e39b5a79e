#!/usr/bin/env bash
# Make sure a system Chromium exists for the browser tests (Playwright drives it;
# it cannot download its own browser here). Installs Debian's package if missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || [ -n "${CHROMIUM_PATH:-}" ]; then
  exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "Browser tests need Chromium: install it, or set CHROMIUM_PATH to its binary." >&2
  exit 1
fi
echo "Installing Debian's chromium for the browser tests..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
