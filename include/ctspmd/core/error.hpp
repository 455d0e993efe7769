#ifndef CTSPMD_CORE_ERROR_HPP
#define CTSPMD_CORE_ERROR_HPP
/// \file Errors: `error_kind`, `spmd_error`, the `error_info` a failed check records, and
/// `result<T>` / `status`, the result-returning form every fallible operation has.
///
/// A failed check is first an `error_info` value (kind, operator, message with `{}`
/// placeholders, up to four integer values). `raise` turns it into the failure the caller
/// sees: during constant evaluation a compile error whose notes show the message (Clang also
/// shows the values), at run time a thrown `spmd_error` with the formatted message.

#include <array>
#include <cstdint>
#include <exception>
#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ctspmd {

/// What kind of precondition failed (Paddle's error classes).
enum class error_kind { invalid_argument, unimplemented, precondition_not_met, not_found, already_exists };

/// The snake_case name of an error kind, as the JSON tool prints it.
constexpr std::string_view to_string(error_kind k) noexcept {
  switch (k) {
    case error_kind::invalid_argument: return "invalid_argument";
    case error_kind::unimplemented: return "unimplemented";
    case error_kind::precondition_not_met: return "precondition_not_met";
    case error_kind::not_found: return "not_found";
    case error_kind::already_exists: return "already_exists";
  }
  return "unknown";
}

/// A recorded failure: what went wrong, in which operator, with which values.
/// `format` is a string literal; `{}` stands for the next value as an integer, `{c}` for the
/// next value as a character (an axis label), and `{0}` ... `{3}` for that value as an integer.
/// `to_string(const error_info&)` (dist/format.hpp) gives the message as a `std::string`.
struct error_info {
  error_kind kind = error_kind::invalid_argument;
  std::string_view op{};          ///< operator or function that failed ("" for none)
  const char* format = "";        ///< message with `{}` / `{c}` / `{0}`... placeholders
  std::array<std::int64_t, 4> values{};

  /// Writes the message, prefixed by the operator name, with its values substituted, to `out`
  /// (at most `capacity - 1` characters, then a NUL; `capacity` > 0). Returns the message's full
  /// length, which may exceed what was written.
  constexpr std::size_t format_to(char* out, std::size_t capacity) const noexcept {
    std::size_t n = 0;
    const auto put = [&](char c) {
      if (n + 1 < capacity) out[n] = c;
      ++n;
    };
    const auto put_int = [&](std::int64_t v) {
      char digits[20];
      std::size_t k = 0;
      std::uint64_t u = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
      do digits[k++] = static_cast<char>('0' + u % 10); while ((u /= 10) != 0);
      if (v < 0) put('-');
      while (k > 0) put(digits[--k]);
    };
    for (const char c : op) put(c);
    if (!op.empty()) put(':'), put(' ');
    std::size_t next = 0;
    for (const char* p = format; *p != '\0'; ++p) {
      const bool int_slot = p[0] == '{' && p[1] == '}';
      const bool char_slot = p[0] == '{' && p[1] == 'c' && p[2] == '}';
      const bool indexed_slot = p[0] == '{' && p[1] >= '0' && p[1] <= '3' && p[2] == '}';
      if (indexed_slot) {
        put_int(values[static_cast<std::size_t>(p[1] - '0')]);
        p += 2;
      } else if ((int_slot || char_slot) && next < values.size()) {
        const std::int64_t v = values[next++];
        if (char_slot && v >= 0x20 && v < 0x7f) {
          put(static_cast<char>(v));
        } else if (char_slot) {  // not printable ASCII (a NUL would cut what()): as \xNN
          constexpr char hex[] = "0123456789abcdef";
          const auto byte = static_cast<unsigned char>(v);
          put('\\'), put('x'), put(hex[byte >> 4]), put(hex[byte & 0xf]);
        } else {
          put_int(v);
        }
        p += char_slot ? 2 : 1;
      } else {
        put(*p);
      }
    }
    out[n < capacity ? n : capacity - 1] = '\0';
    return n;
  }
};

/// Thrown at run time for every violated precondition. The message is kept in the exception
/// (up to `max_message` characters; a longer one ends with "..."), so that copying it never
/// allocates or throws.
class spmd_error : public std::exception {
 public:
  static constexpr std::size_t max_message = 1023;
  spmd_error(error_kind kind, std::string_view message) noexcept : kind_(kind) {
    std::size_t n = 0;
    for (; n < message.size() && n < max_message; ++n) message_[n] = message[n];
    message_[n] = '\0';
    if (message.size() > max_message) mark_truncated();
  }
  explicit spmd_error(const error_info& e) noexcept : kind_(e.kind) {
    if (e.format_to(message_, sizeof message_) > max_message) mark_truncated();
  }
  error_kind kind() const noexcept { return kind_; }
  const char* what() const noexcept override { return message_; }

 private:
  void mark_truncated() noexcept {
    for (std::size_t i = max_message - 3; i < max_message; ++i) message_[i] = '.';
  }
  error_kind kind_;
  char message_[max_message + 1] = {};
};

/// Builds an `error_info`; values may be integers or characters.
template <class... V>
constexpr error_info make_error(error_kind kind, std::string_view op, const char* format, V... values) {
  static_assert(sizeof...(V) <= 4, "an error message holds at most four values");
  return error_info{kind, op, format, {static_cast<std::int64_t>(values)...}};
}

namespace detail {
inline constexpr char no_message[] = "";

/// Reached only during constant evaluation, to stop it with a readable diagnostic.
template <class = void>
constexpr void sharding_check_failed(error_kind, std::string_view op, const char* message, std::int64_t v0,
                                     std::int64_t v1, std::int64_t v2, std::int64_t v3) {
  (void)op, (void)v0, (void)v1, (void)v2, (void)v3;
  // COMPILE ERROR HERE: a sharding precondition failed during constant evaluation.
  // The message is the string below (its {} are the values in the call above, in order).
  if (message < no_message) {
  }
}

[[noreturn]] inline void throw_spmd_error(const error_info& e) { throw spmd_error(e); }
}  // namespace detail

/// Fails with `e`: a compile error in constant evaluation, a thrown `spmd_error` otherwise.
constexpr void raise(const error_info& e) {
  if (std::is_constant_evaluated())
    detail::sharding_check_failed(e.kind, e.op, e.format, e.values[0], e.values[1], e.values[2], e.values[3]);
  else
    detail::throw_spmd_error(e);
}

/// The outcome of a check that produces no value: ok, or an error.
///
/// An ok status holds no `error_info` (the union below has no active member), so making and
/// returning one writes a single byte: every rule returns a status from each step, and
/// writing a whole `error_info` each time was a measurable part of a rule call.
class [[nodiscard]] status {
 public:
  constexpr status() noexcept : ok_(true) {}
  constexpr status(const error_info& e) noexcept : error_(e), ok_(false) {}  // NOLINT: implicit by design
  constexpr bool ok() const noexcept { return ok_; }
  constexpr explicit operator bool() const noexcept { return ok_; }
  /// The error; a default `error_info` when ok.
  constexpr const error_info& error() const noexcept { return ok_ ? no_error : error_; }
  /// Raises the error if there is one.
  constexpr void check() const {
    if (!ok_) raise(error_);
  }

 private:
  static constexpr error_info no_error{};
  union {
    error_info error_;  ///< active when !ok_
  };
  bool ok_;
};

/// A value or the error that prevented it (the result-returning twin of a throwing call).
template <class T>
class [[nodiscard]] result {
 public:
  constexpr result(T value) : value_(std::move(value)) {}                      // NOLINT: implicit by design
  constexpr result(const error_info& e) : error_(e), ok_(false) {}             // NOLINT: implicit by design
  constexpr bool ok() const noexcept { return ok_; }
  constexpr explicit operator bool() const noexcept { return ok_; }
  constexpr const error_info& error() const noexcept { return error_; }
  constexpr error_kind kind() const noexcept { return error_.kind; }
  /// The value; raises the error if there is none.
  constexpr const T& value() const& {
    if (!ok_) raise(error_);
    return value_;
  }
  constexpr T&& value() && {
    if (!ok_) raise(error_);
    return std::move(value_);
  }
  /// The value, unchecked (test `ok()` first).
  constexpr const T& operator*() const& noexcept { return value_; }
  constexpr T& operator*() & noexcept { return value_; }
  constexpr const T* operator->() const noexcept { return &value_; }
  constexpr T* operator->() noexcept { return &value_; }

 private:
  T value_{};
  error_info error_{};
  bool ok_ = true;
};

}  // namespace ctspmd

/// Propagates a failed `status` / `result` from the enclosing function.
#define CTSPMD_TRY(...)                              \
  do {                                               \
    if (auto ctspmd_try_ = (__VA_ARGS__); !ctspmd_try_) \
      return ctspmd_try_.error();                    \
  } while (false)

#endif
