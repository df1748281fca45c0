#!/usr/bin/env bash
# The bundle's own CMakeLists.txt builds it with cmake alone: a static library libNAME.a
# that defines NAME_run (and NAME_weights with --weights embed), plus the NAME_test program
# with --test-main, which matches ONNX Runtime. Configured without a build type, it builds
# Release, which is -O3 with gcc and clang (docs/bundle.md, "Building").
# Usage: test_cmake.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

for weights in bin embed; do
    D="$TMP/src-$weights" BLD="$TMP/build-$weights"
    compile_model conv "$D" --weights "$weights" >/dev/null || { fail "kiln compile ($weights)"; continue; }
    if ! { cmake -S "$D" -B "$BLD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-Wall -Wextra -Werror -pedantic" &&
           cmake --build "$BLD"; } >"$TMP/cmake.log" 2>&1; then
        fail "$weights weights: cmake configures and builds the bundle"
        tail -n 30 "$TMP/cmake.log" | sed 's/^/    /'
        continue
    fi
    pass "$weights weights: cmake configures and builds the bundle"
    lib="$BLD/libconv.a"
    check "$weights weights: libconv.a is a static library" test -f "$lib"
    want="conv_run"
    [ "$weights" = embed ] && want="conv_run conv_weights"
    for sym in $want; do
        check "$weights weights: libconv.a defines $sym" bash -c "nm -g --defined-only '$lib' | grep -qw '$sym'"
    done
    if [ "$weights" = bin ]; then
        check "bin weights: the CMake-built conv_test matches ONNX Runtime" \
            run_compare "$BLD/conv_test" conv --weights "$D/conv_weights.bin"
    else
        check "embed weights: the CMake-built conv_test matches ONNX Runtime" \
            run_compare "$BLD/conv_test" conv --weights none
    fi
done

# no build type given: Release, -O3 on the compile line (gcc and clang)
D="$TMP/src-bin" BLD="$TMP/build-default"
if [ -f "$D/conv.c" ] && cmake -S "$D" -B "$BLD" >"$TMP/cmake.log" 2>&1 &&
    cmake --build "$BLD" --verbose >"$TMP/build-verbose.log" 2>&1; then
    check "no build type: the bundle compiles at -O3" \
        grep -qE -- '-O3 .*-c .*conv\.c' "$TMP/build-verbose.log"
else
    fail "no build type: cmake configures and builds the bundle"
    tail -n 30 "$TMP/cmake.log" | sed 's/^/    /'
fi
finish
