# Expected printouts for tests/tensor/pytorch_habits_test.cpp, from PyTorch 1.13's repr
# (True/False -> true/false as issue 27 asks, dtype=torch.int32 -> ember's dtype name i32).
#   python3 tests/tensor/gen_pytorch_habits_print.py > tests/tensor/pytorch_habits_print.inc.body
import torch
cases = [
  ("kMatrix", "torch.tensor([[0.1, -1.2], [3.0, 4.5]])"),
  ("kVectorOfIntegers", "torch.tensor([1., 2., 3.])"),
  ("kMask", "torch.tensor([[0.2, 0.7], [0.9, -0.4]]) > 0.5"),
  ("kSummarised1001", "torch.arange(1001.)"),
  ("kIntMatrix40x30", "torch.arange(1200).reshape(40, 30)"),
  ("kScalar", "torch.tensor(1.5)"),
  ("kScientific", "torch.tensor([1e-5, 1.0])"),
  ("kEmpty0x3", "torch.zeros(0, 3)"),
  ("kCube", "torch.arange(8.).reshape(2, 2, 2)"),
  ("kWrapped30", "torch.arange(30.)"),
  ("kInt32", "torch.tensor([1, 2], dtype=torch.int32)"),
  ("kNonFinite", "torch.tensor([float('nan'), 1.0, float('inf')])"),
  ("kSummarisedScientific", "torch.arange(2000.)"),
  ("kSummarised3d", "torch.arange(1001.).reshape(7, 11, 13)"),
]
for name, expr in cases:
  s = repr(eval(expr)).replace("True", "true").replace("False", "false").replace("dtype=torch.int32", "dtype=i32")
  print(f"// {expr}")
  print(f'const char* {name} = R"({s})";')
print("// len(repr(torch.arange(1000.)))")
print(f"const size_t kLength1000 = {len(repr(torch.arange(1000.)))};")
