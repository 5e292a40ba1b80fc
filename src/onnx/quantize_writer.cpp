// ModelProto -> protobuf wire format (the counterpart of model_parser.cpp's reader), for the
// models quantize_static writes. Field numbers are onnx.proto's.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ember/core/atomic_write.hpp"
#include "ember/core/error.hpp"
#include "ember/onnx/quantize.hpp"

namespace ember::onnx {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

class Writer {
 public:
  std::vector<std::byte> bytes;

  void varint(uint64_t v) {
    while (v >= 0x80) {
      bytes.push_back(std::byte(uint8_t(v | 0x80)));
      v >>= 7;
    }
    bytes.push_back(std::byte(uint8_t(v)));
  }
  void tag(uint32_t field, WireType w) { varint(uint64_t(field) << 3 | w); }
  void int_field(uint32_t field, int64_t v) {
    tag(field, kVarint);
    varint(uint64_t(v));
  }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void bytes_field(uint32_t field, const void* p, size_t n) {
    tag(field, kBytes);
    varint(n);
    raw(p, n);
  }
  void string_field(uint32_t field, const std::string& s) { bytes_field(field, s.data(), s.size()); }
  // A string field written only when non-empty (proto3 defaults are not written).
  void opt_string(uint32_t field, const std::string& s) {
    if (!s.empty()) string_field(field, s);
  }
  void float_field(uint32_t field, float f) {
    tag(field, kFixed32);
    raw(&f, 4);
  }
  // A nested message: `body` writes into a fresh Writer whose bytes become the field.
  template <class F>
  void message(uint32_t field, F&& body) {
    Writer inner;
    body(inner);
    bytes_field(field, inner.bytes.data(), inner.bytes.size());
  }
  template <class T>
  void packed_varints(uint32_t field, const std::vector<T>& v) {
    if (v.empty()) return;
    Writer inner;
    for (T x : v) inner.varint(uint64_t(int64_t(x)));
    bytes_field(field, inner.bytes.data(), inner.bytes.size());
  }
  template <class T>
  void packed_fixed(uint32_t field, const std::vector<T>& v) {
    if (!v.empty()) bytes_field(field, v.data(), v.size() * sizeof(T));
  }
};

void write_graph(Writer& w, const GraphProto& g, const std::string& base_dir);

void write_tensor(Writer& w, const TensorProto& t, const std::string& base_dir) {
  w.packed_varints(1, t.dims);
  w.int_field(2, t.data_type);
  w.opt_string(8, t.name);
  w.opt_string(12, t.doc_string);
  if (t.external || t.has_segment) {  // read and inline: the written file stands alone
    TensorData d = to_tensor_data(t, base_dir);
    w.bytes_field(9, d.bytes().data(), d.bytes().size());
    return;
  }
  if (t.raw_data) w.bytes_field(9, t.raw_data->data(), t.raw_data->size());
  w.packed_fixed(4, t.float_data);
  w.packed_varints(5, t.int32_data);
  for (const std::string& s : t.string_data) w.string_field(6, s);
  w.packed_varints(7, t.int64_data);
  w.packed_fixed(10, t.double_data);
  w.packed_varints(11, t.uint64_data);
}

void write_type(Writer& w, const TypeProto& t) {
  auto shape = [&](Writer& m) {
    if (!t.shape) return;
    m.message(2, [&](Writer& s) {
      for (const Dimension& d : *t.shape)
        s.message(1, [&](Writer& dw) {
          if (d.value) dw.int_field(1, *d.value);
          else dw.opt_string(2, d.param);
          dw.opt_string(3, d.denotation);
        });
    });
  };
  auto element = [&](Writer& m) {
    if (t.elem) m.message(1, [&](Writer& e) { write_type(e, *t.elem); });
  };
  switch (t.kind) {
    case TypeProto::Kind::tensor:
      w.message(1, [&](Writer& m) {
        if (t.elem_type) m.int_field(1, t.elem_type);
        shape(m);
      });
      break;
    case TypeProto::Kind::sparse_tensor:
      w.message(8, [&](Writer& m) {
        if (t.elem_type) m.int_field(1, t.elem_type);
        shape(m);
      });
      break;
    case TypeProto::Kind::sequence: w.message(4, element); break;
    case TypeProto::Kind::optional: w.message(9, element); break;
    case TypeProto::Kind::map:
      w.message(5, [&](Writer& m) {
        m.int_field(1, t.key_type);
        if (t.elem) m.message(2, [&](Writer& e) { write_type(e, *t.elem); });
      });
      break;
    case TypeProto::Kind::undefined: break;
  }
  w.opt_string(6, t.denotation);
}

void write_value_info(Writer& w, uint32_t field, const ValueInfoProto& v) {
  w.message(field, [&](Writer& m) {
    m.string_field(1, v.name);
    if (v.has_type) m.message(2, [&](Writer& t) { write_type(t, v.type); });
    m.opt_string(3, v.doc_string);
  });
}

void write_attribute(Writer& w, const AttributeProto& a, const std::string& base_dir) {
  w.string_field(1, a.name);
  w.opt_string(21, a.ref_attr_name);
  w.opt_string(13, a.doc_string);
  w.int_field(20, int64_t(a.type));
  switch (a.type) {
    case AttributeType::float_: w.float_field(2, a.f); break;
    case AttributeType::int_: w.int_field(3, a.i); break;
    case AttributeType::string: w.string_field(4, a.s); break;
    case AttributeType::tensor: w.message(5, [&](Writer& m) { write_tensor(m, a.t, base_dir); }); break;
    case AttributeType::graph:
      if (a.g) w.message(6, [&](Writer& m) { write_graph(m, *a.g, base_dir); });
      break;
    case AttributeType::floats: w.packed_fixed(7, a.floats); break;
    case AttributeType::ints: w.packed_varints(8, a.ints); break;
    case AttributeType::strings:
      for (const std::string& s : a.strings) w.string_field(9, s);
      break;
    case AttributeType::tensors:
      for (const TensorProto& t : a.tensors) w.message(10, [&](Writer& m) { write_tensor(m, t, base_dir); });
      break;
    case AttributeType::graphs:
      for (const GraphProto& g : a.graphs) w.message(11, [&](Writer& m) { write_graph(m, g, base_dir); });
      break;
    case AttributeType::type_proto: w.message(14, [&](Writer& m) { write_type(m, a.tp); }); break;
    case AttributeType::type_protos:
      for (const TypeProto& t : a.type_protos) w.message(15, [&](Writer& m) { write_type(m, t); });
      break;
    default: EMBER_FAIL("onnx: save_model: attribute '", a.name, "' of type ", attribute_type_name(a.type), " cannot be written");
  }
}

void write_graph(Writer& w, const GraphProto& g, const std::string& base_dir) {
  for (const NodeProto& n : g.nodes)
    w.message(1, [&](Writer& m) {
      for (const std::string& s : n.inputs) m.string_field(1, s);
      for (const std::string& s : n.outputs) m.string_field(2, s);
      m.opt_string(3, n.name);
      m.string_field(4, n.op_type);
      for (const AttributeProto& a : n.attributes) m.message(5, [&](Writer& am) { write_attribute(am, a, base_dir); });
      m.opt_string(6, n.doc_string);
      m.opt_string(7, n.domain);
    });
  w.opt_string(2, g.name);
  for (const TensorProto& t : g.initializers) w.message(5, [&](Writer& m) { write_tensor(m, t, base_dir); });
  w.opt_string(10, g.doc_string);
  for (const ValueInfoProto& v : g.inputs) write_value_info(w, 11, v);
  for (const ValueInfoProto& v : g.outputs) write_value_info(w, 12, v);
  for (const ValueInfoProto& v : g.value_info) write_value_info(w, 13, v);
}

}  // namespace

std::vector<std::byte> serialize_model(const ModelProto& model, const std::string& base_dir) {
  EMBER_CHECK(model.functions.empty(), "onnx: save_model: the model has ", model.functions.size(),
              " model-local functions, which ember does not keep and cannot write");
  const std::string& dir = base_dir.empty() ? model.base_dir : base_dir;
  Writer w;
  w.int_field(1, model.ir_version);
  w.opt_string(2, model.producer_name);
  w.opt_string(3, model.producer_version);
  w.opt_string(4, model.domain);
  if (model.model_version) w.int_field(5, model.model_version);
  w.opt_string(6, model.doc_string);
  w.message(7, [&](Writer& m) { write_graph(m, model.graph, dir); });
  for (const OperatorSetId& o : model.opset_import)
    w.message(8, [&](Writer& m) {
      m.opt_string(1, o.domain);
      m.int_field(2, o.version);
    });
  for (const StringStringEntry& e : model.metadata)
    w.message(14, [&](Writer& m) {
      m.string_field(1, e.key);
      m.string_field(2, e.value);
    });
  return std::move(w.bytes);
}

void save_model(const ModelProto& model, const std::string& path, const std::string& base_dir) {
  const std::vector<std::byte> bytes = serialize_model(model, base_dir);
  // readers see the old file or the new one (a temporary file renamed over it)
  EMBER_CHECK(write_file_atomically(path, {reinterpret_cast<const char*>(bytes.data()), bytes.size()}),
              "onnx: save_model: cannot write '", path, "'");
}

}  // namespace ember::onnx
