// csv.hpp: a results file that is never half-written and never overwritten.
//
// The file is created with O_EXCL (an existing file is an error, not a victim), the header is
// written at once, and each row is formatted in memory and written with a single write(2) on
// an O_APPEND descriptor, so a run that is interrupted or killed leaves every completed row and
// no partial line.
#pragma once

#include <string>
#include <vector>

namespace schedlab {

class CsvWriter {
 public:
  // Creates `path` and writes the header. Throws std::runtime_error naming the file and the fix
  // if it exists or cannot be created.
  CsvWriter(std::string path, std::vector<std::string> columns);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  // One row, cells in column order (an empty cell is a missing value). Written and flushed to
  // the kernel before returning.
  void write_row(const std::vector<std::string>& cells);

  const std::string& path() const noexcept { return path_; }
  std::size_t rows() const noexcept { return rows_; }

  static std::string quote(const std::string& cell);

 private:
  void write_line(const std::vector<std::string>& cells);

  std::string path_;
  std::size_t columns_;
  int fd_ = -1;
  std::size_t rows_ = 0;
};

}  // namespace schedlab
