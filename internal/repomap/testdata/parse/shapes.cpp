#include "shapes.hpp"
#include <memory>

namespace geo {
namespace detail {
inline int helper() { return 1; }
}

// Shape is a base.
class Shape {
  Q_OBJECT
public:
  Shape() = default;
  explicit Shape(int sides) : sides_(sides), data_{1, 2} {}
  virtual ~Shape();
  virtual double area() const = 0;
  Shape& operator=(const Shape&) = delete;
  bool operator<(const Shape& o) const noexcept { return sides_ < o.sides_; }
  operator bool() const;
  template <typename T>
  T as() const { return T(); }
protected:
  int sides_;
  struct Inner { void touch(); };
};

template <typename T, int N = 3>
struct Poly : public Shape, private std::enable_shared_from_this<Poly<T, N>> {
  double area() const override;
};

using ShapePtr = std::unique_ptr<Shape>;
constexpr double kPi = 3.14159;

}  // namespace geo

double geo::Shape::perimeter() const { return 0; }

template <typename T, int N>
double geo::Poly<T, N>::area() const {
  auto s = R"raw(})raw";
  return 0;
}

extern "C" {
int c_api(void);
}

TEST(ShapeTest, Area) {
  EXPECT_EQ(1, 1);
}
