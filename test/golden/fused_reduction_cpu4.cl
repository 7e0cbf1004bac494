#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))
#if __OPENCL_C_VERSION__ < 120
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#endif

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel(__global double const *__restrict__ _ft_in0, long const _ft_n0, __global double *__restrict__ _ft_t1)
{
  double _ft_acc8[8];
  double acc__ft_lane7;

  acc__ft_lane7 = (double) (0.0);
  _ft_acc8[0] = 0.0;
  _ft_acc8[1] = 0.0;
  _ft_acc8[2] = 0.0;
  _ft_acc8[3] = 0.0;
  _ft_acc8[4] = 0.0;
  _ft_acc8[5] = 0.0;
  _ft_acc8[6] = 0.0;
  _ft_acc8[7] = 0.0;
  for (int _ft_ro4 = 0; _ft_ro4 <= 7; ++_ft_ro4)
  {
    _ft_acc8[0] = _ft_acc8[0] + _ft_in0[64 * gid(0) + 8 * _ft_ro4];
    _ft_acc8[1] = _ft_acc8[1] + _ft_in0[64 * gid(0) + 8 * _ft_ro4 + 1];
    _ft_acc8[2] = _ft_acc8[2] + _ft_in0[64 * gid(0) + 8 * _ft_ro4 + 2];
    _ft_acc8[3] = _ft_acc8[3] + _ft_in0[64 * gid(0) + 8 * _ft_ro4 + 3];
    _ft_acc8[4] = _ft_acc8[4] + _ft_in0[64 * gid(0) + 8 * _ft_ro4 + 4];
    _ft_acc8[5] = _ft_acc8[5] + _ft_in0[64 * gid(0) + 8 * _ft_ro4 + 5];
    _ft_acc8[6] = _ft_acc8[6] + _ft_in0[64 * gid(0) + 8 * _ft_ro4 + 6];
    _ft_acc8[7] = _ft_acc8[7] + _ft_in0[64 * gid(0) + 8 * _ft_ro4 + 7];
  }
  for (int _ft_lane7 = 0; _ft_lane7 <= 7; ++_ft_lane7)
    acc__ft_lane7 = acc__ft_lane7 + _ft_acc8[_ft_lane7];
  _ft_t1[gid(0)] = acc__ft_lane7;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_0(long const _ft_blocks0, long const _ft_n0, __global double const *__restrict__ _ft_t1, __global double *__restrict__ _ft_t23)
{
  double _ft_acc30[8];
  double acc__ft_lane29;

  acc__ft_lane29 = (double) (0.0);
  _ft_acc30[0] = 0.0;
  _ft_acc30[1] = 0.0;
  _ft_acc30[2] = 0.0;
  _ft_acc30[3] = 0.0;
  _ft_acc30[4] = 0.0;
  _ft_acc30[5] = 0.0;
  _ft_acc30[6] = 0.0;
  _ft_acc30[7] = 0.0;
  for (int _ft_ro26 = 0; _ft_ro26 <= 15; ++_ft_ro26)
  {
    _ft_acc30[0] = _ft_acc30[0] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro26 * 8 + 0 < _ft_n0) ? _ft_t1[128 * gid(0) + 8 * _ft_ro26] : 0.0);
    _ft_acc30[1] = _ft_acc30[1] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro26 * 8 + 1 < _ft_n0) ? _ft_t1[128 * gid(0) + 8 * _ft_ro26 + 1] : 0.0);
    _ft_acc30[2] = _ft_acc30[2] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro26 * 8 + 2 < _ft_n0) ? _ft_t1[128 * gid(0) + 8 * _ft_ro26 + 2] : 0.0);
    _ft_acc30[3] = _ft_acc30[3] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro26 * 8 + 3 < _ft_n0) ? _ft_t1[128 * gid(0) + 8 * _ft_ro26 + 3] : 0.0);
    _ft_acc30[4] = _ft_acc30[4] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro26 * 8 + 4 < _ft_n0) ? _ft_t1[128 * gid(0) + 8 * _ft_ro26 + 4] : 0.0);
    _ft_acc30[5] = _ft_acc30[5] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro26 * 8 + 5 < _ft_n0) ? _ft_t1[128 * gid(0) + 8 * _ft_ro26 + 5] : 0.0);
    _ft_acc30[6] = _ft_acc30[6] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro26 * 8 + 6 < _ft_n0) ? _ft_t1[128 * gid(0) + 8 * _ft_ro26 + 6] : 0.0);
    _ft_acc30[7] = _ft_acc30[7] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro26 * 8 + 7 < _ft_n0) ? _ft_t1[128 * gid(0) + 8 * _ft_ro26 + 7] : 0.0);
  }
  for (int _ft_lane29 = 0; _ft_lane29 <= 7; ++_ft_lane29)
    acc__ft_lane29 = acc__ft_lane29 + _ft_acc30[_ft_lane29];
  _ft_t23[gid(0)] = acc__ft_lane29;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_1(__global double const *__restrict__ _ft_in0, __global double *__restrict__ _ft_out0, long const _ft_n0, __global double const *__restrict__ _ft_t1)
{
  double _ft_acc19[8];
  double _ft_v18;
  double acc__ft_lane17;

  acc__ft_lane17 = (double) (0.0);
  _ft_v18 = _ft_t1[gid(0)];
  _ft_acc19[0] = 0.0;
  _ft_acc19[1] = 0.0;
  _ft_acc19[2] = 0.0;
  _ft_acc19[3] = 0.0;
  _ft_acc19[4] = 0.0;
  _ft_acc19[5] = 0.0;
  _ft_acc19[6] = 0.0;
  _ft_acc19[7] = 0.0;
  for (int _ft_ro14 = 0; _ft_ro14 <= 7; ++_ft_ro14)
  {
    _ft_acc19[0] = _ft_acc19[0] + (_ft_in0[64 * gid(0) + 8 * _ft_ro14] + -1.0 * (_ft_v18 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro14] + -1.0 * (_ft_v18 / 64.0));
    _ft_acc19[1] = _ft_acc19[1] + (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 1] + -1.0 * (_ft_v18 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 1] + -1.0 * (_ft_v18 / 64.0));
    _ft_acc19[2] = _ft_acc19[2] + (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 2] + -1.0 * (_ft_v18 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 2] + -1.0 * (_ft_v18 / 64.0));
    _ft_acc19[3] = _ft_acc19[3] + (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 3] + -1.0 * (_ft_v18 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 3] + -1.0 * (_ft_v18 / 64.0));
    _ft_acc19[4] = _ft_acc19[4] + (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 4] + -1.0 * (_ft_v18 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 4] + -1.0 * (_ft_v18 / 64.0));
    _ft_acc19[5] = _ft_acc19[5] + (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 5] + -1.0 * (_ft_v18 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 5] + -1.0 * (_ft_v18 / 64.0));
    _ft_acc19[6] = _ft_acc19[6] + (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 6] + -1.0 * (_ft_v18 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 6] + -1.0 * (_ft_v18 / 64.0));
    _ft_acc19[7] = _ft_acc19[7] + (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 7] + -1.0 * (_ft_v18 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro14 + 7] + -1.0 * (_ft_v18 / 64.0));
  }
  for (int _ft_lane17 = 0; _ft_lane17 <= 7; ++_ft_lane17)
    acc__ft_lane17 = acc__ft_lane17 + _ft_acc19[_ft_lane17];
  _ft_out0[gid(0)] = acc__ft_lane17;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_2(long const _ft_blocks0, long const _ft_blocks1, __global double const *__restrict__ _ft_t23, __global double *__restrict__ _ft_t34)
{
  double _ft_acc41[8];
  double acc__ft_lane40;

  acc__ft_lane40 = (double) (0.0);
  _ft_acc41[0] = 0.0;
  _ft_acc41[1] = 0.0;
  _ft_acc41[2] = 0.0;
  _ft_acc41[3] = 0.0;
  _ft_acc41[4] = 0.0;
  _ft_acc41[5] = 0.0;
  _ft_acc41[6] = 0.0;
  _ft_acc41[7] = 0.0;
  for (int _ft_ro37 = 0; _ft_ro37 <= 15; ++_ft_ro37)
  {
    _ft_acc41[0] = _ft_acc41[0] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro37 * 8 + 0 < _ft_blocks0) ? _ft_t23[128 * gid(0) + 8 * _ft_ro37] : 0.0);
    _ft_acc41[1] = _ft_acc41[1] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro37 * 8 + 1 < _ft_blocks0) ? _ft_t23[128 * gid(0) + 8 * _ft_ro37 + 1] : 0.0);
    _ft_acc41[2] = _ft_acc41[2] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro37 * 8 + 2 < _ft_blocks0) ? _ft_t23[128 * gid(0) + 8 * _ft_ro37 + 2] : 0.0);
    _ft_acc41[3] = _ft_acc41[3] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro37 * 8 + 3 < _ft_blocks0) ? _ft_t23[128 * gid(0) + 8 * _ft_ro37 + 3] : 0.0);
    _ft_acc41[4] = _ft_acc41[4] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro37 * 8 + 4 < _ft_blocks0) ? _ft_t23[128 * gid(0) + 8 * _ft_ro37 + 4] : 0.0);
    _ft_acc41[5] = _ft_acc41[5] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro37 * 8 + 5 < _ft_blocks0) ? _ft_t23[128 * gid(0) + 8 * _ft_ro37 + 5] : 0.0);
    _ft_acc41[6] = _ft_acc41[6] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro37 * 8 + 6 < _ft_blocks0) ? _ft_t23[128 * gid(0) + 8 * _ft_ro37 + 6] : 0.0);
    _ft_acc41[7] = _ft_acc41[7] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro37 * 8 + 7 < _ft_blocks0) ? _ft_t23[128 * gid(0) + 8 * _ft_ro37 + 7] : 0.0);
  }
  for (int _ft_lane40 = 0; _ft_lane40 <= 7; ++_ft_lane40)
    acc__ft_lane40 = acc__ft_lane40 + _ft_acc41[_ft_lane40];
  _ft_t34[gid(0)] = acc__ft_lane40;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_3(long const _ft_blocks1, long const _ft_blocks2, __global double const *__restrict__ _ft_t34, __global double *__restrict__ _ft_t45)
{
  double _ft_acc52[8];
  double acc__ft_lane51;

  acc__ft_lane51 = (double) (0.0);
  _ft_acc52[0] = 0.0;
  _ft_acc52[1] = 0.0;
  _ft_acc52[2] = 0.0;
  _ft_acc52[3] = 0.0;
  _ft_acc52[4] = 0.0;
  _ft_acc52[5] = 0.0;
  _ft_acc52[6] = 0.0;
  _ft_acc52[7] = 0.0;
  for (int _ft_ro48 = 0; _ft_ro48 <= 15; ++_ft_ro48)
  {
    _ft_acc52[0] = _ft_acc52[0] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro48 * 8 + 0 < _ft_blocks1) ? _ft_t34[128 * gid(0) + 8 * _ft_ro48] : 0.0);
    _ft_acc52[1] = _ft_acc52[1] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro48 * 8 + 1 < _ft_blocks1) ? _ft_t34[128 * gid(0) + 8 * _ft_ro48 + 1] : 0.0);
    _ft_acc52[2] = _ft_acc52[2] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro48 * 8 + 2 < _ft_blocks1) ? _ft_t34[128 * gid(0) + 8 * _ft_ro48 + 2] : 0.0);
    _ft_acc52[3] = _ft_acc52[3] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro48 * 8 + 3 < _ft_blocks1) ? _ft_t34[128 * gid(0) + 8 * _ft_ro48 + 3] : 0.0);
    _ft_acc52[4] = _ft_acc52[4] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro48 * 8 + 4 < _ft_blocks1) ? _ft_t34[128 * gid(0) + 8 * _ft_ro48 + 4] : 0.0);
    _ft_acc52[5] = _ft_acc52[5] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro48 * 8 + 5 < _ft_blocks1) ? _ft_t34[128 * gid(0) + 8 * _ft_ro48 + 5] : 0.0);
    _ft_acc52[6] = _ft_acc52[6] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro48 * 8 + 6 < _ft_blocks1) ? _ft_t34[128 * gid(0) + 8 * _ft_ro48 + 6] : 0.0);
    _ft_acc52[7] = _ft_acc52[7] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro48 * 8 + 7 < _ft_blocks1) ? _ft_t34[128 * gid(0) + 8 * _ft_ro48 + 7] : 0.0);
  }
  for (int _ft_lane51 = 0; _ft_lane51 <= 7; ++_ft_lane51)
    acc__ft_lane51 = acc__ft_lane51 + _ft_acc52[_ft_lane51];
  _ft_t45[gid(0)] = acc__ft_lane51;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_4(__global double *__restrict__ _ft_out1, long const _ft_blocks2, __global double const *__restrict__ _ft_t45)
{
  double acc__ft_r58;

  acc__ft_r58 = (double) (0.0);
  for (int _ft_r58 = 0; _ft_r58 <= -1 + _ft_blocks2; ++_ft_r58)
    acc__ft_r58 = acc__ft_r58 + _ft_t45[_ft_r58];
  _ft_out1[0] = acc__ft_r58;
}