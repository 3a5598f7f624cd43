//===- Resize.cpp - ONNX Resize and Upsample as gathers and weighted sums -===//
//
// Resize is separable: along each resized axis, output position o is
// sum_t c[o][t] * x[idx[o][t]] over n taps (1 for nearest, 2 linear, 4 cubic,
// more with antialias). Shapes are static, so idx and c are computed here, as
// ONNX's reference computes them, and the op becomes per axis one Gather per
// tap with constant indices, times constant coefficients along the axis,
// summed: elementwise work the code generator fuses.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/Importer.h"

#include <cmath>

namespace cuts::import {

struct ResizeAttrs {
  std::string mode, transform, nearest;
  double cubicA = -0.75;
  bool excludeOutside = false, antialias = false;
};

namespace {

/// How one axis is resampled: taps[t][o] indices and coeffs[t][o] weights;
/// outside[o] where tf_crop_and_resize extrapolates.
struct AxisTaps {
  std::vector<std::vector<int64_t>> taps;
  std::vector<std::vector<double>> coeffs;
  std::vector<bool> outside;
};

// The source coordinate of output position y (ONNX's _compute_x_ori).
double sourceCoordinate(const ResizeAttrs &r, double y, double scale,
                        int64_t in, int64_t out, double roiStart,
                        double roiEnd) {
  const double outF = scale * double(in);
  const std::string &m = r.transform;
  if (m == "align_corners")
    return outF == 1 ? 0 : y * double(in - 1) / (outF - 1);
  if (m == "asymmetric")
    return y / scale;
  if (m == "tf_crop_and_resize")
    return (outF == 1 ? (roiEnd - roiStart) * double(in - 1) / 2
                      : y * (roiEnd - roiStart) * double(in - 1) / (outF - 1)) +
           roiStart * double(in - 1);
  if (m == "tf_half_pixel_for_nn") // Resize-11 only
    return (y + 0.5) / scale;
  if (m == "pytorch_half_pixel")
    return outF == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (m == "half_pixel_symmetric") {
    double adjustment = double(out) / outF, center = double(in) / 2;
    return center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
  }
  return (y + 0.5) / scale - 0.5; // half_pixel
}

double cubicKernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// The taps' coefficients for a source offset `ratio` in (0, 1] (ONNX's
// _*_coeffs functions).
std::vector<double> coefficients(const ResizeAttrs &r, double ratio,
                                 double scale) {
  if (r.mode == "nearest") {
    if (ratio == 1)
      return {0, 1};
    bool up = r.nearest == "round_prefer_floor"  ? ratio > 0.5
              : r.nearest == "round_prefer_ceil" ? ratio >= 0.5
                                                 : r.nearest == "ceil";
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  std::vector<double> c;
  if (!r.antialias) {
    if (r.mode == "linear")
      return {1 - ratio, ratio};
    for (double x : {ratio + 1, ratio, 1 - ratio, 2 - ratio})
      c.push_back(cubicKernel(x, r.cubicA));
    return c;
  }
  // Antialias: the kernel stretched by 1 / scale when downsampling.
  const double s = std::min(scale, 1.0);
  const double support = r.mode == "linear" ? 1 : 2;
  const int64_t start = int64_t(std::floor(-support / s) + 1);
  const int64_t n = 2 - 2 * start; // as the reference, for both kernels
  double sum = 0;
  for (int64_t i = start; i < start + n; ++i) {
    double x = s * (double(i) - ratio);
    double v = r.mode == "linear" ? std::clamp(1 - std::fabs(x), 0.0, 1.0)
                                  : cubicKernel(x, r.cubicA);
    c.push_back(v);
    sum += v;
  }
  for (double &v : c)
    v /= sum;
  return c;
}

// ONNX's _interpolate_1d_along_axis: the n neighbours nearest the source
// coordinate (the lower ones preferred), clamped to the axis (edge padding).
AxisTaps axisTaps(const ResizeAttrs &r, int64_t in, int64_t out, double scale,
                  double roiStart, double roiEnd) {
  AxisTaps a;
  a.outside.assign(size_t(out), false);
  for (int64_t o = 0; o < out; ++o) {
    double x = sourceCoordinate(r, double(o), scale, in, out, roiStart, roiEnd);
    if (r.transform == "tf_crop_and_resize")
      a.outside[size_t(o)] = x < 0 || x > double(in - 1);
    double ratio = x == std::floor(x) ? 1.0 : x - std::floor(x);
    std::vector<double> c = coefficients(r, ratio, scale);
    const int64_t n = int64_t(c.size()), pad = (n + 1) / 2;
    const double xp = x + double(pad);
    const double p = std::floor(xp), frac = xp - p;
    int64_t offset = n % 2 == 0 ? (frac == 0 ? -(n / 2) : -(n / 2) + 1)
                                : -((n - 1) / 2) + (frac <= 0.5 ? 0 : 1);
    int64_t first = int64_t(p) + offset - pad;
    if (a.taps.empty()) {
      a.taps.assign(size_t(n), std::vector<int64_t>(size_t(out)));
      a.coeffs.assign(size_t(n), std::vector<double>(size_t(out)));
    }
    double sum = 0;
    for (int64_t t = 0; t < n; ++t) {
      int64_t i = first + t;
      if (r.excludeOutside && (i < 0 || i >= in))
        c[size_t(t)] = 0;
      sum += c[size_t(t)];
      a.taps[size_t(t)][size_t(o)] = std::clamp<int64_t>(i, 0, in - 1);
    }
    for (int64_t t = 0; t < n; ++t)
      a.coeffs[size_t(t)][size_t(o)] =
          r.excludeOutside && sum != 0 ? c[size_t(t)] / sum : c[size_t(t)];
  }
  return a;
}

} // namespace

// Resamples x along `axis` to `out` positions.
Value Importer::resizeAxis(Value x, int64_t axis, int64_t out, double scale,
                           double roiStart, double roiEnd,
                           const ResizeAttrs &r, double extrapolation) {
  auto type = typeOf(x);
  const int64_t rank = type.getRank();
  Type e = type.getElementType();
  AxisTaps a = axisTaps(r, type.getDimSize(axis), out, scale, roiStart, roiEnd);
  auto indexType = RankedTensorType::get({out}, builder.getIntegerType(64));
  auto gather = [&](const std::vector<int64_t> &idx) {
    auto c = builder.create<ConstantOp>(
        loc, indexType, DenseElementsAttr::get(indexType, llvm::ArrayRef(idx)));
    return make<GatherOp>({x, c}, {named("axis", i64(axis))});
  };
  Value y;
  for (size_t t = 0; t < a.taps.size(); ++t) {
    const std::vector<double> &c = a.coeffs[t];
    bool zero = std::all_of(c.begin(), c.end(), [](double v) { return v == 0; });
    bool one = std::all_of(c.begin(), c.end(), [](double v) { return v == 1; });
    if (zero)
      continue;
    if (r.mode == "nearest") { // one tap of weight 1 per position
      std::vector<int64_t> idx(static_cast<size_t>(out));
      for (int64_t o = 0; o < out; ++o)
        for (size_t u = 0; u < a.taps.size(); ++u)
          if (a.coeffs[u][size_t(o)] == 1)
            idx[size_t(o)] = a.taps[u][size_t(o)];
      y = gather(idx);
      break;
    }
    Value term = gather(a.taps[t]);
    if (!one)
      term = make<MulOp>({term, alongAxis(c, e, axis, rank)});
    y = y ? make<AddOp>({y, term}) : term;
  }
  if (!y) // every coefficient 0 (an empty axis)
    y = gather(std::vector<int64_t>(size_t(out), 0));
  if (std::find(a.outside.begin(), a.outside.end(), true) != a.outside.end()) {
    std::vector<double> mask(a.outside.begin(), a.outside.end());
    y = make<WhereOp>({alongAxis(mask, builder.getI1Type(), axis, rank),
                       scalarConstant(e, extrapolation), y});
  }
  return y;
}

LogicalResult Importer::convResize(const onnx::NodeProto &n) {
  auto x = required(0);
  if (failed(x))
    return failure();
  auto type = typeOf(*x);
  const int64_t rank = type.getRank();
  ResizeAttrs r;
  auto mode = attrString("mode", "nearest");
  auto transform = attrString("coordinate_transformation_mode", "half_pixel");
  auto nearest = attrString("nearest_mode", "round_prefer_floor");
  auto cubicA = attrFloat("cubic_coeff_a", -0.75f);
  auto exclude = attrInt("exclude_outside", 0);
  auto antialias = attrInt("antialias", 0);
  auto extrapolation = attrFloat("extrapolation_value", 0.0f);
  auto policy = attrString("keep_aspect_ratio_policy", "stretch");
  auto axesAttr = attrInts("axes");
  if (failed(x) || failed(mode) || failed(transform) || failed(nearest) ||
      failed(cubicA) || failed(exclude) || failed(antialias) ||
      failed(extrapolation) || failed(policy) || failed(axesAttr))
    return failure();
  r.mode = *mode;
  r.transform = *transform;
  r.nearest = *nearest;
  r.cubicA = *cubicA;
  r.excludeOutside = *exclude != 0;
  r.antialias = *antialias != 0;
  const bool legacy = n.op_type() == "Upsample" || opset < 11;
  if (legacy) { // Upsample and Resize-10: asymmetric, nearest rounds down
    r.transform = "asymmetric";
    r.nearest = "floor";
  }
  if (r.mode != "nearest" && r.mode != "linear" && r.mode != "cubic")
    return nodeFail("mode '" + r.mode + "' is not supported");
  static const char *transforms[] = {
      "half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
      "align_corners", "asymmetric",           "tf_crop_and_resize",
      "tf_half_pixel_for_nn"};
  if (std::find(std::begin(transforms), std::end(transforms), r.transform) ==
      std::end(transforms))
    return nodeFail("coordinate_transformation_mode '" + r.transform +
                    "' is not supported");
  if (r.mode != "nearest" && !llvm::isa<FloatType>(type.getElementType()))
    return nodeFail("mode '" + r.mode + "' needs a floating-point input");

  // The resized axes and their scales, sizes and regions of interest.
  std::vector<int64_t> axes;
  if (*axesAttr)
    axes = **axesAttr;
  else
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  for (int64_t &a : axes)
    if ((a = a < 0 ? a + rank : a) < 0 || a >= rank)
      return nodeFail("axis out of range");
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  auto floats = [&](int k, std::vector<double> &into, const char *what) {
    if (!hasInput(k))
      return success();
    auto v = lookup(node->input(k));
    if (failed(v))
      return failure();
    auto t = constantOf(*v);
    if (!t)
      return nodeFail(Twine(what) + " must be a constant");
    for (int64_t i = 0; i < t->numel(); ++i)
      into.push_back(t->getF(i));
    return success();
  };
  if (n.op_type() == "Upsample" && opset < 9) {
    auto s = attr("scales");
    if (!s)
      return nodeFail("attribute 'scales' is required");
    scales.assign(s->floats().begin(), s->floats().end());
  } else if (legacy) {
    if (failed(floats(1, scales, "scales")))
      return failure();
  } else {
    if (failed(floats(1, roi, "roi")) || failed(floats(2, scales, "scales")))
      return failure();
    if (hasInput(3)) {
      auto s = constInts(3, "sizes");
      if (failed(s))
        return failure();
      sizes = *s;
    }
  }
  return resizeAll(*x, axes, scales, sizes, roi, *policy, r, *extrapolation);
}

// The output extent and scale of each resized axis (ONNX's _interpolate_nd),
// then one resizeAxis per axis that changes.
LogicalResult Importer::resizeAll(Value x, ArrayRef<int64_t> axes,
                                  ArrayRef<double> scales,
                                  ArrayRef<int64_t> sizes, ArrayRef<double> roi,
                                  StringRef policy, const ResizeAttrs &r,
                                  double extrapolation) {
  auto shape = typeOf(x).getShape();
  const size_t na = axes.size();
  if (sizes.empty() == scales.empty())
    return nodeFail("exactly one of scales and sizes must be given");
  if ((!sizes.empty() && sizes.size() != na) ||
      (!scales.empty() && scales.size() != na))
    return nodeFail("scales or sizes must have one entry per resized axis (" +
                    Twine(na) + ")");
  if (r.transform == "tf_crop_and_resize" && roi.size() != 2 * na)
    return nodeFail("tf_crop_and_resize needs a roi of " + Twine(2 * na) +
                    " values");
  std::vector<double> scale(na);
  std::vector<int64_t> out(na);
  for (size_t i = 0; i < na; ++i) {
    int64_t in = shape[size_t(axes[i])];
    if (!sizes.empty()) {
      scale[i] = in ? double(sizes[i]) / double(in) : 1;
      out[i] = sizes[i];
    } else {
      scale[i] = scales[i];
      out[i] = int64_t(scales[i] * double(in));
    }
    if (scale[i] <= 0 || out[i] < 0)
      return nodeFail("scales and sizes must be positive");
  }
  if (!sizes.empty() && policy != "stretch") {
    if (policy != "not_larger" && policy != "not_smaller")
      return nodeFail("keep_aspect_ratio_policy '" + policy +
                      "' is not supported");
    double s = policy == "not_larger"
                   ? *std::min_element(scale.begin(), scale.end())
                   : *std::max_element(scale.begin(), scale.end());
    for (size_t i = 0; i < na; ++i) {
      scale[i] = s;
      out[i] = int64_t(s * double(shape[size_t(axes[i])]) + 0.5);
    }
  }
  Value y = x;
  for (size_t i = 0; i < na && y; ++i) {
    double start = roi.empty() ? 0 : roi[i], end = roi.empty() ? 1 : roi[na + i];
    if (std::fabs(scale[i] - 1) < 1e-9 && out[i] == shape[size_t(axes[i])] &&
        start == 0 && end == 1)
      continue;
    y = resizeAxis(y, axes[i], out[i], scale[i], start, end, r, extrapolation);
  }
  return y ? define(0, y) : failure();
}

} // namespace cuts::import
