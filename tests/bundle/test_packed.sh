#!/usr/bin/env bash
# Products and convolutions on the packed fp32 GEMM (runtime/rt_pgemm.h; weights packed at
# compile time by backend/plan.c): the models of make_packed_models.py compile to the
# expected kernel calls (packed where the plan allows, plain rt_gemm/rt_conv_nhwc where it
# does not), and each bundle, built for the x86-64 baseline (portable path), x86-64-v3
# (AVX2+FMA), the build machine (-march=native) and with ASan/UBSan, matches ONNX Runtime on
# fresh random inputs. wino_convs' 3x3 stride-1 convolutions run on Winograd F(4x4, 3x3)
# (runtime/rt_wino.h), and with --no-winograd (wino_convs_off) on the packed GEMM again;
# stem_convs' kernels of more than 64 taps (a patch stem, a 9x9) on the packed GEMM too;
# bottlenecks' first-block conv3 and downsample as one two-operand product (backend/plan.c).
# AArch64: tests/edge/pgemm_arm.sh and arm_linux.sh.
# Usage: test_packed.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

"$PY" "$ROOT/tests/bundle/make_packed_models.py" "$MODELS" || { fail "make_packed_models.py"; finish; }

# model, then the kernel calls its bundle must make, in order
EXPECT_packed_products="rt_pconv_nhwc_f32 rt_pconv_nhwc_f32 rt_pconv_nhwc_f32 rt_gemm_f32"
EXPECT_packed_convs="rt_strided_copy rt_pconv_nhwc_par_f32 rt_pconv_nhwc_f32 rt_pconv_nhwc_par_f32 rt_conv_nhwc_f32 rt_pconv_nhwc_f32 rt_strided_copy"
EXPECT_wino_convs="rt_strided_copy rt_wino_nhwc_par_f32 rt_wino_nhwc_par_f32 rt_wino_nhwc_par_f32 rt_pconv_nhwc_par_f32 rt_strided_copy"
EXPECT_wino_convs_off="rt_strided_copy rt_pconv_nhwc_par_f32 rt_pconv_nhwc_par_f32 rt_pconv_nhwc_par_f32 rt_pconv_nhwc_par_f32 rt_strided_copy"
EXPECT_stem_convs="rt_strided_copy rt_pconv_nhwc_par_f32 rt_pconv_nhwc_par_f32 rt_strided_copy"
# the first two blocks' conv3 and downsample as one product (rt_pconv2), the third's not
EXPECT_bottlenecks="rt_strided_copy rt_pconv_nhwc_par_f32 rt_pconv_nhwc_par_f32 rt_pconv2_nhwc_par_f32 rt_pconv_nhwc_par_f32 rt_pconv_nhwc_par_f32 rt_pconv2_nhwc_par_f32 rt_pconv_nhwc_par_f32 rt_pconv_nhwc_f32 rt_pconv_nhwc_f32 rt_pconv_nhwc_f32 rt_strided_copy"

CASES="packed_products packed_convs wino_convs wino_convs_off stem_convs bottlenecks"
BUILDS=("baseline|-O2" "x86-64-v3|-O2 -march=x86-64-v3" "native|-O3 -march=native"
    "sanitizers|$SAN_FLAGS $SAN_ISA_FLAGS -march=native")
# each case: kiln compile and its kernel calls, then its four builds started in the background
for case in $CASES; do
    model="${case%_off}"
    kflags=()
    [ "$case" = "$model" ] || kflags=(--no-winograd)
    B="$TMP/$case"
    if ! compile_model "$model" "$B" "${kflags[@]}" >"$TMP/compile.log" 2>&1; then
        fail "$case: kiln compile"
        sed 's/^/    /' "$TMP/compile.log"
        continue
    fi
    want="EXPECT_$case"
    got="$(grep -Eo '^ +rt_[a-z0-9_]+\(' "$B/$model.c" | tr -d ' (' | tr '\n' ' ' | sed 's/ $//')"
    if [ "$got" = "${!want}" ]; then
        pass "$case: kernel calls $got"
    else
        fail "$case: kernel calls '$got', want '${!want}'"
    fi
    for build in "${BUILDS[@]}"; do
        # shellcheck disable=SC2086
        bg_run "$case-${build%%|*}" \
            cc $STRICT ${build#*|} -I"$B" "$B/$model.c" "$B/${model}_test_main.c" -o "$TMP/$case-${build%%|*}" -lm
    done
done
wait
# each build's status, then its outputs against ONNX Runtime
for case in $CASES; do
    model="${case%_off}"
    [ -d "$TMP/$case" ] || continue
    for build in "${BUILDS[@]}"; do
        name="${build%%|*}"
        exe="$TMP/$case-$name"
        bg_check "$case: $name build (${build#*|})" "$case-$name"
        [ -x "$exe" ] && check "$case: $name build matches ONNX Runtime on random inputs" \
            run_compare "$exe" "$model" --weights "$TMP/$case/${model}_weights.bin"
    done
done
finish
