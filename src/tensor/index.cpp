// Indexing ops of the tensor API.
#include "dispatch.hpp"

namespace ember {

using namespace detail;

DynTensor gather(DynTensor x, int dim, DynTensor index) {
  return run1(OpKind::gather, {std::move(x), std::move(index)}, DimAttrs{dim});
}
DynTensor scatter(DynTensor x, int dim, DynTensor index, DynTensor src) {
  src = cast_to(std::move(src), x.dtype());
  return run1(OpKind::scatter, {std::move(x), std::move(index), std::move(src)}, DimAttrs{dim});
}
DynTensor scatter_add(DynTensor x, int dim, DynTensor index, DynTensor src) {
  src = cast_to(std::move(src), x.dtype());
  return run1(OpKind::scatter_add, {std::move(x), std::move(index), std::move(src)}, DimAttrs{dim});
}
DynTensor select(DynTensor x, int dim, int64_t index) {
  int d = normalize_dim(dim, x.rank(), "select");
  int64_t n = x.shape()[d];
  EMBER_CHECK(index >= -n && index < n, "select: index ", index, " is out of range for dim ", d, " of ", x.shape());
  if (index < 0) index += n;
  return squeeze(narrow(std::move(x), d, index, 1), d);
}
DynTensor select_assign(DynTensor x, int dim, DynTensor index, DynTensor src) {
  src = cast_to(std::move(src), x.dtype());
  return run1(OpKind::index_copy, {std::move(x), std::move(index), std::move(src)}, DimAttrs{dim});
}
DynTensor select_add(DynTensor x, int dim, DynTensor index, DynTensor src) {
  src = cast_to(std::move(src), x.dtype());
  return run1(OpKind::index_add, {std::move(x), std::move(index), std::move(src)}, DimAttrs{dim});
}
DynTensor index_select(DynTensor x, int dim, DynTensor index) {
  return run1(OpKind::index_select, {std::move(x), std::move(index)}, DimAttrs{dim});
}
DynTensor take(DynTensor x, DynTensor index) {
  Shape s = index.shape();
  DynTensor flat = flatten(std::move(x));
  int64_t n = flat.numel();
  DynTensor idx = flatten(std::move(index));
  idx = where(lower(idx, 0), add(idx, n), idx);  // -1 is the last element, like torch.take
  return reshape(index_select(std::move(flat), 0, std::move(idx)), s.dims());
}
DynTensor nonzero(DynTensor x) { return run1(OpKind::nonzero, {std::move(x)}); }
DynTensor argwhere(DynTensor x) { return nonzero(std::move(x)); }
DynTensor masked_select(DynTensor x, DynTensor mask) {
  return run1(OpKind::masked_select, {std::move(x), std::move(mask)});
}

DynTensor index(DynTensor x, std::initializer_list<TensorIndex> indices) {
  int dim = 0;  // the dim of x that the next index applies to
  for (const TensorIndex& i : indices) {
    EMBER_CHECK(i.kind != TensorIndex::Kind::mask || i.mask.dtype() != DType::boolean || indices.size() == 1,
                "index: a bool mask must be the only index (x.index({mask})), got ", indices.size(), " indices");
    EMBER_CHECK(dim < x.rank() || (i.kind == TensorIndex::Kind::mask && i.mask.dtype() == DType::boolean),
                "index: too many indices (", indices.size(), ") for a tensor of shape ", x.shape());
    switch (i.kind) {
      case TensorIndex::Kind::integer:
        x = select(std::move(x), dim, i.integer);  // removes the dim
        break;
      case TensorIndex::Kind::slice: {
        std::vector<Slice> ranges(dim + 1);
        ranges[dim] = i.slice;
        x = slice(std::move(x), std::move(ranges));
        ++dim;
        break;
      }
      case TensorIndex::Kind::mask:
        if (i.mask.dtype() == DType::boolean) return masked_select(std::move(x), i.mask);
        EMBER_CHECK(i.mask.rank() == 1, "index: an integer tensor index must be 1-d, got shape ", i.mask.shape());
        x = index_select(std::move(x), dim, cast_to(i.mask, DType::i64));
        ++dim;
        break;
    }
  }
  return x;
}

}  // namespace ember
