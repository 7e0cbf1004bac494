#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel(__global float const *__restrict__ _ft_in0, __global long const *__restrict__ _ft_in1, __global float *__restrict__ _ft_out0, __global long *__restrict__ _ft_out1)
{
  long _ft_v4;
  float acc__ft_r3;
  long acc__ft_r8;

  acc__ft_r3 = 0.0f;
  if (gid(0) == 0)
    acc__ft_r8 = 9223372036854775807;
  _ft_v4 = _ft_in1[gid(0)];
  for (int _ft_r3 = 0; _ft_r3 <= 7; ++_ft_r3)
    acc__ft_r3 = acc__ft_r3 + ((((_ft_v4 < 0l) ? (long) ((ulong) (_ft_v4) + (ulong) (100l)) : _ft_v4) >= 0l && ((_ft_v4 < 0l) ? (long) ((ulong) (_ft_v4) + (ulong) (100l)) : _ft_v4) < 100l) ? _ft_in0[8 * ((_ft_v4 < 0l) ? _ft_v4 + 100l : _ft_v4) + _ft_r3] : 0.0f);
  _ft_out0[gid(0)] = acc__ft_r3;
  if (gid(0) == 0)
  {
    for (int _ft_r8 = 0; _ft_r8 <= 49; ++_ft_r8)
      acc__ft_r8 = ((acc__ft_r8 <= ((_ft_in1[_ft_r8] < -100l || _ft_in1[_ft_r8] >= 100l) ? (long) (_ft_r8) : 9223372036854775807l)) ? acc__ft_r8 : ((_ft_in1[_ft_r8] < -100l || _ft_in1[_ft_r8] >= 100l) ? (long) (_ft_r8) : 9223372036854775807l));
    _ft_out1[0] = acc__ft_r8;
  }
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_0(__global long const *__restrict__ _ft_in1, __global long const *__restrict__ _ft_out1, __global long *__restrict__ _ft_out2)
{
  _ft_out2[0] = ((_ft_out1[0] == 9223372036854775807l) ? 0l : _ft_in1[((_ft_out1[0] == 9223372036854775807l) ? 0l : _ft_out1[0])]);
}