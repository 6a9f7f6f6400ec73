// mlbs_crash: the child's reports to the parent, one text line each, written
// to a pipe with one write() (shorter than PIPE_BUF, so never interleaved or
// torn). A line in the pipe was written before the child died, so the parent
// may read it after the kill.
//
//   R <n>           the store is open; recovery found n records
//   W <id> <salt>   about to write version <salt> of <id>
//   E <id>          about to erase <id>
//   F               flush() returned: everything announced before is durable
//   N <id>          the write just announced was refused (its exception said
//                   why): the record was not accepted
//   D               flush() threw (the device is full): nothing new is acknowledged
//   V <id>          read <id> back and found the bytes it had written
//   X <text>        the child found a violation itself (a read with wrong bytes)
#pragma once

#include <cstdint>
#include <string>

namespace mlbs::crash {

struct Report {
  char kind = 0;  ///< 'R', 'W', 'E', 'F', 'N', 'D', 'V', 'X'; 0 for a line that does not parse
  std::uint64_t a = 0, b = 0;
  std::string text;  ///< X: the message
};

Report parse_report(const std::string& line);

/// The child's side: writes whole lines to the pipe; exits quietly when the
/// parent is gone (nothing left to report to).
class Reporter {
 public:
  explicit Reporter(int fd) : fd_(fd) {}
  void send(const std::string& line) const;

 private:
  int fd_;
};

}  // namespace mlbs::crash
