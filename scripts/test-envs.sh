#!/usr/bin/env bash
# Build pinned test-only venvs, one per tests/KIND/NAME.txt under .ragtap-cache/KIND/NAME (gitignored), apart
# from ragtap's own venv because they pull large, conflicting dependency trees:
#   frameworks  real framework code that tests/test_frameworks*.py runs through ragtap (LangChain, LlamaIndex, ...)
#   receivers   real OTLP backends nobody here wrote, that tests/test_otel_phoenix.py exports to
# Idempotent: a venv whose requirements file is unchanged is kept.  One that cannot be installed gets a `failed`
# file with pip's last lines, and its tests are skipped with that reason (they fail instead when CI is set).
# Usage: scripts/test-envs.sh KIND [KIND ...]
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
for kind in "$@"; do
  for req in tests/"$kind"/*.txt; do
    name=$(basename "$req" .txt)
    dir=.ragtap-cache/$kind/$name
    stamp=$(sha1sum "$req" | cut -c1-12)
    [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$stamp" ] && continue
    rm -rf "$dir" && mkdir -p "$dir"
    if "$PYTHON" -m venv "$dir" && "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$req" > "$dir/pip.log" 2>&1; then
      echo "$stamp" > "$dir/.installed"
    else
      grep -v "WARNING: Location" "$dir/pip.log" | tail -5 > "$dir/failed"
      echo "test-envs: $kind/$name could not be installed (see $dir/failed)" >&2
    fi
  done
done
exit 0
