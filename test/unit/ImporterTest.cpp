// The importer on ModelProtos built in memory: attribute normalisation across
// opsets, shape folding, and errors that name what is wrong.
#include "compiler/onnx/OnnxImporter.h"
#include "cuts/Dialect/Cuts/CutsOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include "onnx/onnx.pb.h"

#include <catch2/catch.hpp>

using namespace cuts;

namespace {

struct Model {
  onnx::ModelProto proto;
  onnx::GraphProto *g;
  explicit Model(int64_t opset = 17) {
    proto.set_ir_version(8);
    auto *o = proto.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g = proto.mutable_graph();
    g->set_name("test");
  }
  void input(const std::string &name, std::vector<int64_t> shape,
             int type = onnx::TensorProto::FLOAT) {
    auto *v = g->add_input();
    v->set_name(name);
    auto *t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    auto *s = t->mutable_shape();
    for (int64_t d : shape)
      s->add_dim()->set_dim_value(d);
  }
  void output(const std::string &name) { g->add_output()->set_name(name); }
  onnx::NodeProto *node(const std::string &op, std::vector<std::string> ins,
                        std::vector<std::string> outs) {
    auto *n = g->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(g->node_size()));
    for (auto &i : ins)
      n->add_input(i);
    for (auto &o : outs)
      n->add_output(o);
    return n;
  }
  void ints(const std::string &name, std::vector<int64_t> v) {
    auto *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(int64_t(v.size()));
    for (int64_t x : v)
      t->add_int64_data(x);
  }
  void floats(const std::string &name, std::vector<int64_t> dims,
              std::vector<float> v) {
    auto *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      t->add_dims(d);
    for (float x : v)
      t->add_float_data(x);
  }
};

onnx::AttributeProto *attrInts(onnx::NodeProto *n, const std::string &name,
                               std::vector<int64_t> v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v)
    a->add_ints(x);
  return a;
}

void attrString(onnx::NodeProto *n, const std::string &name,
                const std::string &v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

struct Imported {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string error;
  Imported(const Model &m, const ImportOptions &opts = {}) {
    module = importOnnxBytes(ctx, m.proto.SerializeAsString(), "", opts, error);
  }
  template <typename OpTy> OpTy first() {
    OpTy found;
    module->walk([&](OpTy op) {
      if (!found)
        found = op;
    });
    return found;
  }
  mlir::RankedTensorType result(unsigned k = 0) {
    auto f = module->lookupSymbol<mlir::func::FuncOp>("main");
    return llvm::cast<mlir::RankedTensorType>(f.getFunctionType().getResult(k));
  }
};

std::vector<int64_t> vec(llvm::ArrayRef<int64_t> a) {
  return std::vector<int64_t>(a.begin(), a.end());
}

} // namespace

TEST_CASE("auto_pad SAME_UPPER and SAME_LOWER become explicit pads",
          "[import]") {
  for (std::string mode : {"SAME_UPPER", "SAME_LOWER"}) {
    Model m;
    m.input("x", {1, 1, 5, 5});
    m.floats("w", {1, 1, 4, 4}, std::vector<float>(16, 1.0f));
    auto *n = m.node("Conv", {"x", "w"}, {"y"});
    attrString(n, "auto_pad", mode);
    m.output("y");
    Imported im(m);
    REQUIRE(im.module);
    auto conv = im.first<ConvOp>();
    // total padding 3: SAME_UPPER puts the extra one at the end.
    if (mode == "SAME_UPPER")
      CHECK(vec(conv.getPads()) == std::vector<int64_t>{1, 1, 2, 2});
    else
      CHECK(vec(conv.getPads()) == std::vector<int64_t>{2, 2, 1, 1});
    CHECK(im.result().getShape() == llvm::ArrayRef<int64_t>{1, 1, 5, 5});
  }
}

TEST_CASE("Reshape resolves 0 and -1 from a computed shape", "[import]") {
  Model m;
  m.input("x", {2, 3, 4});
  m.ints("s", {0, -1});
  m.node("Reshape", {"x", "s"}, {"y"});
  m.output("y");
  Imported im(m);
  REQUIRE(im.module);
  CHECK(vec(im.first<ReshapeOp>().getShape()) == std::vector<int64_t>{2, 12});
}

TEST_CASE("Shape subgraphs are evaluated at import", "[import]") {
  Model m;
  m.input("x", {2, 3, 4});
  m.ints("idx", {2});
  m.ints("minus1", {-1});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "idx"}, {"last"});
  m.node("Concat", {"minus1", "last"}, {"shape"})
      ->add_attribute()
      ->set_name("axis");
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  Imported im(m);
  REQUIRE(im.module);
  CHECK(im.result().getShape() == llvm::ArrayRef<int64_t>{6, 4});
}

TEST_CASE("Slice normalises negative indices and steps", "[import]") {
  Model m;
  m.input("x", {10, 4});
  m.ints("starts", {-1});
  m.ints("ends", {-100});
  m.ints("axes", {0});
  m.ints("steps", {-3});
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  m.output("y");
  Imported im(m);
  REQUIRE(im.module);
  auto slice = im.first<SliceOp>();
  CHECK(vec(slice.getStarts()) == std::vector<int64_t>{9, 0});
  CHECK(vec(slice.getEnds()) == std::vector<int64_t>{-1, 4});
  CHECK(vec(slice.getSteps()) == std::vector<int64_t>{-3, 1});
  // rows 9, 6, 3, 0
  CHECK(im.result().getShape() == llvm::ArrayRef<int64_t>{4, 4});
}

TEST_CASE("Clip bounds from constant inputs become attributes", "[import]") {
  Model m;
  m.input("x", {4});
  m.floats("lo", {}, {0.0f});
  m.floats("hi", {}, {6.0f});
  m.node("Clip", {"x", "lo", "hi"}, {"y"});
  m.output("y");
  Imported im(m);
  REQUIRE(im.module);
  auto clip = im.first<ClipOp>();
  REQUIRE(clip.getMinAttr());
  CHECK(clip.getMinAttr().getValueAsDouble() == 0.0);
  CHECK(clip.getMaxAttr().getValueAsDouble() == 6.0);
}

TEST_CASE("Split with num_outputs uses ceil-sized parts", "[import]") {
  Model m(18);
  m.input("x", {7});
  auto *n = m.node("Split", {"x"}, {"a", "b", "c"});
  auto *a = n->add_attribute();
  a->set_name("num_outputs");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(3);
  m.output("a");
  m.output("c");
  Imported im(m);
  REQUIRE(im.module);
  CHECK(vec(im.first<SplitOp>().getSplit()) == std::vector<int64_t>{3, 3, 1});
}

TEST_CASE("ReduceMean axes: attribute before opset 18, input after",
          "[import]") {
  Model old(13);
  old.input("x", {2, 3, 4});
  attrInts(old.node("ReduceMean", {"x"}, {"y"}), "axes", {-1});
  old.output("y");
  Imported a(old);
  REQUIRE(a.module);
  CHECK(a.result().getShape() == llvm::ArrayRef<int64_t>{2, 3, 1});

  Model m(18);
  m.input("x", {2, 3, 4});
  m.ints("axes", {0, -1});
  auto *n = m.node("ReduceMean", {"x", "axes"}, {"y"});
  auto *k = n->add_attribute();
  k->set_name("keepdims");
  k->set_type(onnx::AttributeProto::INT);
  k->set_i(0);
  m.output("y");
  Imported b(m);
  REQUIRE(b.module);
  CHECK(b.result().getShape() == llvm::ArrayRef<int64_t>{3});
}

TEST_CASE("--input-shape fixes symbolic dimensions", "[import]") {
  Model m;
  auto *v = m.g->add_input();
  v->set_name("x");
  auto *t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_param("batch");
  t->mutable_shape()->add_dim()->set_dim_value(8);
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  {
    Imported im(m);
    CHECK(!im.module);
    CHECK(im.error.find("symbolic dimension 'batch'") != std::string::npos);
    CHECK(im.error.find("--input-shape x=") != std::string::npos);
  }
  ImportOptions opts;
  opts.inputShapes["x"] = {4, 8};
  Imported im(m, opts);
  REQUIRE(im.module);
  CHECK(im.result().getShape() == llvm::ArrayRef<int64_t>{4, 8});
  opts.inputShapes["x"] = {4, 9};
  Imported bad(m, opts);
  CHECK(!bad.module);
  CHECK(bad.error.find("has size 8 at axis 1") != std::string::npos);
}

TEST_CASE("errors name the node, op type and opset", "[import]") {
  Model m;
  m.input("x", {2, 3});
  m.input("y", {4, 5});
  m.node("Add", {"x", "y"}, {"z"});
  m.output("z");
  Imported im(m);
  CHECK(!im.module);
  CHECK(im.error.find("node 'Add_1' (Add, opset 17)") != std::string::npos);
  CHECK(im.error.find("do not broadcast") != std::string::npos);

  Model u;
  u.input("x", {2});
  u.node("Frobnicate", {"x"}, {"y"});
  u.output("y");
  Imported un(u);
  CHECK(!un.module);
  CHECK(un.error.find("op type Frobnicate (opset 17)") != std::string::npos);
  CHECK(un.error.find("cuts import --list-ops") != std::string::npos);
}

TEST_CASE("bad protobuf bytes are an error, not a crash", "[import]") {
  Model m;
  m.input("x", {2});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  std::string bytes = m.proto.SerializeAsString();
  mlir::MLIRContext ctx;
  std::string err;
  for (size_t cut : {size_t(1), bytes.size() / 2, bytes.size() - 1}) {
    err.clear();
    auto mod = importOnnxBytes(ctx, bytes.substr(0, cut), "", {}, err);
    if (!mod)
      CHECK(!err.empty());
  }
  auto mod = importOnnxBytes(ctx, "\xff\xff\xff\xff garbage", "", {}, err);
  CHECK(!mod);
  CHECK(err.find("not a valid ONNX model") != std::string::npos);
}

TEST_CASE("initializer data of the wrong size is rejected", "[import]") {
  Model m;
  m.input("x", {3});
  m.floats("b", {4}, {1, 2, 3}); // 3 values for 4 elements
  m.node("Add", {"x", "b"}, {"y"});
  m.output("y");
  Imported im(m);
  CHECK(!im.module);
  CHECK(im.error.find("initializer 'b'") != std::string::npos);
}

TEST_CASE("a graph input bound as a value decides a shape", "[import]") {
  Model m;
  m.input("x", {2, 6});
  m.input("shape", {1}, onnx::TensorProto::INT64);
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  {
    Imported im(m);
    CHECK(!im.module);
    CHECK(im.error.find("must be a constant") != std::string::npos);
  }
  onnx::TensorProto v;
  v.set_data_type(onnx::TensorProto::INT64);
  v.add_dims(1);
  v.add_int64_data(12);
  ImportOptions opts;
  opts.shapeInputValues["shape"] = v.SerializeAsString();
  Imported im(m, opts);
  REQUIRE(im.module);
  CHECK(im.result().getShape() == llvm::ArrayRef<int64_t>{12});
}

TEST_CASE("a node without outputs is an error (found by the fuzzer)",
          "[import]") {
  Model m;
  m.input("x", {2});
  auto *c = m.node("Constant", {}, {});
  auto *a = c->add_attribute();
  a->set_name("value_float");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(1.0f);
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  Imported im(m);
  CHECK(!im.module);
  CHECK(im.error.find("has no outputs") != std::string::npos);
}
