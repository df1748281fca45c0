/* The peer side of bench/kernels/pgemm.c: the packed-GEMM convolution of another tree's
 * runtime/rt_pgemm.h (pgemm_ab.sh puts that tree's runtime/ first on the include path),
 * under a name of its own so that both versions link into one program and alternate in one
 * process. Both read the same packed weights (panels of 16 output channels). */
#include "runtime/rt_pgemm.h"

const char *peer_pgemm_isa(void);
int peer_pgemm_tile(int *mr, int *nt);
void peer_pconv_nhwc_f32(const float *x, const float *wp, const float *b, const float *r,
                         float *y, const RtConvGeom *g, const RtAct *act);

const char *peer_pgemm_isa(void) { return RT_PGEMM_ISA; }

int peer_pgemm_tile(int *mr, int *nt) {
    *mr = RT_PGEMM_MR, *nt = RT_PGEMM_NT;
    return RT_PGEMM_NR;
}

void peer_pconv_nhwc_f32(const float *x, const float *wp, const float *b, const float *r,
                         float *y, const RtConvGeom *g, const RtAct *act) {
    rt_pconv_nhwc_f32(x, wp, b, r, y, g, act);
}
