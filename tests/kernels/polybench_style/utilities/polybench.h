/* polybench.h: bbmm's small stand-in for PolyBench/C 4.2's utilities/polybench.h.
 *
 * Same macro conventions as PolyBench/C 4.2, so the test programs beside this folder are
 * written exactly as PolyBench's are:
 *
 *   POLYBENCH_1D/2D/3D(var, DIM1, ..., dim1, ...)  array in a prototype: constant sizes
 *       (DIM) by default, C99 variable sizes (dim) with -DPOLYBENCH_USE_C99_PROTO
 *   POLYBENCH_LOOP_BOUND(N, n)  via each kernel's _PB_N: the parameter n by default, the
 *       constant N with -DPOLYBENCH_USE_SCALAR_LB
 *   POLYBENCH_1D/2D/3D_ARRAY_DECL, POLYBENCH_ARRAY, POLYBENCH_FREE_ARRAY  heap arrays
 *   polybench_start_instruments ... polybench_print_instruments  timers (-DPOLYBENCH_TIME)
 *   polybench_prevent_dce, POLYBENCH_DUMP_*  array dumps (-DPOLYBENCH_DUMP_ARRAYS)
 *
 * The dataset sizes (-DMINI_DATASET ...), DATA_TYPE and SCALAR_VAL live in each kernel's
 * own header, as in PolyBench. polybench_alloc_data and the timers are defined in
 * polybench.c (link it to build the programs on their own).
 */
#ifndef POLYBENCH_H
# define POLYBENCH_H

# include <stdlib.h>

# ifndef POLYBENCH_PADDING_FACTOR
#  define POLYBENCH_PADDING_FACTOR 0
# endif

# ifdef POLYBENCH_USE_RESTRICT
#  define POLYBENCH_RESTRICT restrict
# else
#  define POLYBENCH_RESTRICT
# endif

/* C99 arrays in function prototypes: constant sizes unless asked. */
# ifdef POLYBENCH_USE_C99_PROTO
#  define POLYBENCH_C99_SELECT(x, y) y
# else
#  define POLYBENCH_C99_SELECT(x, y) x
# endif

/* Loop bounds in scops: the kernel's parameters unless asked for the constants. */
# ifdef POLYBENCH_USE_SCALAR_LB
#  define POLYBENCH_LOOP_BOUND(x, y) x
# else
#  define POLYBENCH_LOOP_BOUND(x, y) y
# endif

# ifndef POLYBENCH_STACK_ARRAYS
#  define POLYBENCH_ARRAY(x) *x
#  define POLYBENCH_FREE_ARRAY(x) free((void*)x);
#  define POLYBENCH_DECL_VAR(x) (*x)
# else
#  define POLYBENCH_ARRAY(x) x
#  define POLYBENCH_FREE_ARRAY(x)
#  define POLYBENCH_DECL_VAR(x) x
# endif

# define POLYBENCH_1D(var, dim1, ddim1) \
  var[POLYBENCH_RESTRICT POLYBENCH_C99_SELECT(dim1, ddim1) + POLYBENCH_PADDING_FACTOR]
# define POLYBENCH_2D(var, dim1, dim2, ddim1, ddim2) \
  var[POLYBENCH_RESTRICT POLYBENCH_C99_SELECT(dim1, ddim1) + POLYBENCH_PADDING_FACTOR] \
     [POLYBENCH_C99_SELECT(dim2, ddim2) + POLYBENCH_PADDING_FACTOR]
# define POLYBENCH_3D(var, dim1, dim2, dim3, ddim1, ddim2, ddim3) \
  var[POLYBENCH_RESTRICT POLYBENCH_C99_SELECT(dim1, ddim1) + POLYBENCH_PADDING_FACTOR] \
     [POLYBENCH_C99_SELECT(dim2, ddim2) + POLYBENCH_PADDING_FACTOR] \
     [POLYBENCH_C99_SELECT(dim3, ddim3) + POLYBENCH_PADDING_FACTOR]

# define POLYBENCH_ALLOC_1D_ARRAY(n1, type) \
  (type(*)[n1 + POLYBENCH_PADDING_FACTOR]) \
  polybench_alloc_data(n1 + POLYBENCH_PADDING_FACTOR, sizeof(type))
# define POLYBENCH_ALLOC_2D_ARRAY(n1, n2, type) \
  (type(*)[n1 + POLYBENCH_PADDING_FACTOR][n2 + POLYBENCH_PADDING_FACTOR]) \
  polybench_alloc_data((n1 + POLYBENCH_PADDING_FACTOR) * (n2 + POLYBENCH_PADDING_FACTOR), \
                       sizeof(type))
# define POLYBENCH_ALLOC_3D_ARRAY(n1, n2, n3, type) \
  (type(*)[n1 + POLYBENCH_PADDING_FACTOR][n2 + POLYBENCH_PADDING_FACTOR] \
          [n3 + POLYBENCH_PADDING_FACTOR]) \
  polybench_alloc_data((n1 + POLYBENCH_PADDING_FACTOR) * (n2 + POLYBENCH_PADDING_FACTOR) * \
                       (n3 + POLYBENCH_PADDING_FACTOR), sizeof(type))

# ifndef POLYBENCH_STACK_ARRAYS
#  define POLYBENCH_1D_ARRAY_DECL(var, type, dim1, ddim1) \
  type POLYBENCH_1D(POLYBENCH_DECL_VAR(var), dim1, ddim1); \
  var = POLYBENCH_ALLOC_1D_ARRAY(POLYBENCH_C99_SELECT(dim1, ddim1), type);
#  define POLYBENCH_2D_ARRAY_DECL(var, type, dim1, dim2, ddim1, ddim2) \
  type POLYBENCH_2D(POLYBENCH_DECL_VAR(var), dim1, dim2, ddim1, ddim2); \
  var = POLYBENCH_ALLOC_2D_ARRAY(POLYBENCH_C99_SELECT(dim1, ddim1), \
                                 POLYBENCH_C99_SELECT(dim2, ddim2), type);
#  define POLYBENCH_3D_ARRAY_DECL(var, type, dim1, dim2, dim3, ddim1, ddim2, ddim3) \
  type POLYBENCH_3D(POLYBENCH_DECL_VAR(var), dim1, dim2, dim3, ddim1, ddim2, ddim3); \
  var = POLYBENCH_ALLOC_3D_ARRAY(POLYBENCH_C99_SELECT(dim1, ddim1), \
                                 POLYBENCH_C99_SELECT(dim2, ddim2), \
                                 POLYBENCH_C99_SELECT(dim3, ddim3), type);
# else
#  define POLYBENCH_1D_ARRAY_DECL(var, type, dim1, ddim1) \
  type POLYBENCH_1D(POLYBENCH_DECL_VAR(var), dim1, ddim1);
#  define POLYBENCH_2D_ARRAY_DECL(var, type, dim1, dim2, ddim1, ddim2) \
  type POLYBENCH_2D(POLYBENCH_DECL_VAR(var), dim1, dim2, ddim1, ddim2);
#  define POLYBENCH_3D_ARRAY_DECL(var, type, dim1, dim2, dim3, ddim1, ddim2, ddim3) \
  type POLYBENCH_3D(POLYBENCH_DECL_VAR(var), dim1, dim2, dim3, ddim1, ddim2, ddim3);
# endif

/* Dead-code elimination guard and array dumps. */
# ifdef POLYBENCH_DUMP_ARRAYS
#  define POLYBENCH_DCE_ONLY_CODE
# else
#  define POLYBENCH_DCE_ONLY_CODE if (argc > 42 && ! strcmp(argv[0], ""))
# endif
# define polybench_prevent_dce(func) POLYBENCH_DCE_ONLY_CODE func

# define POLYBENCH_DUMP_TARGET stderr
# define POLYBENCH_DUMP_START fprintf(POLYBENCH_DUMP_TARGET, "==BEGIN DUMP_ARRAYS==\n")
# define POLYBENCH_DUMP_FINISH fprintf(POLYBENCH_DUMP_TARGET, "==END   DUMP_ARRAYS==\n")
# define POLYBENCH_DUMP_BEGIN(s) fprintf(POLYBENCH_DUMP_TARGET, "begin dump: %s", s)
# define POLYBENCH_DUMP_END(s) fprintf(POLYBENCH_DUMP_TARGET, "\nend   dump: %s\n", s)

/* Timers. */
# ifdef POLYBENCH_TIME
#  define polybench_start_instruments polybench_timer_start();
#  define polybench_stop_instruments polybench_timer_stop();
#  define polybench_print_instruments polybench_timer_print();
# else
#  define polybench_start_instruments
#  define polybench_stop_instruments
#  define polybench_print_instruments
# endif

extern void* polybench_alloc_data(unsigned long long int n, int elt_size);
extern void polybench_free_data(void* ptr);
extern void polybench_timer_start(void);
extern void polybench_timer_stop(void);
extern void polybench_timer_print(void);

#endif /* !POLYBENCH_H */
