//===- SharedLibrary.cpp - LLVM dialect to a loadable model -----*- C++ -*-===//
//
// LLVM dialect -> LLVM IR -> host object (TargetMachine) -> shared library
// (the C compiler driver as linker); see SharedLibrary.h.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Target/SharedLibrary.h"

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Utils/ModelMetadata.h"
#include "gpipe/Dialect/RT/IR/RTDialect.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <cstring>
#include <elf.h>

using namespace mlir;

namespace {

/// The host target machine, PIC, or an error message.
std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions options;
  // A generic CPU keeps the library portable across hosts of one
  // architecture. The optimizing code generator is for the fused loops
  // only: optimize() marks every other function optnone.
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, "generic", "", options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Default));
}

/// Optimizes the outlined fused loops (RTDialect::kFusedLoopPrefix)
/// at -O2 and nothing else. The stage and rank functions only pass
/// pointers and constants to the runtime (the kernels are the runtime's):
/// marked optnone, they keep the fast instruction selector, which compiles
/// these long straight-line functions about 4x faster than -O1 with nothing
/// to lose. The loops, compiled at -O0, kept every value in a stack slot
/// across each iteration. No fast-math flags are set, so the loops' results
/// keep their bits.
void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  bool anyLoop = false;
  for (llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr(llvm::Attribute::NoInline);
    if (f.getName().starts_with(mlir::gpipe_rt::RTDialect::kFusedLoopPrefix))
      anyLoop = true;
    else
      f.addFnAttr(llvm::Attribute::OptimizeNone);
  }
  if (!anyLoop)
    return;
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2)
      .run(module, modules);
}

/// Writes the model's metadata into `llvmModule`: the module's `gpipe.model`
/// dictionary as NUL-terminated JSON text, returned by the exported
/// `gpipe_model_metadata()` (Program.h). The one place the text is made.
LogicalResult addModelMetadata(ModuleOp module, llvm::Module &llvmModule) {
  auto model = module->getAttrOfType<DictionaryAttr>(
      mlir::gpipe::GPipeDialect::kModelAttrName);
  if (!model)
    return emitError(
        module.getLoc(),
        "the module carries no model metadata ('gpipe.model'); "
        "lower it with convert-gpipe-to-rt and convert-rt-to-llvm first");
  FailureOr<llvm::json::Value> json = mlir::gpipe::attributeToJSON(model);
  if (failed(json))
    return emitError(module.getLoc(),
                     "the model metadata holds a value JSON cannot spell");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << *json;
  os.flush();
  llvm::LLVMContext &context = llvmModule.getContext();
  llvm::Constant *bytes =
      llvm::ConstantDataArray::getString(context, text, /*AddNull=*/true);
  auto *global = new llvm::GlobalVariable(
      llvmModule, bytes->getType(), /*isConstant=*/true,
      llvm::GlobalValue::InternalLinkage, bytes, "__gpipe_metadata");
  global->setAlignment(llvm::Align(64));
  auto *type = llvm::FunctionType::get(llvm::PointerType::get(context, 0),
                                       /*isVarArg=*/false);
  auto *accessor =
      llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                             "gpipe_model_metadata", llvmModule);
  llvm::IRBuilder<> builder(
      llvm::BasicBlock::Create(context, "entry", accessor));
  builder.CreateRet(global);
  return success();
}

/// `module` as LLVM IR for `machine`'s target (when given), or null after
/// reporting an error.
std::unique_ptr<llvm::Module> translate(ModuleOp module,
                                        llvm::LLVMContext &context,
                                        llvm::TargetMachine *machine) {
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "gpipe-model");
  if (!llvmModule) {
    emitError(module.getLoc(), "cannot translate the module to LLVM IR");
    return nullptr;
  }
  if (failed(addModelMetadata(module, *llvmModule)))
    return nullptr;
  if (machine) {
    llvmModule->setTargetTriple(machine->getTargetTriple());
    llvmModule->setDataLayout(machine->createDataLayout());
  }
  return llvmModule;
}

} // namespace

LogicalResult mlir::gpipe::emitLLVMIR(ModuleOp module, llvm::raw_ostream &os) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = createHostTargetMachine(error);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translate(module, context, machine.get());
  if (!llvmModule)
    return failure();
  // The IR as it is compiled: the fused loops optimized.
  if (machine)
    optimize(*llvmModule, *machine);
  llvmModule->print(os, nullptr);
  return success();
}

LogicalResult mlir::gpipe::emitObject(ModuleOp module,
                                      llvm::raw_pwrite_stream &os,
                                      TimingScope &timing) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = createHostTargetMachine(error);
  if (!machine)
    return emitError(module.getLoc(), "no code generator for this host: ")
               << error,
           failure();
  llvm::LLVMContext context;
  TimingScope translating = timing.nest("translate to LLVM IR");
  std::unique_ptr<llvm::Module> llvmModule =
      translate(module, context, machine.get());
  translating.stop();
  if (!llvmModule)
    return failure();
  TimingScope optimizing = timing.nest("optimize the fused loops");
  optimize(*llvmModule, *machine);
  optimizing.stop();
  TimingScope generating = timing.nest("generate machine code");
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return emitError(module.getLoc(),
                     "the host target cannot emit object files"),
           failure();
  passes.run(*llvmModule);
  return success();
}

/// How long the 64-bit ELF file `bytes` must be by its headers: the end of
/// the furthest segment and of the section header table; 0 when the ELF
/// header itself is missing.
static uint64_t elfExtent(llvm::StringRef bytes) {
  if (bytes.size() < sizeof(Elf64_Ehdr) ||
      std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    return 0;
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof header);
  uint64_t need = sizeof header;
  uint64_t tableEnd =
      header.e_phoff + uint64_t(header.e_phnum) * sizeof(Elf64_Phdr);
  need = std::max(need, tableEnd);
  if (tableEnd <= bytes.size())
    for (unsigned i = 0; i < header.e_phnum; ++i) {
      Elf64_Phdr ph;
      std::memcpy(&ph, bytes.data() + header.e_phoff + i * sizeof ph,
                  sizeof ph);
      need = std::max(need, uint64_t(ph.p_offset) + ph.p_filesz);
    }
  if (header.e_shnum)
    need = std::max(need, header.e_shoff +
                              uint64_t(header.e_shnum) * header.e_shentsize);
  return need;
}

LogicalResult mlir::gpipe::emitSharedLibrary(ModuleOp module,
                                             llvm::StringRef outputPath,
                                             TimingScope &timing) {
  // The object goes to a temporary file next to nothing the user owns.
  llvm::SmallString<128> objectPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("gpipe-model", "o", objectPath))
    return emitError(module.getLoc(), "cannot create a temporary file: ")
               << ec.message(),
           failure();
  // Removed on every way out, a signal (SIGINT, SIGTERM) included.
  llvm::sys::RemoveFileOnSignal(objectPath);
  auto removeObject = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(objectPath);
    llvm::sys::DontRemoveFileOnSignal(objectPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec, llvm::sys::fs::OF_None);
    if (ec)
      return emitError(module.getLoc(), "cannot write ")
                 << objectPath.str().str() << ": " << ec.message(),
             failure();
    if (failed(emitObject(module, os, timing)))
      return failure();
    // A failed write (a full disk, a file-size limit) must not reach the
    // stream's destructor, which would end the process and leave the object
    // behind.
    os.flush();
    if (std::error_code ec = os.error()) {
      os.clear_error();
      return emitError(module.getLoc(), "cannot write ")
                 << objectPath.str().str() << ": " << ec.message(),
             failure();
    }
  }

  std::string driver;
  if (const char *cc = std::getenv("CC"); cc && *cc) {
    if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(cc))
      driver = *found;
  }
  for (const char *name : {"cc", "gcc", "clang"}) {
    if (!driver.empty())
      break;
    if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(name))
      driver = *found;
  }
  if (driver.empty())
    return emitError(module.getLoc(),
                     "no C compiler driver (cc, gcc or clang) on PATH to "
                     "link the shared library; install gcc or set CC"),
           failure();

  // Link to a temporary name, then rename: a failed link leaves any existing
  // output untouched. What the output names is kept: a symbolic link stays
  // a link (its target is replaced), and a device or pipe (/dev/null) is
  // written into, since renaming over it would replace the node itself (as
  // root, /dev/null became a regular file).
  llvm::SmallString<256> target(outputPath);
  if (llvm::sys::fs::is_symlink_file(outputPath)) {
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(outputPath, real))
      target = real;
  }
  llvm::sys::fs::file_status targetStatus;
  bool special =
      !llvm::sys::fs::status(target, targetStatus) &&
      targetStatus.type() != llvm::sys::fs::file_type::regular_file &&
      targetStatus.type() != llvm::sys::fs::file_type::directory_file &&
      targetStatus.type() != llvm::sys::fs::file_type::file_not_found;
  std::string temporary =
      (target + ".tmp." + llvm::Twine(llvm::sys::Process::getProcessId()))
          .str();
  if (special) {
    llvm::SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("gpipe-model", "so", path))
      return emitError(module.getLoc(), "cannot create a temporary file: ")
                 << ec.message(),
             failure();
    temporary = path.str().str();
  }
  llvm::sys::RemoveFileOnSignal(temporary);
  auto forgetTemporary = llvm::make_scope_exit(
      [&] { llvm::sys::DontRemoveFileOnSignal(temporary); });
  std::string message;
  TimingScope linking = timing.nest("link");
  llvm::SmallVector<llvm::StringRef> args = {
      driver, "-shared", "-o", temporary, objectPath, "-Wl,-z,noexecstack"};
  int rc =
      llvm::sys::ExecuteAndWait(driver, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0) {
    llvm::sys::fs::remove(temporary);
    return emitError(module.getLoc(), "linking ")
               << outputPath.str() << " with " << driver << " failed"
               << (message.empty() ? "" : ": ") << message,
           failure();
  }
  // The linker can end "successfully" with a short file when a file-size
  // limit cuts its output: check the library is whole before it replaces
  // anything.
  if (sizeof(void *) == 8) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> linked =
        llvm::MemoryBuffer::getFile(temporary, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    uint64_t size = linked ? (*linked)->getBufferSize() : 0;
    uint64_t need = linked ? elfExtent((*linked)->getBuffer()) : 0;
    if (!linked || need == 0 || need > size) {
      llvm::sys::fs::remove(temporary);
      return emitError(module.getLoc(), "cannot write ")
                 << outputPath.str() << ": the linker left "
                 << std::to_string(size) << " bytes, the ELF headers need "
                 << (need ? std::to_string(need) : std::string("more"))
                 << " (File too large? check the file-size limit, ulimit "
                    "-f, and the free disk space)",
             failure();
    }
  }
  if (special) {
    auto removeTemporary =
        llvm::make_scope_exit([&] { llvm::sys::fs::remove(temporary); });
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> linked =
        llvm::MemoryBuffer::getFile(temporary, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    std::error_code ec = linked.getError();
    if (!ec) {
      llvm::raw_fd_ostream os(target, ec, llvm::sys::fs::OF_None);
      if (!ec) {
        os << (*linked)->getBuffer();
        os.flush();
        ec = os.error();
        os.clear_error();
      }
    }
    if (ec)
      return emitError(module.getLoc(), "cannot write ")
                 << outputPath.str() << ": " << ec.message(),
             failure();
    return success();
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, target)) {
    llvm::sys::fs::remove(temporary);
    return emitError(module.getLoc(), "cannot write ")
               << outputPath.str() << ": " << ec.message(),
           failure();
  }
  return success();
}
