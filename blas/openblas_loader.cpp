// OpenBLAS, loaded on first use with the kernels this CPU can run.
//
// Debian's OpenBLAS (a DYNAMIC_ARCH build) picks its kernels from the CPU's family and model
// numbers when it initialises, and falls back to its Prescott (SSE3) kernels for a model it does
// not know: a virtual machine that reports a generic "Intel Xeon Processor" gets an sgemm about
// ten times slower than its AVX-512 cores can run. OpenBLAS honours OPENBLAS_CORETYPE, read once
// as it initialises, which is before main() for a program linked against it. So qforge does not
// link it: the OpenBLAS functions qforge calls are defined here, and the first call loads the
// library with dlopen after setting OPENBLAS_CORETYPE from the CPU's features, unless the user
// set it. Hidden visibility keeps these definitions inside the qforge binary that links them, so
// other libraries of the process still reach their own BLAS.
//
// Besides sgemm the model layer uses OpenBLAS's ssyrk and dgemm, and two LAPACK routines that
// Debian's libopenblas.so.0 carries (dpotrf, Cholesky factorisation; dpotri, the inverse from
// it) for GPTQ's inverse Hessians (model/quantize/src/gptq.cpp). They are declared in
// blas/lapack_cholesky.h: LAPACKE, the C interface, lives in another library (liblapacke), whose
// liblapack.so.3 would bring a second OpenBLAS in before main().
#include <cblas.h>
#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "lapack_cholesky.h"

namespace {

using Sgemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint,
                       float, const float*, blasint, const float*, blasint, float, float*, blasint);
using Ssyrk = void (*)(CBLAS_ORDER, CBLAS_UPLO, CBLAS_TRANSPOSE, blasint, blasint, float,
                       const float*, blasint, float, float*, blasint);
using Dgemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint,
                       double, const double*, blasint, const double*, blasint, double, double*,
                       blasint);
// LAPACK's Fortran interface; the trailing argument is the hidden length of `uplo`.
using Potr = void (*)(const char*, const int*, double*, const int*, int*, std::size_t);
using SetThreads = void (*)(int);
using GetThreads = int (*)();
using CoreName = char* (*)();

struct OpenBlas {
  Sgemm sgemm = nullptr;
  Ssyrk ssyrk = nullptr;
  Dgemm dgemm = nullptr;
  Potr dpotrf = nullptr;
  Potr dpotri = nullptr;
  SetThreads set_num_threads = nullptr;
  GetThreads get_num_threads = nullptr;
  CoreName get_corename = nullptr;
};

// The kernel family OpenBLAS would choose for a CPU it recognises with these features; the
// Haswell kernels are also what it runs on AMD's Zen cores (same speed, measured).
const char* core_for_this_cpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;  // OpenBLAS's own choice
}

template <typename F>
F symbol(void* library, const char* name) {
  void* address = dlsym(library, name);
  if (!address)
    throw std::runtime_error(std::string("OpenBLAS: the loaded library has no ") + name);
  return reinterpret_cast<F>(address);
}

OpenBlas load() {
  if (const char* core = core_for_this_cpu(); core && !std::getenv("OPENBLAS_CORETYPE"))
    setenv("OPENBLAS_CORETYPE", core, 0);
  void* library = nullptr;
  std::string errors;
  for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
    if ((library = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    errors += std::string("\n  ") + dlerror();
  }
  if (!library)
    throw std::runtime_error(
        "OpenBLAS could not be loaded (float GEMM and convolution need it; Debian package "
        "libopenblas0):" +
        errors);
  // Never closed: OpenBLAS's threads live as long as the process.
  return OpenBlas{symbol<Sgemm>(library, "cblas_sgemm"),
                  symbol<Ssyrk>(library, "cblas_ssyrk"),
                  symbol<Dgemm>(library, "cblas_dgemm"),
                  symbol<Potr>(library, "dpotrf_"),
                  symbol<Potr>(library, "dpotri_"),
                  symbol<SetThreads>(library, "openblas_set_num_threads"),
                  symbol<GetThreads>(library, "openblas_get_num_threads"),
                  symbol<CoreName>(library, "openblas_get_corename")};
}

const OpenBlas& openblas() {
  static const OpenBlas loaded = load();  // a throw leaves it unloaded: the next call retries
  return loaded;
}

}  // namespace

extern "C" {

void cblas_sgemm(OPENBLAS_CONST CBLAS_ORDER order, OPENBLAS_CONST CBLAS_TRANSPOSE trans_a,
                 OPENBLAS_CONST CBLAS_TRANSPOSE trans_b, OPENBLAS_CONST blasint m,
                 OPENBLAS_CONST blasint n, OPENBLAS_CONST blasint k, OPENBLAS_CONST float alpha,
                 OPENBLAS_CONST float* a, OPENBLAS_CONST blasint lda, OPENBLAS_CONST float* b,
                 OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float* c,
                 OPENBLAS_CONST blasint ldc) {
  openblas().sgemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cblas_ssyrk(OPENBLAS_CONST CBLAS_ORDER order, OPENBLAS_CONST CBLAS_UPLO uplo,
                 OPENBLAS_CONST CBLAS_TRANSPOSE trans, OPENBLAS_CONST blasint n,
                 OPENBLAS_CONST blasint k, OPENBLAS_CONST float alpha, OPENBLAS_CONST float* a,
                 OPENBLAS_CONST blasint lda, OPENBLAS_CONST float beta, float* c,
                 OPENBLAS_CONST blasint ldc) {
  openblas().ssyrk(order, uplo, trans, n, k, alpha, a, lda, beta, c, ldc);
}

void cblas_dgemm(OPENBLAS_CONST CBLAS_ORDER order, OPENBLAS_CONST CBLAS_TRANSPOSE trans_a,
                 OPENBLAS_CONST CBLAS_TRANSPOSE trans_b, OPENBLAS_CONST blasint m,
                 OPENBLAS_CONST blasint n, OPENBLAS_CONST blasint k, OPENBLAS_CONST double alpha,
                 OPENBLAS_CONST double* a, OPENBLAS_CONST blasint lda, OPENBLAS_CONST double* b,
                 OPENBLAS_CONST blasint ldb, OPENBLAS_CONST double beta, double* c,
                 OPENBLAS_CONST blasint ldc) {
  openblas().dgemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void qforge_dpotrf(char uplo, int n, double* a, int lda, int* info) {
  openblas().dpotrf(&uplo, &n, a, &lda, info, 1);
}

void qforge_dpotri(char uplo, int n, double* a, int lda, int* info) {
  openblas().dpotri(&uplo, &n, a, &lda, info, 1);
}

void openblas_set_num_threads(int num_threads) { openblas().set_num_threads(num_threads); }

int openblas_get_num_threads(void) { return openblas().get_num_threads(); }

char* openblas_get_corename(void) { return openblas().get_corename(); }

}  // extern "C"
