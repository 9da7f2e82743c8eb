#!/bin/sh
# Every ELF file under DIR has only absolute or $ORIGIN-relative RUNPATH/RPATH entries: an empty
# entry or a relative one makes the loader search the current directory (or one relative to it),
# so a library lying where a user runs gemmcheck would be loaded. Usage: check-runpath.sh DIR...
set -eu
status=0
files=0
for dir in "$@"; do
    for f in $(find "$dir" -type f); do
        [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = "177ELF" ] || continue
        files=$((files + 1))
        paths=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p')
        [ -n "$paths" ] || continue
        # split on ':' keeping empty entries (a leading, trailing or doubled colon)
        bad=$(printf '%s\n' "$paths" | awk -F: '{ for (i = 1; i <= NF; i++)
            if ($i == "" || ($i !~ /^\// && $i !~ /^\$ORIGIN/ && $i !~ /^\$\{ORIGIN\}/))
                print "entry " i " (\"" $i "\")" }')
        if [ -n "$bad" ]; then
            echo "$f: RUNPATH [$paths] has an empty or relative $bad" | tr '\n' ' '
            echo
            status=1
        else
            echo "$f: RUNPATH [$paths] ok"
        fi
    done
done
echo "checked $files ELF files"
[ "$files" -gt 0 ] || { echo "no ELF file found under $*"; exit 1; }
exit $status
