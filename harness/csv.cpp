#include "csv.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace schedlab {

CsvWriter::CsvWriter(std::string path, std::vector<std::string> columns)
    : path_(std::move(path)), columns_(columns.size()) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    if (err == EEXIST) {
      throw std::runtime_error("output file " + path_ +
                               " already exists; choose another --out (results are never overwritten)");
    }
    throw std::runtime_error("cannot create output file " + path_ + ": " + std::strerror(err) +
                             "; choose a writable --out path");
  }
  write_line(columns);
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
  ++rows_;
}

void CsvWriter::write_line(const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i != 0) line += ',';
    line += quote(cells[i]);
  }
  line += '\n';
  // One write for the whole line: an interruption leaves the line whole or absent.
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace schedlab
