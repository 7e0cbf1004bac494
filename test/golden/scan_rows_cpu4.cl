#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))
#if __OPENCL_C_VERSION__ < 120
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#endif

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel(__global double const *__restrict__ _ft_in2, __global double *__restrict__ _ft_t1)
{
  for (int _ft_i1_4 = 0; _ft_i1_4 <= 15; ++_ft_i1_4)
    _ft_t1[16 * gid(0) + _ft_i1_4] = _ft_in2[16 * _ft_i1_4 + gid(0)];
}

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) ftlazy_kernel_0(__global double const *__restrict__ _ft_in0, __global double const *__restrict__ _ft_in1, __global double *_ft_out0, __global double *_ft_carry7, __global double const *__restrict__ _ft_t1, __global double *_ft_t13, __global double *_ft_t25)
{
  double _ft_acc21[4 * 16];
  double4 _ft_vg31;
  double4 _ft_vr32;

  for (int _ft_ff10 = 0; _ft_ff10 <= 63; ++_ft_ff10)
    _ft_carry7[16 * (4 * gid(0) + _ft_ff10 / 16) + _ft_ff10 + -16 * (_ft_ff10 / 16)] = _ft_in0[16 * (4 * gid(0) + _ft_ff10 / 16) + _ft_ff10 + -16 * (_ft_ff10 / 16)];
  ; /*no-op (insn=_ft_scan42__ft_lbarrier12)*/
  for (int _ft_t6 = 0; _ft_t6 <= 9; ++_ft_t6)
  {
    for (int _ft_ff19 = 0; _ft_ff19 <= 63; ++_ft_ff19)
      _ft_acc21[_ft_ff19] = 0.0;
    for (int _ft_k16 = 0; _ft_k16 <= 3; ++_ft_k16)
      for (int _ft_rr17 = 0; _ft_rr17 <= 3; ++_ft_rr17)
        for (int _ft_jj18 = 0; _ft_jj18 <= 15; ++_ft_jj18)
          _ft_acc21[16 * _ft_rr17 + _ft_jj18] = _ft_acc21[16 * _ft_rr17 + _ft_jj18] + _ft_carry7[128 * (_ft_t6 & 1) + 16 * (4 * gid(0) + _ft_rr17) + 4 * _ft_k16] * _ft_t1[64 * _ft_k16 + _ft_jj18] + _ft_carry7[128 * (_ft_t6 & 1) + 16 * (4 * gid(0) + _ft_rr17) + 1 + 4 * _ft_k16] * _ft_t1[16 + 64 * _ft_k16 + _ft_jj18] + _ft_carry7[128 * (_ft_t6 & 1) + 16 * (4 * gid(0) + _ft_rr17) + 2 + 4 * _ft_k16] * _ft_t1[32 + 64 * _ft_k16 + _ft_jj18] + _ft_carry7[128 * (_ft_t6 & 1) + 16 * (4 * gid(0) + _ft_rr17) + 3 + 4 * _ft_k16] * _ft_t1[48 + 64 * _ft_k16 + _ft_jj18];
    for (int _ft_ff20 = 0; _ft_ff20 <= 63; ++_ft_ff20)
      _ft_t13[16 * (4 * gid(0) + _ft_ff20 / 16) + _ft_ff20 + -16 * (_ft_ff20 / 16)] = _ft_acc21[_ft_ff20];
    ; /*no-op (insn=_ft_scan42__ft_lbarrier34)*/
    for (int _ft_br27 = 0; _ft_br27 <= 3; ++_ft_br27)
      for (int _ft_i1_28 = 0; _ft_i1_28 <= 3; ++_ft_i1_28)
      {
        _ft_vg31 = (double4)(_ft_t13[16 * (4 * gid(0) + _ft_br27) + 4 * _ft_i1_28] + _ft_in1[128 * _ft_t6 + 16 * (4 * gid(0) + _ft_br27) + 4 * _ft_i1_28], _ft_t13[16 * (4 * gid(0) + _ft_br27) + 1 + 4 * _ft_i1_28] + _ft_in1[128 * _ft_t6 + 16 * (4 * gid(0) + _ft_br27) + 1 + 4 * _ft_i1_28], _ft_t13[16 * (4 * gid(0) + _ft_br27) + 2 + 4 * _ft_i1_28] + _ft_in1[128 * _ft_t6 + 16 * (4 * gid(0) + _ft_br27) + 2 + 4 * _ft_i1_28], _ft_t13[16 * (4 * gid(0) + _ft_br27) + 3 + 4 * _ft_i1_28] + _ft_in1[128 * _ft_t6 + 16 * (4 * gid(0) + _ft_br27) + 3 + 4 * _ft_i1_28]);
        _ft_vr32 = tanh(_ft_vg31);
        _ft_t25[16 * (4 * gid(0) + _ft_br27) + 4 * _ft_i1_28] = _ft_vr32.s0;
        _ft_t25[16 * (4 * gid(0) + _ft_br27) + 4 * _ft_i1_28 + 1] = _ft_vr32.s1;
        _ft_t25[16 * (4 * gid(0) + _ft_br27) + 4 * _ft_i1_28 + 2] = _ft_vr32.s2;
        _ft_t25[16 * (4 * gid(0) + _ft_br27) + 4 * _ft_i1_28 + 3] = _ft_vr32.s3;
      }
    ; /*no-op (insn=_ft_scan42__ft_lbarrier35)*/
    for (int _ft_ff38 = 0; _ft_ff38 <= 63; ++_ft_ff38)
    {
      _ft_carry7[128 * (_ft_t6 + 1 & 1) + 16 * (4 * gid(0) + _ft_ff38 / 16) + _ft_ff38 + -16 * (_ft_ff38 / 16)] = _ft_t25[16 * (4 * gid(0) + _ft_ff38 / 16) + _ft_ff38 + -16 * (_ft_ff38 / 16)];
      _ft_out0[128 * _ft_t6 + 16 * (4 * gid(0) + _ft_ff38 / 16) + _ft_ff38 + -16 * (_ft_ff38 / 16)] = _ft_t25[16 * (4 * gid(0) + _ft_ff38 / 16) + _ft_ff38 + -16 * (_ft_ff38 / 16)];
    }
    ; /*no-op (insn=_ft_scan42__ft_lbarrier41)*/
  }
}