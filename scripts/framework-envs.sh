#!/usr/bin/env bash
# Build the pinned test-only framework environments that tests/test_frameworks.py runs real framework code in:
# one venv per tests/frameworks/NAME.txt under .ragtap-cache/frameworks/NAME (gitignored).  Idempotent: a venv
# whose requirements file is unchanged is kept.  A framework that cannot be installed gets a `failed` file with
# pip's last lines, and its tests are skipped with that reason (they fail instead when CI is set).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
for req in tests/frameworks/*.txt; do
  name=$(basename "$req" .txt)
  dir=.ragtap-cache/frameworks/$name
  stamp=$(sha1sum "$req" | cut -c1-12)
  [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$stamp" ] && continue
  rm -rf "$dir" && mkdir -p "$dir"
  if "$PYTHON" -m venv "$dir" && "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$req" > "$dir/pip.log" 2>&1; then
    echo "$stamp" > "$dir/.installed"
  else
    grep -v "WARNING: Location" "$dir/pip.log" | tail -5 > "$dir/failed"
    echo "framework-envs: $name could not be installed (see $dir/failed)" >&2
  fi
done
exit 0
