// CSV reading: an RFC 4180 tokenizer, column type inference and typed rows.
#include "ember/data/csv.hpp"

#include <charconv>
#include <exception>
#include <set>

#include "file_io.hpp"

namespace ember::data {
namespace {

struct Record {
  std::vector<std::string> fields;
  size_t line = 0;  // where the record starts
};

// Splits the file text into records, tracking physical line numbers.
class Tokenizer {
 public:
  Tokenizer(const std::string& path, const std::string& text, char delimiter)
      : path_(path), text_(text), delim_(delimiter) {}

  // The next record, or false at the end of the file.
  bool next(Record& rec) {
    skip_blank_lines();
    if (pos_ >= text_.size()) return false;
    rec.fields.clear();
    rec.line = line_;
    while (true) {
      rec.fields.push_back(field());
      if (pos_ < text_.size() && text_[pos_] == delim_) {
        ++pos_;
        continue;
      }
      end_of_line();
      return true;
    }
  }

  bool at_end() const { return pos_ >= text_.size(); }

 private:
  void skip_blank_lines() {
    while (pos_ < text_.size() && (text_[pos_] == '\n' || text_[pos_] == '\r')) end_of_line();
  }
  void end_of_line() {
    if (pos_ >= text_.size()) return;
    if (text_[pos_] == '\r') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
    ++line_;
  }
  std::string field() {
    std::string out;
    if (pos_ < text_.size() && text_[pos_] == '"') {
      const size_t open_line = line_;
      ++pos_;
      while (true) {
        EMBER_CHECK(pos_ < text_.size(), path_, ":", open_line,
                    ": a quoted field opened on this line is not closed before the end of the file (line ", line_,
                    "); is the file truncated?");
        char c = text_[pos_];
        if (c == '"') {
          if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
            out += '"';
            pos_ += 2;
            continue;
          }
          ++pos_;
          break;
        }
        if (c == '\n') ++line_;
        out += c;
        ++pos_;
      }
      EMBER_CHECK(pos_ >= text_.size() || text_[pos_] == delim_ || text_[pos_] == '\r' || text_[pos_] == '\n', path_,
                  ":", line_, ": unexpected character '", text_[pos_], "' after the closing quote of a field");
      return out;
    }
    const size_t begin = pos_;
    while (pos_ < text_.size() && text_[pos_] != delim_ && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
    return text_.substr(begin, pos_ - begin);
  }

  const std::string& path_;
  const std::string& text_;
  char delim_;
  size_t pos_ = 0;
  size_t line_ = 1;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.size() > 1 && s.front() == '+') s.remove_prefix(1);
  return s;
}

bool parse_int(std::string_view s, int64_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_real(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

const char* type_name(CsvType t) {
  switch (t) {
    case CsvType::integer:
      return "an integer";
    case CsvType::real:
      return "a number";
    case CsvType::text:
      return "text";
  }
  return "?";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

}  // namespace

size_t CsvSchema::column(std::string_view name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  EMBER_FAIL(path, ": no column '", name, "' (columns: ", join_names(names), ")");
}

bool CsvRow::is_null(std::string_view name) const { return std::holds_alternative<std::monostate>((*this)[name]); }

int64_t CsvRow::integer(std::string_view name) const {
  const CsvValue& v = (*this)[name];
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  EMBER_FAIL(schema_->path, ":", line_, ": column '", name, "' is ",
             std::holds_alternative<std::monostate>(v) ? "empty"
                                                       : (std::holds_alternative<double>(v) ? "a real number" : "text"),
             ", not an integer");
}

double CsvRow::real(std::string_view name) const {
  const CsvValue& v = (*this)[name];
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  EMBER_FAIL(schema_->path, ":", line_, ": column '", name, "' is ",
             std::holds_alternative<std::monostate>(v) ? "empty" : "text", ", not a number");
}

const std::string& CsvRow::text(std::string_view name) const {
  const CsvValue& v = (*this)[name];
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  EMBER_FAIL(schema_->path, ":", line_, ": column '", name, "' is ",
             std::holds_alternative<std::monostate>(v) ? "empty" : "numeric", ", not text (declare it CsvType::text)");
}

CsvDataset::CsvDataset(const std::string& path, CsvOptions options) {
  const std::string text = detail::read_file(path, "CsvDataset");
  Tokenizer tok(path, text, options.delimiter);
  Record header;
  EMBER_CHECK(tok.next(header), "CsvDataset: '", path, "' is empty; expected a header row naming the columns");
  auto schema = std::make_shared<CsvSchema>();
  schema->path = path;
  schema->names = header.fields;
  const size_t ncols = header.fields.size();
  std::set<std::string> seen;
  for (const std::string& name : schema->names)
    EMBER_CHECK(seen.insert(name).second, path, ":", header.line, ": column '", name, "' appears twice in the header");
  for (const auto& [name, type] : options.types) {
    (void)type;
    EMBER_CHECK(seen.count(name), "CsvDataset: CsvOptions::types names column '", name, "', which '", path,
                "' does not have (columns: ", join_names(schema->names), ")");
  }

  std::vector<Record> records;
  Record rec;
  while (tok.next(rec)) {
    EMBER_CHECK(rec.fields.size() == ncols, path, ":", rec.line, ": the record has ", rec.fields.size(), " column",
                rec.fields.size() == 1 ? "" : "s", ", the header (line ", header.line, ") has ", ncols,
                tok.at_end() && rec.fields.size() < ncols ? " (it is the last record: is the file truncated?)" : "");
    records.push_back(rec);
  }

  // Column types: declared, else inferred from every non-empty value.
  schema->types.resize(ncols);
  for (size_t c = 0; c < ncols; ++c) {
    auto declared = options.types.find(schema->names[c]);
    if (declared != options.types.end()) {
      schema->types[c] = declared->second;
      continue;
    }
    if (!options.infer_types) {
      schema->types[c] = CsvType::text;
      continue;
    }
    bool all_int = true, all_real = true;
    int64_t i;
    double d;
    for (const Record& r : records) {
      const std::string& f = r.fields[c];
      if (f.empty()) continue;
      if (all_int && !parse_int(f, i)) all_int = false;
      if (!all_int && !parse_real(f, d)) {
        all_real = false;
        break;
      }
    }
    schema->types[c] = all_int ? CsvType::integer : (all_real ? CsvType::real : CsvType::text);
  }

  schema_ = schema;
  rows_.reserve(records.size());
  for (Record& r : records) {
    std::vector<CsvValue> values(ncols);
    for (size_t c = 0; c < ncols; ++c) {
      std::string& f = r.fields[c];
      const CsvType t = schema->types[c];
      if (t == CsvType::text) {
        values[c] = std::move(f);
        continue;
      }
      if (trim(f).empty()) continue;  // null
      if (t == CsvType::integer) {
        int64_t v;
        EMBER_CHECK(parse_int(f, v), path, ":", r.line, ": column '", schema->names[c], "': '", f, "' is not ",
                    type_name(t));
        values[c] = v;
      } else {
        double v;
        EMBER_CHECK(parse_real(f, v), path, ":", r.line, ": column '", schema->names[c], "': '", f, "' is not ",
                    type_name(t));
        values[c] = v;
      }
    }
    rows_.emplace_back(schema_, std::move(values), r.line);
  }
}

std::optional<CsvRow> CsvDataset::get(size_t index) const {
  if (index >= rows_.size()) return std::nullopt;
  return rows_[index];
}

namespace detail {
void rethrow_csv_parse_error(const CsvRow& row) {
  try {
    throw;
  } catch (const std::exception& e) {
    EMBER_FAIL(row.schema().path, ":", row.line(), ": ", e.what());
  } catch (...) {
    EMBER_FAIL(row.schema().path, ":", row.line(), ": the parse function threw a non-standard exception");
  }
}
}  // namespace detail

}  // namespace ember::data
