// Stand-in for Triton's vector add (tutorial 01, BLOCK_SIZE=1024,
// num_warps=4): one program of 128 threads per 1024 elements, and the two
// trailing scratch pointers (global, profile) Triton 3.x adds.
extern "C" __global__ void __launch_bounds__(128)
add_kernel(const float *__restrict__ x, const float *__restrict__ y, float *__restrict__ out,
           int n_elements, void *global_scratch, void *profile_scratch)
{
    int base = blockIdx.x * 1024;
    for (int i = threadIdx.x; i < 1024; i += 128) {
        int off = base + i;
        if (off < n_elements)
            out[off] = x[off] + y[off];
    }
}
