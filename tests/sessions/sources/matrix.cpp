// A small dense matrix with row-major storage.
#include <cstddef>
#include <stdexcept>
#include <vector>

class Matrix {
 public:
  Matrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols), data_(rows * cols, 0.0) {}

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }

  double& operator()(std::size_t r, std::size_t c) { return data_[r * cols_ + c]; }
  double operator()(std::size_t r, std::size_t c) const { return data_[r * cols_ + c]; }

  static Matrix identity(std::size_t n) {
    Matrix m(n, n);
    for (std::size_t i = 0; i < n; ++i) m(i, i) = 1.0;
    return m;
  }

  Matrix transposed() const {
    Matrix t(cols_, rows_);
    for (std::size_t r = 0; r < rows_; ++r)
      for (std::size_t c = 0; c < cols_; ++c) t(c, r) = (*this)(r, c);
    return t;
  }

  Matrix operator*(const Matrix& other) const {
    if (cols_ != other.rows_) throw std::invalid_argument("matrix shapes do not match");
    Matrix result(rows_, other.cols_);
    for (std::size_t r = 0; r < rows_; ++r) {
      for (std::size_t k = 0; k < cols_; ++k) {
        double a = (*this)(r, k);
        for (std::size_t c = 0; c < other.cols_; ++c) result(r, c) += a * other(k, c);
      }
    }
    return result;
  }

 private:
  std::size_t rows_;
  std::size_t cols_;
  std::vector<double> data_;
};
