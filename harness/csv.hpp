// csv.hpp: a results file that is never half-written and never overwritten.
//
// The file is created with O_EXCL (an existing file is an error, not a victim), the header is
// written at once, and each row is formatted in memory and written with a single write(2) on
// an O_APPEND descriptor, so a run that is interrupted or killed leaves every completed row and
// no partial line. A write that stops short (a full disk, a file-size limit) is rolled back with
// ftruncate to the end of the last whole row before the error is reported: a row is on disk
// whole or not at all. A process that must end at once takes row_write_lock() first and keeps
// it, so that its exit cannot cut a row in the middle either.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

namespace schedlab {

class CsvWriter {
 public:
  // Creates `path` and writes the header. Throws std::runtime_error naming the file, the errno
  // and the fix if it exists or cannot be created or written; a file it created is removed.
  CsvWriter(std::string path, std::vector<std::string> columns);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  // One row, cells in column order (an empty cell is a missing value). Written and flushed to
  // the kernel before returning. Throws std::runtime_error naming the file and the errno when it
  // cannot be written whole; the file then ends with the row before.
  void write_row(const std::vector<std::string>& cells);

  const std::string& path() const noexcept { return path_; }
  std::size_t rows() const noexcept { return rows_.load(std::memory_order_relaxed); }
  // The row count, for a process ending abruptly (diagnostics.hpp reads it).
  const std::atomic<std::size_t>& row_counter() const noexcept { return rows_; }

  static std::string quote(const std::string& cell);

 private:
  void write_line(const std::vector<std::string>& cells);

  std::string path_;
  std::size_t columns_;
  int fd_ = -1;
  off_t committed_ = 0;  // bytes of the header and the whole rows written so far
  std::atomic<std::size_t> rows_{0};
};

// The two halves of a results file that is never overwritten and never holds half a line,
// shared by the CSV and the latency file (latency_file.hpp). create_results_file: a new file
// (O_EXCL, O_APPEND); throws std::runtime_error naming it, the errno and the fix ("already
// exists; choose another --out"). append_whole_line: `line` with one write(2) while holding
// row_write_lock(); returns 0 and advances *committed, or, when the write stopped short, cuts
// the file back to *committed and returns the errno (`cut_error`: 0 when the cut worked, else
// its errno).
int create_results_file(const std::string& path);
int append_whole_line(int fd, const std::string& line, off_t* committed, int* cut_error);

// Held by every CsvWriter while it writes a row. Never destroyed: a thread that ends the process
// takes it (without a limit on how long it waits for a stuck write: `try_lock_for`) and keeps it.
std::timed_mutex& row_write_lock();

}  // namespace schedlab
