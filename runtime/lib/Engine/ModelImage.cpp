//===- ModelImage.cpp - Loading model libraries -----------------*- C++ -*-===//
//
// ModelImage::load dlopens a model library gpipe-compile produced, after
// checking that the file is a whole shared object for this host, loads the
// device backend of its target when the library needs that backend's
// kernels, checks its ABI version, parses its metadata (ModelMetadata.h)
// and resolves the rank functions. ModelImage::fromParts builds the same
// from parts given in process (tests).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/ModelImage.h"
#include "gpipe/Runtime/Device.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <type_traits>
#include <unistd.h>

namespace gpipe::rt {
namespace {
using Json = nlohmann::json;
} // namespace

Status ModelImage::fromParts(std::string_view metadataJson, const uint8_t *data,
                             size_t dataSize,
                             std::vector<gpipe_model_rank_fn> rankFunctions,
                             ModelImage &image) {
  image = ModelImage();
  Status parsed = ModelMetadata::parse(metadataJson, image.meta, dataSize);
  if (!parsed.ok())
    return parsed;
  if (rankFunctions.size() != image.meta.ranks.size())
    return Status::error("metadata has " +
                         std::to_string(image.meta.ranks.size()) +
                         " ranks but " + std::to_string(rankFunctions.size()) +
                         " rank functions were given");
  for (size_t i = 0; i < rankFunctions.size(); ++i)
    if (!rankFunctions[i])
      return Status::error("rank function " + std::to_string(i) + " is null");
  image.initialData = data;
  image.functions = std::move(rankFunctions);
  image.libraryPath = "<in-process>";
  return Status::success();
}

namespace {
/// Checks that `path` is a whole ELF shared object for this host before
/// dlopen maps it: the loader reads headers and segments straight from the
/// mapping, and a truncated file kills it with SIGBUS. A file that cannot
/// be opened is left to dlopen, which says why.
Status checkSharedObjectFile(const std::string &path) {
  using Ehdr = std::conditional_t<sizeof(void *) == 8, Elf64_Ehdr, Elf32_Ehdr>;
  using Phdr = std::conditional_t<sizeof(void *) == 8, Elf64_Phdr, Elf32_Phdr>;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::success();
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::success();
  }
  const uint64_t size = uint64_t(st.st_size);
  auto readAt = [&](void *buf, size_t n, uint64_t offset) {
    size_t done = 0;
    while (done < n) {
      ssize_t got = ::pread(fd, static_cast<char *>(buf) + done, n - done,
                            off_t(offset + done));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        return false;
      done += size_t(got);
    }
    return true;
  };
  auto notLibrary = [&](const std::string &why) {
    ::close(fd);
    return Status::error("cannot load model library " + path + ": " + why +
                         "; give a model.so built by gpipe-compile");
  };
  auto truncated = [&](uint64_t need) {
    ::close(fd);
    return Status::error(path +
                         " is not a complete shared library "
                         "(truncated: " +
                         std::to_string(size) +
                         " bytes, the ELF headers need " +
                         std::to_string(need) + "); recompile it");
  };

  unsigned char ident[EI_NIDENT] = {};
  if (size < SELFMAG || !readAt(ident, SELFMAG, 0) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0)
    return notLibrary("it is not an ELF file");
  if (size < sizeof(Ehdr))
    return truncated(sizeof(Ehdr));
  Ehdr header;
  if (!readAt(&header, sizeof header, 0))
    return truncated(sizeof(Ehdr));
  const unsigned char hostClass = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
  const unsigned char hostData =
      __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  if (header.e_ident[EI_CLASS] != hostClass)
    return notLibrary(std::string("it is a ") +
                      (header.e_ident[EI_CLASS] == ELFCLASS32 ? "32" : "64") +
                      "-bit ELF file, this host runs " +
                      (hostClass == ELFCLASS64 ? "64" : "32") + "-bit code");
  if (header.e_ident[EI_DATA] != hostData)
    return notLibrary("its byte order is not this host's");
  if (header.e_type != ET_DYN)
    return notLibrary("it is an ELF file but not a shared library (type " +
                      std::to_string(header.e_type) + ")");

  // Every segment and the section header table must lie inside the file.
  uint64_t need = sizeof(Ehdr);
  if (header.e_phnum) {
    if (header.e_phentsize != sizeof(Phdr))
      return notLibrary("its program headers are malformed");
    uint64_t end =
        uint64_t(header.e_phoff) + uint64_t(header.e_phnum) * sizeof(Phdr);
    need = std::max(need, end);
    if (end > size)
      return truncated(need);
    for (unsigned i = 0; i < header.e_phnum; ++i) {
      Phdr ph;
      if (!readAt(&ph, sizeof ph, header.e_phoff + i * sizeof(Phdr)))
        return truncated(need);
      need = std::max(need, uint64_t(ph.p_offset) + uint64_t(ph.p_filesz));
    }
  }
  if (header.e_shnum)
    need = std::max(need, uint64_t(header.e_shoff) +
                              uint64_t(header.e_shnum) * header.e_shentsize);
  if (need > size)
    return truncated(need);
  ::close(fd);
  return Status::success();
}
} // namespace

Status ModelImage::load(const std::string &path, ModelImage &image) {
  image = ModelImage();
  // dlopen searches the library path for names without a slash.
  std::string openPath =
      path.find('/') == std::string::npos ? "./" + path : path;
  if (Status whole = checkSharedObjectFile(path); !whole.ok())
    return whole;
  dlerror();
  void *handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    std::string reason = why ? why : "unknown error";
    // A library for another kernel target cannot bind its kernels here:
    // say so instead of naming the first missing symbol.
    if (void *lazy = dlopen(openPath.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
      auto metadata = reinterpret_cast<const char *(*)(void)>(
          dlsym(lazy, "gpipe_model_metadata"));
      std::string target;
      if (metadata && metadata()) {
        Json json = Json::parse(metadata(), nullptr, false);
        if (json.is_object() && json.contains(abi::key::kTarget) &&
            json[abi::key::kTarget].is_string())
          target = json[abi::key::kTarget].get<std::string>();
      }
      dlclose(lazy);
      // The kernels of a target other than cpu come from its backend
      // module, loaded only now that a model needs it.
      if (!target.empty() && !haveDevice(target)) {
        if (Status s = loadDeviceBackend(target); !s.ok())
          return Status::error(path + ": " + s.message());
        dlerror();
        handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
          why = dlerror();
          reason = why ? why : "unknown error";
        }
      }
    }
    if (!handle)
      return Status::error("cannot load model library " + path + ": " + reason);
  }
  std::shared_ptr<void> owner(handle, [](void *h) { dlclose(h); });
  auto symbol = [&](const char *name) { return dlsym(handle, name); };

  // The version first: a library of another ABI may lack the other symbols.
  auto abi =
      reinterpret_cast<int32_t (*)(void)>(symbol("gpipe_model_abi_version"));
  if (!abi)
    return Status::error(path + " is not a gpipe model: it lacks "
                                "gpipe_model_abi_version (build it with "
                                "gpipe-compile)");
  int32_t version = abi();
  if (version != GPIPE_RT_ABI_VERSION)
    return Status::error(path + " was compiled for runtime ABI " +
                         std::to_string(version) + ", this gpipe-run speaks " +
                         std::to_string(GPIPE_RT_ABI_VERSION) +
                         "; recompile it with this gpipe-compile");
  auto metadata =
      reinterpret_cast<const char *(*)(void)>(symbol("gpipe_model_metadata"));
  auto data =
      reinterpret_cast<const uint8_t *(*)(void)>(symbol("gpipe_model_data"));
  if (!metadata || !data)
    return Status::error(
        path + " is not a gpipe model: it lacks " +
        std::string(!metadata ? "gpipe_model_metadata" : "gpipe_model_data") +
        " (build it with gpipe-compile)");
  const char *json = metadata();
  if (!json)
    return Status::error(path + ": gpipe_model_metadata() returned null");
  Status parsed = ModelMetadata::parse(json, image.meta);
  if (!parsed.ok())
    return Status::error(path + ": " + parsed.message());
  auto resolve = [&](const ModelMetadata &meta,
                     std::vector<gpipe_model_rank_fn> &functions) {
    for (const RankPlan &rank : meta.ranks) {
      auto fn =
          reinterpret_cast<gpipe_model_rank_fn>(symbol(rank.symbol.c_str()));
      if (!fn)
        return Status::error(path + ": rank " + std::to_string(rank.rank) +
                             "'s function '" + rank.symbol +
                             "' is not exported by the library");
      functions.push_back(fn);
    }
    return Status::success();
  };
  if (Status s = resolve(image.meta, image.functions); !s.ok())
    return s;
  if (image.meta.eval)
    if (Status s = resolve(*image.meta.eval, image.evalFunctions); !s.ok())
      return s;
  image.initialData = data();
  bool needsData = false;
  for (const ParameterSpec &p : image.meta.parameters)
    needsData |= p.init == ParamInit::Data && p.elements > 0;
  if (needsData && !image.initialData)
    return Status::error(path + ": gpipe_model_data() returned null but "
                                "parameters start from it");
  image.libraryLastError =
      reinterpret_cast<const char *(*)(void)>(symbol("gpipe_rt_last_error"));
  image.libraryClearError =
      reinterpret_cast<void (*)(void)>(symbol("gpipe_rt_clear_error"));
  if (image.libraryLastError == &gpipe_rt_last_error)
    image.libraryLastError = nullptr;
  if (image.libraryClearError == &gpipe_rt_clear_error)
    image.libraryClearError = nullptr;
  image.libraryPath = path;
  image.handle = std::move(owner);
  return Status::success();
}

Status loadModelLibrary(const std::string &path, ModelImage &image) {
  return ModelImage::load(path, image);
}

} // namespace gpipe::rt
