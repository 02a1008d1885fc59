// Errors are values. A Result<T> holds either a T or an Error that says what went
// wrong and where (file, line, column for parse errors); a Status is the same for work
// that has no value to give back. The core never throws across its API and never prints.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace aoizora {

struct Error {
  std::string message;  // what was found and what was expected
  std::string file;     // empty when the input was not a file
  int line = 0;         // 1-based; 0 when not applicable
  int column = 0;       // 1-based; 0 when not applicable

  // "file:line:column: message", leaving out the parts that are unknown.
  std::string to_string() const;

  // An error about the caller's input that has no place in a file (a placement, a mesh, a
  // program's groups): the message alone.
  static Error invalid(std::string message) { return Error{std::move(message), "", 0, 0}; }
};

template <typename T>
class Result {
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
