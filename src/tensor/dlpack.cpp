// DLPack export and import (include/ember/tensor/dlpack.hpp).
#include "ember/tensor/dlpack.hpp"

#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/core/backend.hpp"
#include "ember/core/error.hpp"
#include "ember/core/tensor_data.hpp"
#include "ember/tensor/ops.hpp"

namespace ember {

using dlpack::DLDataType;
using dlpack::DLManagedTensor;

namespace {

struct DTypeCode {
  DType dtype;
  uint8_t code;
  uint8_t bits;
};
// ember's dtypes and DLPack's codes; the first entry of a dtype is what it exports as.
constexpr std::array<DTypeCode, 12> kDTypeCodes{{
    {DType::f64, dlpack::kDLFloat, 64},
    {DType::f32, dlpack::kDLFloat, 32},
    {DType::f16, dlpack::kDLFloat, 16},
    {DType::bf16, dlpack::kDLBfloat, 16},
    {DType::i64, dlpack::kDLInt, 64},
    {DType::i32, dlpack::kDLInt, 32},
    {DType::i16, dlpack::kDLInt, 16},
    {DType::i8, dlpack::kDLInt, 8},
    {DType::u8, dlpack::kDLUInt, 8},
    {DType::boolean, dlpack::kDLBool, 8},
    // older producers (DLPack < 0.6) give bool as 8-bit unsigned: read as u8 above. A 1-bit
    // kDLUInt is bool in some of them.
    {DType::boolean, dlpack::kDLUInt, 1},
    {DType::boolean, dlpack::kDLBool, 1},
}};

DLDataType dl_dtype_of(DType dt) {
  for (const DTypeCode& c : kDTypeCodes)
    if (c.dtype == dt) return DLDataType{c.code, dt == DType::boolean ? uint8_t(8) : c.bits, 1};
  throw Error("to_dlpack: dtype " + std::string(dtype_name(dt)) + " has no DLPack code");
}

DType dtype_of_dl(const DLDataType& d) {
  EMBER_CHECK(d.lanes == 1, "from_dlpack: argument 'dl_tensor.dtype' has ", int(d.lanes),
              " lanes; ember tensors hold one value per element (lanes 1)");
  for (const DTypeCode& c : kDTypeCodes)
    if (c.code == d.code && c.bits == d.bits) return c.dtype;
  throw Error("from_dlpack: argument 'dl_tensor.dtype' (code " + std::to_string(int(d.code)) + ", " +
              std::to_string(int(d.bits)) +
              " bits) is not an ember dtype: f64/f32/f16 (code 2), bf16 (code 4), i64..i8 (code 0), u8 (code 1) "
              "or bool (code 6)");
}

// What an exported DLManagedTensor owns: its shape and strides, and ember's buffer.
struct ExportContext {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::shared_ptr<const void> owner;
};

void delete_export(DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); }

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = step;
    step *= shape[i];
  }
  return s;
}

}  // namespace

DLManagedTensor* to_dlpack(const DynTensor& t) {
  EMBER_CHECK(t.defined(), "to_dlpack: argument 't' is an undefined tensor");
  auto ctx = std::make_unique<ExportContext>();
  ctx->shape.assign(t.shape().begin(), t.shape().end());
  ctx->strides = row_major_strides(ctx->shape);
  DLManagedTensor& m = ctx->managed;
  m.dl_tensor.dtype = dl_dtype_of(t.dtype());
  std::optional<MemoryView> view = t.device().backend().memory_view(t.primitive());
  if (view) {
    m.dl_tensor.data = view->data;
    m.dl_tensor.device = view->cuda_device >= 0 ? dlpack::DLDevice{dlpack::kDLCUDA, view->cuda_device}
                                                : dlpack::DLDevice{dlpack::kDLCPU, 0};
    ctx->owner = std::move(view->owner);
  } else {  // a backend that cannot expose its memory: a host copy
    auto data = std::make_shared<TensorData>(t.into_data());
    m.dl_tensor.data = data->bytes().data();
    m.dl_tensor.device = {dlpack::kDLCPU, 0};
    ctx->owner = std::move(data);
  }
  m.dl_tensor.ndim = static_cast<int32_t>(ctx->shape.size());
  m.dl_tensor.shape = ctx->shape.data();
  m.dl_tensor.strides = ctx->strides.data();
  m.dl_tensor.byte_offset = 0;
  m.manager_ctx = ctx.get();
  m.deleter = delete_export;
  return &ctx.release()->managed;
}

namespace {

// CUDA memory, wrapped in place with its strides (any layout); ember never writes into it, and
// m's deleter runs after the last ember tensor over it dies and the device is done with it.
DynTensor from_dlpack_cuda(DLManagedTensor* m, const TensorMeta& meta, const std::vector<int64_t>& dims,
                           size_t numel) {
  const dlpack::DLTensor& dl = m->dl_tensor;
  const Device device = [&] {
    try {
      return Device::cuda(dl.device.device_id);
    } catch (const Error& e) {
      EMBER_FAIL("from_dlpack: argument 'dl_tensor.device' is CUDA device ", dl.device.device_id,
                 ", which ember cannot use: ", e.what());
    }
  }();
  std::vector<int64_t> strides(dims.size());
  for (size_t d = dims.size(), step = 1; d-- > 0;) {
    strides[d] = dl.strides ? dl.strides[d] : int64_t(step);
    step *= size_t(dims[d]);
  }
  // m is taken only once the backend has accepted the memory: an Error leaves it the caller's
  auto taken = std::make_shared<bool>(false);
  std::shared_ptr<const void> owner(m, [taken](const void* p) {
    auto* managed = static_cast<DLManagedTensor*>(const_cast<void*>(p));
    if (*taken && managed->deleter) managed->deleter(managed);
  });
  auto* data = static_cast<std::byte*>(dl.data) + dl.byte_offset;
  PrimitivePtr p = device.backend().wrap_device_memory(meta.dtype == DType::boolean ? TensorMeta{meta.shape, DType::u8}
                                                                                      : meta,
                                                       numel ? data : nullptr, strides, owner);
  EMBER_CHECK(p != nullptr, "from_dlpack: backend ", device.backend().name(), " cannot use CUDA memory in place");
  *taken = true;
  DynTensor out(std::move(p), device);
  // ember's bools are 0 or 1: other nonzero bytes become 1 (a copy; the import is released)
  return meta.dtype == DType::boolean ? ne(out, 0) : out;
}

}  // namespace

DynTensor from_dlpack(DLManagedTensor* m) {
  EMBER_CHECK(m != nullptr, "from_dlpack: argument 'm' is a null DLManagedTensor");
  const dlpack::DLTensor& dl = m->dl_tensor;
  const auto device_type = static_cast<int32_t>(dl.device.device_type);
  const bool cuda = device_type == dlpack::kDLCUDA || device_type == dlpack::kDLCUDAManaged;
  EMBER_CHECK(cuda || device_type == dlpack::kDLCPU || device_type == dlpack::kDLCUDAHost,
              "from_dlpack: argument 'dl_tensor.device' has device type ", device_type,
              "; ember imports host memory (kDLCPU = 1, kDLCUDAHost = 3) and CUDA memory (kDLCUDA = 2, "
              "kDLCUDAManaged = 13)");
  EMBER_CHECK(dl.ndim >= 0 && (dl.ndim == 0 || dl.shape != nullptr), "from_dlpack: argument 'dl_tensor.ndim' is ",
              dl.ndim, (dl.ndim < 0 ? "" : " with a null shape"));
  const DType dtype = dtype_of_dl(dl.dtype);
  std::vector<int64_t> dims(dl.shape, dl.shape + dl.ndim);
  for (int i = 0; i < dl.ndim; ++i)
    EMBER_CHECK(dims[i] >= 0, "from_dlpack: argument 'dl_tensor.shape' has dim ", i, " = ", dims[i],
                "; dims must be >= 0");
  const Shape shape(dims);
  const TensorMeta meta{shape, dtype};
  const size_t elem = dtype_size(dtype);
  const size_t numel = static_cast<size_t>(shape.numel());
  const auto* base = static_cast<const std::byte*>(dl.data) + dl.byte_offset;
  EMBER_CHECK(numel == 0 || dl.data != nullptr, "from_dlpack: argument 'dl_tensor.data' is null for ", numel,
              " elements");

  // Row-major contiguous (strides of size-1 dims do not matter) or not?
  bool contiguous = true;
  if (dl.strides != nullptr) {
    int64_t step = 1;
    for (int i = dl.ndim; i-- > 0;) {
      if (dims[i] != 1 && dl.strides[i] != step) contiguous = false;
      step *= dims[i];
    }
  }
  if (cuda) return from_dlpack_cuda(m, meta, dims, numel);
  Backend& cpu = Device::cpu().backend();
  if (contiguous) {
    // the deleter runs when the last ember tensor over these bytes dies (or at once, when
    // wrap_bytes copied: bool values, unaligned data)
    std::shared_ptr<const void> owner(m, [](const void* p) {
      auto* managed = static_cast<DLManagedTensor*>(const_cast<void*>(p));
      if (managed->deleter) managed->deleter(managed);
    });
    if (dtype == DType::boolean) {  // ember's bools are 0 or 1; normalise any other byte
      TensorData data(shape, dtype);
      for (size_t i = 0; i < numel; ++i) data.bytes()[i] = std::byte(base[i] != std::byte{0});
      return DynTensor(cpu.write(data), Device::cpu());
    }
    return DynTensor(cpu.wrap_bytes(meta, std::span<const std::byte>(base, numel * elem), std::move(owner)),
                     Device::cpu());
  }
  // Strided (also negative or zero strides): gathered into a row-major copy.
  TensorData data(shape, dtype);
  std::vector<int64_t> index(dims.size(), 0);
  for (size_t i = 0; i < numel; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < dims.size(); ++d) offset += index[d] * dl.strides[d];
    const std::byte* src = base + offset * static_cast<int64_t>(elem);
    if (dtype == DType::boolean)
      data.bytes()[i] = std::byte(*src != std::byte{0});
    else
      std::memcpy(data.bytes().data() + i * elem, src, elem);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  DynTensor out(cpu.write(data), Device::cpu());
  if (m->deleter) m->deleter(m);
  return out;
}

}  // namespace ember
