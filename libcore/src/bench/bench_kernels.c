/*
 * bench_kernels.c - the real kernels of the compile suite (tiled SGEMM, row
 * softmax, block reduction, saxpy; the first three as bench/bench_dispatch.c
 * measures them), the bandwidth suite's streaming copy and the launch
 * suite's empty kernel. CUDA C, compiled by NVRTC at run time.
 */
#include "bench/bench_internal.h"

static const char SGEMM_SRC[] =
    "#define BM 128\n"
    "#define BN 128\n"
    "#define BK 8\n"
    "#define TM 8\n"
    "#define TN 8\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "sgemm_tiled(int M, int N, int K, float alpha, const float *__restrict__ A,\n"
    "            const float *__restrict__ B, float beta, float *__restrict__ C)\n"
    "{\n"
    "    __shared__ float As[BK][BM];\n"
    "    __shared__ float Bs[BK][BN];\n"
    "    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);\n"
    "    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;\n"
    "    float acc[TM][TN], ra[TM], rb[TN];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < TM; i++)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < TN; j++)\n"
    "            acc[i][j] = 0.0f;\n"
    "    for (int k0 = 0; k0 < K; k0 += BK) {\n"
    "#pragma unroll\n"
    "        for (int l = 0; l < (BM * BK) / 256; l++) {\n"
    "            int idx = threadIdx.x + l * 256, r = idx / BK, c = idx % BK;\n"
    "            int gr = row0 + r, gc = k0 + c;\n"
    "            As[c][r] = (gr < M && gc < K) ? A[gr * K + gc] : 0.0f;\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int l = 0; l < (BK * BN) / 256; l++) {\n"
    "            int idx = threadIdx.x + l * 256, r = idx / BN, c = idx % BN;\n"
    "            int gr = k0 + r, gc = col0 + c;\n"
    "            Bs[r][c] = (gr < K && gc < N) ? B[gr * N + gc] : 0.0f;\n"
    "        }\n"
    "        __syncthreads();\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < BK; k++) {\n"
    "#pragma unroll\n"
    "            for (int i = 0; i < TM; i++)\n"
    "                ra[i] = As[k][ty * TM + i];\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < TN; j++)\n"
    "                rb[j] = Bs[k][tx * TN + j];\n"
    "#pragma unroll\n"
    "            for (int i = 0; i < TM; i++)\n"
    "#pragma unroll\n"
    "                for (int j = 0; j < TN; j++)\n"
    "                    acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);\n"
    "        }\n"
    "        __syncthreads();\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < TM; i++)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < TN; j++) {\n"
    "            int r = row0 + ty * TM + i, c = col0 + tx * TN + j;\n"
    "            if (r < M && c < N)\n"
    "                C[r * N + c] = alpha * acc[i][j] + beta * C[r * N + c];\n"
    "        }\n"
    "}\n";

static const char SOFTMAX_SRC[] =
    "#define PER_LANE 32\n"
    "extern \"C\" __global__ void softmax_rows(const float *__restrict__ x,\n"
    "                                          float *__restrict__ y, int rows, int cols)\n"
    "{\n"
    "    const float neg_inf = __int_as_float(0xff800000);\n"
    "    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;\n"
    "    if (row >= rows)\n"
    "        return;\n"
    "    const float *xr = x + (size_t)row * cols;\n"
    "    float v[PER_LANE], m = neg_inf;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < PER_LANE; i++) {\n"
    "        int c = lane + i * 32;\n"
    "        v[i] = c < cols ? xr[c] : neg_inf;\n"
    "        m = fmaxf(m, v[i]);\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));\n"
    "    float s = 0.0f;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < PER_LANE; i++) {\n"
    "        v[i] = expf(v[i] - m);\n"
    "        s += v[i];\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int o = 16; o > 0; o >>= 1)\n"
    "        s += __shfl_xor_sync(0xffffffffu, s, o);\n"
    "    float inv = 1.0f / s;\n"
    "    float *yr = y + (size_t)row * cols;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < PER_LANE; i++) {\n"
    "        int c = lane + i * 32;\n"
    "        if (c < cols)\n"
    "            yr[c] = v[i] * inv;\n"
    "    }\n"
    "}\n";

static const char REDUCE_SRC[] =
    "struct stats { float sum, sq, mx, mn; };\n"
    "__device__ __forceinline__ stats combine(stats a, stats b)\n"
    "{\n"
    "    stats r = {a.sum + b.sum, a.sq + b.sq, fmaxf(a.mx, b.mx), fminf(a.mn, b.mn)};\n"
    "    return r;\n"
    "}\n"
    "__device__ __forceinline__ stats warp_reduce(stats s)\n"
    "{\n"
    "#pragma unroll\n"
    "    for (int o = 16; o > 0; o >>= 1) {\n"
    "        stats t = {__shfl_xor_sync(0xffffffffu, s.sum, o),\n"
    "                   __shfl_xor_sync(0xffffffffu, s.sq, o),\n"
    "                   __shfl_xor_sync(0xffffffffu, s.mx, o),\n"
    "                   __shfl_xor_sync(0xffffffffu, s.mn, o)};\n"
    "        s = combine(s, t);\n"
    "    }\n"
    "    return s;\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(1024)\n"
    "block_stats(const float4 *__restrict__ x, float4 *__restrict__ out, unsigned n4)\n"
    "{\n"
    "    __shared__ stats part[32];\n"
    "    stats s = {0.0f, 0.0f, -3.0e38f, 3.0e38f};\n"
    "    unsigned stride = gridDim.x * blockDim.x;\n"
    "#pragma unroll 8\n"
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {\n"
    "        float4 v = x[i];\n"
    "        stats t = {v.x + v.y + v.z + v.w,\n"
    "                   v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w,\n"
    "                   fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)),\n"
    "                   fminf(fminf(v.x, v.y), fminf(v.z, v.w))};\n"
    "        s = combine(s, t);\n"
    "    }\n"
    "    s = warp_reduce(s);\n"
    "    unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;\n"
    "    if (lane == 0)\n"
    "        part[warp] = s;\n"
    "    __syncthreads();\n"
    "    if (warp == 0) {\n"
    "        stats z = {0.0f, 0.0f, -3.0e38f, 3.0e38f};\n"
    "        s = lane < (blockDim.x + 31) / 32 ? part[lane] : z;\n"
    "        s = warp_reduce(s);\n"
    "        if (lane == 0)\n"
    "            out[blockIdx.x] = make_float4(s.sum, s.sq, s.mx, s.mn);\n"
    "    }\n"
    "}\n";

static const char SAXPY_SRC[] =
    "extern \"C\" __global__ void saxpy(float a, const float *__restrict__ x,\n"
    "                                   float *__restrict__ y, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = a * x[i] + y[i];\n"
    "}\n";

const char vyre__bench_stream_src[] =
    "extern \"C\" __global__ void stream_copy(float4 *__restrict__ out,\n"
    "                                         const float4 *__restrict__ in,\n"
    "                                         unsigned long long n4)\n"
    "{\n"
    "    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "    if (i < n4)\n"
    "        out[i] = in[i];\n"
    "}\n";

const char vyre__bench_empty_src[] = "extern \"C\" __global__ void empty_kernel(void) {}\n";

const vyre_bench_kernel vyre__bench_kernels[] = {
    {"matmul", "sgemm_tiled", SGEMM_SRC},
    {"softmax", "softmax_rows", SOFTMAX_SRC},
    {"reduction", "block_stats", REDUCE_SRC},
    {"saxpy", "saxpy", SAXPY_SRC},
};
const size_t vyre__bench_nkernels = sizeof vyre__bench_kernels / sizeof vyre__bench_kernels[0];

const vyre_bench_kernel *vyre_bench_kernels(size_t *n)
{
    if (n)
        *n = vyre__bench_nkernels;
    return vyre__bench_kernels;
}

/* The blocking kernel (bench_gpu.c: every GPU-timed sample is enqueued
 * behind it). One thread spins on a host-mapped flag with volatile loads
 * (each a read across the bus, never a cached copy) until the host writes
 * a non-zero value there, or until timeout_ns of %globaltimer have passed
 * since it started; then it writes 1 to *timed_out and ends, so a release
 * that never comes costs one bounded wait, never a hang. PTX 7.0 for
 * sm_75: the driver JITs it for any later GPU (its JIT cache keeps the
 * result), so neither NVRTC nor nvcc is needed at run time. */
const char vyre__bench_block_ptx[] = "//\n"
                                     "// vyre bench: blocking kernel\n"
                                     "//\n"
                                     ".version 7.0\n"
                                     ".target sm_75\n"
                                     ".address_size 64\n"
                                     "\n"
                                     ".visible .entry vyre_block_stream(\n"
                                     "    .param .u64 flag,\n"
                                     "    .param .u64 timed_out,\n"
                                     "    .param .u64 timeout_ns)\n"
                                     "{\n"
                                     "    .reg .pred %p<3>;\n"
                                     "    .reg .b32 %r<3>;\n"
                                     "    .reg .b64 %rd<8>;\n"
                                     "    ld.param.u64 %rd1, [flag];\n"
                                     "    ld.param.u64 %rd2, [timed_out];\n"
                                     "    ld.param.u64 %rd3, [timeout_ns];\n"
                                     "    mov.u64 %rd4, %globaltimer;\n"
                                     "SPIN:\n"
                                     "    ld.volatile.u32 %r1, [%rd1];\n"
                                     "    setp.ne.u32 %p1, %r1, 0;\n"
                                     "    @%p1 bra DONE;\n"
                                     "    mov.u64 %rd5, %globaltimer;\n"
                                     "    sub.u64 %rd6, %rd5, %rd4;\n"
                                     "    setp.lt.u64 %p2, %rd6, %rd3;\n"
                                     "    @%p2 bra SPIN;\n"
                                     "    mov.u32 %r2, 1;\n"
                                     "    st.volatile.u32 [%rd2], %r2;\n"
                                     "DONE:\n"
                                     "    ret;\n"
                                     "}\n"
                                     "\n"
                                     "// the event pair's own cost is measured on this one\n"
                                     ".visible .entry vyre_empty()\n"
                                     "{\n"
                                     "    ret;\n"
                                     "}\n";

/* The GPU reference (reference.gpu, bench_gpu.c): a fixed amount of work
 * that depends on nothing but the SM clock and what else runs on the GPU,
 * so that its ratio between two runs is the machine's drift. Each thread
 * runs a chain of `iters` dependent 32-bit multiply-adds (an LCG step; the
 * trip count is a parameter and the result is stored, so ptxas can neither
 * fold nor drop the loop) and stores its last value. PTX 7.0 for sm_75, as
 * the blocking kernel: the driver JITs it, no NVRTC needed. */
const char vyre__bench_reference_ptx[] = "//\n"
                                         "// vyre bench: GPU reference kernel\n"
                                         "//\n"
                                         ".version 7.0\n"
                                         ".target sm_75\n"
                                         ".address_size 64\n"
                                         "\n"
                                         ".visible .entry vyre_reference_loop(\n"
                                         "    .param .u64 out,\n"
                                         "    .param .u32 iters)\n"
                                         "{\n"
                                         "    .reg .pred %p<2>;\n"
                                         "    .reg .b32 %r<8>;\n"
                                         "    .reg .b64 %rd<4>;\n"
                                         "    ld.param.u64 %rd1, [out];\n"
                                         "    ld.param.u32 %r1, [iters];\n"
                                         "    mov.u32 %r2, %ctaid.x;\n"
                                         "    mov.u32 %r3, %ntid.x;\n"
                                         "    mov.u32 %r4, %tid.x;\n"
                                         "    mad.lo.u32 %r5, %r2, %r3, %r4;\n"
                                         "    mov.u32 %r6, %r5;\n"
                                         "    mov.u32 %r7, 0;\n"
                                         "LOOP:\n"
                                         "    setp.ge.u32 %p1, %r7, %r1;\n"
                                         "    @%p1 bra DONE;\n"
                                         "    mad.lo.u32 %r6, %r6, 1664525, 1013904223;\n"
                                         "    add.u32 %r7, %r7, 1;\n"
                                         "    bra LOOP;\n"
                                         "DONE:\n"
                                         "    cvta.to.global.u64 %rd1, %rd1;\n"
                                         "    mul.wide.u32 %rd2, %r5, 4;\n"
                                         "    add.u64 %rd3, %rd1, %rd2;\n"
                                         "    st.global.u32 [%rd3], %r6;\n"
                                         "    ret;\n"
                                         "}\n";
