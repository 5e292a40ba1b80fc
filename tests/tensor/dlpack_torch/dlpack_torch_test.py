#!/usr/bin/python3
"""ember's DLPack exchange with PyTorch (Debian's python3-torch, 1.13's capsule API; on a GPU
machine its torch, with CUDA tensors both ways as well).

Loads the bridge library (bridge.cpp) with ctypes and hands tensors both ways through
torch.utils.dlpack: values, shapes, dtypes, zero copy (a write on one side is seen on the other)
and the deleters. Usage: dlpack_torch_test.py LIBEMBER_DLPACK_BRIDGE.so
Exit 0: passed; 1: a check failed; 2: python3-torch is missing. Last line "dlpack torch: P passed, F failed".
"""
import ctypes
import gc
import sys

try:
    import torch
    import torch.utils.dlpack
except ImportError:
    print("dlpack torch: skipped (python3-torch missing)")
    sys.exit(2)

lib = ctypes.CDLL(sys.argv[1])
H = ctypes.c_void_p
for name, res, args in [
    ("bridge_count_deleter", None, [H]), ("bridge_deleted", ctypes.c_int, []),
    ("bridge_arange", H, [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
    ("bridge_to_dlpack", H, [H]), ("bridge_from_dlpack", H, [H]), ("bridge_error", ctypes.c_char_p, []),
    ("bridge_free", None, [H]), ("bridge_rank", ctypes.c_int, [H]), ("bridge_dim", ctypes.c_int64, [H, ctypes.c_int]),
    ("bridge_dtype", ctypes.c_char_p, [H]), ("bridge_get", ctypes.c_double, [H, ctypes.c_int64]),
    ("bridge_sum", ctypes.c_double, [H]), ("bridge_cuda", ctypes.c_int, []), ("bridge_to_cuda", H, [H]),
    ("bridge_device", ctypes.c_char_p, [H]), ("bridge_times2_consume", H, [H])]:
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = res, args

api = ctypes.pythonapi
api.PyCapsule_New.restype, api.PyCapsule_New.argtypes = ctypes.py_object, [H, ctypes.c_char_p, H]
api.PyCapsule_GetPointer.restype, api.PyCapsule_GetPointer.argtypes = H, [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype, api.PyCapsule_SetName.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
# the capsule keeps a pointer to its name: these must outlive every capsule
DLTENSOR, USED = b"dltensor", b"used_dltensor"


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", H), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


# every ember dtype but bool: PyTorch 1.13 refuses bool tensors in DLPack both ways ("Bool type is
# not supported by dlpack"); ember's bool exchange is covered by tests/tensor/dlpack_test.cpp
TORCH = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
         "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8}

passed = failed = 0


def check(what, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what} {detail}")


def ember_to_torch(handle):
    """A torch tensor over the ember tensor's buffer (the capsule's DLManagedTensor counted)."""
    m = lib.bridge_to_dlpack(handle)
    lib.bridge_count_deleter(m)
    return torch.utils.dlpack.from_dlpack(api.PyCapsule_New(m, DLTENSOR, None)), m


def torch_to_ember(t):
    """An ember tensor over t's buffer; the capsule is marked used, as a consumer must."""
    cap = torch.utils.dlpack.to_dlpack(t)
    m = api.PyCapsule_GetPointer(cap, DLTENSOR)
    lib.bridge_count_deleter(m)
    h = lib.bridge_from_dlpack(m)
    if h:
        api.PyCapsule_SetName(cap, USED)
    return h, m


def reference(name, rows, cols):
    return torch.arange(rows * cols, dtype=torch.float64).reshape(rows, cols).to(TORCH[name])


# ember -> torch: every dtype; values, shape, dtype, the same memory; the deleter runs once torch is done
for name in TORCH:
    h = lib.bridge_arange(name.encode(), 3, 4, 0)
    before = lib.bridge_deleted()
    t, m = ember_to_torch(h)
    check(f"ember->torch {name} dtype", t.dtype == TORCH[name], str(t.dtype))
    check(f"ember->torch {name} shape", tuple(t.shape) == (3, 4), str(tuple(t.shape)))
    check(f"ember->torch {name} values", torch.equal(t, reference(name, 3, 4)), str(t))
    dl = DLTensor.from_address(m)
    check(f"ember->torch {name} zero copy", t.data_ptr() == dl.data + dl.byte_offset)
    t[1, 2] = 100  # torch writes into ember's buffer: ember sees it
    check(f"torch write seen by ember {name}", lib.bridge_get(h, 6) == 100, str(lib.bridge_get(h, 6)))
    lib.bridge_free(h)  # the export keeps the buffer alive
    check(f"ember->torch {name} outlives the ember tensor", torch.equal(t[0], reference(name, 3, 4)[0]))
    del t
    gc.collect()
    check(f"ember->torch {name} deleter ran", lib.bridge_deleted() == before + 1)

# a transposed (strided) ember tensor is exported contiguous, with the transposed values
h = lib.bridge_arange(b"f32", 2, 3, 1)
t, _ = ember_to_torch(h)
check("ember->torch transpose", torch.equal(t, reference("f32", 2, 3).t()) and t.is_contiguous(), str(t))
lib.bridge_free(h)
del t

# torch -> ember: every dtype; values, shape, dtype; a torch write is seen by ember (zero copy);
# torch's deleter runs when the last ember handle dies
for name in TORCH:
    t = reference(name, 4, 5)
    before = lib.bridge_deleted()
    h, m = torch_to_ember(t)
    check(f"torch->ember {name} imported", bool(h), lib.bridge_error().decode())
    if not h:
        continue
    check(f"torch->ember {name} dtype", lib.bridge_dtype(h).decode() == name, lib.bridge_dtype(h).decode())
    check(f"torch->ember {name} shape", lib.bridge_rank(h) == 2 and lib.bridge_dim(h, 0) == 4 and lib.bridge_dim(h, 1) == 5)
    check(f"torch->ember {name} sum", lib.bridge_sum(h) == float(t.double().sum()), f"{lib.bridge_sum(h)}")
    t[3, 4] = 7
    check(f"torch write seen by ember {name}", lib.bridge_get(h, 19) == 7, str(lib.bridge_get(h, 19)))
    check(f"torch->ember {name} deleter waits", lib.bridge_deleted() == before)
    lib.bridge_free(h)
    check(f"torch->ember {name} deleter ran", lib.bridge_deleted() == before + 1)

# a non-contiguous torch tensor (a transpose, a step slice) is copied by ember
for what, t in [("transpose", torch.arange(12, dtype=torch.float32).reshape(3, 4).t()),
                ("step slice", torch.arange(20, dtype=torch.int64)[::3])]:
    before = lib.bridge_deleted()
    h, _ = torch_to_ember(t)
    got = [lib.bridge_get(h, i) for i in range(t.numel())]
    check(f"torch->ember {what}", got == [float(v) for v in t.reshape(-1)], str(got))
    check(f"torch->ember {what} copied, deleter ran", lib.bridge_deleted() == before + 1)
    lib.bridge_free(h)

# an unsupported dtype: a clear error, and the capsule stays torch's (its deleter runs with it)
t = torch.zeros(3, dtype=torch.complex64)
before = lib.bridge_deleted()
h, _ = torch_to_ember(t)
check("torch->ember complex64 refused", not h and "dl_tensor.dtype" in lib.bridge_error().decode(),
      lib.bridge_error().decode())
gc.collect()
check("torch->ember complex64 deleter ran by torch's capsule", lib.bridge_deleted() == before + 1)

# ---- CUDA (where both this torch and the bridge's build have a GPU) ----
cuda = torch.cuda.is_available() and lib.bridge_cuda() == 1
if cuda:
    dev = torch.device("cuda:0")
    # ember -> torch: a CUDA tensor of every dtype, in place; torch's writes are seen by ember
    for name in TORCH:
        hc = lib.bridge_arange(name.encode(), 3, 4, 0)
        h = lib.bridge_to_cuda(hc)
        lib.bridge_free(hc)
        before = lib.bridge_deleted()
        t, m = ember_to_torch(h)
        dl = DLTensor.from_address(m)
        check(f"cuda ember->torch {name} device", t.device == dev and dl.device_type == 2, str(t.device))
        check(f"cuda ember->torch {name} values", torch.equal(t.cpu(), reference(name, 3, 4)), str(t))
        check(f"cuda ember->torch {name} zero copy", t.data_ptr() == dl.data + dl.byte_offset)
        t[1, 2] = 100
        torch.cuda.synchronize()
        check(f"cuda torch write seen by ember {name}", lib.bridge_get(h, 6) == 100, str(lib.bridge_get(h, 6)))
        lib.bridge_free(h)
        del t
        gc.collect()
        check(f"cuda ember->torch {name} deleter ran", lib.bridge_deleted() == before + 1)

    # torch -> ember: CUDA tensors of every dtype imported in place, on ember's cuda:0
    for name in TORCH:
        t = reference(name, 4, 5).to(dev)
        before = lib.bridge_deleted()
        h, m = torch_to_ember(t)
        check(f"cuda torch->ember {name} imported", bool(h), lib.bridge_error().decode())
        if not h:
            continue
        check(f"cuda torch->ember {name} device", lib.bridge_device(h).decode() == "cuda:0", lib.bridge_device(h).decode())
        check(f"cuda torch->ember {name} sum", lib.bridge_sum(h) == float(t.double().sum()), f"{lib.bridge_sum(h)}")
        t[3, 4] = 7
        torch.cuda.synchronize()
        check(f"cuda torch write seen by ember {name}", lib.bridge_get(h, 19) == 7, str(lib.bridge_get(h, 19)))
        check(f"cuda torch->ember {name} deleter waits", lib.bridge_deleted() == before)
        lib.bridge_free(h)
        check(f"cuda torch->ember {name} deleter ran", lib.bridge_deleted() == before + 1)

    # strided CUDA tensors are imported in place too (no copy: the deleter waits)
    for what, t in [("transpose", torch.arange(12, dtype=torch.float32, device=dev).reshape(3, 4).t()),
                    ("step slice", torch.arange(20, dtype=torch.int64, device=dev)[::3]),
                    ("flip-free narrow", torch.arange(30, dtype=torch.float16, device=dev).reshape(5, 6)[1:4, 2:5])]:
        before = lib.bridge_deleted()
        h, _ = torch_to_ember(t)
        got = [lib.bridge_get(h, i) for i in range(t.numel())]
        check(f"cuda torch->ember {what}", got == [float(v) for v in t.cpu().reshape(-1)], str(got))
        check(f"cuda torch->ember {what} in place", lib.bridge_deleted() == before)
        lib.bridge_free(h)
        check(f"cuda torch->ember {what} deleter ran", lib.bridge_deleted() == before + 1)

    # ember never writes into imported memory, even from an op that holds it alone
    t = torch.arange(8, dtype=torch.float32, device=dev)
    h, _ = torch_to_ember(t)
    h2 = lib.bridge_times2_consume(h)
    check("cuda imported memory not written", torch.equal(t.cpu(), torch.arange(8, dtype=torch.float32)), str(t))
    check("cuda op on imported memory", lib.bridge_get(h2, 7) == 14.0, str(lib.bridge_get(h2, 7)))
    lib.bridge_free(h2)
    print("dlpack torch: CUDA cases ran on", torch.cuda.get_device_name(0))
else:
    print("dlpack torch: CUDA cases skipped (no GPU for torch or for ember)")

print(f"dlpack torch: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
