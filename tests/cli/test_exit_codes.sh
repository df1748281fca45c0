#!/usr/bin/env bash
# kiln's exit codes: 0 ok, 1 bad or unsupported model (diagnostics on stderr, prefixed
# with the model path), 2 usage error. Usage: test_exit_codes.sh PATH/TO/kiln
set -u
KILN_BIN="${1:?usage: $0 PATH/TO/kiln}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MODEL="$ROOT/examples/models/tinycnn.onnx"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0

# expect CODE ARGS...: runs kiln ARGS and checks the exit code.
expect() {
    local want="$1"
    shift
    "$KILN_BIN" "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    if grep -qE 'Sanitizer|runtime error:' "$TMP/err"; then
        echo "FAIL sanitizer report: kiln $*"
        sed 's/^/     | /' "$TMP/err" | head -20
        fails=$((fails + 1))
    elif [ "$got" -eq "$want" ]; then
        echo "ok   exit $want: kiln $*"
    else
        echo "FAIL exit $got, wanted $want: kiln $*"
        sed 's/^/     | /' "$TMP/err" | head -5
        fails=$((fails + 1))
    fi
}

# has FILE TEXT WHAT: checks that the last run's FILE (out or err) contains TEXT.
has() {
    if grep -qF -- "$2" "$TMP/$1"; then
        echo "ok   $3"
    else
        echo "FAIL $3: '$2' not in std$1"
        sed 's/^/     | /' "$TMP/$1" | head -5
        fails=$((fails + 1))
    fi
}

expect 0 --version
has out "kiln " "--version prints the version"
expect 0 --help
has out "inspect" "--help lists the inspect command"
expect 0 help
has out "inspect" "help lists the inspect command"
expect 0 help inspect
has out "--dim NAME=VALUE" "help inspect shows the options"
expect 0 inspect --help
expect 0 inspect "$MODEL"
expect 0 inspect --json "$MODEL"
expect 0 inspect --ir "$MODEL"
expect 0 inspect --dim batch=1 "$MODEL"
expect 0 inspect --dim=batch=1 "$MODEL"
expect 0 inspect "$MODEL" --dim batch=0

expect 2
expect 2 frobnicate
has err "unknown command 'frobnicate'" "an unknown command is named"
expect 2 --frobnicate
expect 2 help frobnicate
expect 2 inspect
has err "missing MODEL" "a missing model is reported"
expect 2 inspect --frobnicate "$MODEL"
has err "unknown option '--frobnicate'" "an unknown option is named"
expect 2 inspect "$MODEL" "$MODEL"
expect 2 inspect --json --ir "$MODEL"
expect 2 inspect --dim
expect 2 inspect "$MODEL" --dim
expect 2 inspect --dim batch "$MODEL"
expect 2 inspect --dim =4 "$MODEL"
expect 2 inspect --dim batch= "$MODEL"
expect 2 inspect --dim batch=-1 "$MODEL"
expect 2 inspect --dim batch=+1 "$MODEL"
expect 2 inspect --dim batch=4x "$MODEL"
expect 2 inspect --dim batch=0x10 "$MODEL"
expect 2 inspect --dim batch=99999999999999999999999 "$MODEL"
expect 2 inspect --dim batch=1 --dim batch=2 "$MODEL"
has err "given twice" "a repeated --dim is reported"

expect 1 inspect "$TMP/no-such-model.onnx"
has err "$TMP/no-such-model.onnx: " "diagnostics carry the model path"
printf 'this is not a protobuf \xff\xff\xff\xff' >"$TMP/garbage.onnx"
expect 1 inspect "$TMP/garbage.onnx"
has err "$TMP/garbage.onnx: error" "a malformed model gets an error diagnostic"
head -c 100 "$MODEL" >"$TMP/truncated.onnx"
expect 1 inspect "$TMP/truncated.onnx"
expect 1 inspect --json "$TMP/truncated.onnx"
if [ -s "$TMP/out" ]; then
    echo "FAIL a failed --json run printed to stdout"
    fails=$((fails + 1))
else
    echo "ok   a failed --json run prints nothing to stdout"
fi

# compile's backend options: --precision and --conv belong to --target cuda, with known values
expect 0 compile "$MODEL" -o "$TMP/cu" --dim batch=1 --target cuda --precision fp16 --conv implicit
expect 0 compile "$MODEL" -o "$TMP/cu" --dim batch=1 --target cuda --conv im2col
expect 2 compile "$MODEL" -o "$TMP/cu" --target cuda --conv winograd
expect 2 compile "$MODEL" -o "$TMP/cu" --target cuda --precision fp8
expect 2 compile "$MODEL" -o "$TMP/c" --conv implicit
expect 2 compile "$MODEL" -o "$TMP/c" --precision fp16
expect 2 compile "$MODEL" -o "$TMP/cu" --target cuda --conv

echo "test_exit_codes: $fails failed"
exit $((fails > 0))
