#!/usr/bin/env bash
# Set everything up (venv, and the Debian servers the tests start: see scripts/system-packages.sh) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/system-packages.sh
scripts/setup.sh --test
scripts/test-envs.sh frameworks receivers
exec .venv/bin/python -m pytest "$@"
