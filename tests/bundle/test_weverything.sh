#!/usr/bin/env bash
# Generated C an embedded engineer can build with every warning on: clang -Weverything
# -Werror minus the short list docs/bundle.md explains (WEV_EXCEPT below), on
#   - one translation unit that includes every runtime file (runtime/rt_*.h), so that each
#     kernel family is checked whatever model uses it;
#   - the bundles of the bundle-test models (bundle and test main);
#   - the bundles of node tests chosen to cover the emitters whose output once warned
#     (float Max/Min, uint64 Max/Min, Pow with an integer exponent, float Range, ML tree
#     tables, FlexAttention's weight reads, Gemm/MatMul, attention, grid and ROI sampling,
#     resize, reductions, losses, signal, casts to small floats, rotary embedding);
#   - float-only bundles built for a Cortex-M4F, which has no double unit: no soft-double
#     helper or double libm function may be linked (section 4).
# Usage: test_weverything.sh PATH/TO/kiln
. "$(dirname "$0")/lib.bash"

WEV_EXCEPT="-Wno-declaration-after-statement -Wno-padded -Wno-unused-function -Wno-unused-macros -Wno-float-equal"
WEV="-std=c99 -fsyntax-only -Weverything -Werror $WEV_EXCEPT"
if ! command -v clang >/dev/null; then
    fail "clang not found (scripts/setup test installs it)"
    finish
fi

# 1. every runtime file in one translation unit
{
    echo '#include "rt_common.h"'
    for h in "$ROOT"/runtime/rt_*.h; do echo "#include \"$(basename "$h")\""; done
} >"$TMP/all_runtime.c"
check "every runtime file: clang -Weverything clean" \
    clang $WEV -I"$ROOT/runtime" "$TMP/all_runtime.c"

# 2. the bundle-test models
for model in eltwise other conv minimal; do
    B="$TMP/$model"
    if ! compile_model "$model" "$B" >"$TMP/compile.log" 2>&1; then
        fail "$model: kiln compile"
        sed 's/^/    /' "$TMP/compile.log"
        continue
    fi
    check "$model: bundle and test main clang -Weverything clean" \
        clang $WEV -I"$B" "$B/$model.c" "$B/${model}_test_main.c"
done

# 3. node tests that exercise the emitters and runtime families named above
NODE="$("$PY" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node"))')"
TESTS="test_max_float32 test_max_float16 test_max_uint64 test_min_two_inputs test_min_uint64
test_pow_types_float32_int32 test_pow_types_float32_int64 test_range_float_type_positive_delta
test_ai_onnx_ml_tree_ensemble_set_membership test_flexattention_relative_positional
test_gemm_all_attributes test_gemm_alpha test_matmul_2d test_attention_4d
test_attention_4d_attn_mask_bool test_gridsample_bicubic test_gridsample_reflection_padding
test_roialign_aligned_false test_resize_upsample_scales_linear test_resize_downsample_scales_cubic
test_reduce_log_sum_exp_default_axes_keepdims_example test_reduce_max_do_not_keepdims_example
test_sce_mean_weight test_nllloss_NCd1_mean_weight_negative_ii test_melweightmatrix test_stft
test_cast_FLOAT_to_FLOAT8E4M3FN test_dequantizelinear test_rotary_embedding
test_nonmaxsuppression_center_point_box_format test_maxpool_2d_default test_layer_normalization_2d_axis0"
for t in $TESTS; do
    if [ ! -f "$NODE/$t/model.onnx" ]; then
        fail "$t: not among the node tests of this onnx"
        continue
    fi
    B="$TMP/node_$t"
    if ! "$KILN" compile "$NODE/$t/model.onnx" -o "$B" --name m --test-main --quiet \
        >"$TMP/compile.log" 2>&1; then
        fail "$t: kiln compile"
        sed 's/^/    /' "$TMP/compile.log" | head -n 5
        continue
    fi
    check "$t: bundle clang -Weverything clean" clang $WEV -I"$B" "$B/m.c" "$B/m_test_main.c"
done

# 4. float bundles do no double arithmetic: -Wdouble-promotion does not see an explicit
#    (double) cast, so build for a Cortex-M4F (single-precision FPU only) and look for the
#    soft-double helpers (__aeabi_d*, __aeabi_f2d, __aeabi_[u]l2d, __aeabi_[u]i2d) and the
#    double libm functions among the object's undefined symbols. The models and node tests
#    here are float-only; docs/bundle.md lists the kernels that still compute in double.
#    The toolchain comes with the edge step's packages (kiln_setup_edge in scripts/setup):
#    without it this section is skipped with a note.
if ! command -v arm-none-eabi-gcc >/dev/null || ! command -v arm-none-eabi-nm >/dev/null; then
    echo "skip Cortex-M4F double check: arm-none-eabi-gcc not installed (kiln_setup_edge)"
    finish
fi
M4F="-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mthumb -mfloat-abi=hard -O2 -std=c99"
DOUBLE_SYMS='^(__aeabi_(d[a-z0-9]*|f2d|l2d|ul2d|i2d|ui2d)|exp|log|sqrt|floor|ceil|round|rint|nearbyint|pow|fabs|sin|cos|tan|tanh|atan|atan2|erf|fmod|trunc|expm1|log1p|ldexp|frexp|fmax|fmin|hypot|cbrt)$'
# no_double NAME BUNDLE_DIR C_FILE
no_double() {
    local obj="$TMP/m4f_$1.o" syms
    if ! arm-none-eabi-gcc $M4F -I"$2" -c "$3" -o "$obj" 2>"$TMP/m4f.log"; then
        fail "$1: arm-none-eabi-gcc (Cortex-M4F)"
        sed 's/^/    /' "$TMP/m4f.log" | head -n 5
        return
    fi
    syms="$(arm-none-eabi-nm -u "$obj" | awk '{print $2}' | grep -E "$DOUBLE_SYMS" | tr '\n' ' ')"
    if [ -z "$syms" ]; then
        pass "$1: no double arithmetic on a Cortex-M4F"
    else
        fail "$1: double arithmetic on a Cortex-M4F: $syms"
    fi
}
for model in eltwise other conv minimal; do
    [ -f "$TMP/$model/$model.c" ] && no_double "$model" "$TMP/$model" "$TMP/$model/$model.c"
done
F32_TESTS="test_max_float32 test_min_two_inputs test_pow_types_float32_int32
test_pow_types_float32_int64 test_reduce_log_sum_exp_empty_set
test_reduce_max_do_not_keepdims_example test_rotary_embedding test_maxpool_2d_default
test_layer_normalization_2d_axis0 test_nonmaxsuppression_center_point_box_format
test_softmax_axis_1 test_logsoftmax_axis_1 test_conv_with_strides_padding
test_averagepool_2d_pads test_globalaveragepool test_batchnorm_epsilon test_instancenorm_example
test_gelu_tanh_2 test_hardswish test_erf test_sigmoid test_tanh test_exp test_log test_sqrt
test_reciprocal test_mod_mixed_sign_float32 test_reduce_mean_default_axes_keepdims_random
test_reduce_l2_default_axes_keepdims_example test_reduce_sum_default_axes_keepdims_random test_top_k test_argmax_default_axis_example
test_lrn test_matmulinteger test_depthtospace_example test_lpnormalization_default
test_clip test_selu test_elu test_celu test_mish test_softplus test_tril test_where_example"
for t in $F32_TESTS; do
    if [ ! -f "$NODE/$t/model.onnx" ]; then
        fail "$t: not among the node tests of this onnx"
        continue
    fi
    B="$TMP/node_$t"
    if [ ! -f "$B/m.c" ] && ! "$KILN" compile "$NODE/$t/model.onnx" -o "$B" --name m --quiet \
        >"$TMP/compile.log" 2>&1; then
        fail "$t: kiln compile"
        sed 's/^/    /' "$TMP/compile.log" | head -n 5
        continue
    fi
    no_double "$t" "$B" "$B/m.c"
done
finish
