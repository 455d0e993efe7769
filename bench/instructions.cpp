// Instructions per typed rule call, counted by valgrind (a noisy shared machine moves times
// by 10-30 %; instruction counts do not move). The same cases as bench.cpp's typed_matmul and
// typed_embedding, with inputs the compiler cannot see through. Run it twice, with N and 2N
// calls, and divide the difference by N, so that start-up and exit cancel out (see
// bench/README.md): `ctspmd_instructions N [matmul|embedding]`.
#include <ctspmd/rules/embedding.hpp>
#include <ctspmd/rules/matmul.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

using namespace ctspmd;

namespace {
const process_mesh mesh({2, 3});
std::array<dist_tensor_spec, 2> matmul_inputs{dist_tensor_spec({512, 48, 64, 32}, {mesh, {0, 1, -1, -1}}),
                                              dist_tensor_spec({32, 48}, {mesh, {-1, -1}})};
std::array<dist_tensor_spec, 2> embedding_inputs{dist_tensor_spec({4, 16}, {mesh, {1, -1}}),
                                                 dist_tensor_spec({512, 768}, {mesh, {0, -1}})};
spmd_info info;

[[gnu::noinline]] void call_matmul() { ::new (&info) spmd_info(rules::matmul::infer_forward(matmul_inputs)); }
[[gnu::noinline]] void call_embedding() { ::new (&info) spmd_info(rules::embedding::infer_forward(embedding_inputs)); }
}  // namespace

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 1000;
  const bool embedding = argc > 2 && std::strcmp(argv[2], "embedding") == 0;
  asm volatile("" : : "r"(&matmul_inputs), "r"(&embedding_inputs) : "memory");  // not constants to fold
  for (long i = 0; i < calls; ++i) {
    embedding ? call_embedding() : call_matmul();
    asm volatile("" : : : "memory");
  }
  std::printf("%zu\n", info.outputs[0].rank());
}
