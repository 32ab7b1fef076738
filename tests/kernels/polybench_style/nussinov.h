/* nussinov.h: dataset sizes and types of nussinov.c (PolyBench/C 4.2 conventions). */
#ifndef _NUSSINOV_H
# define _NUSSINOV_H

# if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET) && \
     !defined(LARGE_DATASET) && !defined(EXTRALARGE_DATASET)
#  define LARGE_DATASET
# endif

# if !defined(N)
#  ifdef MINI_DATASET
#   define N 60
#  endif
#  ifdef SMALL_DATASET
#   define N 180
#  endif
#  ifdef MEDIUM_DATASET
#   define N 500
#  endif
#  ifdef LARGE_DATASET
#   define N 2500
#  endif
#  ifdef EXTRALARGE_DATASET
#   define N 5500
#  endif
# endif

# define _PB_N POLYBENCH_LOOP_BOUND(N, n)

/* integer scores */
# define DATA_TYPE int
# define DATA_PRINTF_MODIFIER "%d "

#endif /* !_NUSSINOV_H */
