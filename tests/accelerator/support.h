// Shared helpers of the accelerator tests: seeds, scratch directories, the plugins the tests
// load (cpu_scalar and the fixtures of fixtures/), and injected costs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qforge/accelerator.h"
#include "qforge/error.h"
#include "qforge/testing/accelerator_hooks.h"

namespace acc_test {

// QFORGE_TEST_SEED when set, else a fresh one from std::random_device; tests print it on failure.
std::uint64_t test_seed();

// A fresh empty directory for this test (removed by the next run of the same test).
std::filesystem::path scratch_dir(const std::string& name);

// The named plugins ("cpu_scalar", "acc_good", "acc_device", "acc_liar", "acc_thrower",
// "acc_hang", "acc_picky", "acc_resident"), loaded once per process.
std::vector<qforge::LoadedPlugin> plugins(std::initializer_list<std::string> names);

// Options for tests: a cache at `cache`, small budgets, few samples.
qforge::AcceleratorOptions options(const std::filesystem::path& cache);

using CostFunction =
    std::function<double(const qforge::CandidateId&, const qforge::OpDesc&, qforge::CostPhase)>;
// AcceleratorOptions::test_hooks that replace timing by `cost`.
std::shared_ptr<const qforge::detail::AcceleratorTestHooks> cost_hooks(CostFunction cost);
// Injected costs by candidate label ("acc_good[0]/fast"); labels not listed cost 1 second.
// transfer costs likewise (default 0).
std::shared_ptr<const qforge::detail::AcceleratorTestHooks> injected(
    std::map<std::string, double> op, std::map<std::string, double> transfer = {});

// A small uint8 x int8 matmul_integer workload with M rows.
qforge::Workload small_matmul(std::int64_t m, qforge::OpKind op = qforge::OpKind::matmul_integer);

}  // namespace acc_test
