#!/bin/sh
# Functions longer than a limit (default 80 lines, from the line that opens the definition to its
# closing brace) in the C files given, or in src/, fuzz/, oracles/ and refimpl/. The code is
# clang-formatted: a definition starts at column 0, its body ends with "}" alone at column 0.
# Prints "LINES FILE:LINE NAME" for each and exits 1 if there is any.
limit=${LIMIT:-80}
if [ $# -eq 0 ]; then
    set -- $(git ls-files 'src/*.c' 'fuzz/*.c' 'oracles/*.c' 'refimpl/*.c')
fi
awk -v limit="$limit" '
    FNR == 1 { start = 0 }
    /^[A-Za-z_].*\(/ && !/;[ \t]*$/ && !/^(typedef|static const|const|extern)[ \t]/ && !start {
        start = FNR; name = $0; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name); next
    }
    start && /^}/ {
        n = FNR - start + 1
        if (n > limit) { printf "%d %s:%d %s\n", n, FILENAME, start, name; bad = 1 }
        start = 0
    }
    END { exit bad }
' "$@"
