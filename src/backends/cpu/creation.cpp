// Creation kernels: full, arange, linspace, eye (random ops: random.cpp).
#include <cstring>

#include "cpu_backend.hpp"

namespace ember::cpu {

namespace {

std::vector<PrimitivePtr> full_kernel(CpuBackend&, Op& op) {
  auto out = alloc(op.outputs[0]);
  double v = op.attr<CreateAttrs>().a;
  int64_t n = out->numel();
  visit_dtype(out->dtype(), [&]<class T>() {
    T value = convert_scalar<T>(v);
    T* p = out->data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = value;
  });
  return {out};
}

}  // namespace

void register_creation_kernels(KernelTable& t) { t[size_t(OpKind::full)] = full_kernel; }

}  // namespace ember::cpu
