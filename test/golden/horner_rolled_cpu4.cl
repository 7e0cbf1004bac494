#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))
#if __OPENCL_C_VERSION__ < 120
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#endif

__kernel void __attribute__ ((reqd_work_group_size(64, 1, 1))) ftlazy_kernel(__global double const *__restrict__ _ft_pack_float64, __global double const *__restrict__ _ft_in0, __global double *__restrict__ _ft_out0)
{
  double _ft_p4;
  double _ft_p9;
  double _ft_v3;

  if (1000 + -64 * gid(0) + -1 * lid(0) >= 0)
  {
    _ft_v3 = _ft_in0[64 * gid(0) + lid(0)];
    _ft_p4 = ((((((((((((((((((((((((((((((((0.0 * _ft_v3 + _ft_pack_float64[0]) * _ft_v3 + _ft_pack_float64[1]) * _ft_v3 + _ft_pack_float64[2]) * _ft_v3 + _ft_pack_float64[3]) * _ft_v3 + _ft_pack_float64[4]) * _ft_v3 + _ft_pack_float64[5]) * _ft_v3 + _ft_pack_float64[6]) * _ft_v3 + _ft_pack_float64[7]) * _ft_v3 + _ft_pack_float64[8]) * _ft_v3 + _ft_pack_float64[9]) * _ft_v3 + _ft_pack_float64[10]) * _ft_v3 + _ft_pack_float64[11]) * _ft_v3 + _ft_pack_float64[12]) * _ft_v3 + _ft_pack_float64[13]) * _ft_v3 + _ft_pack_float64[14]) * _ft_v3 + _ft_pack_float64[15]) * _ft_v3 + _ft_pack_float64[16]) * _ft_v3 + _ft_pack_float64[17]) * _ft_v3 + _ft_pack_float64[18]) * _ft_v3 + _ft_pack_float64[19]) * _ft_v3 + _ft_pack_float64[20]) * _ft_v3 + _ft_pack_float64[21]) * _ft_v3 + _ft_pack_float64[22]) * _ft_v3 + _ft_pack_float64[23]) * _ft_v3 + _ft_pack_float64[24]) * _ft_v3 + _ft_pack_float64[25]) * _ft_v3 + _ft_pack_float64[26]) * _ft_v3 + _ft_pack_float64[27]) * _ft_v3 + _ft_pack_float64[28]) * _ft_v3 + _ft_pack_float64[29]) * _ft_v3 + _ft_pack_float64[30]) * _ft_v3 + _ft_pack_float64[31]) * _ft_v3;
    _ft_p9 = _ft_p4;
    for (int _ft_k11 = 0; _ft_k11 <= 4; ++_ft_k11)
      _ft_p9 = ((((((((((((((((((((((((((((((((_ft_p9 + _ft_pack_float64[32 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[33 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[34 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[35 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[36 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[37 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[38 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[39 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[40 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[41 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[42 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[43 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[44 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[45 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[46 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[47 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[48 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[49 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[50 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[51 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[52 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[53 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[54 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[55 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[56 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[57 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[58 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[59 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[60 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[61 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[62 + 32 * _ft_k11]) * _ft_v3 + _ft_pack_float64[63 + 32 * _ft_k11]) * _ft_v3;
    _ft_out0[64 * gid(0) + lid(0)] = (((((((_ft_p9 + _ft_pack_float64[192]) * _ft_v3 + _ft_pack_float64[193]) * _ft_v3 + _ft_pack_float64[194]) * _ft_v3 + _ft_pack_float64[195]) * _ft_v3 + _ft_pack_float64[196]) * _ft_v3 + _ft_pack_float64[197]) * _ft_v3 + _ft_pack_float64[198]) * _ft_v3 + _ft_pack_float64[199];
  }
}