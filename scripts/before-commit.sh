#!/bin/sh
# The checks to run before a commit (CI runs the first two as well):
#   1. clang-format on every tracked or new C file;
#   2. no function over 80 lines in src/, fuzz/, oracles/, refimpl/ (scripts/function-lengths.sh);
#   3. `duplicates --change` (the development machines' duplicate finder; skipped where it is not
#      installed): a pair of places whose added side is not boilerplate fails, so that a fact
#      written again is noticed before it lands.
# Usage: scripts/before-commit.sh [BASE]   (BASE: what the change is measured against; HEAD)
set -eu
cd "$(dirname "$0")/.."
base=${1:-HEAD}
status=0
files=$( (git ls-files '*.c' '*.h'; git ls-files -o --exclude-standard '*.c' '*.h') | sort -u)
echo "== clang-format"
echo "$files" | xargs clang-format --dry-run -Werror || status=1
echo "== function lengths"
scripts/function-lengths.sh || status=1
if command -v duplicates > /dev/null 2>&1; then
    echo "== duplicates --change --base $base"
    out=$(duplicates --change --base "$base" --most 40 --seconds 60)
    echo "$out"
    if echo "$out" | grep -E '^D[0-9]+ ' | grep -v 'boilerplate' > /dev/null; then
        echo "a change repeats code that is not boilerplate (rows above without 'boilerplate')"
        status=1
    fi
else
    echo "== duplicates: not installed here, skipped"
fi
exit $status
