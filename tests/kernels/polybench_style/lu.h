/* lu.h: dataset sizes and types of lu.c (PolyBench/C 4.2 conventions). */
#ifndef _LU_H
# define _LU_H

# if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET) && \
     !defined(LARGE_DATASET) && !defined(EXTRALARGE_DATASET)
#  define LARGE_DATASET
# endif

# if !defined(N)
#  ifdef MINI_DATASET
#   define N 40
#  endif
#  ifdef SMALL_DATASET
#   define N 120
#  endif
#  ifdef MEDIUM_DATASET
#   define N 400
#  endif
#  ifdef LARGE_DATASET
#   define N 2000
#  endif
#  ifdef EXTRALARGE_DATASET
#   define N 4000
#  endif
# endif

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

#endif /* !_LU_H */
