#!/usr/bin/env bash
# Build the pinned OTLP receivers that tests/test_otel_phoenix.py exports to (real backends nobody here wrote):
# one venv per tests/receivers/NAME.txt under .ragtap-cache/receivers/NAME (gitignored), apart from ragtap's own
# venv because they pull large, conflicting dependency trees.  Idempotent: a venv whose requirements file is
# unchanged is kept.  One that cannot be installed gets a `failed` file with pip's last lines; its tests are
# skipped with that reason (they fail instead when CI is set).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
for req in tests/receivers/*.txt; do
  name=$(basename "$req" .txt)
  dir=.ragtap-cache/receivers/$name
  stamp=$(sha1sum "$req" | cut -c1-12)
  [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$stamp" ] && continue
  rm -rf "$dir" && mkdir -p "$dir"
  if "$PYTHON" -m venv "$dir" && "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$req" > "$dir/pip.log" 2>&1; then
    echo "$stamp" > "$dir/.installed"
  else
    grep -v "WARNING: Location" "$dir/pip.log" | tail -5 > "$dir/failed"
    echo "receiver-envs: $name could not be installed (see $dir/failed)" >&2
  fi
done
exit 0
