// The two LAPACK routines of OpenBLAS that the model layer calls, defined by
// blas/openblas_loader.cpp (which loads OpenBLAS on first use). Column-major, as LAPACK is; a
// row-major symmetric matrix is the same array, with `uplo` naming the other triangle.
#pragma once

extern "C" {

// LAPACK dpotrf: the Cholesky factor of the symmetric positive definite n x n matrix `a`, in its
// `uplo` triangle ('U': a = U^T U, 'L': a = L L^T; the other triangle is left as it was).
// info: 0 on success, i > 0 when the leading minor of order i is not positive definite.
void qforge_dpotrf(char uplo, int n, double* a, int lda, int* info);

// LAPACK dpotri: the inverse of the matrix whose Cholesky factor dpotrf left in `a`, in the same
// triangle. info > 0: the factor is singular.
void qforge_dpotri(char uplo, int n, double* a, int lda, int* info);

}  // extern "C"
