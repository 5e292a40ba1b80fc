// SQLite tables as datasets (libsqlite3): one item per row, in rowid order.
//
//   auto rows = std::make_shared<data::SqliteDataset>("data.db", "samples");
//   data::SqliteRow r = *rows->get(0);
//   double x = r.real("x");  int64_t y = r.integer("label");  r.columns();  // name -> SqlValue
//
//   struct Sample { double x; int64_t y; };
//   auto samples = data::load_sqlite("data.db", "samples",
//                                    [](const data::SqliteRow& r) { return Sample{r.real("x"), r.integer("label")}; });
//
// The database is opened read-only; the rowids are listed when the dataset is built and each
// get() reads one row (`SELECT ... WHERE rowid = ?`, serialised by a mutex, so several loader
// threads may share the dataset). Tables WITHOUT ROWID are not supported. Errors name the
// database and the table (and the rowid for a row): a missing database, a missing table or
// column, a parse function that throws.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "ember/data/dataset.hpp"
#include "ember/data/views.hpp"

namespace ember::data {

// NULL, INTEGER, REAL, TEXT, BLOB.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string, std::vector<uint8_t>>;

// One row of a SQLite table: its rowid and its values by column name, with typed accessors.
class SqliteRow {
 public:
  // Normally made by SqliteDataset; `source` names the database and table for error messages.
  SqliteRow(std::shared_ptr<const std::string> source, int64_t rowid, std::map<std::string, SqlValue> columns)
      : source_(std::move(source)), rowid_(rowid), columns_(std::move(columns)) {}

  int64_t rowid() const { return rowid_; }                                     // The row's SQLite rowid.
  const std::map<std::string, SqlValue>& columns() const { return columns_; }  // All values read, by column name.
  const SqlValue& operator[](std::string_view name) const;                     // throws for an unknown column
  bool is_null(std::string_view name) const;  // True when the named column is NULL; throws for an unknown column.
  // Typed access; a NULL or mistyped value throws naming the db, table, rowid and column.
  int64_t integer(std::string_view name) const;
  double real(std::string_view name) const;                       // INTEGER converts
  const std::string& text(std::string_view name) const;           // TEXT values only
  const std::vector<uint8_t>& blob(std::string_view name) const;  // BLOB values only (raw bytes)
  // "'db' table 'name' rowid N": where this row came from (for error messages).
  std::string where() const;

 private:
  std::shared_ptr<const std::string> source_;  // "'db' table 'name'"
  int64_t rowid_;
  std::map<std::string, SqlValue> columns_;
};

// How SqliteDataset reads a table.
struct SqliteOptions {
  std::vector<std::string> columns;  // the columns to read; empty: all
};

// A SQLite table opened read-only, one item per row in rowid order; get() reads its row from the database
// (a mutex serialises reads, so loader threads may share it).
class SqliteDataset final : public Dataset<SqliteRow> {
 public:
  // Opens `db_path` read-only and lists the table's rowids. Throws ember::Error for a database that cannot be
  // opened or read, a missing table, or an options.columns name the table lacks.
  SqliteDataset(const std::string& db_path, const std::string& table, SqliteOptions options = {});
  ~SqliteDataset() override;  // Closes the database.
  SqliteDataset(const SqliteDataset&) = delete;
  SqliteDataset& operator=(const SqliteDataset&) = delete;

  std::optional<SqliteRow> get(size_t index) const override;
  size_t size() const override;
  // The columns each row holds (options.columns, or all of the table's), in SELECT order.
  const std::vector<std::string>& column_names() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

namespace detail {
[[noreturn]] void rethrow_sqlite_parse_error(const SqliteRow& row);
}

// The table's rows turned into T = parse(row), read lazily; exceptions thrown by `parse` are
// rethrown as ember::Error naming the db, table and rowid.
template <class F>
auto load_sqlite(const std::string& db_path, const std::string& table, F parse, SqliteOptions options = {}) {
  using T = std::remove_cvref_t<std::invoke_result_t<F&, const SqliteRow&>>;
  auto rows = std::make_shared<const SqliteDataset>(db_path, table, std::move(options));
  return map(rows, [parse = std::move(parse)](SqliteRow row) -> T {
    try {
      return parse(row);
    } catch (...) {
      detail::rethrow_sqlite_parse_error(row);
    }
  });
}

}  // namespace ember::data
