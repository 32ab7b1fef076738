/* polybench/matmul.c: matmul, nest 0; band: i, j; host loops: (none); inner loops: k */
#pragma OPENCL FP_CONTRACT OFF
#ifndef BBMM_IDX
#define BBMM_IDX long  /* the host passes -DBBMM_IDX=int when every offset fits */
#endif
#ifndef BBMM_CO
#define BBMM_CO 1  /* points per work-item along OpenCL dimension 0 (-DBBMM_CO=c) */
#endif
#ifndef BBMM_CO1
#define BBMM_CO1 1  /* consecutive points per work-item along dimension 1 */
#endif
#ifndef BBMM_RESTRICT
#define BBMM_RESTRICT restrict
#endif
#ifndef BBMM_UNROLL
#define BBMM_UNROLL 1  /* unroll innermost loops 8 times (-DBBMM_UNROLL=0: not) */
#endif

/* C: element (x0, x1) of slot s (offsets in BBMM_IDX: long, or int when the host knows they fit) */
#define C_AT(s, x0, x1) C_buf##s[C_base##s + (BBMM_IDX)(x0) * C_st##s##_0 + (BBMM_IDX)(x1)]
/* C: is (x0, x1) inside slot s's box? */
#define C_IN(s, x0, x1) ((x0) >= C_lo##s##_0 && (x0) <= C_hi##s##_0 && (x1) >= C_lo##s##_1 && (x1) <= C_hi##s##_1)
/* C: unsplit access, slot k chosen by its uniform sel value (no bounds test) */
#define C_SEL(k, x0, x1) ((k) == 0 ? &C_AT(0, x0, x1) : (k) == 1 ? &C_AT(1, x0, x1) : &C_AT(2, x0, x1))
/* C: split access, the first slot whose box holds the index */
#define C_FIND(x0, x1) (C_IN(0, x0, x1) ? &C_AT(0, x0, x1) : C_IN(1, x0, x1) ? &C_AT(1, x0, x1) : &C_AT(2, x0, x1))
/* C: an lvalue; k is the access's sel (-1: split) */
#define C_REF(k, x0, x1) (*((k) >= 0 ? C_SEL(k, x0, x1) : C_FIND(x0, x1)))

/* A: element (x0, x1) of slot s (offsets in BBMM_IDX: long, or int when the host knows they fit) */
#define A_AT(s, x0, x1) A_buf##s[A_base##s + (BBMM_IDX)(x0) * A_st##s##_0 + (BBMM_IDX)(x1)]
/* A: is (x0, x1) inside slot s's box? */
#define A_IN(s, x0, x1) ((x0) >= A_lo##s##_0 && (x0) <= A_hi##s##_0 && (x1) >= A_lo##s##_1 && (x1) <= A_hi##s##_1)
/* A: unsplit access, slot k chosen by its uniform sel value (no bounds test) */
#define A_SEL(k, x0, x1) ((k) == 0 ? &A_AT(0, x0, x1) : (k) == 1 ? &A_AT(1, x0, x1) : &A_AT(2, x0, x1))
/* A: split access, the first slot whose box holds the index */
#define A_FIND(x0, x1) (A_IN(0, x0, x1) ? &A_AT(0, x0, x1) : A_IN(1, x0, x1) ? &A_AT(1, x0, x1) : &A_AT(2, x0, x1))
/* A: an lvalue; k is the access's sel (-1: split) */
#define A_REF(k, x0, x1) (*((k) >= 0 ? A_SEL(k, x0, x1) : A_FIND(x0, x1)))

/* B: element (x0, x1) of slot s (offsets in BBMM_IDX: long, or int when the host knows they fit) */
#define B_AT(s, x0, x1) B_buf##s[B_base##s + (BBMM_IDX)(x0) * B_st##s##_0 + (BBMM_IDX)(x1)]
/* B: is (x0, x1) inside slot s's box? */
#define B_IN(s, x0, x1) ((x0) >= B_lo##s##_0 && (x0) <= B_hi##s##_0 && (x1) >= B_lo##s##_1 && (x1) <= B_hi##s##_1)
/* B: unsplit access, slot k chosen by its uniform sel value (no bounds test) */
#define B_SEL(k, x0, x1) ((k) == 0 ? &B_AT(0, x0, x1) : (k) == 1 ? &B_AT(1, x0, x1) : &B_AT(2, x0, x1))
/* B: split access, the first slot whose box holds the index */
#define B_FIND(x0, x1) (B_IN(0, x0, x1) ? &B_AT(0, x0, x1) : B_IN(1, x0, x1) ? &B_AT(1, x0, x1) : &B_AT(2, x0, x1))
/* B: an lvalue; k is the access's sel (-1: split) */
#define B_REF(k, x0, x1) (*((k) >= 0 ? B_SEL(k, x0, x1) : B_FIND(x0, x1)))

__kernel void matmul_nest0(
    /* parameters */
    int ni, int nj, int nk, float alpha, float beta,
    /* tile bounds on band loop 'i'; iterator of work-item 0 per band loop */
    int lb, int ub,
    int g0, int g1,
    /* array C: 3 slot(s) (buffer, base, strides; box), then the slot of each access or -1 when split */
    __global float* C_buf0, long C_base0, int C_st0_0,
    int C_lo0_0, int C_lo0_1, int C_hi0_0, int C_hi0_1,
    __global float* C_buf1, long C_base1, int C_st1_0,
    int C_lo1_0, int C_lo1_1, int C_hi1_0, int C_hi1_1,
    __global float* C_buf2, long C_base2, int C_st2_0,
    int C_lo2_0, int C_lo2_1, int C_hi2_0, int C_hi2_1,
    int C_sel0, int C_sel1, int C_sel2, int C_sel5,
    /* array A: 3 slot(s) (buffer, base, strides; box), then the slot of each access or -1 when split */
    __global const float* BBMM_RESTRICT A_buf0, long A_base0, int A_st0_0,
    int A_lo0_0, int A_lo0_1, int A_hi0_0, int A_hi0_1,
    __global const float* BBMM_RESTRICT A_buf1, long A_base1, int A_st1_0,
    int A_lo1_0, int A_lo1_1, int A_hi1_0, int A_hi1_1,
    __global const float* BBMM_RESTRICT A_buf2, long A_base2, int A_st2_0,
    int A_lo2_0, int A_lo2_1, int A_hi2_0, int A_hi2_1,
    int A_sel3,
    /* array B: 3 slot(s) (buffer, base, strides; box), then the slot of each access or -1 when split */
    __global const float* BBMM_RESTRICT B_buf0, long B_base0, int B_st0_0,
    int B_lo0_0, int B_lo0_1, int B_hi0_0, int B_hi0_1,
    __global const float* BBMM_RESTRICT B_buf1, long B_base1, int B_st1_0,
    int B_lo1_0, int B_lo1_1, int B_hi1_0, int B_hi1_1,
    __global const float* BBMM_RESTRICT B_buf2, long B_base2, int B_st2_0,
    int B_lo2_0, int B_lo2_1, int B_hi2_0, int B_hi2_1,
    int B_sel4
)
{
  /* band loop 0 'i' (loop 0): OpenCL dimension 1; outside the tile or the loop: nothing to do */
  /* BBMM_CO1 consecutive points per work-item from i0 on */
  const int i0 = g0 + (int)get_global_id(1) * BBMM_CO1;
  /* band loop 1 'j' (loop 1): OpenCL dimension 0; outside the loop: nothing to do */
  /* BBMM_CO points per work-item, get_local_size(0) apart from j0 on */
  const int j0 = g1 + (int)(get_group_id(0) * get_local_size(0) * BBMM_CO + get_local_id(0));
#ifdef C_SEL0_IS
#define C_sel0_v (C_SEL0_IS)
#else
#define C_sel0_v C_sel0
#endif
#ifdef C_SEL1_IS
#define C_sel1_v (C_SEL1_IS)
#else
#define C_sel1_v C_sel1
#endif
#ifdef C_SEL2_IS
#define C_sel2_v (C_SEL2_IS)
#else
#define C_sel2_v C_sel2
#endif
#ifdef C_SEL5_IS
#define C_sel5_v (C_SEL5_IS)
#else
#define C_sel5_v C_sel5
#endif
#ifdef A_SEL3_IS
#define A_sel3_v (A_SEL3_IS)
#else
#define A_sel3_v A_sel3
#endif
#ifdef B_SEL4_IS
#define B_sel4_v (B_SEL4_IS)
#else
#define B_sel4_v B_sel4
#endif
  /* register block: BBMM_CO1 rows x BBMM_CO columns (get_local_size(0) apart) per work-item; each point runs its statements in the source's order, and loop 'k' runs once for all of them */
  /* S0: C[i][j] = C[i][j] * beta; */
  #pragma unroll
  for (int r = 0; r < BBMM_CO1; r++) {
    const int i = i0 + r;
    #pragma unroll
    for (int u = 0; u < BBMM_CO; u++) {
      const int j = j0 + u * (int)get_local_size(0);
      if (!(i < lb || i > ub || i < 0 || i > ni - 1) && !(j < 0 || j > nj - 1))
        C_REF(C_sel1_v, i, j) = (C_REF(C_sel0_v, i, j) * beta);
    }
  }
  float C_reg[BBMM_CO1][BBMM_CO];  /* C[i][j] of each point, kept in a register across loop 'k' */
  #pragma unroll
  for (int r = 0; r < BBMM_CO1; r++) {
    const int i = i0 + r;
    #pragma unroll
    for (int u = 0; u < BBMM_CO; u++) {
      const int j = j0 + u * (int)get_local_size(0);
      if (!(i < lb || i > ub || i < 0 || i > ni - 1) && !(j < 0 || j > nj - 1) && 0 <= nk - 1)
        C_reg[r][u] = C_REF(C_sel2_v, i, j);
    }
  }
  bool full = true;  /* every point of the block inside the tile and its loops */
  #pragma unroll
  for (int r = 0; r < BBMM_CO1; r++) {
    const int i = i0 + r;
    #pragma unroll
    for (int u = 0; u < BBMM_CO; u++) {
      const int j = j0 + u * (int)get_local_size(0);
      full = full && !(i < lb || i > ub || i < 0 || i > ni - 1) && !(j < 0 || j > nj - 1);
    }
  }
  if (full) {
    /* loop 2: for (int k = 0; k < nk; k++) */
#if BBMM_UNROLL
#pragma unroll 4
#endif
    for (int k = 0; k <= nk - 1; k++) {
      #pragma unroll
      for (int r = 0; r < BBMM_CO1; r++) {
        const int i = i0 + r;
        #pragma unroll
        for (int u = 0; u < BBMM_CO; u++) {
          const int j = j0 + u * (int)get_local_size(0);
          C_reg[r][u] = (C_reg[r][u] + ((alpha * A_REF(A_sel3_v, i, k)) * B_REF(B_sel4_v, k, j)));
        }
      }
    }
  } else {
    /* loop 2: for (int k = 0; k < nk; k++); only the points inside */
#if BBMM_UNROLL
#pragma unroll 4
#endif
    for (int k = 0; k <= nk - 1; k++) {
      #pragma unroll
      for (int r = 0; r < BBMM_CO1; r++) {
        const int i = i0 + r;
        #pragma unroll
        for (int u = 0; u < BBMM_CO; u++) {
          const int j = j0 + u * (int)get_local_size(0);
          if (!(i < lb || i > ub || i < 0 || i > ni - 1) && !(j < 0 || j > nj - 1))
            C_reg[r][u] = (C_reg[r][u] + ((alpha * A_REF(A_sel3_v, i, k)) * B_REF(B_sel4_v, k, j)));
        }
      }
    }
  }
  #pragma unroll
  for (int r = 0; r < BBMM_CO1; r++) {
    const int i = i0 + r;
    #pragma unroll
    for (int u = 0; u < BBMM_CO; u++) {
      const int j = j0 + u * (int)get_local_size(0);
      if (!(i < lb || i > ub || i < 0 || i > ni - 1) && !(j < 0 || j > nj - 1) && 0 <= nk - 1)
        C_REF(C_sel5_v, i, j) = C_reg[r][u];
    }
  }
}

#undef C_AT
#undef C_IN
#undef C_SEL
#undef C_FIND
#undef C_REF
#undef A_AT
#undef A_IN
#undef A_SEL
#undef A_FIND
#undef A_REF
#undef B_AT
#undef B_IN
#undef B_SEL
#undef B_FIND
#undef B_REF
#undef C_sel0_v
#undef C_sel1_v
#undef C_sel2_v
#undef C_sel5_v
#undef A_sel3_v
#undef B_sel4_v
