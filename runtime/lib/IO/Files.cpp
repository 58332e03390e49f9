//===- Files.cpp - Durable file writes for the runtime ----------*- C++ -*-===//
//
// See Files.h.
//
//===----------------------------------------------------------------------===//

#include "Files.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
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

namespace {

/// Writes every byte to `fd`, retrying short writes.
bool writeAll(int fd, const std::vector<uint8_t> &bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += size_t(n);
  }
  return true;
}

} // namespace

Status replaceFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  // A symbolic link: replace what it points to and keep the link.
  std::string target = path;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved))
      target = resolved;
  }
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return Status::error(path + ": is a directory; give a file name");
    if (!S_ISREG(st.st_mode)) {
      // A device or a pipe: renaming over it would replace the node itself
      // (as root, /dev/null). Write into it instead.
      int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0)
        return Status::error("cannot open " + path + ": " +
                             std::strerror(errno));
      bool ok = writeAll(fd, bytes);
      std::string why = ok ? "" : std::strerror(errno);
      if (::close(fd) != 0 && ok) {
        ok = false;
        why = std::strerror(errno);
      }
      if (!ok)
        return Status::error("cannot write " + path + ": " + why);
      return Status::success();
    }
  }
  std::string temp = target + ".tmp." + std::to_string(::getpid());
  Status status = writeFileDurably(temp, bytes);
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return Status::error(path + ": " + status.message());
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    return Status::error(path + ": rename failed: " + why);
  }
  // Make the rename itself durable.
  syncDirectory(parentDirectory(target));
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
