#!/bin/sh
# Start-up cost of gemmcheck: wall time of small calls a test suite makes thousands of times
# (`--version`, a 2x3 by 3x2 `oracle`, a one-case `repro` on ref), against the floor of starting
# any process (/bin/true) and, when given, another gemmcheck binary (e.g. an older build) on the
# same calls in the same run. Each figure is the median of N runs (default 41), runs interleaved.
# Usage: bench/startup.sh GEMMCHECK [OTHER_GEMMCHECK] [N]
set -eu
new=$1 old=${2:-} n=${3:-41}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# tiny float32 .npy inputs, written byte by byte: a version-1 header padded to 128 bytes
npy() { # FILE ROWS COLS DATA(printf escapes of the little-endian floats)
    hdr="{'descr': '<f4', 'fortran_order': False, 'shape': ($2, $3), }"
    { printf '\223NUMPY\001\000\166\000'; printf '%s%*s\n' "$hdr" $((117 - ${#hdr})) ''
      printf "$4"; } > "$1"
}
one='\0\0\200\77' zero='\0\0\0\0'
npy "$T/a.npy" 2 3 "$one"'\0\0\0\100\0\0\100\100\0\0\200\100\0\0\240\100\0\0\300\100'
npy "$T/b.npy" 3 2 "$one$zero$zero$one$one$one"
case_text='gck1 m=2 n=2 k=3 order=col ta=N tb=N types=f32,f32,f32,f32 compute=f32 scale=f32 alpha=1 beta=0 lda=2 ldb=3 ldc=2 ldd=2 d=c batch=1 sa=0 sb=0 sc=0 sd=0 off=0,0,0,0 vab=unif vc=unif sp=0 cnan=0 seed=1'
now() { date +%s%N; }
run_all() { # BINARY CALL
    bin=$1
    case $2 in
    true) /bin/true ;;
    version) "$bin" --version > /dev/null ;;
    oracle) "$bin" oracle --a "$T/a.npy" --b "$T/b.npy" --out-type f32 --out "$T/d.npy" \
        > /dev/null 2>&1 ;;
    repro) "$bin" repro --backend ref "$case_text" > /dev/null ;;
    esac
}
calls="version oracle repro"
bins="new"
[ -n "$old" ] && bins="new old"
i=0
while [ $i -lt "$n" ]; do
    t0=$(now); run_all "$new" true; t1=$(now)
    echo $(((t1 - t0) / 1000)) >> "$T/true.us"
    for c in $calls; do
        for b in $bins; do
            bin=$new
            [ "$b" = old ] && bin=$old
            t0=$(now); run_all "$bin" "$c"; t1=$(now)
            echo $(((t1 - t0) / 1000)) >> "$T/$b.$c.us"
        done
    done
    i=$((i + 1))
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] / 1000 }'; }
echo "start-up, median of $n runs (ms); /bin/true: $(median "$T/true.us") ms"
if [ -n "$old" ]; then
    printf '%-10s %12s %12s %8s\n' call "$(basename "$new")" other "other/new"
else
    printf '%-10s %12s\n' call "$(basename "$new")"
fi
for c in $calls; do
    a=$(median "$T/new.$c.us")
    if [ -n "$old" ]; then
        b=$(median "$T/old.$c.us")
        printf '%-10s %12s %12s %7.1fx\n' "$c" "$a" "$b" "$(echo "$b $a" | awk '{ print $1 / ($2 > 0 ? $2 : 0.001) }')"
    else
        printf '%-10s %12s\n' "$c" "$a"
    fi
done
