// DLPack: tensors shared, without copying, with any library that speaks it (PyTorch, NumPy,
// JAX, CuPy, ...). The structs below are DLPack's C ABI (version 0.8, the layout PyTorch 1.13
// uses), declared in ember::dlpack so that they do not clash with a dlpack.h the program also
// includes: pointers to either are interchangeable (reinterpret_cast).
//
//   auto x = DynTensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
//   dlpack::DLManagedTensor* m = to_dlpack(x);   // x's buffer, kept alive until m's deleter runs
//   DynTensor y = from_dlpack(m);                 // takes m: its deleter runs when y's buffer dies
//   # run
//
// to_dlpack: a contiguous tensor is exported in place; a strided view (a transpose, a slice) is
// first made contiguous by a copy. CPU tensors export as kDLCPU, CUDA tensors as kDLCUDA with the
// device index (after the device has finished the work that writes them). A consumer may write
// through the exported buffer; every ember tensor that shares it then sees the new values.
// from_dlpack: host memory (kDLCPU, kDLCUDAHost) is wrapped in place when it is row-major
// contiguous and aligned for its dtype; other strides (and bool values) are copied, and the
// deleter then runs at once. CUDA memory (kDLCUDA, kDLCUDAManaged) is wrapped in place with any
// strides, on Device::cuda(device_id); the import waits for the device (a DLPack capsule names
// no stream, so the producer's writes must be issued before it), and the deleter runs once the
// last ember tensor over the memory is gone and ember's stream is done with it (CUDA bools are
// copied, as on the host). ember never writes into an imported buffer; the producer's later
// writes are seen by ember.
// dtypes: f64, f32, f16, bf16, i64, i32, i16, i8, u8 and bool (kDLBool; kDLUInt/kDLInt of 8 bits
// are u8/i8), one lane.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {
namespace dlpack {

// DLPack's device types (ember exports kDLCPU and kDLCUDA, imports kDLCPU, kDLCUDAHost, kDLCUDA
// and kDLCUDAManaged).
enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
};

// DLPack's element type codes.
enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

// Where a DLTensor's memory is.
struct DLDevice {
  DLDeviceType device_type;  // kDLCPU, kDLCUDA, ...
  int32_t device_id;  // the device index (0 for the CPU)
};

// An element type: code, bits and lanes (f32: kDLFloat, 32, 1).
struct DLDataType {
  uint8_t code;    // a DLDataTypeCode
  uint8_t bits;    // of one lane
  uint16_t lanes;  // 1 for scalars
};

// DLPack's description of strided memory, without its owner.
struct DLTensor {
  void* data;  // the first element is at data + byte_offset
  DLDevice device;  // where the memory is
  int32_t ndim;  // rank
  DLDataType dtype;  // element type
  int64_t* shape;    // ndim entries
  int64_t* strides;  // ndim entries, in elements; nullptr: compact row-major
  uint64_t byte_offset;  // bytes from data to the first element
};

// A DLTensor with its producer's context and deleter: what to_dlpack and from_dlpack exchange.
struct DLManagedTensor {
  DLTensor dl_tensor;  // the memory and its layout
  void* manager_ctx;                       // the producer's
  void (*deleter)(DLManagedTensor* self);  // the consumer calls it once, when done
};

static_assert(sizeof(DLDevice) == 8 && sizeof(DLDataType) == 4);
// DLPack's C layout on 64-bit targets (wasm32's 4-byte pointers give another, as in C)
static_assert(sizeof(void*) != 8 ||
              (sizeof(DLTensor) == 48 && offsetof(DLTensor, shape) == 24 && offsetof(DLTensor, byte_offset) == 40));
static_assert(sizeof(void*) != 8 || (sizeof(DLManagedTensor) == 64 && offsetof(DLManagedTensor, deleter) == 56));

}  // namespace dlpack

// A new DLManagedTensor viewing `t`'s values (see above), owned by the caller until handed to a
// consumer; its deleter releases ember's buffer. Throws Error for an undefined tensor.
dlpack::DLManagedTensor* to_dlpack(const DynTensor& t);

// A tensor on Device::cpu() over `m`'s values, taking `m`: its deleter runs when the last ember
// tensor that uses the buffer dies (at once when the values were copied). Throws Error, leaving
// `m` with the caller, on a null pointer, an unsupported device or dtype, or negative dims.
DynTensor from_dlpack(dlpack::DLManagedTensor* m);

}  // namespace ember
