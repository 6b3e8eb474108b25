// Stand-in for a Triton tiled matmul (tutorial 03's shape: C = A @ B, f16
// in, f32 accumulate, f16 out, row-major, BLOCK_M = BLOCK_N = 128,
// BLOCK_K = 64, GROUP_M = 8, num_warps = 8): one program per 128x128 tile
// of C, grouped along M; tiles staged in 64 KiB of dynamic shared memory
// (as f32), so the launch needs the 48 KiB limit raised.
#include <cuda_fp16.h>
extern "C" __global__ void __launch_bounds__(256)
matmul_kernel(const __half *__restrict__ A, const __half *__restrict__ B, __half *__restrict__ C,
              int M, int N, int K, void *global_scratch, void *profile_scratch)
{
    extern __shared__ float smem[];
    float *As = smem;             /* 128 x 64 */
    float *Bs = smem + 128 * 64;  /* 64 x 128 */
    int pid = blockIdx.x;
    int num_pid_m = (M + 127) / 128, num_pid_n = (N + 127) / 128;
    int group = 8 * num_pid_n;
    int first_m = (pid / group) * 8;
    int gsize = min(num_pid_m - first_m, 8);
    int pid_m = first_m + (pid % group) % gsize;
    int pid_n = (pid % group) / gsize;
    int tr = threadIdx.x / 16, tc = threadIdx.x % 16; /* 16 x 16 threads, 8 x 8 each */
    float acc[8][8] = {};
    for (int k0 = 0; k0 < K; k0 += 64) {
        for (int i = threadIdx.x; i < 128 * 64; i += 256) {
            int r = i / 64, c = i % 64;
            int gr = pid_m * 128 + r, gc = k0 + c;
            As[i] = gr < M && gc < K ? __half2float(A[(long long)gr * K + gc]) : 0.f;
            int br = k0 + i / 128, bc = pid_n * 128 + i % 128;
            Bs[i] = br < K && bc < N ? __half2float(B[(long long)br * N + bc]) : 0.f;
        }
        __syncthreads();
        for (int k = 0; k < 64; k++)
            for (int i = 0; i < 8; i++)
                for (int j = 0; j < 8; j++)
                    acc[i][j] += As[(tr * 8 + i) * 64 + k] * Bs[k * 128 + tc * 8 + j];
        __syncthreads();
    }
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            int r = pid_m * 128 + tr * 8 + i, c = pid_n * 128 + tc * 8 + j;
            if (r < M && c < N)
                C[(long long)r * N + c] = __float2half(acc[i][j]);
        }
}
