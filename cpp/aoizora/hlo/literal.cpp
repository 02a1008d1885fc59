#include "aoizora/hlo/literal.h"

#include <charconv>
#include <cstdint>

#include "aoizora/hlo/hlo_lexer.h"

namespace aoizora::hlo {
namespace {

bool is_integral(PrimitiveType t) {
  return (t >= PrimitiveType::kS1 && t <= PrimitiveType::kS64) ||
         (t >= PrimitiveType::kU1 && t <= PrimitiveType::kU64);
}
bool is_signed(PrimitiveType t) { return t >= PrimitiveType::kS1 && t <= PrimitiveType::kS64; }
bool is_complex(PrimitiveType t) { return t == PrimitiveType::kC64 || t == PrimitiveType::kC128; }

class Checker {
 public:
  explicit Checker(std::string_view s) : s_(s) {}

  std::string check(const Shape& shape) {
    if (!value_of(shape, 0)) return error_;
    skip();
    if (p_ < s_.size()) return fail("the end of the literal");
    return {};
  }
  size_t at() const { return at_; }

 private:
  void skip() { p_ = skip_space_and_comments(s_, p_); }
  bool eat(char c) {
    skip();
    if (p_ < s_.size() && s_[p_] == c) return ++p_, true;
    return false;
  }
  std::string fail(const std::string& what) {
    at_ = p_;
    error_ = "expected " + what + " in the literal";
    return error_;
  }
  bool failed(const std::string& what) {
    fail(what);
    return false;
  }

  bool value_of(const Shape& shape, int depth) {
    if (depth > 64) return failed("less deeply nested values");
    skip();
    if (shape.is_tuple()) {
      if (!eat('(')) return failed("'(' opening a tuple");
      for (size_t i = 0; i < shape.tuple.size(); ++i) {
        if (i > 0 && !eat(',')) return failed("',' between tuple elements");
        if (!value_of(shape.tuple[i], depth + 1)) return false;
      }
      if (!eat(')')) return failed("')' closing a tuple of " + std::to_string(shape.tuple.size()));
      return true;
    }
    if (!shape.is_array()) return true;  // token[], opaque: nothing to check
    if (shape.dims.empty()) return scalar(shape.type);
    return array(shape, 0);
  }

  bool array(const Shape& shape, size_t dim) {
    skip();
    if (dim == 0 && p_ < s_.size() && s_[p_] != '{') return scalar(shape.type);  // fills it
    if (!eat('{')) return failed("'{' opening dimension " + std::to_string(dim));
    if (dim == 0 && s_.compare(p_, 3, "...") == 0) {
      p_ += 3;
      if (!eat('}')) return failed("'}' after '...'");
      return true;
    }
    int64_t n = 0;
    for (;;) {
      skip();
      if (eat('}')) break;
      if (n > 0) eat(',');  // commas between elements are optional to XLA
      skip();
      if (eat('}')) break;  // and one may trail
      const bool inner = dim + 1 < shape.dims.size();
      if (!(inner ? array(shape, dim + 1) : scalar(shape.type))) return false;
      ++n;
    }
    if (n != shape.dims[dim])
      return failed(std::to_string(shape.dims[dim]) + " elements in dimension " +
                    std::to_string(dim) + ", not " + std::to_string(n));
    return true;
  }

  bool scalar(PrimitiveType t) {
    skip();
    if (is_complex(t)) {
      if (!eat('(') || !real(true) || !eat(',') || !real(true) || !eat(')'))
        return failed("a complex value (re, im)");
      return true;
    }
    if (t == PrimitiveType::kPred) {
      if (word("true") || word("false")) return true;
      return integer(t);
    }
    if (is_integral(t)) return integer(t);
    return real(true);
  }

  bool word(std::string_view w) {
    if (s_.compare(p_, w.size(), w) != 0) return false;
    const size_t after = p_ + w.size();
    if (after < s_.size() && is_name_char(s_[after])) return false;
    p_ = after;
    return true;
  }

  bool integer(PrimitiveType t) {
    skip();
    const size_t b = p_;
    size_t q = p_ + (p_ < s_.size() && s_[p_] == '-');
    const size_t digits = q;
    while (q < s_.size() && is_digit(s_[q])) ++q;
    if (q == digits || (q < s_.size() && (s_[q] == '.' || s_[q] == 'e' || s_[q] == 'E' ||
                                          is_alpha(s_[q]))))
      return failed("an integer");
    const int bits = bit_width(t);
    bool ok;
    if (s_[b] == '-') {
      int64_t v;
      // (XLA reads a negative u64 as its two's complement.)
      ok = std::from_chars(s_.data() + b, s_.data() + q, v).ec == std::errc() &&
           (bits >= 64 || (is_signed(t) && v >= -(int64_t{1} << (bits - 1))));
    } else {
      uint64_t v;
      ok = std::from_chars(s_.data() + b, s_.data() + q, v).ec == std::errc() &&
           (bits >= 64 ? (is_signed(t) ? v <= uint64_t{INT64_MAX} : true)
                       : v < (uint64_t{1} << (is_signed(t) ? bits - 1 : bits)));
    }
    if (!ok) return failed("a value in the range of " + std::string(primitive_type_name(t)));
    p_ = q;
    return true;
  }

  // -?digits[.digits][e[+-]digits], inf, nan, nan(0x...); `special` allows inf and nan.
  bool real(bool special) {
    skip();
    size_t q = p_;
    if (q < s_.size() && s_[q] == '-') ++q;
    if (special) {
      const size_t save = p_;
      p_ = q;
      if (word("inf")) return true;
      if (s_.compare(p_, 3, "nan") == 0) {
        p_ += 3;
        if (p_ < s_.size() && s_[p_] == '(') {
          const size_t close = s_.find(')', p_);
          if (close == std::string_view::npos) return failed("')' after a NaN payload");
          p_ = close + 1;
        }
        return true;
      }
      p_ = save;
    }
    const size_t digits = q;
    while (q < s_.size() && is_digit(s_[q])) ++q;
    if (q == digits) return failed("a number");
    if (q < s_.size() && s_[q] == '.') {
      ++q;
      while (q < s_.size() && is_digit(s_[q])) ++q;
    }
    if (q < s_.size() && (s_[q] == 'e' || s_[q] == 'E')) {
      ++q;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      const size_t e = q;
      while (q < s_.size() && is_digit(s_[q])) ++q;
      if (q == e) return failed("an exponent");
    }
    if (q < s_.size() && (is_alpha(s_[q]) || s_[q] == '_' || s_[q] == '$'))
      return failed("a number");
    p_ = q;
    return true;
  }

  std::string_view s_;
  size_t p_ = 0;
  size_t at_ = 0;
  std::string error_;
};

}  // namespace

std::string literal_error(const Shape& shape, std::string_view text, size_t* at) {
  Checker c(text);
  std::string e = c.check(shape);
  *at = c.at();
  return e;
}

}  // namespace aoizora::hlo
