// row.hpp: the CSV's columns, each defined once.
//
// A Column says what it holds (name, type, unit, group, meaning), when its cell is empty, and
// how to fill it from what a repetition measured. Everything else reads this table: the CSV
// header and rows, the sidecar's `schema` (which scripts/schedlab_results reads instead of
// keeping its own column lists), `schedlab columns`, and docs/output.md's column table (a test
// checks that the page matches `schedlab columns --markdown`). Adding a column is one entry in
// row.cpp's table; a column that reads a new Measurement field also needs that field in
// measurement_to_json and back (measure.cpp), or the runs measured in another process (simulated
// repetitions, A/B servers) leave it empty: tests/measurement_json_test.cpp fails until it is.
//
// An empty cell always means "not measured", never 0.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "measure.hpp"
#include "plan.hpp"

namespace schedlab {

enum class ColumnType { text, integer, real };

// Everything a row is made from.
struct RowContext {
  const std::string& run_id;
  const std::string& preset;
  const Case& c;
  unsigned block;  // which block of the run (runner_state.hpp): the cases measured together
  unsigned rep;
  const Measurement& m;
};

struct Column {
  std::string name;
  ColumnType type = ColumnType::integer;
  std::string unit;        // "ns", "bytes", "tasks"...; empty for a label or a plain number
  std::string group;       // id, param, result, usage, scheduler, hardware, kernel
  std::string meaning;
  std::string empty_when;  // when the cell is left empty ("never" for required columns)
  std::function<std::string(const RowContext&)> fill;  // "" for an empty cell
};

// Every column, in CSV order.
const std::vector<Column>& columns();
std::vector<std::string> header();
std::vector<std::string> row_cells(const RowContext& r);

// The table as the sidecar's `schema`: [{name, type, unit, group, meaning, empty_when}...].
nlohmann::json schema_json();
// docs/output.md's column table (parameters collapsed into one row).
std::string schema_markdown();

}  // namespace schedlab
