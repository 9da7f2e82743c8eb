#!/bin/sh
# The shared library exports exactly the functions the public headers declare with GCK_API:
# nothing internal leaks, nothing declared is missing. Usage: check_exports.sh LIB INCLUDE_DIR
set -eu
lib=$1
inc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort > "$tmp/exported"
cat "$inc"/gemmcheck/*.h | tr '\n' ' ' | grep -o 'GCK_API [^;{()]*(' | sed 's/($//; s/.*[ *]//' | grep -x 'gck_[a-z0-9_]*' |
    sort -u > "$tmp/declared"
echo "exported functions: $(wc -l < "$tmp/exported"); declared GCK_API functions:" \
    "$(wc -l < "$tmp/declared")"
comm -23 "$tmp/exported" "$tmp/declared" > "$tmp/leaked"
comm -13 "$tmp/exported" "$tmp/declared" > "$tmp/missing"
status=0
if [ -s "$tmp/leaked" ]; then echo "exported but not declared public:"; cat "$tmp/leaked"; status=1; fi
if [ -s "$tmp/missing" ]; then echo "declared public but not exported:"; cat "$tmp/missing"; status=1; fi
[ $status -eq 0 ] && echo "exports match the public headers"
exit $status
