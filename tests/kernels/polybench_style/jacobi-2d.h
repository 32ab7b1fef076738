/* jacobi-2d.h: dataset sizes and types of jacobi-2d.c (PolyBench/C 4.2 conventions). */
#ifndef _JACOBI_2D_H
# define _JACOBI_2D_H

# if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET) && \
     !defined(LARGE_DATASET) && !defined(EXTRALARGE_DATASET)
#  define LARGE_DATASET
# endif

# if !defined(TSTEPS) && !defined(N)
#  ifdef MINI_DATASET
#   define TSTEPS 20
#   define N 30
#  endif
#  ifdef SMALL_DATASET
#   define TSTEPS 40
#   define N 90
#  endif
#  ifdef MEDIUM_DATASET
#   define TSTEPS 100
#   define N 250
#  endif
#  ifdef LARGE_DATASET
#   define TSTEPS 500
#   define N 1300
#  endif
#  ifdef EXTRALARGE_DATASET
#   define TSTEPS 1000
#   define N 2800
#  endif
# endif

# define _PB_TSTEPS POLYBENCH_LOOP_BOUND(TSTEPS, tsteps)
# define _PB_N POLYBENCH_LOOP_BOUND(N, n)

# if !defined(DATA_TYPE_IS_INT) && !defined(DATA_TYPE_IS_FLOAT) && !defined(DATA_TYPE_IS_DOUBLE)
#  define DATA_TYPE_IS_DOUBLE
# endif
# ifdef DATA_TYPE_IS_FLOAT
#  define DATA_TYPE float
#  define DATA_PRINTF_MODIFIER "%0.2f "
#  define SCALAR_VAL(x) x##f
# endif
# ifdef DATA_TYPE_IS_DOUBLE
#  define DATA_TYPE double
#  define DATA_PRINTF_MODIFIER "%0.2lf "
#  define SCALAR_VAL(x) x
# endif

#endif /* !_JACOBI_2D_H */
