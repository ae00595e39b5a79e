#!/usr/bin/env bash
# Make sure a kubectl exists for the tests that drive the Kubernetes-shaped API with it
# (tests/e2e/test_kubectl.py). Installs Debian's kubernetes-client package if missing.
set -euo pipefail
if command -v kubectl >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "The kubectl tests need kubectl: install it (Debian: kubernetes-client) and put it on PATH." >&2
  exit 1
fi
echo "Installing Debian's kubernetes-client (kubectl) for the tests..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kubernetes-client >/dev/null
