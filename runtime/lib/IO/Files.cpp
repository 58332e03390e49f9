//===- Files.cpp - Durable file writes for the runtime ----------*- C++ -*-===//
//
// See Files.h.
//
//===----------------------------------------------------------------------===//

#include "Files.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace gpipe::rt {

Status writeFileDurably(const std::string &path,
                        const std::vector<uint8_t> &bytes) {
  auto fail = [&](const std::string &what) {
    return Status::error(what + " " + path + ": " + std::strerror(errno));
  };
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail("cannot create");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      Status s = fail("cannot write");
      ::close(fd);
      return s;
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0) {
    Status s = fail("cannot flush");
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0)
    return fail("cannot close");
  return Status::success();
}

void syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string parentDirectory(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace gpipe::rt
