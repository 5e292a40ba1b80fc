#include "cpu_tensor.hpp"

#include <cstring>
#include <mutex>

#include "ember/core/error.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

CpuTensor::CpuTensor(TensorMeta m)
    : Primitive(std::move(m)),
      storage(std::make_shared<Storage>(size_t(shape().numel()) * dtype_size(dtype()))),
      strides(contiguous_strides(shape())) {}

CpuTensor::CpuTensor(TensorMeta m, std::shared_ptr<Storage> s, ShapeDims st, int64_t off)
    : Primitive(std::move(m)), storage(std::move(s)), strides(std::move(st)), offset(off) {}

bool CpuTensor::is_contiguous() const {
  int64_t expected = 1;
  for (int d = shape().rank() - 1; d >= 0; --d) {
    if (shape()[d] != 1 && strides[d] != expected) return false;
    expected *= shape()[d];
  }
  return true;
}

CpuTensorPtr alloc(const TensorMeta& meta) { return std::make_shared<CpuTensor>(meta); }

CpuTensorPtr contiguous(const PrimitivePtr& p) {
  auto t = as_cpu_ptr(p);
  if (t->is_contiguous()) return t;
  auto out = alloc(t->meta());
  int64_t es = int64_t(dtype_size(t->dtype()));
  strided_loop(t->shape(),
               {{static_cast<char*>(out->raw()), es, out->strides}, {static_cast<char*>(t->raw()), es, t->strides}},
               [es](char** p, const int64_t* s, int64_t n) {
                 if (s[0] == es && s[1] == es) {
                   std::memcpy(p[0], p[1], size_t(n * es));
                   return;
                 }
                 for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], p[1] + i * s[1], size_t(es));
               });
  return out;
}

namespace {
std::mutex& derived_mutex() {
  static std::mutex mu;
  return mu;
}
}  // namespace

std::shared_ptr<const Storage> Storage::derived(uint64_t key, size_t bytes, const std::function<void(void*)>& make) {
  std::lock_guard lock(derived_mutex());
  if (!derived_) derived_ = std::make_unique<std::vector<Derived>>();
  for (Derived& d : *derived_) {
    if (d.key != key) continue;
    if (!d.form) {
      auto form = std::make_shared<Storage>(bytes);
      make(form->data);
      d.form = std::move(form);
    }
    return d.form;
  }
  derived_->push_back({key, nullptr});
  return nullptr;
}

void Storage::drop_derived() {
  std::lock_guard lock(derived_mutex());
  derived_.reset();
}

CpuTensorPtr output_reusing(Op& op, size_t i, const TensorMeta& meta) {
  if (i < op.inputs.size() && op.inputs[i] && op.inputs[i].use_count() == 1) {
    auto& t = as_cpu(op.inputs[i]);
    if (t.storage.use_count() == 1 && t.storage->begin_write() && t.is_contiguous() && t.offset == 0 && t.shape() == meta.shape &&
        dtype_size(t.dtype()) == dtype_size(meta.dtype) && t.storage->bytes == size_t(t.numel()) * dtype_size(t.dtype()))
      return std::make_shared<CpuTensor>(meta, t.storage, contiguous_strides(meta.shape), 0);
  }
  return alloc(meta);
}

std::vector<int64_t> broadcast_strides(const CpuTensor& t, const Shape& out) {
  std::vector<int64_t> s(out.rank(), 0);
  int off = out.rank() - t.shape().rank();
  for (int d = 0; d < t.shape().rank(); ++d) s[off + d] = t.shape()[d] == 1 ? 0 : t.strides[d];
  return s;
}

void strided_loop(const Shape& shape, std::vector<LoopOperand> ops, const InnerLoop& fn, int64_t grain) {
  int64_t n = shape.numel();
  if (n == 0) return;
  size_t k = ops.size();
  // Collapse: drop size-1 dims, merge dim d into d+1 when contiguous for every operand.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(k);
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty()) {
      bool mergeable = true;
      for (size_t i = 0; i < k; ++i)
        if (st[i].back() != ops[i].strides[d] * shape[d]) mergeable = false;
      if (mergeable) {
        dims.back() *= shape[d];
        for (size_t i = 0; i < k; ++i) st[i].back() = ops[i].strides[d];
        continue;
      }
    }
    dims.push_back(shape[d]);
    for (size_t i = 0; i < k; ++i) st[i].push_back(ops[i].strides[d]);
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (size_t i = 0; i < k; ++i) st[i].push_back(0);
  }
  int r = int(dims.size());
  int64_t inner = dims[r - 1];
  int64_t outer = n / inner;
  std::vector<int64_t> inner_bytes(k);
  for (size_t i = 0; i < k; ++i) inner_bytes[i] = st[i][r - 1] * ops[i].elem_size;

  auto run = [&](int64_t o0, int64_t o1) {
    std::vector<char*> ptrs(k);
    std::vector<int64_t> idx(r > 1 ? r - 1 : 1, 0);
    // decompose o0 into an index over the outer dims
    int64_t rem = o0;
    for (int d = r - 2; d >= 0; --d) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
    }
    for (int64_t o = o0; o < o1; ++o) {
      for (size_t i = 0; i < k; ++i) {
        int64_t off = 0;
        for (int d = 0; d < r - 1; ++d) off += idx[d] * st[i][d];
        ptrs[i] = ops[i].base + off * ops[i].elem_size;
      }
      fn(ptrs.data(), inner_bytes.data(), inner);
      for (int d = r - 2; d >= 0; --d) {
        if (++idx[d] < dims[d]) break;
        idx[d] = 0;
      }
    }
  };
  if (n <= grain || outer == 1) {
    if (outer == 1 && n > grain) {
      // one long run: split it
      parallel_for(0, inner, grain, [&](int64_t a, int64_t b) {
        std::vector<char*> ptrs(k);
        for (size_t i = 0; i < k; ++i) ptrs[i] = ops[i].base + a * inner_bytes[i];
        fn(ptrs.data(), inner_bytes.data(), b - a);
      });
      return;
    }
    run(0, outer);
    return;
  }
  int64_t outer_grain = std::max<int64_t>(1, grain / inner);
  parallel_for(0, outer, outer_grain, run);
}

}  // namespace ember::cpu
