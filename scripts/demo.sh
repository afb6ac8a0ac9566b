#!/usr/bin/env bash
# Set up .venv/ (if needed) and run ragtap's main job on its embedded defaults: no API key, no network.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/ragtap demo "$@"
