#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))
#if __OPENCL_C_VERSION__ < 120
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#endif

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel(__global double const *__restrict__ _ft_in0, __global double *__restrict__ _ft_out0, long const _ft_n0, __global double *__restrict__ _ft_t2)
{
  double _ft_acc18[8];
  double _ft_acc9[8];
  double _ft_v17;
  double acc__ft_lane16;
  double acc__ft_lane8;

  acc__ft_lane8 = (double) (0.0);
  acc__ft_lane16 = (double) (0.0);
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
  _ft_v17 = _ft_t2[gid(0)];
  _ft_acc18[0] = 0.0;
  _ft_acc18[1] = 0.0;
  _ft_acc18[2] = 0.0;
  _ft_acc18[3] = 0.0;
  _ft_acc18[4] = 0.0;
  _ft_acc18[5] = 0.0;
  _ft_acc18[6] = 0.0;
  _ft_acc18[7] = 0.0;
  for (int _ft_ro13 = 0; _ft_ro13 <= 7; ++_ft_ro13)
  {
    _ft_acc18[0] = _ft_acc18[0] + (_ft_in0[64 * gid(0) + 8 * _ft_ro13] + -1.0 * (_ft_v17 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro13] + -1.0 * (_ft_v17 / 64.0));
    _ft_acc18[1] = _ft_acc18[1] + (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 1] + -1.0 * (_ft_v17 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 1] + -1.0 * (_ft_v17 / 64.0));
    _ft_acc18[2] = _ft_acc18[2] + (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 2] + -1.0 * (_ft_v17 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 2] + -1.0 * (_ft_v17 / 64.0));
    _ft_acc18[3] = _ft_acc18[3] + (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 3] + -1.0 * (_ft_v17 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 3] + -1.0 * (_ft_v17 / 64.0));
    _ft_acc18[4] = _ft_acc18[4] + (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 4] + -1.0 * (_ft_v17 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 4] + -1.0 * (_ft_v17 / 64.0));
    _ft_acc18[5] = _ft_acc18[5] + (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 5] + -1.0 * (_ft_v17 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 5] + -1.0 * (_ft_v17 / 64.0));
    _ft_acc18[6] = _ft_acc18[6] + (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 6] + -1.0 * (_ft_v17 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 6] + -1.0 * (_ft_v17 / 64.0));
    _ft_acc18[7] = _ft_acc18[7] + (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 7] + -1.0 * (_ft_v17 / 64.0)) * (_ft_in0[64 * gid(0) + 8 * _ft_ro13 + 7] + -1.0 * (_ft_v17 / 64.0));
  }
  for (int _ft_lane16 = 0; _ft_lane16 <= 7; ++_ft_lane16)
    acc__ft_lane16 = acc__ft_lane16 + _ft_acc18[_ft_lane16];
  _ft_out0[gid(0)] = acc__ft_lane16;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_0(long const _ft_blocks0, long const _ft_n0, __global double const *__restrict__ _ft_t2, __global double *__restrict__ _ft_t22)
{
  double _ft_acc29[8];
  double acc__ft_lane28;

  acc__ft_lane28 = (double) (0.0);
  _ft_acc29[0] = 0.0;
  _ft_acc29[1] = 0.0;
  _ft_acc29[2] = 0.0;
  _ft_acc29[3] = 0.0;
  _ft_acc29[4] = 0.0;
  _ft_acc29[5] = 0.0;
  _ft_acc29[6] = 0.0;
  _ft_acc29[7] = 0.0;
  for (int _ft_ro25 = 0; _ft_ro25 <= 15; ++_ft_ro25)
  {
    _ft_acc29[0] = _ft_acc29[0] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro25 * 8 + 0 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro25] : 0.0);
    _ft_acc29[1] = _ft_acc29[1] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro25 * 8 + 1 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro25 + 1] : 0.0);
    _ft_acc29[2] = _ft_acc29[2] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro25 * 8 + 2 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro25 + 2] : 0.0);
    _ft_acc29[3] = _ft_acc29[3] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro25 * 8 + 3 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro25 + 3] : 0.0);
    _ft_acc29[4] = _ft_acc29[4] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro25 * 8 + 4 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro25 + 4] : 0.0);
    _ft_acc29[5] = _ft_acc29[5] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro25 * 8 + 5 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro25 + 5] : 0.0);
    _ft_acc29[6] = _ft_acc29[6] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro25 * 8 + 6 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro25 + 6] : 0.0);
    _ft_acc29[7] = _ft_acc29[7] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro25 * 8 + 7 < _ft_n0) ? _ft_t2[128 * gid(0) + 8 * _ft_ro25 + 7] : 0.0);
  }
  for (int _ft_lane28 = 0; _ft_lane28 <= 7; ++_ft_lane28)
    acc__ft_lane28 = acc__ft_lane28 + _ft_acc29[_ft_lane28];
  _ft_t22[gid(0)] = acc__ft_lane28;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_1(long const _ft_blocks0, long const _ft_blocks1, __global double const *__restrict__ _ft_t22, __global double *__restrict__ _ft_t33)
{
  double _ft_acc40[8];
  double acc__ft_lane39;

  acc__ft_lane39 = (double) (0.0);
  _ft_acc40[0] = 0.0;
  _ft_acc40[1] = 0.0;
  _ft_acc40[2] = 0.0;
  _ft_acc40[3] = 0.0;
  _ft_acc40[4] = 0.0;
  _ft_acc40[5] = 0.0;
  _ft_acc40[6] = 0.0;
  _ft_acc40[7] = 0.0;
  for (int _ft_ro36 = 0; _ft_ro36 <= 15; ++_ft_ro36)
  {
    _ft_acc40[0] = _ft_acc40[0] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro36 * 8 + 0 < _ft_blocks0) ? _ft_t22[128 * gid(0) + 8 * _ft_ro36] : 0.0);
    _ft_acc40[1] = _ft_acc40[1] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro36 * 8 + 1 < _ft_blocks0) ? _ft_t22[128 * gid(0) + 8 * _ft_ro36 + 1] : 0.0);
    _ft_acc40[2] = _ft_acc40[2] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro36 * 8 + 2 < _ft_blocks0) ? _ft_t22[128 * gid(0) + 8 * _ft_ro36 + 2] : 0.0);
    _ft_acc40[3] = _ft_acc40[3] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro36 * 8 + 3 < _ft_blocks0) ? _ft_t22[128 * gid(0) + 8 * _ft_ro36 + 3] : 0.0);
    _ft_acc40[4] = _ft_acc40[4] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro36 * 8 + 4 < _ft_blocks0) ? _ft_t22[128 * gid(0) + 8 * _ft_ro36 + 4] : 0.0);
    _ft_acc40[5] = _ft_acc40[5] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro36 * 8 + 5 < _ft_blocks0) ? _ft_t22[128 * gid(0) + 8 * _ft_ro36 + 5] : 0.0);
    _ft_acc40[6] = _ft_acc40[6] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro36 * 8 + 6 < _ft_blocks0) ? _ft_t22[128 * gid(0) + 8 * _ft_ro36 + 6] : 0.0);
    _ft_acc40[7] = _ft_acc40[7] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro36 * 8 + 7 < _ft_blocks0) ? _ft_t22[128 * gid(0) + 8 * _ft_ro36 + 7] : 0.0);
  }
  for (int _ft_lane39 = 0; _ft_lane39 <= 7; ++_ft_lane39)
    acc__ft_lane39 = acc__ft_lane39 + _ft_acc40[_ft_lane39];
  _ft_t33[gid(0)] = acc__ft_lane39;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_2(long const _ft_blocks1, long const _ft_blocks2, __global double const *__restrict__ _ft_t33, __global double *__restrict__ _ft_t44)
{
  double _ft_acc51[8];
  double acc__ft_lane50;

  acc__ft_lane50 = (double) (0.0);
  _ft_acc51[0] = 0.0;
  _ft_acc51[1] = 0.0;
  _ft_acc51[2] = 0.0;
  _ft_acc51[3] = 0.0;
  _ft_acc51[4] = 0.0;
  _ft_acc51[5] = 0.0;
  _ft_acc51[6] = 0.0;
  _ft_acc51[7] = 0.0;
  for (int _ft_ro47 = 0; _ft_ro47 <= 15; ++_ft_ro47)
  {
    _ft_acc51[0] = _ft_acc51[0] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro47 * 8 + 0 < _ft_blocks1) ? _ft_t33[128 * gid(0) + 8 * _ft_ro47] : 0.0);
    _ft_acc51[1] = _ft_acc51[1] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro47 * 8 + 1 < _ft_blocks1) ? _ft_t33[128 * gid(0) + 8 * _ft_ro47 + 1] : 0.0);
    _ft_acc51[2] = _ft_acc51[2] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro47 * 8 + 2 < _ft_blocks1) ? _ft_t33[128 * gid(0) + 8 * _ft_ro47 + 2] : 0.0);
    _ft_acc51[3] = _ft_acc51[3] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro47 * 8 + 3 < _ft_blocks1) ? _ft_t33[128 * gid(0) + 8 * _ft_ro47 + 3] : 0.0);
    _ft_acc51[4] = _ft_acc51[4] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro47 * 8 + 4 < _ft_blocks1) ? _ft_t33[128 * gid(0) + 8 * _ft_ro47 + 4] : 0.0);
    _ft_acc51[5] = _ft_acc51[5] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro47 * 8 + 5 < _ft_blocks1) ? _ft_t33[128 * gid(0) + 8 * _ft_ro47 + 5] : 0.0);
    _ft_acc51[6] = _ft_acc51[6] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro47 * 8 + 6 < _ft_blocks1) ? _ft_t33[128 * gid(0) + 8 * _ft_ro47 + 6] : 0.0);
    _ft_acc51[7] = _ft_acc51[7] + (((gid(0) * 1 + lid(0)) * 128 + _ft_ro47 * 8 + 7 < _ft_blocks1) ? _ft_t33[128 * gid(0) + 8 * _ft_ro47 + 7] : 0.0);
  }
  for (int _ft_lane50 = 0; _ft_lane50 <= 7; ++_ft_lane50)
    acc__ft_lane50 = acc__ft_lane50 + _ft_acc51[_ft_lane50];
  _ft_t44[gid(0)] = acc__ft_lane50;
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_3(__global double *__restrict__ _ft_out1, long const _ft_blocks2, __global double const *__restrict__ _ft_t44)
{
  double acc__ft_r57;

  acc__ft_r57 = (double) (0.0);
  for (int _ft_r57 = 0; _ft_r57 <= -1 + _ft_blocks2; ++_ft_r57)
    acc__ft_r57 = acc__ft_r57 + _ft_t44[_ft_r57];
  _ft_out1[0] = acc__ft_r57;
}