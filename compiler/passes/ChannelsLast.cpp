//===- ChannelsLast.cpp - 16-bit convolutions in NHWC ---------------------===//
#include "compiler/passes/Passes.h"

#include "cuts/Dialect/Cuts/CutsOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace cuts {
#define GEN_PASS_DEF_CHANNELSLAST
#include "compiler/passes/Passes.h.inc"

namespace {

constexpr int64_t kToLast[] = {0, 2, 3, 1};  // NCHW -> NHWC
constexpr int64_t kToFirst[] = {0, 3, 1, 2}; // NHWC -> NCHW

mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

// The channels of one 16-byte copy of v's elements (8 for 16-bit ones).
int64_t copyChannels(mlir::Value v) {
  return 128 / tensorType(v).getElementTypeBitWidth();
}

// The channels a conv input's (or weight's) dimension 1 is padded to: whole
// 16-byte copies, or one 8-byte copy where that holds them (a 16-bit RGB
// stem's 3 channels go to 4, not 8: half the products and re-reads).
int64_t padUnit(mlir::Value v) {
  const int64_t bits = tensorType(v).getElementTypeBitWidth();
  return tensorType(v).getDimSize(1) * bits <= 64 ? 64 / bits : copyChannels(v);
}

bool isDense2d(ConvOp conv) { return tensorType(conv.getX()).getRank() == 4; }

// One input and one output channel a group (MobileNet's 3 x 3 convs).
bool isDepthwise(ConvOp conv) {
  auto x = tensorType(conv.getX()), w = tensorType(conv.getW());
  return int64_t(conv.getGroup()) == x.getDimSize(1) && w.getDimSize(1) == 1 &&
         w.getDimSize(0) == x.getDimSize(1);
}

// A conv that runs channels-last: 2-D, of tensor-core operands (16-bit,
// or fp32 under tf32), a constant weight (stored permuted), and either one
// group with input and output channels in whole 16-byte copies (the tensor
// cores' implicit GEMM; a stem's fewer input channels padded with zeros),
// or depthwise (a SIMT kernel reading channels innermost).
bool convertible(ConvOp conv) {
  if (conv.getChannelsLast() || !isDense2d(conv) ||
      !tensorCoreElement(tensorType(conv.getX()).getElementType(), conv) ||
      !conv.getW().getDefiningOp<ConstantOp>())
    return false;
  auto x = tensorType(conv.getX()), w = tensorType(conv.getW());
  const int64_t ic = x.getDimSize(1), unit = copyChannels(conv.getX());
  return isDepthwise(conv) ||
         (conv.getGroup() == 1 && w.getDimSize(0) % 8 == 0 &&
          (ic % unit == 0 || ic < unit));
}

// transpose(v, perm), reusing one that already exists.
mlir::Value transposed(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                       llvm::ArrayRef<int64_t> perm) {
  for (mlir::Operation *user : v.getUsers())
    if (auto t = llvm::dyn_cast<TransposeOp>(user);
        t && t.getPerm() == perm && t->getBlock() == b.getInsertionBlock() &&
        t->isBeforeInBlock(&*b.getInsertionPoint()))
      return t;
  return b.create<TransposeOp>(loc, v, b.getDenseI64ArrayAttr(perm));
}

// v (channels-last) with its channels padded with zeros to a multiple of
// `unit`.
mlir::Value padChannels(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                        int64_t unit) {
  const int64_t c = tensorType(v).getDimSize(3);
  if (c % unit == 0)
    return v;
  return b.create<PadOp>(
      loc, v, b.getDenseI64ArrayAttr({0, 0, 0, 0, 0, 0, 0, unit - c % unit}),
      b.getStringAttr("constant"), b.getF64FloatAttr(0));
}

// x channels-last and its channels padded (padUnit). A model input's cast
// moves after both, so that one kernel reads the input, reorders, pads and
// converts it.
mlir::Value lastInput(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x) {
  const int64_t unit = padUnit(x);
  auto cast = x.getDefiningOp<CastOp>();
  if (!cast || !llvm::isa<mlir::BlockArgument>(cast.getInput()) ||
      !cast->hasOneUse() || tensorType(x).getDimSize(1) % unit == 0)
    return padChannels(b, loc, transposed(b, loc, x, kToLast), unit);
  mlir::Value v =
      padChannels(b, loc, transposed(b, loc, cast.getInput(), kToLast), unit);
  auto t = tensorType(v);
  return b.create<CastOp>(
      loc, mlir::RankedTensorType::get(t.getShape(), cast.getTo()), v,
      cast.getToAttr());
}

// A stem whose pixels are 8 bytes (padded), read at an even stride along
// W: a zero window column makes its width even, before the window where
// the begin padding is odd, else after it, so that each 16-byte copy is two
// window positions of one row starting at an even input column, never
// straddling the input's (even) width. The output is the same. Returns the
// new W padding (begin, end added) or none.
std::optional<std::pair<int64_t, int64_t>> evenStemWidth(ConvOp conv,
                                                         mlir::Value x) {
  auto t = tensorType(x);
  auto w = tensorType(conv.getW());
  auto pads = conv.getPads();
  const int64_t bits = t.getElementTypeBitWidth();
  if (t.getDimSize(3) * bits != 64 || w.getDimSize(3) % 2 == 0 ||
      conv.getStrides()[1] % 2 != 0 || conv.getDilations()[1] != 1 ||
      t.getDimSize(2) % 2 != 0)
    return std::nullopt;
  return pads[1] % 2 ? std::make_pair(int64_t(1), int64_t(0))
                     : std::make_pair(int64_t(0), int64_t(1));
}

void convert(ConvOp conv) {
  mlir::OpBuilder b(conv);
  mlir::Location loc = conv.getLoc();
  mlir::Value w =
      b.create<TransposeOp>(loc, conv.getW(), b.getDenseI64ArrayAttr(kToLast));
  llvm::SmallVector<mlir::Value> operands{
      isDepthwise(conv) ? transposed(b, loc, conv.getX(), kToLast)
                        : lastInput(b, loc, conv.getX()),
      isDepthwise(conv) ? w : padChannels(b, loc, w, padUnit(conv.getW()))};
  llvm::SmallVector<int64_t> pads(conv.getPads());
  if (auto even =
          isDepthwise(conv) ? std::nullopt : evenStemWidth(conv, operands[0])) {
    operands[1] = b.create<PadOp>(
        loc, operands[1],
        b.getDenseI64ArrayAttr({0, 0, even->first, 0, 0, 0, even->second, 0}),
        b.getStringAttr("constant"), b.getF64FloatAttr(0));
    pads[1] += even->first, pads[3] += even->second;
  }
  if (conv.getB())
    operands.push_back(conv.getB());
  llvm::SmallVector<mlir::NamedAttribute> attrs;
  for (mlir::NamedAttribute a : conv->getAttrs())
    attrs.push_back(a.getName() == "pads"
                        ? b.getNamedAttr("pads", b.getDenseI64ArrayAttr(pads))
                        : a);
  attrs.push_back(b.getNamedAttr("channels_last", b.getUnitAttr()));
  auto last = b.create<ConvOp>(loc, operands, attrs);
  conv.getY().replaceAllUsesWith(
      b.create<TransposeOp>(loc, last, b.getDenseI64ArrayAttr(kToFirst)));
  conv->erase();
}

// v as a transpose that may move down past its user: one whose input is
// not a function argument (a transpose put before an op for its argument
// stays there, so nothing moves back up); null otherwise.
TransposeOp movable(mlir::Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  return t && !llvm::isa<mlir::BlockArgument>(t.getData()) ? t : nullptr;
}

// transpose(transpose(x, p0), p1) = transpose(x, p0[p1[i]]); the folder
// drops an identity.
struct ComposeTransposes : mlir::OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(TransposeOp t, mlir::PatternRewriter &rw) const override {
    auto inner = t.getData().getDefiningOp<TransposeOp>();
    if (!inner)
      return mlir::failure();
    llvm::SmallVector<int64_t> perm;
    for (int64_t p : t.getPerm())
      perm.push_back(inner.getPerm()[p]);
    rw.replaceOpWithNewOp<TransposeOp>(t, inner.getData(),
                                       rw.getDenseI64ArrayAttr(perm));
    return mlir::success();
  }
};

// op(transpose(a, p), transpose(b, p), c) = transpose(op(a, b, c'), p) for
// an elementwise op whose result has a's shape transposed; a constant
// operand c is made full-rank and transposed back (both fold), as is a
// function argument of the result's shape (a kernel, so only where no
// more of them than transposes move: the model input a residual add
// reads).
struct SinkTranspose : mlir::RewritePattern {
  explicit SinkTranspose(mlir::MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}

  mlir::LogicalResult
  matchAndRewrite(mlir::Operation *op,
                  mlir::PatternRewriter &rw) const override {
    if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumResults() != 1)
      return mlir::failure();
    auto out = tensorType(op->getResult(0));
    std::optional<llvm::SmallVector<int64_t>> perm;
    int sunk = 0, added = 0;
    auto sinking = [&](mlir::Value v) {
      TransposeOp t = movable(v);
      return t && tensorType(t).getShape() == out.getShape() ? t : nullptr;
    };
    for (mlir::Value v : op->getOperands()) {
      if (TransposeOp t = sinking(v)) {
        if (!perm)
          perm.emplace(t.getPerm());
        else if (t.getPerm() != llvm::ArrayRef<int64_t>(*perm))
          return mlir::failure();
        ++sunk;
      } else if (tensorType(v).getShape() == out.getShape() &&
                 llvm::isa<mlir::BlockArgument>(v)) {
        ++added;
      } else if (!v.getDefiningOp<ConstantOp>() ||
                 tensorType(v).getRank() > out.getRank()) {
        return mlir::failure();
      }
    }
    if (!perm || added > sunk)
      return mlir::failure();
    const size_t r = perm->size();
    llvm::SmallVector<int64_t> inverse(r), shape(r);
    for (size_t i = 0; i < r; ++i)
      inverse[(*perm)[i]] = int64_t(i);
    for (size_t j = 0; j < r; ++j)
      shape[j] = out.getDimSize(inverse[j]);
    llvm::SmallVector<mlir::Value> operands;
    for (mlir::Value v : op->getOperands()) {
      if (TransposeOp t = sinking(v)) {
        operands.push_back(t.getData());
        continue;
      }
      auto c = tensorType(v);
      if (llvm::isa<mlir::BlockArgument>(v)) {
        operands.push_back(transposed(rw, op->getLoc(), v, inverse));
        continue;
      }
      if (c.getNumElements() == 1) { // broadcasts as it is
        operands.push_back(v);
        continue;
      }
      llvm::SmallVector<int64_t> full(r - c.getRank(), 1);
      full.append(c.getShape().begin(), c.getShape().end());
      mlir::Value cf = v;
      if (size_t(c.getRank()) != r)
        cf = rw.create<ReshapeOp>(op->getLoc(), v,
                                  rw.getDenseI64ArrayAttr(full));
      operands.push_back(rw.create<TransposeOp>(
          op->getLoc(), cf, rw.getDenseI64ArrayAttr(inverse)));
    }
    mlir::OperationState state(op->getLoc(), op->getName());
    state.addOperands(operands);
    state.addAttributes(op->getAttrs());
    state.addTypes(mlir::RankedTensorType::get(shape, out.getElementType()));
    mlir::Operation *moved = rw.create(state);
    rw.replaceOpWithNewOp<TransposeOp>(op, moved->getResult(0),
                                       rw.getDenseI64ArrayAttr(*perm));
    return mlir::success();
  }
};

// concat(transpose(a, p), transpose(b, p), axis) =
// transpose(concat(a, b, p[axis]), p): DenseNet's and Inception's channel
// concats of channels-last convs.
struct SinkTransposeThroughConcat : mlir::OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(ConcatOp cat, mlir::PatternRewriter &rw) const override {
    llvm::SmallVector<mlir::Value> inputs;
    std::optional<llvm::ArrayRef<int64_t>> perm;
    for (mlir::Value v : cat.getInputs()) {
      TransposeOp t = movable(v);
      if (!t || (perm && t.getPerm() != *perm))
        return mlir::failure();
      perm = t.getPerm();
      inputs.push_back(t.getData());
    }
    if (!perm)
      return mlir::failure();
    auto moved = rw.create<ConcatOp>(
        cat.getLoc(), inputs,
        rw.getI64IntegerAttr((*perm)[size_t(cat.getAxis())]));
    rw.replaceOpWithNewOp<TransposeOp>(cat, moved,
                                       rw.getDenseI64ArrayAttr(*perm));
    return mlir::success();
  }
};

// pool(transpose(x, [0, 3, 1, 2])) = transpose(pool{channels_last}(x),
// [0, 3, 1, 2]): a max or average pooling of a channels-last conv's
// result pools it where it is (ResNet's after its stem, Inception's).
template <typename Pool>
struct SinkTransposeThroughPool : mlir::OpRewritePattern<Pool> {
  using mlir::OpRewritePattern<Pool>::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(Pool pool, mlir::PatternRewriter &rw) const override {
    TransposeOp t = movable(pool.getX());
    if (!t || t.getPerm() != llvm::ArrayRef<int64_t>(kToFirst))
      return mlir::failure();
    llvm::SmallVector<mlir::NamedAttribute> attrs(pool->getAttrs());
    attrs.push_back(rw.getNamedAttr("channels_last", rw.getUnitAttr()));
    auto last =
        rw.create<Pool>(pool.getLoc(), mlir::ValueRange{t.getData()}, attrs);
    rw.replaceOpWithNewOp<TransposeOp>(pool, last,
                                       rw.getDenseI64ArrayAttr(kToFirst));
    return mlir::success();
  }
};

// global_average_pool(transpose(x, [0, 3, 1, 2])) = reshape(average_pool
// {channels_last}(x) over the whole H x W): ResNet's last conv's result is
// averaged where it is, as channel vectors, and its N x 1 x 1 x C mean is
// N x C x 1 x 1 in memory already.
struct SinkTransposeThroughGlobalPool
    : mlir::OpRewritePattern<GlobalAveragePoolOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(GlobalAveragePoolOp pool,
                  mlir::PatternRewriter &rw) const override {
    TransposeOp t = movable(pool.getX());
    if (!t || t.getPerm() != llvm::ArrayRef<int64_t>(kToFirst))
      return mlir::failure();
    auto x = tensorType(t.getData());
    auto i64s = [&](llvm::ArrayRef<int64_t> v) {
      return rw.getDenseI64ArrayAttr(v);
    };
    auto mean = rw.create<AveragePoolOp>(
        pool.getLoc(),
        mlir::RankedTensorType::get({x.getDimSize(0), 1, 1, x.getDimSize(3)},
                                    x.getElementType()),
        t.getData(), i64s({x.getDimSize(1), x.getDimSize(2)}), i64s({1, 1}),
        i64s({0, 0, 0, 0}), i64s({1, 1}), rw.getBoolAttr(false),
        rw.getBoolAttr(false), rw.getUnitAttr());
    rw.replaceOpWithNewOp<ReshapeOp>(pool, pool.getType(), mean,
                                     i64s(tensorType(pool.getY()).getShape()));
    return mlir::success();
  }
};

struct ChannelsLastPass : impl::ChannelsLastBase<ChannelsLastPass> {
  void runOnOperation() override {
    llvm::SmallVector<ConvOp> convs;
    bool grouped = false;
    getOperation().walk([&](ConvOp conv) {
      grouped |= isDense2d(conv) && conv.getGroup() != 1 && !isDepthwise(conv);
      if (convertible(conv))
        convs.push_back(conv);
    });
    if (grouped || convs.empty())
      return;
    for (ConvOp conv : convs)
      convert(conv);
    mlir::RewritePatternSet patterns(&getContext());
    patterns.add<ComposeTransposes, SinkTranspose, SinkTransposeThroughConcat,
                 SinkTransposeThroughPool<MaxPoolOp>,
                 SinkTransposeThroughPool<AveragePoolOp>,
                 SinkTransposeThroughGlobalPool>(&getContext());
    // Every rewrite keeps the function's meaning: a graph the patterns do
    // not settle (a bounded number of moves an op) is still a right one.
    int64_t ops = 0;
    getOperation().walk([&](mlir::Operation *) { ++ops; });
    mlir::GreedyRewriteConfig config;
    config.maxNumRewrites = 8 * ops;
    (void)mlir::applyPatternsAndFoldGreedily(getOperation(),
                                             std::move(patterns), config);
  }
};

} // namespace
} // namespace cuts
