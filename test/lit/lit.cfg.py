import os
import lit.formats

config.name = "cuts"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.cuts_tools_dir), "test", "lit")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.substitutions.append(("%cuts-opt", os.path.join(config.cuts_tools_dir, "cuts-opt", "cuts-opt")))
config.substitutions.append(("%cuts", os.path.join(config.cuts_tools_dir, "cuts", "cuts")))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("FileCheck", config.filecheck))
