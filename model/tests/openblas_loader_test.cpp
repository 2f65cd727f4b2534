// blas/openblas_loader.cpp: OpenBLAS loads on first use, runs the kernel family of this CPU (or
// the one the user named in OPENBLAS_CORETYPE), and its sgemm computes what a plain loop does.
#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "test_support.h"

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

TEST(OpenBlasLoader, SgemmMatchesAPlainLoop) {
  SCOPED_TRACE(qforge::model::test::seed_text());
  auto g = qforge::model::test::rng(11);
  std::uniform_int_distribution<int> extent(1, 70);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (int trial = 0; trial < 20; ++trial) {
    const int m = extent(g), n = extent(g), k = extent(g);
    std::vector<float> a(m * k), b(k * n), c(m * n, 7.0f);
    for (float& v : a) v = value(g);
    for (float& v : b) v = value(g);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n,
                0.0f, c.data(), n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int p = 0; p < k; ++p) want += double(a[i * k + p]) * b[p * n + j];
        ASSERT_NEAR(c[i * n + j], want, 1e-5 * k)
            << m << "x" << n << "x" << k << " at " << i << "," << j;
      }
  }
}

TEST(OpenBlasLoader, RunsTheCoreNamedForThisCpu) {
  openblas_set_num_threads(1);  // loads the library
  const char* named = std::getenv("OPENBLAS_CORETYPE");
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    ASSERT_NE(named, nullptr) << "the loader sets OPENBLAS_CORETYPE on an AVX2 CPU";
  }
  if (!named) GTEST_SKIP() << "no AVX2: OpenBLAS chose " << openblas_get_corename();
  EXPECT_EQ(lower(openblas_get_corename()), lower(named))
      << "OpenBLAS did not take OPENBLAS_CORETYPE=" << named;
}

}  // namespace
