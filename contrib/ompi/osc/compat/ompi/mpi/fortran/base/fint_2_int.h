/*
 * Stand-in for Open MPI's ompi/mpi/fortran/base/fint_2_int.h, which Debian's libopenmpi-dev
 * does not install although ompi/op/op.h includes it. op.h uses one macro of it,
 * OMPI_INT_2_FINT, in ompi_op_reduce's branch for Fortran user-defined ops; osc swy only
 * reduces with predefined ops, but the inline function must still compile. The conversion
 * is the plain cast Open MPI uses when a Fortran INTEGER is as wide as a C int (checked).
 */
#ifndef OSC_SWY_COMPAT_FINT_2_INT_H
#define OSC_SWY_COMPAT_FINT_2_INT_H

#include "ompi_config.h"

#if OMPI_SIZEOF_FORTRAN_INTEGER != SIZEOF_INT
#error "osc swy's fint_2_int.h stand-in assumes a Fortran INTEGER as wide as a C int"
#endif

#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))
#define OMPI_FINT_2_INT(a) ((int)(a))

#endif
