// SmallVec<T, N>: a vector of trivially copyable values that keeps up to N of them inline, so
// the dims of a shape cost no heap allocation (every op builds a few shapes; an allocation and
// its free are a large share of a tiny op's host cost). Beyond N it moves to the heap like
// std::vector. It converts to std::vector<T> for the APIs that take one.
//
//   SmallVec<int64_t, 6> d{2, 3};  d.push_back(4);  std::vector<int64_t> v = d;  d == v;
//   # run
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>
#include <vector>

namespace ember {

// A std::vector-like sequence of trivially copyable T with room for N values inline (see the file's
// comment). Iterators and pointers are invalidated by any growth, as with std::vector, and also by
// a move. Not thread-safe.
template <class T, size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T> && N > 0);

 public:
  using value_type = T;                 // the element type
  using size_type = size_t;             // sizes and indices
  using difference_type = std::ptrdiff_t;  // iterator distances
  using reference = T&;                 // an element
  using const_reference = const T&;     // a read-only element
  using pointer = T*;                   // pointer to an element
  using const_pointer = const T*;       // pointer to a read-only element
  using iterator = T*;                  // a plain pointer into the storage
  using const_iterator = const T*;      // a read-only plain pointer into the storage
  using reverse_iterator = std::reverse_iterator<iterator>;  // iterates from the back
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;  // read-only, from the back

  // Empty, with the N inline slots as capacity.
  SmallVec() = default;
  explicit SmallVec(size_t n, const T& v = T()) { assign(n, v); }  // n copies of v
  SmallVec(std::initializer_list<T> il) { assign(il.begin(), il.end()); }  // the listed values
  // A copy of the range [first, last) (any input iterators).
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  SmallVec(It first, It last) {
    assign(first, last);
  }
  // A copy of v's values; implicit, so that APIs taking a SmallVec accept a std::vector.
  SmallVec(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit by design
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }  // copies o's values
  SmallVec(SmallVec&& o) noexcept { take(o); }  // takes o's heap storage (or copies its inline values); o is left empty
  // Copies o's values.
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  // Takes o's values as the move constructor does; o is left empty.
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  // Replaces the values with the listed ones.
  SmallVec& operator=(std::initializer_list<T> il) {
    assign(il.begin(), il.end());
    return *this;
  }
  ~SmallVec() { release(); }

  // A std::vector copy of the values (implicit, for the APIs that take one).
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }  // NOLINT
  std::vector<T> vec() const { return *this; }  // a std::vector copy of the values

  size_t size() const { return size_; }  // the number of values
  bool empty() const { return size_ == 0; }  // size() == 0
  size_t capacity() const { return cap_; }  // values storable without reallocating (N while inline)
  T* data() { return data_; }  // the contiguous values (inline or on the heap)
  const T* data() const { return data_; }  // the contiguous values, read-only
  iterator begin() { return data_; }  // first value
  iterator end() { return data_ + size_; }  // one past the last value
  const_iterator begin() const { return data_; }  // first value, read-only
  const_iterator end() const { return data_ + size_; }  // one past the last value, read-only
  const_iterator cbegin() const { return data_; }  // first value, read-only
  const_iterator cend() const { return data_ + size_; }  // one past the last value, read-only
  reverse_iterator rbegin() { return reverse_iterator(end()); }  // last value, iterating backwards
  reverse_iterator rend() { return reverse_iterator(begin()); }  // before the first value
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }  // last value, read-only
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }  // before the first, read-only
  T& operator[](size_t i) { return data_[i]; }  // value i (unchecked)
  const T& operator[](size_t i) const { return data_[i]; }  // value i, read-only (unchecked)
  T& front() { return data_[0]; }  // the first value (must not be empty)
  const T& front() const { return data_[0]; }  // the first value, read-only (must not be empty)
  T& back() { return data_[size_ - 1]; }  // the last value (must not be empty)
  const T& back() const { return data_[size_ - 1]; }  // the last value, read-only (must not be empty)

  // Makes room for n values (moving to the heap when n > capacity()); never shrinks.
  void reserve(size_t n) {
    if (n > cap_) move_to_heap(n);
  }
  void clear() { size_ = 0; }  // removes every value; keeps the capacity
  // Shrinks to n values or grows to n, filling the new ones with v.
  void resize(size_t n, const T& v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  // Replaces the values with n copies of v.
  void assign(size_t n, const T& v) {
    clear();
    resize(n, v);
  }
  // Replaces the values with a copy of [first, last), which may lie in this vector.
  template <class It>
  void assign(It first, It last) {
    const auto n = size_t(std::distance(first, last));
    if (n > cap_) {
      // (`first` may point into this vector only when n <= size, so growing never reads freed memory)
      clear();
      reserve(n);
    }
    std::copy(first, last, data_);  // (an overlapping source is a prefix move to the front: safe)
    size_ = n;
  }
  // Appends v (which may be one of this vector's values).
  void push_back(const T& v) {
    if (size_ == cap_) {
      const T copy = v;  // (v may live in this vector)
      grow(size_ + 1);
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = v;
  }
  // Appends T(a...) and returns it.
  template <class... A>
  T& emplace_back(A&&... a) {
    push_back(T(std::forward<A>(a)...));
    return back();
  }
  void pop_back() { --size_; }  // removes the last value (must not be empty)
  // Inserts v before pos; returns an iterator to it.
  iterator insert(const_iterator pos, const T& v) { return insert(pos, size_t(1), v); }
  // Inserts n copies of v before pos; returns an iterator to the first.
  iterator insert(const_iterator pos, size_t n, const T& v) {
    const T copy = v;
    const size_t i = open(pos, n);
    std::fill_n(data_ + i, n, copy);
    return data_ + i;
  }
  // Inserts a copy of [first, last) before pos (the range may lie in this vector); returns an iterator
  // to the first inserted value.
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  iterator insert(const_iterator pos, It first, It last) {
    const std::vector<T> src(first, last);  // (the range may live in this vector)
    const size_t i = open(pos, src.size());
    std::copy(src.begin(), src.end(), data_ + i);
    return data_ + i;
  }
  // Inserts the listed values before pos; returns an iterator to the first.
  iterator insert(const_iterator pos, std::initializer_list<T> il) { return insert(pos, il.begin(), il.end()); }
  // Removes the value at pos; returns an iterator to the value that followed it.
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  // Removes [first, last); returns an iterator to the value that followed the range.
  iterator erase(const_iterator first, const_iterator last) {
    const size_t i = size_t(first - data_), n = size_t(last - first);
    std::copy(data_ + i + n, data_ + size_, data_ + i);
    size_ -= n;
    return data_ + i;
  }

  // Same size and equal values.
  friend bool operator==(const SmallVec& a, const SmallVec& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
  // Same size and equal values as a std::vector.
  friend bool operator==(const SmallVec& a, const std::vector<T>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  // Lexicographical order, as std::vector's.
  friend bool operator<(const SmallVec& a, const SmallVec& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  bool on_heap() const { return data_ != inline_; }
  void release() {
    if (on_heap()) std::free(data_);
    data_ = inline_;
    cap_ = N;
    size_ = 0;
  }
  void take(SmallVec& o) {
    if (o.on_heap()) {
      data_ = o.data_;
      cap_ = o.cap_;
      size_ = o.size_;
      o.data_ = o.inline_;
      o.cap_ = N;
    } else {
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(T));
      size_ = o.size_;
    }
    o.size_ = 0;
  }
  void grow(size_t need) {
    if (need > cap_) move_to_heap(std::max(need, 2 * cap_));
  }
  void move_to_heap(size_t cap) {
    T* p = static_cast<T*>(std::malloc(cap * sizeof(T)));
    if (!p) throw std::bad_alloc();
    const size_t n = size_;
    if (n) std::memcpy(p, data_, n * sizeof(T));
    release();
    data_ = p;
    cap_ = cap;
    size_ = n;
  }
  // Makes room for n values at pos; returns pos's index.
  size_t open(const_iterator pos, size_t n) {
    const size_t i = size_t(pos - data_);
    grow(size_ + n);
    std::copy_backward(data_ + i, data_ + size_, data_ + size_ + n);
    size_ += n;
    return i;
  }

  T* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = N;
  T inline_[N];
};

}  // namespace ember
