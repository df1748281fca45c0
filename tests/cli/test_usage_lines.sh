#!/usr/bin/env bash
# Each command's usage line names every option its help describes, and describes every
# option its usage line names (-h/--help aside). Usage: test_usage_lines.sh KILN
set -u
KILN_BIN="${1:?usage: $0 PATH/TO/kiln}"
fails=0
passes=0
for cmd in inspect compile validate; do
    help="$("$KILN_BIN" help "$cmd")" || { echo "FAIL kiln help $cmd"; fails=$((fails + 1)); continue; }
    usage="$(printf '%s\n' "$help" | sed -n '1,/^$/p')"
    options="$(printf '%s\n' "$help" | sed -n '/^options:/,/^$/p')"
    # the option column of the options section: up to the first two spaces; "-o, --output"
    # makes -o in the usage line stand for --output
    column="$(printf '%s\n' "$options" | sed -nE 's/^  (-[^ ].*)$/\1/p' | sed -E 's/  .*//')"
    shorts="$(printf '%s\n' "$column" | sed -nE 's/.*(^| )(-[a-z]), (--[a-z-]+).*/s| \2 | \3 |/p')"
    in_usage="$(printf '%s\n' "$usage" | sed -E 's/([[ ])/ &/g' | sed -E "$shorts" |
        grep -oE -- '--[a-z][a-z-]*' | sort -u)"
    described="$(printf '%s\n' "$column" | grep -oE -- '--[a-z][a-z-]*' | grep -v -- '^--help$' |
        sort -u)"
    missing="$(comm -13 <(printf '%s\n' "$in_usage") <(printf '%s\n' "$described"))"
    extra="$(comm -23 <(printf '%s\n' "$in_usage") <(printf '%s\n' "$described"))"
    if [ -z "$missing" ] && [ -z "$extra" ]; then
        echo "ok   kiln help $cmd: the usage line and the options agree"
        passes=$((passes + 1))
    else
        echo "FAIL kiln help $cmd: usage lacks [$(echo $missing)], describes no [$(echo $extra)]"
        fails=$((fails + 1))
    fi
done
echo "test_usage_lines: $passes passed, $fails failed"
exit $((fails > 0))
