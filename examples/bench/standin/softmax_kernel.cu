// Stand-in for Triton's row softmax (tutorial 02, one program per row,
// BLOCK_SIZE=1024 columns at most, num_warps=4).
extern "C" __global__ void __launch_bounds__(128)
softmax_kernel(float *__restrict__ out, const float *__restrict__ in, int in_row_stride,
               int out_row_stride, int n_cols, void *global_scratch, void *profile_scratch)
{
    __shared__ float red[4];
    const float *row = in + (long long)blockIdx.x * in_row_stride;
    float *orow = out + (long long)blockIdx.x * out_row_stride;
    float v[8];
    float m = -__int_as_float(0x7f800000);
    for (int k = 0; k < 8; k++) {
        int c = threadIdx.x + k * 128;
        v[k] = c < n_cols ? row[c] : -__int_as_float(0x7f800000);
        m = fmaxf(m, v[k]);
    }
    for (int o = 16; o; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
    __syncthreads();
    float s = 0;
    for (int k = 0; k < 8; k++) {
        v[k] = __expf(v[k] - m);
        s += v[k];
    }
    for (int o = 16; o; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = s;
    __syncthreads();
    s = red[0] + red[1] + red[2] + red[3];
    for (int k = 0; k < 8; k++) {
        int c = threadIdx.x + k * 128;
        if (c < n_cols)
            orow[c] = v[k] / s;
    }
}
