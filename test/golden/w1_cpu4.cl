#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))
#if __OPENCL_C_VERSION__ < 120
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#endif

__kernel void __attribute__ ((reqd_work_group_size(64, 1, 1))) ftlazy_kernel(__global double4 const *__restrict__ _ft_in0, __global double4 *__restrict__ _ft_out0)
{
  _ft_out0[64 * gid(0) + lid(0)] = exp(-1.0 * _ft_in0[64 * gid(0) + lid(0)] * _ft_in0[64 * gid(0) + lid(0)]) * sin(3.0 * _ft_in0[64 * gid(0) + lid(0)]) + (0.5 * _ft_in0[64 * gid(0) + lid(0)]) / (1.0 + _ft_in0[64 * gid(0) + lid(0)] * _ft_in0[64 * gid(0) + lid(0)]);
}