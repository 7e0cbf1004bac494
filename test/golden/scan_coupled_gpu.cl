#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))
#if __OPENCL_C_VERSION__ < 120
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#endif

__kernel void __attribute__ ((reqd_work_group_size(32, 1, 1))) ftlazy_kernel(__global double const *__restrict__ _ft_in0, __global double const *__restrict__ _ft_in1, __global double *_ft_out0, __global double *_ft_carry2, __global double *_ft_t12, __global double *_ft_t7)
{
  double acc__ft_r10;

  {
    int const _ft_o3 = 0;

    _ft_carry2[lid(0)] = _ft_in0[lid(0)];
  }
  barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan23__ft_lbarrier6 */;
  for (int _ft_t1 = 0; _ft_t1 <= 9; ++_ft_t1)
  {
    if (lid(0) == 0)
    {
      int const _ft_z8 = 0;

      acc__ft_r10 = (double) (0.0);
      for (int _ft_r10 = 0; _ft_r10 <= 31; ++_ft_r10)
        acc__ft_r10 = acc__ft_r10 + _ft_carry2[32 * (_ft_t1 & 1) + _ft_r10];
      _ft_t7[0] = acc__ft_r10;
    }
    barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan23__ft_lbarrier16 */;
    {
      int const _ft_o13 = 0;

      _ft_t12[lid(0)] = _ft_carry2[32 * (_ft_t1 & 1) + lid(0)] * 0.5 + _ft_in1[32 * _ft_t1 + lid(0)] + _ft_t7[0] * 0.01;
    }
    barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan23__ft_lbarrier17 */;
    {
      int const _ft_o18 = 0;

      _ft_carry2[32 * (_ft_t1 + 1 & 1) + lid(0)] = _ft_t12[lid(0)];
      _ft_out0[32 * _ft_t1 + lid(0)] = _ft_t12[lid(0)];
    }
    barrier(CLK_GLOBAL_MEM_FENCE) /* Barrier inserted due to _ft_scan23__ft_lbarrier22 */;
  }
}