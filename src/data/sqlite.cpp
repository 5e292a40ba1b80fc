// SqliteDataset: rowids listed once, one row read per get() through a cached statement.
#include "ember/data/sqlite.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <exception>
#include <mutex>

namespace ember::data {
namespace {

std::string quote_identifier(const std::string& name) {
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

const char* kind_name(const SqlValue& v) {
  switch (v.index()) {
    case 0:
      return "NULL";
    case 1:
      return "INTEGER";
    case 2:
      return "REAL";
    case 3:
      return "TEXT";
    default:
      return "BLOB";
  }
}

}  // namespace

struct SqliteDataset::Impl {
  std::string path, table;
  std::shared_ptr<const std::string> source;
  sqlite3* db = nullptr;
  sqlite3_stmt* row_stmt = nullptr;
  std::vector<int64_t> rowids;
  std::vector<std::string> columns;
  mutable std::mutex mu;

  ~Impl() {
    sqlite3_finalize(row_stmt);
    sqlite3_close(db);
  }
  [[noreturn]] void fail(const std::string& what) const {
    EMBER_FAIL("SqliteDataset: ", *source, ": ", what, db ? std::string(": ") + sqlite3_errmsg(db) : std::string());
  }
  sqlite3_stmt* prepare(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) fail("cannot run '" + sql + "'");
    return stmt;
  }
};

SqliteDataset::SqliteDataset(const std::string& db_path, const std::string& table, SqliteOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = db_path;
  m.table = table;
  m.source = std::make_shared<const std::string>("'" + db_path + "' table '" + table + "'");
  if (sqlite3_open_v2(db_path.c_str(), &m.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = m.db ? sqlite3_errmsg(m.db) : "out of memory";
    EMBER_FAIL("SqliteDataset: cannot open database '", db_path, "' (for table '", table, "'): ", msg);
  }

  // Does the table exist? (A clearer message than sqlite's "no such table".)
  sqlite3_stmt* check = m.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?");
  sqlite3_bind_text(check, 1, table.c_str(), -1, SQLITE_TRANSIENT);
  const int found = sqlite3_step(check);
  sqlite3_finalize(check);
  if (found == SQLITE_ERROR || found == SQLITE_NOTADB || found == SQLITE_CORRUPT) m.fail("cannot read the database");
  if (found != SQLITE_ROW) {
    std::string tables;
    sqlite3_stmt* list = m.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    while (sqlite3_step(list) == SQLITE_ROW)
      tables += (tables.empty() ? "" : ", ") + std::string(reinterpret_cast<const char*>(sqlite3_column_text(list, 0)));
    sqlite3_finalize(list);
    EMBER_FAIL("SqliteDataset: database '", db_path, "' has no table '", table,
               "' (tables: ", tables.empty() ? "none" : tables, ")");
  }

  const std::string qtable = quote_identifier(table);
  std::string select = "*";
  if (!options.columns.empty()) {
    // Check the names first: SQLite reads an unknown "quoted" name as a string literal.
    sqlite3_stmt* all = m.prepare("SELECT * FROM " + qtable + " LIMIT 0");
    std::vector<std::string> have;
    std::string list;
    for (int c = 0; c < sqlite3_column_count(all); ++c) {
      have.emplace_back(sqlite3_column_name(all, c));
      list += (list.empty() ? "" : ", ") + have.back();
    }
    sqlite3_finalize(all);
    select.clear();
    for (const std::string& c : options.columns) {
      EMBER_CHECK(std::find(have.begin(), have.end(), c) != have.end(), "SqliteDataset: ", *m.source, ": no column '",
                  c, "' (columns: ", list, ")");
      select += (select.empty() ? "" : ", ") + quote_identifier(c);
    }
  }
  sqlite3_stmt* ids = m.prepare("SELECT rowid FROM " + qtable + " ORDER BY rowid");
  int rc;
  while ((rc = sqlite3_step(ids)) == SQLITE_ROW) m.rowids.push_back(sqlite3_column_int64(ids, 0));
  sqlite3_finalize(ids);
  if (rc != SQLITE_DONE) m.fail("cannot list the rows");
  m.row_stmt = m.prepare("SELECT " + select + " FROM " + qtable + " WHERE rowid = ?");
  for (int c = 0; c < sqlite3_column_count(m.row_stmt); ++c) m.columns.emplace_back(sqlite3_column_name(m.row_stmt, c));
}

SqliteDataset::~SqliteDataset() = default;

size_t SqliteDataset::size() const { return impl_->rowids.size(); }

const std::vector<std::string>& SqliteDataset::column_names() const { return impl_->columns; }

std::optional<SqliteRow> SqliteDataset::get(size_t index) const {
  const Impl& m = *impl_;
  if (index >= m.rowids.size()) return std::nullopt;
  const int64_t rowid = m.rowids[index];
  std::lock_guard<std::mutex> lock(m.mu);
  sqlite3_stmt* st = m.row_stmt;
  sqlite3_reset(st);
  sqlite3_bind_int64(st, 1, rowid);
  const int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) m.fail("rowid " + std::to_string(rowid) + " is gone (was the table changed?)");
  if (rc != SQLITE_ROW) m.fail("cannot read rowid " + std::to_string(rowid));
  std::map<std::string, SqlValue> values;
  for (int c = 0; c < static_cast<int>(m.columns.size()); ++c) {
    SqlValue v;
    switch (sqlite3_column_type(st, c)) {
      case SQLITE_INTEGER:
        v = static_cast<int64_t>(sqlite3_column_int64(st, c));
        break;
      case SQLITE_FLOAT:
        v = sqlite3_column_double(st, c);
        break;
      case SQLITE_TEXT: {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
        v = std::string(p, static_cast<size_t>(sqlite3_column_bytes(st, c)));
        break;
      }
      case SQLITE_BLOB: {
        const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(st, c));
        v = std::vector<uint8_t>(p, p + sqlite3_column_bytes(st, c));
        break;
      }
      default:
        break;  // NULL
    }
    values.emplace(m.columns[size_t(c)], std::move(v));
  }
  sqlite3_reset(st);
  return SqliteRow(m.source, rowid, std::move(values));
}

std::string SqliteRow::where() const { return *source_ + " rowid " + std::to_string(rowid_); }

const SqlValue& SqliteRow::operator[](std::string_view name) const {
  auto it = columns_.find(std::string(name));
  if (it == columns_.end()) {
    std::string names;
    for (const auto& [n, v] : columns_) names += (names.empty() ? "" : ", ") + n;
    EMBER_FAIL(where(), ": no column '", name, "' (columns: ", names, ")");
  }
  return it->second;
}

bool SqliteRow::is_null(std::string_view name) const { return (*this)[name].index() == 0; }

int64_t SqliteRow::integer(std::string_view name) const {
  const SqlValue& v = (*this)[name];
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  EMBER_FAIL(where(), ": column '", name, "' is ", kind_name(v), ", not INTEGER");
}

double SqliteRow::real(std::string_view name) const {
  const SqlValue& v = (*this)[name];
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  EMBER_FAIL(where(), ": column '", name, "' is ", kind_name(v), ", not a number");
}

const std::string& SqliteRow::text(std::string_view name) const {
  const SqlValue& v = (*this)[name];
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  EMBER_FAIL(where(), ": column '", name, "' is ", kind_name(v), ", not TEXT");
}

const std::vector<uint8_t>& SqliteRow::blob(std::string_view name) const {
  const SqlValue& v = (*this)[name];
  if (const auto* b = std::get_if<std::vector<uint8_t>>(&v)) return *b;
  EMBER_FAIL(where(), ": column '", name, "' is ", kind_name(v), ", not BLOB");
}

namespace detail {
void rethrow_sqlite_parse_error(const SqliteRow& row) {
  try {
    throw;
  } catch (const std::exception& e) {
    EMBER_FAIL(row.where(), ": ", e.what());
  } catch (...) {
    EMBER_FAIL(row.where(), ": the parse function threw a non-standard exception");
  }
}
}  // namespace detail

}  // namespace ember::data
