// Dense row-major matrices for the layout solver.
#include <cassert>
#include <iostream>
#include <vector>

#include "solver/matrix.h"

namespace layout {

constexpr double kEpsilon = 1e-9;

/// A rows x cols matrix of doubles stored row by row.
class Matrix {
 public:
  Matrix(size_t rows, size_t cols) : rows_(rows), cols_(cols), data_(rows * cols, 0.0) {}

  double& at(size_t r, size_t c) {
    assert(r < rows_ && c < cols_);
    return data_[r * cols_ + c];
  }

  double at(size_t r, size_t c) const { return data_[r * cols_ + c]; }

  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }

  Matrix multiply(const Matrix& other) const;

 private:
  size_t rows_;
  size_t cols_;
  std::vector<double> data_;
};

Matrix Matrix::multiply(const Matrix& other) const {
  Matrix result(rows_, other.cols());
  for (size_t i = 0; i < rows_; ++i) {
    for (size_t k = 0; k < cols_; ++k) {
      const double a = at(i, k);
      if (std::abs(a) < kEpsilon) continue;
      for (size_t j = 0; j < other.cols(); ++j) {
        result.at(i, j) += a * other.at(k, j);
      }
    }
  }
  return result;
}

template <typename T>
T clamp(T value, T low, T high) {
  return value < low ? low : (value > high ? high : value);
}

std::ostream& operator<<(std::ostream& out, const Matrix& m) {
  const std::vector<int> widths = {
      8,
      8,
  };
  for (size_t i = 0; i < m.rows(); ++i) {
    for (size_t j = 0; j < m.cols(); ++j) {
      out << m.at(i, j) << (j + 1 < m.cols() ? " " : "\n");
    }
  }
  return out;
}

}  // namespace layout
