#!/usr/bin/env bash
# Set everything up (venv, Debian's prometheus for promtool and the integration test) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq prometheus >/dev/null
  # The Debian package starts a system prometheus on :9090; the tests start their own on free ports.
  ($SUDO systemctl stop prometheus 2>/dev/null || $SUDO service prometheus stop 2>/dev/null || true) >/dev/null 2>&1
fi
scripts/setup.sh --test
exec .venv/bin/python -m pytest "$@"
