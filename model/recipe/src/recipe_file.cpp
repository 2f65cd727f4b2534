// load_recipe / save_recipe: bounded reads of regular files, atomic writes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "qforge/calibration/serialize.h"
#include "qforge/error.h"
#include "qforge/model/recipe.h"

namespace qforge::model {
namespace {

[[noreturn]] void io_fail(const std::filesystem::path& path, const std::string& what, int err) {
  throw Error(ErrorCode::io, path.string() + ": " + what + ": " + std::strerror(err));
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string read_recipe_file(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) io_fail(path, "cannot open the recipe", errno);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) io_fail(path, "cannot stat the recipe", errno);
  if (!S_ISREG(st.st_mode))
    throw Error(ErrorCode::io, path.string() + ": " + file_kind(st.st_mode) +
                                   "; expected a regular file holding a JSON recipe");
  const auto too_big = [&] {
    throw Error(ErrorCode::io, path.string() + ": larger than " +
                                   std::to_string(kMaxRecipeFileBytes >> 20) +
                                   " MiB; a recipe is a few KiB of rules");
  };
  if (static_cast<std::uint64_t>(st.st_size) > kMaxRecipeFileBytes) too_big();
  std::string out;
  char buf[1 << 16];
  for (;;) {  // the size may change under us (or be 0 for /proc files): the limit holds anyway
    const ssize_t n = ::read(file.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      io_fail(path, "reading the recipe failed", errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > kMaxRecipeFileBytes) too_big();
  }
  return out;
}

}  // namespace

Recipe load_recipe(const std::filesystem::path& path) {
  const std::string text = read_recipe_file(path);
  try {
    return recipe_from_json(text);
  } catch (const Error& e) {
    throw Error(e.code(), path.string() + ": " + e.what());
  }
}

void save_recipe(const Recipe& recipe, const std::filesystem::path& path) {
  calibration::write_file_atomically(path, recipe_to_json(recipe));
}

}  // namespace qforge::model
