#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))
#if __OPENCL_C_VERSION__ < 120
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#endif

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel(__global double const *__restrict__ _ft_in0, __global double *__restrict__ _ft_out0, long const _ft_n0, __global double *__restrict__ _ft_t2)
{
  double _ft_acc20[8];
  double _ft_acc9[8];
  double _ft_v19;
  double acc__ft_lane18;
  double acc__ft_lane8;

  acc__ft_lane8 = (double) (0.0);
  acc__ft_lane18 = (double) (0.0);
  _ft_acc9[0] = 0.0;
  _ft_acc9[1] = 0.0;
  _ft_acc9[2] = 0.0;
  _ft_acc9[3] = 0.0;
  _ft_acc9[4] = 0.0;
  _ft_acc9[5] = 0.0;
  _ft_acc9[6] = 0.0;
  _ft_acc9[7] = 0.0;
  for (int _ft_ro5 = 0; _ft_ro5 <= 7; ++_ft_ro5)
  {
    _ft_acc9[0] = _ft_acc9[0] + _ft_in0[64 * gid(0) + 8 * _ft_ro5];
    _ft_acc9[1] = _ft_acc9[1] + _ft_in0[64 * gid(0) + 8 * _ft_ro5 + 1];
    _ft_acc9[2] = _ft_acc9[2] + _ft_in0[64 * gid(0) + 8 * _ft_ro5 + 2];
    _ft_acc9[3] = _ft_acc9[3] + _ft_in0[64 * gid(0) + 8 * _ft_ro5 + 3];
    _ft_acc9[4] = _ft_acc9[4] + _ft_in0[64 * gid(0) + 8 * _ft_ro5 + 4];
    _ft_acc9[5] = _ft_acc9[5] + _ft_in0[64 * gid(0) + 8 * _ft_ro5 + 5];
    _ft_acc9[6] = _ft_acc9[6] + _ft_in0[64 * gid(0) + 8 * _ft_ro5 + 6];
    _ft_acc9[7] = _ft_acc9[7] + _ft_in0[64 * gid(0) + 8 * _ft_ro5 + 7];
  }
  for (int _ft_lane8 = 0; _ft_lane8 <= 7; ++_ft_lane8)
    acc__ft_lane8 = acc__ft_lane8 + _ft_acc9[_ft_lane8];
  _ft_t2[gid(0)] = acc__ft_lane8;
  _ft_v19 = _ft_t2[gid(0)];
  _ft_acc20[0] = 0.0;
  _ft_acc20[1] = 0.0;
  _ft_acc20[2] = 0.0;
  _ft_acc20[3] = 0.0;
  _ft_acc20[4] = 0.0;
  _ft_acc20[5] = 0.0;
  _ft_acc20[6] = 0.0;
  _ft_acc20[7] = 0.0;
  for (int _ft_ro15 = 0; _ft_ro15 <= 7; ++_ft_ro15)
  {
    _ft_acc20[0] = _ft_acc20[0] + (_ft_in0[64 * gid(0) + 8 * _ft_ro15] + -1.0 * (_ft_v19 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro15] + -1.0 * (_ft_v19 / 64.0));
    _ft_acc20[1] = _ft_acc20[1] + (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 1] + -1.0 * (_ft_v19 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 1] + -1.0 * (_ft_v19 / 64.0));
    _ft_acc20[2] = _ft_acc20[2] + (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 2] + -1.0 * (_ft_v19 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 2] + -1.0 * (_ft_v19 / 64.0));
    _ft_acc20[3] = _ft_acc20[3] + (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 3] + -1.0 * (_ft_v19 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 3] + -1.0 * (_ft_v19 / 64.0));
    _ft_acc20[4] = _ft_acc20[4] + (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 4] + -1.0 * (_ft_v19 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 4] + -1.0 * (_ft_v19 / 64.0));
    _ft_acc20[5] = _ft_acc20[5] + (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 5] + -1.0 * (_ft_v19 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 5] + -1.0 * (_ft_v19 / 64.0));
    _ft_acc20[6] = _ft_acc20[6] + (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 6] + -1.0 * (_ft_v19 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 6] + -1.0 * (_ft_v19 / 64.0));
    _ft_acc20[7] = _ft_acc20[7] + (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 7] + -1.0 * (_ft_v19 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro15 + 7] + -1.0 * (_ft_v19 / 64.0));
  }
  for (int _ft_lane18 = 0; _ft_lane18 <= 7; ++_ft_lane18)
    acc__ft_lane18 = acc__ft_lane18 + _ft_acc20[_ft_lane18];
  _ft_out0[gid(0)] = acc__ft_lane18;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_0(long const _ft_blocks0, long const _ft_n0, __global double const *__restrict__ _ft_t2, __global double *__restrict__ _ft_t24)
{
  double _ft_acc31[8];
  double acc__ft_lane30;

  acc__ft_lane30 = (double) (0.0);
  _ft_acc31[0] = 0.0;
  _ft_acc31[1] = 0.0;
  _ft_acc31[2] = 0.0;
  _ft_acc31[3] = 0.0;
  _ft_acc31[4] = 0.0;
  _ft_acc31[5] = 0.0;
  _ft_acc31[6] = 0.0;
  _ft_acc31[7] = 0.0;
  for (int _ft_ro27 = 0; _ft_ro27 <= 15; ++_ft_ro27)
  {
    _ft_acc31[0] = _ft_acc31[0] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro27 * 8 + 0 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro27] : 0.0);
    _ft_acc31[1] = _ft_acc31[1] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro27 * 8 + 1 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro27 + 1] : 0.0);
    _ft_acc31[2] = _ft_acc31[2] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro27 * 8 + 2 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro27 + 2] : 0.0);
    _ft_acc31[3] = _ft_acc31[3] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro27 * 8 + 3 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro27 + 3] : 0.0);
    _ft_acc31[4] = _ft_acc31[4] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro27 * 8 + 4 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro27 + 4] : 0.0);
    _ft_acc31[5] = _ft_acc31[5] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro27 * 8 + 5 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro27 + 5] : 0.0);
    _ft_acc31[6] = _ft_acc31[6] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro27 * 8 + 6 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro27 + 6] : 0.0);
    _ft_acc31[7] = _ft_acc31[7] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro27 * 8 + 7 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro27 + 7] : 0.0);
  }
  for (int _ft_lane30 = 0; _ft_lane30 <= 7; ++_ft_lane30)
    acc__ft_lane30 = acc__ft_lane30 + _ft_acc31[_ft_lane30];
  _ft_t24[gid(0)] = acc__ft_lane30;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_1(long const _ft_blocks0, long const _ft_blocks1, __global double const *__restrict__ _ft_t24, __global double *__restrict__ _ft_t35)
{
  double _ft_acc42[8];
  double acc__ft_lane41;

  acc__ft_lane41 = (double) (0.0);
  _ft_acc42[0] = 0.0;
  _ft_acc42[1] = 0.0;
  _ft_acc42[2] = 0.0;
  _ft_acc42[3] = 0.0;
  _ft_acc42[4] = 0.0;
  _ft_acc42[5] = 0.0;
  _ft_acc42[6] = 0.0;
  _ft_acc42[7] = 0.0;
  for (int _ft_ro38 = 0; _ft_ro38 <= 15; ++_ft_ro38)
  {
    _ft_acc42[0] = _ft_acc42[0] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro38 * 8 + 0 < _ft_blocks0) ? _ft_t24[128 * gid(0) + 8 * _ft_ro38] : 0.0);
    _ft_acc42[1] = _ft_acc42[1] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro38 * 8 + 1 < _ft_blocks0) ? _ft_t24[128 * gid(0) + 8 * _ft_ro38 + 1] : 0.0);
    _ft_acc42[2] = _ft_acc42[2] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro38 * 8 + 2 < _ft_blocks0) ? _ft_t24[128 * gid(0) + 8 * _ft_ro38 + 2] : 0.0);
    _ft_acc42[3] = _ft_acc42[3] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro38 * 8 + 3 < _ft_blocks0) ? _ft_t24[128 * gid(0) + 8 * _ft_ro38 + 3] : 0.0);
    _ft_acc42[4] = _ft_acc42[4] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro38 * 8 + 4 < _ft_blocks0) ? _ft_t24[128 * gid(0) + 8 * _ft_ro38 + 4] : 0.0);
    _ft_acc42[5] = _ft_acc42[5] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro38 * 8 + 5 < _ft_blocks0) ? _ft_t24[128 * gid(0) + 8 * _ft_ro38 + 5] : 0.0);
    _ft_acc42[6] = _ft_acc42[6] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro38 * 8 + 6 < _ft_blocks0) ? _ft_t24[128 * gid(0) + 8 * _ft_ro38 + 6] : 0.0);
    _ft_acc42[7] = _ft_acc42[7] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro38 * 8 + 7 < _ft_blocks0) ? _ft_t24[128 * gid(0) + 8 * _ft_ro38 + 7] : 0.0);
  }
  for (int _ft_lane41 = 0; _ft_lane41 <= 7; ++_ft_lane41)
    acc__ft_lane41 = acc__ft_lane41 + _ft_acc42[_ft_lane41];
  _ft_t35[gid(0)] = acc__ft_lane41;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_2(long const _ft_blocks1, long const _ft_blocks2, __global double const *__restrict__ _ft_t35, __global double *__restrict__ _ft_t46)
{
  double _ft_acc53[8];
  double acc__ft_lane52;

  acc__ft_lane52 = (double) (0.0);
  _ft_acc53[0] = 0.0;
  _ft_acc53[1] = 0.0;
  _ft_acc53[2] = 0.0;
  _ft_acc53[3] = 0.0;
  _ft_acc53[4] = 0.0;
  _ft_acc53[5] = 0.0;
  _ft_acc53[6] = 0.0;
  _ft_acc53[7] = 0.0;
  for (int _ft_ro49 = 0; _ft_ro49 <= 15; ++_ft_ro49)
  {
    _ft_acc53[0] = _ft_acc53[0] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro49 * 8 + 0 < _ft_blocks1) ? _ft_t35[128 * gid(0) + 8 * _ft_ro49] : 0.0);
    _ft_acc53[1] = _ft_acc53[1] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro49 * 8 + 1 < _ft_blocks1) ? _ft_t35[128 * gid(0) + 8 * _ft_ro49 + 1] : 0.0);
    _ft_acc53[2] = _ft_acc53[2] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro49 * 8 + 2 < _ft_blocks1) ? _ft_t35[128 * gid(0) + 8 * _ft_ro49 + 2] : 0.0);
    _ft_acc53[3] = _ft_acc53[3] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro49 * 8 + 3 < _ft_blocks1) ? _ft_t35[128 * gid(0) + 8 * _ft_ro49 + 3] : 0.0);
    _ft_acc53[4] = _ft_acc53[4] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro49 * 8 + 4 < _ft_blocks1) ? _ft_t35[128 * gid(0) + 8 * _ft_ro49 + 4] : 0.0);
    _ft_acc53[5] = _ft_acc53[5] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro49 * 8 + 5 < _ft_blocks1) ? _ft_t35[128 * gid(0) + 8 * _ft_ro49 + 5] : 0.0);
    _ft_acc53[6] = _ft_acc53[6] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro49 * 8 + 6 < _ft_blocks1) ? _ft_t35[128 * gid(0) + 8 * _ft_ro49 + 6] : 0.0);
    _ft_acc53[7] = _ft_acc53[7] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro49 * 8 + 7 < _ft_blocks1) ? _ft_t35[128 * gid(0) + 8 * _ft_ro49 + 7] : 0.0);
  }
  for (int _ft_lane52 = 0; _ft_lane52 <= 7; ++_ft_lane52)
    acc__ft_lane52 = acc__ft_lane52 + _ft_acc53[_ft_lane52];
  _ft_t46[gid(0)] = acc__ft_lane52;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_3(__global double *__restrict__ _ft_out1, long const _ft_blocks2, __global double const *__restrict__ _ft_t46)
{
  double acc__ft_r59;

  acc__ft_r59 = (double) (0.0);
  for (int _ft_r59 = 0; _ft_r59 <= -1 + _ft_blocks2; ++_ft_r59)
    acc__ft_r59 = acc__ft_r59 + _ft_t46[_ft_r59];
  _ft_out1[0] = acc__ft_r59;
}