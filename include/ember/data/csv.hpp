// CSV files as datasets: a header row names the columns; each further record becomes a
// CsvRow of typed values (integer, real or text), read eagerly when the dataset is built.
//
//   data::CsvDataset rows("iris.csv");                  // column types inferred
//   const data::CsvRow r = *rows.get(0);
//   double len = r.real("sepal_length");                 // ints read as reals too
//   std::string cls = r.text("species");
//
//   struct Iris { float sepal_length; std::string species; };
//   auto iris = data::load_csv("iris.csv", [](const data::CsvRow& r) {
//     return Iris{float(r.real("sepal_length")), r.text("species")};
//   });
//
// Format (RFC 4180): fields separated by `delimiter`; a field in double quotes may hold the
// delimiter, newlines and doubled quotes (""); records end with \n or \r\n; blank lines are
// skipped. Line numbers count physical lines from 1 (the header); a record that spans lines
// is reported by the line where it starts.
// Types: CsvOptions::types fixes a column's type; other columns are inferred from every
// value: integer if all parse as int64, real if all parse as numbers, else text. Empty fields
// are null (CsvValue holds std::monostate) and do not affect inference.
// Errors (ember::Error) name the file and the line: a missing file, a record with a wrong
// column count, a quoted field left open at the end of the file, a value that does not parse
// as its column's declared type, a parse function that throws (load_csv).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "ember/data/dataset.hpp"

namespace ember::data {

// A column's type: integer (int64), real (double) or text (std::string).
enum class CsvType { integer, real, text };

// One field's value: std::monostate for an empty field, else the value as its column's CsvType.
using CsvValue = std::variant<std::monostate, int64_t, double, std::string>;

// How CsvDataset reads a file.
struct CsvOptions {
  char delimiter = ',';                  // field separator (e.g. '\t' for TSV)
  std::map<std::string, CsvType> types;  // declared column types; the rest are inferred
  bool infer_types = true;               // false: undeclared columns are text
};

// The column names and types of a CSV file, shared by its rows.
struct CsvSchema {
  std::string path;                            // the file the schema was read from (named in errors)
  std::vector<std::string> names;              // column names, from the header row
  std::vector<CsvType> types;                  // column types, in the order of names
  size_t column(std::string_view name) const;  // index of a column; throws naming the file
};

// One record of a CSV file: its values in column order and the line it starts on.
class CsvRow {
 public:
  // Normally made by CsvDataset.
  CsvRow(std::shared_ptr<const CsvSchema> schema, std::vector<CsvValue> values, size_t line)
      : schema_(std::move(schema)), values_(std::move(values)), line_(line) {}

  size_t size() const { return values_.size(); }        // Number of columns.
  size_t line() const { return line_; }                 // the file line where this record starts
  const CsvSchema& schema() const { return *schema_; }  // The file's column names and types.
  // The value in column `column` (0-based); throws std::out_of_range past the last column.
  const CsvValue& operator[](size_t column) const { return values_.at(column); }
  // The value in the named column; an unknown name throws ember::Error naming the file.
  const CsvValue& operator[](std::string_view name) const { return values_[schema_->column(name)]; }
  bool is_null(std::string_view name) const;  // True when the named column's field is empty.

  // Typed access; a null or mistyped value throws naming the file, line and column.
  int64_t integer(std::string_view name) const;
  double real(std::string_view name) const;              // integer columns convert
  const std::string& text(std::string_view name) const;  // text columns only; numbers and empty fields throw

 private:
  std::shared_ptr<const CsvSchema> schema_;
  std::vector<CsvValue> values_;
  size_t line_;
};

// A CSV file read eagerly into rows, one dataset item per record (the header row excluded).
class CsvDataset final : public Dataset<CsvRow> {
 public:
  // Reads and parses `path`; throws ember::Error for a missing or empty file, a duplicate column name, a bad
  // record (see the header comment), or CsvOptions::types naming a column the file lacks.
  explicit CsvDataset(const std::string& path, CsvOptions options = {});
  std::optional<CsvRow> get(size_t index) const override;
  size_t size() const override { return rows_.size(); }
  const CsvSchema& schema() const { return *schema_; }                        // The file's column names and types.
  const std::vector<std::string>& columns() const { return schema_->names; }  // The column names, from the header row.

 private:
  std::shared_ptr<const CsvSchema> schema_;
  std::vector<CsvRow> rows_;
};

namespace detail {
[[noreturn]] void rethrow_csv_parse_error(const CsvRow& row);
}

// Reads `path` and turns each row into a T = parse(row) (an in-memory dataset of T);
// exceptions thrown by `parse` are rethrown as ember::Error prefixed with "path:line: ".
template <class F>
auto load_csv(const std::string& path, F parse, CsvOptions options = {}) {
  using T = std::remove_cvref_t<std::invoke_result_t<F&, const CsvRow&>>;
  CsvDataset rows(path, std::move(options));
  std::vector<T> items;
  items.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    CsvRow row = *rows.get(i);
    try {
      items.push_back(parse(row));
    } catch (...) {
      detail::rethrow_csv_parse_error(row);
    }
  }
  return DatasetPtr<T>(in_memory(std::move(items)));
}

}  // namespace ember::data
