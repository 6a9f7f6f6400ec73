#include "protocol.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace mlbs::crash {

Report parse_report(const std::string& line) {
  Report r;
  std::istringstream in(line);
  char kind = 0;
  in >> kind;
  switch (kind) {
    case 'R': case 'E': case 'V': case 'N':
      if (in >> r.a) r.kind = kind;
      break;
    case 'W':
      if (in >> r.a >> r.b) r.kind = kind;
      break;
    case 'F': case 'D':
      r.kind = kind;
      break;
    case 'X':
      r.kind = kind;
      r.text = line.size() > 2 ? line.substr(2) : "";
      break;
    default:
      break;
  }
  return r;
}

void Reporter::send(const std::string& line) const {
  const std::string out = line + "\n";
  for (;;) {
    const ssize_t n = ::write(fd_, out.data(), out.size());
    if (n == static_cast<ssize_t>(out.size())) return;
    if (n < 0 && errno == EINTR) continue;
    std::_Exit(4);  // the parent is gone: nothing can be acknowledged any more
  }
}

}  // namespace mlbs::crash
