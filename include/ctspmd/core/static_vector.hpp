#ifndef CTSPMD_CORE_STATIC_VECTOR_HPP
#define CTSPMD_CORE_STATIC_VECTOR_HPP
/// \file `static_vector<T, N>`: a constexpr vector with inline capacity N.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <type_traits>

#include <ctspmd/core/error.hpp>

namespace ctspmd {

/// A vector of at most N copyable, trivially destructible elements stored inline. The unused
/// capacity of a large vector is left uninitialised at run time, so construction and copies
/// cost only the used elements; during constant evaluation every slot is initialised, as
/// constant expressions require. Exceeding the capacity is an `invalid_argument` error (a compile error in
/// constant evaluation).
template <class T, std::size_t N>
class static_vector {
  static_assert(std::is_copy_constructible_v<T> && std::is_trivially_destructible_v<T>,
                "static_vector holds copyable, trivially destructible elements");
  static_assert(N <= 255, "static_vector keeps its size in one byte");

  // Raw storage: in constant evaluation the whole array is value-initialised, as a constant
  // expression must be. At run time a large one is left uninitialised (nothing is constructed
  // until it is pushed, so building and copying cost only the used elements); a small one of
  // trivially copyable elements (a dims mapping, a mesh shape) is zeroed, a few stores, so it
  // copies as one fixed-size block.
  static constexpr bool small = std::is_trivially_copyable_v<T> && sizeof(T) * N <= 128;
  union storage {
    struct value_init {};
    constexpr storage() noexcept {}
    constexpr explicit storage(value_init) : values{} {}
    T values[N];
  };

 public:
  using value_type = T;
  using size_type = std::size_t;
  using reference = T&;
  using const_reference = const T&;
  using iterator = T*;
  using const_iterator = const T*;

  constexpr static_vector() noexcept
      : storage_(std::is_constant_evaluated() || small ? storage(typename storage::value_init{}) : storage()) {}
  constexpr static_vector(std::initializer_list<T> values) : static_vector() {
    if (values.size() > N) raise(capacity_error(values.size()));
    for (const T& v : values) std::construct_at(storage_.values + size_++, v);
  }
  /// Copies only the used elements of a large vector (a defaulted copy would copy the whole
  /// capacity), a small one as one block.
  constexpr static_vector(const static_vector& other) : static_vector() { assign(other); }
  constexpr static_vector& operator=(const static_vector& other) {
    if (this != &other) assign(other);
    return *this;
  }
  /// `count` copies of `value`.
  constexpr static_vector(size_type count, const T& value) : static_vector() {
    if (count > N) raise(capacity_error(count));
    for (size_type i = 0; i < count; ++i) std::construct_at(storage_.values + size_++, value);
  }
  /// From any range of values convertible to T (another static_vector, a string_view, ...).
  template <class Range>
    requires requires(const Range& r) { r.begin(); r.end(); }
  constexpr explicit static_vector(const Range& r) : static_vector() {
    for (auto&& v : r) push_back(static_cast<T>(v));
  }

  static constexpr size_type capacity() noexcept { return N; }
  constexpr size_type size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }

  constexpr T* data() noexcept { return storage_.values; }
  constexpr const T* data() const noexcept { return storage_.values; }
  constexpr iterator begin() noexcept { return data(); }
  constexpr iterator end() noexcept { return data() + size_; }
  constexpr const_iterator begin() const noexcept { return data(); }
  constexpr const_iterator end() const noexcept { return data() + size_; }

  /// Element i; i must be below size() (checked: out of range is an `invalid_argument`).
  constexpr T& operator[](size_type i) {
    if (i >= size_) raise(index_error(i));
    return storage_.values[i];
  }
  constexpr const T& operator[](size_type i) const {
    if (i >= size_) raise(index_error(i));
    return storage_.values[i];
  }
  constexpr T& back() { return (*this)[size_ - 1]; }
  constexpr const T& back() const { return (*this)[size_ - 1]; }

  constexpr void push_back(const T& v) {
    if (size_ == N) raise(capacity_error(size_ + 1));
    std::construct_at(storage_.values + size_++, v);
  }
  constexpr void pop_back() {
    if (size_ == 0) raise(make_error(error_kind::invalid_argument, "static_vector", "pop_back on an empty vector"));
    --size_;
  }
  constexpr void clear() noexcept { size_ = 0; }
  /// Shrinks to `count` elements, or grows with copies of `value`.
  constexpr void resize(size_type count, const T& value = T{}) {
    if (count > N) raise(capacity_error(count));
    while (size_ < count) std::construct_at(storage_.values + size_++, value);
    size_ = static_cast<std::uint8_t>(count);
  }

  friend constexpr bool operator==(const static_vector& a, const static_vector& b) {
    if (a.size_ != b.size_) return false;
    for (size_type i = 0; i < a.size_; ++i)
      if (!(a.storage_.values[i] == b.storage_.values[i])) return false;
    return true;
  }

 private:
  constexpr void assign(const static_vector& other) {
    if constexpr (small) {
      storage_ = other.storage_;  // one fixed-size copy of initialised bytes beats a loop
      size_ = other.size_;
    } else {
      for (size_type i = 0; i < other.size_; ++i) std::construct_at(storage_.values + i, other.storage_.values[i]);
      size_ = other.size_;
    }
  }
  static constexpr error_info capacity_error(size_type wanted) {
    return make_error(error_kind::invalid_argument, "static_vector",
                      "{} elements exceed the capacity of {} (raise the CTSPMD_MAX_* macro)", wanted, N);
  }
  static constexpr error_info index_error(size_type i) {
    return make_error(error_kind::invalid_argument, "static_vector", "index {} is out of range", i);
  }

  storage storage_;
  std::uint8_t size_ = 0;
};

}  // namespace ctspmd

#endif
