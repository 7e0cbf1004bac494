#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))
#if __OPENCL_C_VERSION__ < 120
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#endif

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel(__global double const *__restrict__ _ft_in0, long const _ft_n0, __global double *__restrict__ _ft_t1, __global double *__restrict__ _ft_t23)
{
  double _ft_acc30[8];
  double _ft_acc8[8];
  double acc__ft_lane29;
  double acc__ft_lane7;

  acc__ft_lane29 = (double) (0.0);
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
  _ft_acc30[0] = 0.0;
  _ft_acc30[1] = 0.0;
  _ft_acc30[2] = 0.0;
  _ft_acc30[3] = 0.0;
  _ft_acc30[4] = 0.0;
  _ft_acc30[5] = 0.0;
  _ft_acc30[6] = 0.0;
  _ft_acc30[7] = 0.0;
  for (int _ft_ro26 = 0; _ft_ro26 <= 7; ++_ft_ro26)
  {
    _ft_acc30[0] = _ft_acc30[0] + _ft_in0[64 * gid(0) + 8 * _ft_ro26];
    _ft_acc30[1] = _ft_acc30[1] + _ft_in0[64 * gid(0) + 8 * _ft_ro26 + 1];
    _ft_acc30[2] = _ft_acc30[2] + _ft_in0[64 * gid(0) + 8 * _ft_ro26 + 2];
    _ft_acc30[3] = _ft_acc30[3] + _ft_in0[64 * gid(0) + 8 * _ft_ro26 + 3];
    _ft_acc30[4] = _ft_acc30[4] + _ft_in0[64 * gid(0) + 8 * _ft_ro26 + 4];
    _ft_acc30[5] = _ft_acc30[5] + _ft_in0[64 * gid(0) + 8 * _ft_ro26 + 5];
    _ft_acc30[6] = _ft_acc30[6] + _ft_in0[64 * gid(0) + 8 * _ft_ro26 + 6];
    _ft_acc30[7] = _ft_acc30[7] + _ft_in0[64 * gid(0) + 8 * _ft_ro26 + 7];
  }
  for (int _ft_lane29 = 0; _ft_lane29 <= 7; ++_ft_lane29)
    acc__ft_lane29 = acc__ft_lane29 + _ft_acc30[_ft_lane29];
  _ft_t23[gid(0)] = acc__ft_lane29;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_0(__global double *__restrict__ _ft_out1, long const _ft_n0, __global double const *__restrict__ _ft_t23)
{
  double acc__ft_r36;

  acc__ft_r36 = (double) (0.0);
  for (int _ft_r36 = 0; _ft_r36 <= -1 + _ft_n0; ++_ft_r36)
    acc__ft_r36 = acc__ft_r36 + _ft_t23[_ft_r36];
  _ft_out1[0] = acc__ft_r36;
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