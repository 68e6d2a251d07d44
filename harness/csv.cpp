#include "csv.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "errno_text.hpp"

namespace schedlab {

std::timed_mutex& row_write_lock() {
  static auto* lock = new std::timed_mutex;  // never destroyed: see csv.hpp
  return *lock;
}

int create_results_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST) {
      throw std::runtime_error("output file " + path +
                               " already exists; choose another --out (results are never overwritten)");
    }
    throw std::runtime_error("cannot create output file " + path + ": " + errno_text(err) +
                             "; choose a writable --out path");
  }
  return fd;
}

// Invariant: on return the file is *committed bytes long and ends with a whole line, whether
// the write succeeded or not (what a failed write added was cut off again, if it could be).
int append_whole_line(int fd, const std::string& line, off_t* committed, int* cut_error) {
  std::lock_guard lock(row_write_lock());
  // One write for the whole line: an interruption leaves the line whole or absent. A regular
  // file takes it whole unless the disk or a limit runs out; then the rest is retried once, to
  // get the errno that says why.
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      *cut_error = ::ftruncate(fd, *committed) == 0 ? 0 : errno;
      return err;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  *committed += static_cast<off_t>(line.size());
  return 0;
}

CsvWriter::CsvWriter(std::string path, std::vector<std::string> columns)
    : path_(std::move(path)), columns_(columns.size()) {
  fd_ = create_results_file(path_);
  try {
    write_line(columns);
  } catch (...) {
    // Ours, created a moment ago: a file with half a header would block the rerun.
    ::close(fd_);
    fd_ = -1;
    ::unlink(path_.c_str());
    throw;
  }
}

CsvWriter::~CsvWriter() {
  if (fd_ >= 0) ::close(fd_);
}

std::string CsvWriter::quote(const std::string& cell) {
  if (cell.find_first_of(",\"\n\r") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

void CsvWriter::write_row(const std::vector<std::string>& cells) {
  if (cells.size() != columns_) {
    throw std::logic_error("CSV row has " + std::to_string(cells.size()) + " cells for " +
                           std::to_string(columns_) + " columns");
  }
  write_line(cells);
  rows_.fetch_add(1, std::memory_order_relaxed);
}

// Invariant: on return the file is committed_ bytes long and ends with a whole line; on a throw
// it still is (what a failed write added was cut off again).
void CsvWriter::write_line(const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i != 0) line += ',';
    line += quote(cells[i]);
  }
  line += '\n';
  int cut_error = 0;
  if (const int err = append_whole_line(fd_, line, &committed_, &cut_error); err != 0) {
    const std::string kept = cut_error != 0 ? "; the partial row could not be cut off (" + errno_text(cut_error) + ")"
                             : committed_ == 0 ? ""
                             : "; the " + std::to_string(rows_.load(std::memory_order_relaxed)) +
                                   " rows before it are whole";
    throw std::runtime_error((committed_ == 0 ? "cannot write the header of " : "cannot write a row to ") + path_ +
                             ": " + errno_text(err) + kept +
                             "; free space (or raise the file-size limit) or choose another --out");
  }
}

}  // namespace schedlab
