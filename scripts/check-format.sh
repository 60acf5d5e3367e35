#!/usr/bin/env bash
# Check that the tracked C and C++ sources are formatted as .clang-format says.
#
#   scripts/check-format.sh [paths...]     (default: src tools test bench contrib examples)
#
# Exit status: 0 when every file is formatted, 1 when clang-format would change one (its
# diagnostics name the file and line), 0 with a message when clang-format is not installed
# (scripts/install-deps.sh installs it). Set CLANG_FORMAT to use another binary.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "check-format: $clang_format not found; skipping (scripts/install-deps.sh installs it)"
  exit 0
fi

paths=("$@")
if (( ${#paths[@]} == 0 )); then
  paths=(src tools test bench contrib examples)
fi

# Tracked files only: build trees and generated files never count.
mapfile -t files < <(git ls-files -- "${paths[@]}" |
  grep -E '\.(c|cc|cpp|cxx|h|hh|hpp|hxx|inl)$' || true)
if (( ${#files[@]} == 0 )); then
  echo "check-format: no C/C++ sources under ${paths[*]}"
  exit 0
fi

if "$clang_format" --dry-run -Werror --style=file "${files[@]}"; then
  echo "check-format: ${#files[@]} files formatted"
  exit 0
fi
echo "check-format: files above differ from .clang-format; run" \
  "'$clang_format -i --style=file FILE' on them" >&2
exit 1
