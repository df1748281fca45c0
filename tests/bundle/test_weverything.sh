#!/usr/bin/env bash
# Generated C an embedded engineer can build with every warning on: clang -Weverything
# -Werror minus the short list docs/bundle.md explains (WEV_EXCEPT below), on
#   - one translation unit that includes every runtime file (runtime/rt_*.h), so that each
#     kernel family is checked whatever model uses it;
#   - the bundles of the bundle-test models (bundle and test main);
#   - the bundles of node tests chosen to cover the emitters whose output once warned
#     (float Max/Min, uint64 Max/Min, Pow with an integer exponent, float Range, ML tree
#     tables, FlexAttention's weight reads, Gemm/MatMul, attention, grid and ROI sampling,
#     resize, reductions, losses, signal, casts to small floats, rotary embedding).
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
finish
