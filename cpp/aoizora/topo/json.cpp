#include "aoizora/topo/json.h"

#include <cstdlib>

namespace aoizora::topo::json {

const Value* Value::find(const std::string& key) const {
  if (type != Type::kObject) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : s_(text), file_(file) {}

  Result<Value> run() {
    Value v;
    if (!value(v, 0)) return err_;
    ws();
    if (i_ != s_.size()) return fail("trailing characters after the JSON value");
    return v;
  }

 private:
  Error fail(const std::string& msg) {
    int line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    err_ = Error::parse(msg, file_, line, col);
    return err_;
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool lit(const char* word) {
    size_t k = 0;
    while (word[k]) {
      if (i_ + k >= s_.size() || s_[i_ + k] != word[k]) return false;
      ++k;
    }
    i_ += k;
    return true;
  }
  bool value(Value& v, int depth) {
    if (depth > 64) return fail("JSON nested too deeply"), false;
    ws();
    if (i_ >= s_.size()) return fail("unexpected end of JSON, expected a value"), false;
    const char c = s_[i_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.type = Value::Type::kString;
      return string(v.string);
    }
    if (lit("true")) {
      v.type = Value::Type::kBool;
      v.boolean = true;
      return true;
    }
    if (lit("false")) {
      v.type = Value::Type::kBool;
      return true;
    }
    if (lit("null")) return true;
    if (c == '-' || (c >= '0' && c <= '9')) {
      const char* begin = s_.c_str() + i_;
      char* end = nullptr;
      v.number = std::strtod(begin, &end);
      if (end == begin) return fail("malformed number"), false;
      v.type = Value::Type::kNumber;
      i_ += static_cast<size_t>(end - begin);
      return true;
    }
    return fail(std::string("unexpected character '") + c + "', expected a value"), false;
  }
  bool string(std::string& out) {
    ++i_;  // opening quote
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) break;
        const char e = s_[i_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u':
            if (i_ + 4 > s_.size()) return fail("truncated \\u escape"), false;
            c = static_cast<char>(std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16) & 0x7f);
            i_ += 4;
            break;
          default: c = e;
        }
      }
      out.push_back(c);
    }
    if (i_ >= s_.size()) return fail("unterminated string"), false;
    ++i_;
    return true;
  }
  bool array(Value& v, int depth) {
    v.type = Value::Type::kArray;
    ++i_;
    ws();
    if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
    while (true) {
      v.array.emplace_back();
      if (!value(v.array.back(), depth + 1)) return false;
      ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
      return fail("expected ',' or ']' in array"), false;
    }
  }
  bool object(Value& v, int depth) {
    v.type = Value::Type::kObject;
    ++i_;
    ws();
    if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
    while (true) {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') return fail("expected a string key in object"), false;
      std::string key;
      if (!string(key)) return false;
      ws();
      if (i_ >= s_.size() || s_[i_] != ':') return fail("expected ':' after object key"), false;
      ++i_;
      Value member;
      if (!value(member, depth + 1)) return false;
      v.object[key] = std::move(member);
      ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
      return fail("expected ',' or '}' in object"), false;
    }
  }

  const std::string& s_;
  const std::string& file_;
  size_t i_ = 0;
  Error err_;
};

}  // namespace

Result<Value> parse(const std::string& text, const std::string& file) {
  return Parser(text, file).run();
}

}  // namespace aoizora::topo::json
