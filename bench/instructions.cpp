// Instructions per typed matmul call, counted by valgrind (a noisy shared machine moves times
// by 10-30 %; instruction counts do not move). The same case as bench.cpp's typed_matmul, with
// inputs the compiler cannot see through. Run it twice, with N and 2N calls, and divide the
// difference by N, so that start-up and exit cancel out (see bench/README.md).
#include <ctspmd/rules/matmul.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <new>

using namespace ctspmd;

namespace {
const process_mesh mesh({2, 3});
std::array<dist_tensor_spec, 2> inputs{dist_tensor_spec({512, 48, 64, 32}, {mesh, {0, 1, -1, -1}}),
                                       dist_tensor_spec({32, 48}, {mesh, {-1, -1}})};
spmd_info info;

[[gnu::noinline]] void call() { ::new (&info) spmd_info(rules::matmul::infer_forward(inputs)); }
}  // namespace

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 1000;
  asm volatile("" : : "r"(&inputs) : "memory");  // the inputs are not constants to fold
  for (long i = 0; i < calls; ++i) {
    call();
    asm volatile("" : : : "memory");
  }
  std::printf("%zu\n", info.outputs[0].dims_mapping().size());
}
