#!/usr/bin/env bash
# Generated model code never allocates, prints or exits: the bundle's .c/.h files (the test
# main aside) name no such function, and the objects (gcc and clang, -O0 and -O2, bin and
# embedded weights) need no symbol beyond memcpy/memset/memmove/memcmp and libm.
# Usage: test_no_libc.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

FORBIDDEN='\b(malloc|calloc|realloc|free|aligned_alloc|posix_memalign|alloca|printf|fprintf|sprintf|snprintf|vprintf|puts|fputs|putchar|perror|exit|_Exit|abort|assert|fopen|fwrite|fread|getenv|time|rand)\s*\('
# libm, by name with its float/long double forms.
LIBM='(a?(sin|cos|tan)h?|atan2|exp|exp2|expm1|log|log2|log10|log1p|pow|sqrt|cbrt|fabs|floor|ceil|round|trunc|rint|nearbyint|l?lrint|l?lround|fmod|remainder|fmin|fmax|fdim|fma|erf|erfc|tgamma|lgamma|hypot|frexp|ldexp|modf|copysign|nextafter|scalbn)[fl]?'
ALLOWED="^(memcpy|memset|memmove|memcmp|$LIBM|_GLOBAL_OFFSET_TABLE_)\$"

for model in eltwise other conv minimal; do
    for weights in bin embed; do
        D="$TMP/$model-$weights"
        if ! compile_model "$model" "$D" --weights "$weights" >/dev/null; then
            fail "$model ($weights): kiln compile"
            continue
        fi
        files=$(ls "$D"/*.c "$D"/*.h | grep -v '_test_main\.c$')
        # comments may say "no malloc": the preprocessor strips them (and expands nothing)
        hits="$(for f in $files; do gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null |
            grep -EH --label="$(basename "$f")" "$FORBIDDEN"; done)"
        if [ -z "$hits" ]; then
            pass "$model ($weights): no allocation, printing or exit in $(echo $files | wc -w) source files"
        else
            fail "$model ($weights): forbidden calls:"
            echo "$hits" | sed 's/^/    /'
        fi
        for cc in gcc clang; do
            for opt in -O0 -O2; do
                undef=""
                ok=1
                for src in $files; do
                    case "$src" in *.c) ;; *) continue ;; esac
                    obj="$TMP/$(basename "$src" .c)-$cc$opt.o"
                    if ! $cc $STRICT $opt -c -I"$D" "$src" -o "$obj"; then ok=0; continue; fi
                    undef+=" $(nm -u "$obj" | awk '{print $NF}' | tr '\n' ' ')"
                done
                extra="$(for s in $undef; do echo "$s"; done | sort -u | grep -Ev "$ALLOWED" || true)"
                used="$(for s in $undef; do echo "$s"; done | sort -u | tr '\n' ' ')"
                if [ "$ok" = 1 ] && [ -z "$extra" ]; then
                    pass "$model ($weights, $cc $opt): undefined symbols only libm/mem*: ${used:-none}"
                else
                    fail "$model ($weights, $cc $opt): undefined symbols beyond libm/mem*: $extra"
                fi
            done
        done
    done
done
finish
