#ifndef CTSPMD_CORE_STATIC_VECTOR_HPP
#define CTSPMD_CORE_STATIC_VECTOR_HPP
/// \file `static_vector<T, N>`: a constexpr vector with inline capacity N.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <type_traits>

#include <ctspmd/core/error.hpp>

namespace ctspmd {

namespace detail {

/// Raw storage for N elements. In constant evaluation it is always value-initialised, as a
/// constant expression must be; at run time the owner decides.
template <class T, std::size_t N>
union inline_array {
  struct value_init {};
  constexpr inline_array() noexcept {}
  constexpr explicit inline_array(value_init) : values{} {}
  T values[N];
};

/// Puts T(args...) in slot i of `a`, and returns it. A value-initialised array (always so in
/// constant evaluation) holds live elements: the slot is assigned. Otherwise the slot is raw
/// storage and the element is constructed there. (std::construct_at would serve both, but its
/// header, <memory>, costs more to parse than the rest of this library's core.)
template <bool Initialised, class T, std::size_t N, class... Args>
constexpr T& put(inline_array<T, N>& a, std::size_t i, Args&&... args) {
  if (Initialised || std::is_constant_evaluated()) return a.values[i] = T(static_cast<Args&&>(args)...);
  return *::new (static_cast<void*>(a.values + i)) T(static_cast<Args&&>(args)...);
}

/// The storage of a small vector of trivially copyable elements (a dims mapping, a mesh
/// shape): zeroed on construction (a few stores), so that the defaulted copy, which is
/// trivial, copies it as one fixed-size block of initialised bytes. Being trivially copyable,
/// it keeps the types that hold it (`tensor_dist_attr`, ...) trivially copyable, and so
/// cheap to copy. (Zeroing also keeps GCC 12's -Wmaybe-uninitialized quiet in Release builds:
/// a block copy of partly uninitialised storage is a false positive there.)
template <class T, std::size_t N>
struct block_storage {
  constexpr block_storage() noexcept : array(typename inline_array<T, N>::value_init{}) {}
  inline_array<T, N> array;
  std::uint8_t size = 0;
};

/// The storage of a large vector: left uninitialised at run time (nothing is constructed
/// until it is pushed), and its copies copy only the used elements, so building and copying
/// cost only what is used.
template <class T, std::size_t N>
struct sparse_storage {
  constexpr sparse_storage() noexcept
      : array(std::is_constant_evaluated() ? inline_array<T, N>(typename inline_array<T, N>::value_init{})
                                           : inline_array<T, N>()) {}
  constexpr sparse_storage(const sparse_storage& other) : sparse_storage() { assign(other); }
  constexpr sparse_storage& operator=(const sparse_storage& other) {
    if (this != &other) assign(other);
    return *this;
  }
  inline_array<T, N> array;
  std::uint8_t size = 0;

 private:
  constexpr void assign(const sparse_storage& other) {
    for (std::size_t i = 0; i < other.size; ++i) put<false>(array, i, other.array.values[i]);
    size = other.size;
  }
};

}  // namespace detail

/// A vector of at most N copyable, trivially destructible elements stored inline. `Tag` makes
/// vectors of the same elements distinct types (a dims mapping is not a shape); vectors of
/// different tags convert only explicitly. The unused
/// capacity of a large vector is left uninitialised at run time, so construction and copies
/// cost only the used elements; a small one (at most 128 bytes of trivially copyable
/// elements) is zeroed and copies as one block, and is itself trivially copyable. During
/// constant evaluation every slot is initialised, as constant expressions require. Exceeding
/// the capacity is an `invalid_argument` error (a compile error in constant evaluation).
template <class T, std::size_t N, class Tag = void>
class static_vector {
  static_assert(std::is_copy_constructible_v<T> && std::is_copy_assignable_v<T> && std::is_trivially_destructible_v<T>,
                "static_vector holds copyable, trivially destructible elements");
  static_assert(N <= 255, "static_vector keeps its size in one byte");

  static constexpr bool small = std::is_trivially_copyable_v<T> && sizeof(T) * N <= 128;
  using storage = std::conditional_t<small, detail::block_storage<T, N>, detail::sparse_storage<T, N>>;

 public:
  using value_type = T;
  using size_type = std::size_t;
  using reference = T&;
  using const_reference = const T&;
  using iterator = T*;
  using const_iterator = const T*;

  // User-provided, not defaulted: value-initialisation (`static_vector<T, N>{}`) of a class
  // with a defaulted default constructor zero-fills it first, the whole capacity.
  constexpr static_vector() noexcept {}
  constexpr static_vector(std::initializer_list<T> values) {
    if (values.size() > N) raise(capacity_error(values.size()));
    for (const T& v : values) detail::put<small>(s_.array, s_.size++, v);
  }
  /// The storage's copy: one block for a small vector, the used elements of a large one.
  constexpr static_vector(const static_vector&) = default;
  constexpr static_vector& operator=(const static_vector&) = default;
  /// `n` copies of `value`.
  constexpr static_vector(size_type n, const T& value) {
    if (n > N) raise(capacity_error(n));
    for (size_type i = 0; i < n; ++i) detail::put<small>(s_.array, s_.size++, value);
  }
  /// From any range of values convertible to T (another static_vector, a string_view, ...).
  /// An integer that T cannot represent (a mesh dim of 300 into an 8-bit entry) is an
  /// `invalid_argument`, not a silently wrapped value.
  template <class Range>
    requires requires(const Range& r) { r.begin(); r.end(); }
  constexpr explicit static_vector(const Range& r) {
    for (auto&& v : r) {
      using source = std::remove_cvref_t<decltype(v)>;
      if constexpr (std::is_integral_v<T> && std::is_integral_v<source> && !std::is_same_v<T, source>) {
        const T t = static_cast<T>(v);
        if (static_cast<source>(t) != v || (t < T{}) != (v < source{})) raise(range_error(static_cast<std::int64_t>(v)));
      }
      push_back(static_cast<T>(v));
    }
  }

  static constexpr size_type capacity() noexcept { return N; }
  constexpr size_type size() const noexcept { return s_.size; }
  constexpr bool empty() const noexcept { return s_.size == 0; }

  constexpr T* data() noexcept { return s_.array.values; }
  constexpr const T* data() const noexcept { return s_.array.values; }
  constexpr iterator begin() noexcept { return data(); }
  constexpr iterator end() noexcept { return data() + s_.size; }
  constexpr const_iterator begin() const noexcept { return data(); }
  constexpr const_iterator end() const noexcept { return data() + s_.size; }

  /// Element i; i must be below size() (checked: out of range is an `invalid_argument`).
  constexpr T& operator[](size_type i) {
    if (i >= s_.size) raise(index_error(i));
    return s_.array.values[i];
  }
  constexpr const T& operator[](size_type i) const {
    if (i >= s_.size) raise(index_error(i));
    return s_.array.values[i];
  }
  constexpr T& back() { return (*this)[s_.size - 1]; }
  constexpr const T& back() const { return (*this)[s_.size - 1]; }

  constexpr void push_back(const T& v) { emplace_back(v); }
  /// Constructs a new last element from `args` in place, and returns it.
  template <class... Args>
  constexpr T& emplace_back(Args&&... args) {
    if (s_.size == N) raise(capacity_error(s_.size + 1u));
    return detail::put<small>(s_.array, s_.size++, static_cast<Args&&>(args)...);
  }
  /// Sets the size to `n` (<= capacity(), unchecked) and returns data(), for the caller to write
  /// the elements in place. Only for a small vector, whose storage always holds live elements
  /// (those past the old size keep their values until written).
  constexpr T* resize_for_overwrite(size_type n) noexcept
    requires small
  {
    s_.size = static_cast<std::uint8_t>(n);
    return data();
  }
  /// `emplace_back` for a caller that knows there is room (size() < capacity()), without the check.
  template <class... Args>
  constexpr T& emplace_back_unchecked(Args&&... args) {
    return detail::put<small>(s_.array, s_.size++, static_cast<Args&&>(args)...);
  }
  constexpr void pop_back() {
    if (s_.size == 0) raise(make_error(error_kind::invalid_argument, "static_vector", "pop_back on an empty vector"));
    --s_.size;
  }
  constexpr void clear() noexcept { s_.size = 0; }
  /// Shrinks to `n` elements, or grows with copies of `value`.
  constexpr void resize(size_type n, const T& value = T{}) {
    if (n > N) raise(capacity_error(n));
    while (s_.size < n) detail::put<small>(s_.array, s_.size++, value);
    s_.size = static_cast<std::uint8_t>(n);
  }

  friend constexpr bool operator==(const static_vector& a, const static_vector& b) {
    if (a.s_.size != b.s_.size) return false;
    for (size_type i = 0; i < a.s_.size; ++i)
      if (!(a.s_.array.values[i] == b.s_.array.values[i])) return false;
    return true;
  }

 private:
  static constexpr error_info capacity_error(size_type wanted) {
    return make_error(error_kind::invalid_argument, "static_vector",
                      "{} elements exceed the capacity of {} (raise the CTSPMD_MAX_* macro)", wanted, N);
  }
  static constexpr error_info range_error(std::int64_t v) {
    return make_error(error_kind::invalid_argument, "static_vector", "the value {} is out of the element type's range", v);
  }
  static constexpr error_info index_error(size_type i) {
    return make_error(error_kind::invalid_argument, "static_vector", "index {} is out of range", i);
  }

  storage s_;
};

}  // namespace ctspmd

#endif
