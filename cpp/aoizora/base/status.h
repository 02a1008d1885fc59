// Errors are values. A Result<T> holds either a T or an Error that says what went
// wrong, where (file, line, column for parse errors) and of which kind (its ErrorCode, so a
// caller can tell an expected failure from a bug); a Status is the same for work that has
// no value to give back. The core never throws across its API and never prints.
// RETURN_IF_ERROR and ASSIGN_OR_RETURN below pass an error up unchanged; the Python
// binding (bind/bind.h) raises each code as its own exception (python/aoizora/errors.py).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace aoizora {

// The kinds of failure the core reports. All but kInternal are about the caller's input.
enum class ErrorCode {
  kInvalidArgument,  // well-formed input that breaks a rule: a placement, a mesh, a field
  kParse,            // text that does not read: HLO, StableHLO, JSON, a sharding string
  kNotFound,         // a named thing that is not there: a file, a topology, a generation
  kUnsupported,      // valid input the model cannot price: a loop of unknown trip count
  kInternal,         // a state the core should never reach (a simulated deadlock): a bug
};

// "invalid argument", "parse error", ...: for messages and the binding.
const char* error_code_name(ErrorCode code);

struct Error {
  std::string message;  // what was found and what was expected
  std::string file;     // empty when the input was not a file
  int line = 0;         // 1-based; 0 when not applicable
  int column = 0;       // 1-based; 0 when not applicable
  ErrorCode code = ErrorCode::kInvalidArgument;

  // "file:line:column: message", leaving out the parts that are unknown.
  std::string to_string() const;

  // The same error about another file (the one the caller was reading), code kept.
  Error in_file(std::string name) const { return Error{message, std::move(name), line, column, code}; }

  // An error about the caller's input that has no place in a file (a placement, a mesh, a
  // program's groups): the message alone.
  static Error invalid(std::string message, std::string file = "") {
    return Error{std::move(message), std::move(file), 0, 0, ErrorCode::kInvalidArgument};
  }
  static Error parse(std::string message, std::string file = "", int line = 0, int column = 0) {
    return Error{std::move(message), std::move(file), line, column, ErrorCode::kParse};
  }
  static Error not_found(std::string message, std::string file = "") {
    return Error{std::move(message), std::move(file), 0, 0, ErrorCode::kNotFound};
  }
  static Error unsupported(std::string message, std::string file = "", int line = 0, int column = 0) {
    return Error{std::move(message), std::move(file), line, column, ErrorCode::kUnsupported};
  }
  static Error internal(std::string message) {
    return Error{std::move(message), "", 0, 0, ErrorCode::kInternal};
  }

  bool is_parse() const { return code == ErrorCode::kParse; }
  bool is_not_found() const { return code == ErrorCode::kNotFound; }
  bool is_unsupported() const { return code == ErrorCode::kUnsupported; }
  bool is_internal() const { return code == ErrorCode::kInternal; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit on purpose
  Result(Error error) : v_(std::move(error)) {}      // NOLINT: implicit on purpose

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Success with no value, or the Error saying why not. It exists so that "it worked" is a
// state of its own rather than a Result of a bool that means nothing or an Error whose
// empty message stands for success (an error reported without a message would pass).
class [[nodiscard]] Status {
 public:
  static Status success() { return Status(); }
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit, as for Result

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }

  // Only when !ok().
  const Error& error() const { return *error_; }

 private:
  Status() = default;
  std::optional<Error> error_;
};

}  // namespace aoizora

// Inside a function returning a Status or a Result: evaluates expr (a Status or a Result)
// and returns its Error unchanged when it failed.
#define RETURN_IF_ERROR(expr)                                         \
  do {                                                                \
    if (auto aoizora_status_ = (expr); !aoizora_status_.ok()) {       \
      return aoizora_status_.error();                                 \
    }                                                                 \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, f());` or `ASSIGN_OR_RETURN(x, f());`: evaluates f() (a Result),
// returns its Error unchanged when it failed, else moves its value into the left-hand side.
// A statement of its own (it declares a hidden variable): not the body of an unbraced if.
#define ASSIGN_OR_RETURN(lhs, expr) \
  AOIZORA_ASSIGN_OR_RETURN_(AOIZORA_CONCAT_(aoizora_result_, __LINE__), lhs, expr)
#define AOIZORA_ASSIGN_OR_RETURN_(result, lhs, expr) \
  auto result = (expr);                              \
  if (!result.ok()) return result.error();           \
  lhs = std::move(result).value()
#define AOIZORA_CONCAT_(a, b) AOIZORA_CONCAT_INNER_(a, b)
#define AOIZORA_CONCAT_INNER_(a, b) a##b
