/* correlation.h: dataset sizes and types of correlation.c (PolyBench/C 4.2 conventions). */
#ifndef _CORRELATION_H
# define _CORRELATION_H

# if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET) && \
     !defined(LARGE_DATASET) && !defined(EXTRALARGE_DATASET)
#  define LARGE_DATASET
# endif

# if !defined(M) && !defined(N)
#  ifdef MINI_DATASET
#   define M 28
#   define N 32
#  endif
#  ifdef SMALL_DATASET
#   define M 80
#   define N 100
#  endif
#  ifdef MEDIUM_DATASET
#   define M 240
#   define N 260
#  endif
#  ifdef LARGE_DATASET
#   define M 1200
#   define N 1400
#  endif
#  ifdef EXTRALARGE_DATASET
#   define M 2600
#   define N 3000
#  endif
# endif

# define _PB_M POLYBENCH_LOOP_BOUND(M, m)
# define _PB_N POLYBENCH_LOOP_BOUND(N, n)

# if !defined(DATA_TYPE_IS_INT) && !defined(DATA_TYPE_IS_FLOAT) && !defined(DATA_TYPE_IS_DOUBLE)
#  define DATA_TYPE_IS_DOUBLE
# endif
# ifdef DATA_TYPE_IS_FLOAT
#  define DATA_TYPE float
#  define DATA_PRINTF_MODIFIER "%0.2f "
#  define SCALAR_VAL(x) x##f
#  define SQRT_FUN(x) sqrtf(x)
# endif
# ifdef DATA_TYPE_IS_DOUBLE
#  define DATA_TYPE double
#  define DATA_PRINTF_MODIFIER "%0.2lf "
#  define SCALAR_VAL(x) x
#  define SQRT_FUN(x) sqrt(x)
# endif

#endif /* !_CORRELATION_H */
