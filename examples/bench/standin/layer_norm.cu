// Stand-in for Triton's fused layer norm forward (tutorial 05,
// _layer_norm_fwd_fused, bf16 X/Y/W/B, f32 Mean/Rstd, one program per row,
// BLOCK_SIZE=1024, num_warps=4).
#include <cuda_bf16.h>
extern "C" __global__ void __launch_bounds__(128)
_layer_norm_fwd_fused(const __nv_bfloat16 *__restrict__ X, __nv_bfloat16 *__restrict__ Y,
                      const __nv_bfloat16 *__restrict__ W, const __nv_bfloat16 *__restrict__ B,
                      float *__restrict__ Mean, float *__restrict__ Rstd, int stride, int N,
                      float eps, void *global_scratch, void *profile_scratch)
{
    __shared__ float red[4];
    const __nv_bfloat16 *x = X + (long long)blockIdx.x * stride;
    __nv_bfloat16 *y = Y + (long long)blockIdx.x * stride;
    float s = 0;
    for (int c = threadIdx.x; c < N; c += 128)
        s += __bfloat162float(x[c]);
    for (int o = 16; o; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = s;
    __syncthreads();
    float mean = (red[0] + red[1] + red[2] + red[3]) / N;
    __syncthreads();
    float q = 0;
    for (int c = threadIdx.x; c < N; c += 128) {
        float d = __bfloat162float(x[c]) - mean;
        q += d * d;
    }
    for (int o = 16; o; o >>= 1)
        q += __shfl_xor_sync(0xffffffffu, q, o);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = q;
    __syncthreads();
    float rstd = rsqrtf((red[0] + red[1] + red[2] + red[3]) / N + eps);
    if (threadIdx.x == 0) {
        Mean[blockIdx.x] = mean;
        Rstd[blockIdx.x] = rstd;
    }
    for (int c = threadIdx.x; c < N; c += 128) {
        float v = (__bfloat162float(x[c]) - mean) * rstd;
        y[c] = __float2bfloat16(v * __bfloat162float(W[c]) + __bfloat162float(B[c]));
    }
}
