#ifndef CTSPMD_INTEROP_HPP
#define CTSPMD_INTEROP_HPP
/// \file Other frameworks' sharding languages: PyTorch DTensor placements, JAX PartitionSpec and
/// OpenXLA Shardy, converted to and from `tensor_dist_attr` at compile time and run time, and
/// `named_mesh`. Not part of the umbrella header (it is parsing code most users do not need);
/// it includes no `<string>`, stream or allocating container either.

#include <ctspmd/dist/named_mesh.hpp>
#include <ctspmd/interop/dtensor.hpp>
#include <ctspmd/interop/layout.hpp>
#include <ctspmd/interop/partition_spec.hpp>
#include <ctspmd/interop/shardy.hpp>
#include <ctspmd/interop/text.hpp>

#endif
