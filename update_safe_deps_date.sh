#!/usr/bin/env bash
# Moves `[tool.uv] exclude-newer` in pyproject.toml to today minus 14 days, so dependency resolution only
# sees releases that have been public for two weeks (time for a bad or malicious release to be yanked).
#
# The Aegra environment (deploy/pyproject.toml, deploy/uv.lock) gets the same date, so both locks see
# the same releases.
#
# Usage: ./update_safe_deps_date.sh [--lock]
#   --lock  also re-resolve (`uv lock`, `uv lock --project deploy`) and install (`uv sync --extra dev`)
#           with the new date.
# Prints the old and the new date. Needs GNU date.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

SAFETY_DAYS=14
PYPROJECT="pyproject.toml"

lock=0
case "${1:-}" in
  "") ;;
  --lock) lock=1 ;;
  *) echo "Usage: $0 [--lock]" >&2; exit 2 ;;
esac

new_date="$(date -u -d "$SAFETY_DAYS days ago" +%Y-%m-%d)"

set_date() {
  local pyproject="$1" old_date
  [[ -f "$pyproject" ]] || { echo "ERROR: $pyproject not found" >&2; exit 1; }
  old_date="$(sed -n 's/^exclude-newer[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$pyproject" | head -n 1)"
  if [[ -n "$old_date" ]]; then
    sed -i "s/^exclude-newer[[:space:]]*=.*/exclude-newer = \"$new_date\"/" "$pyproject"
  elif grep -q '^\[tool\.uv\]' "$pyproject"; then
    sed -i "/^\[tool\.uv\]/a exclude-newer = \"$new_date\"" "$pyproject"
  else
    printf '\n[tool.uv]\nexclude-newer = "%s"\n' "$new_date" >>"$pyproject"
  fi
  echo "$pyproject exclude-newer: ${old_date:-(unset)} -> $new_date"
}

set_date "$PYPROJECT"
set_date deploy/pyproject.toml

if [[ "$lock" == 1 ]]; then
  uv lock
  uv lock --project deploy
  uv sync --extra dev
fi
