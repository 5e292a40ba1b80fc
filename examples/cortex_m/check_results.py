#!/usr/bin/env python3
"""Checks examples/cortex_m's runs and writes build/reports/embedded.json (scripts/embedded-check.sh).

For each model: the firmware's predictions in QEMU against the native build's (the same generated
code and kernels, compiled for the host) and both against PyTorch's outputs (export_models.py);
the image's footprint (arm-none-eabi-size; the stack the firmware measured); instructions per
inference (SysTick ticks under `-icount shift=0`, scaled by the firmware's calibration loop); and a
link check: no symbol of operator new/delete, malloc, exceptions, unwinding, threads or RTTI in
the ELF, and no member of libstdc++, libsupc++ or libpthread among the archive members the link
map lists.

  check_results.py --out build/reports/embedded.json [--firmware FW_DIR] DIR NAME...

DIR holds NAME.qemu.txt, NAME.native.txt, NAME.reference.bin, NAME.meta.json and gen/NAME.json for
each NAME; FW_DIR (default DIR) NAME.elf and NAME.map. Exit status 1 when a check fails.
"""

import argparse
import json
import os
import re
import struct
import subprocess
import sys

# The firmware and the native build run the same source with -ffp-contract=off and ember's own
# exp_f32, so they should agree to the bit; the tolerance allows for a compiler that rounds a
# product differently. Against PyTorch (another summation order, libm's exp) the tolerance is
# looser. Both are |a - b| <= atol + rtol * |b|.
QEMU_VS_NATIVE = (1e-6, 1e-6)
NATIVE_VS_PYTORCH = (1e-4, 1e-4)

# Symbols that must not be in a freestanding image: the heap, C++ exceptions and unwinding, threads.
FORBIDDEN = [
    (r"^_Znw|^_Zna", "operator new"),
    (r"^_Zdl|^_Zda", "operator delete"),
    (r"^(malloc|calloc|realloc|free|_malloc_r|_free_r|_sbrk|_sbrk_r)$", "heap"),
    (r"^__cxa_(throw|allocate_exception|begin_catch|end_catch|rethrow)", "C++ exceptions"),
    (r"^__gxx_personality", "C++ exceptions"),
    (r"^_Unwind_|^__aeabi_unwind_cpp_pr|^__gnu_unwind", "unwinding"),
    (r"^pthread_|^__gthread|^_ZNSt6thread", "threads"),
    (r"^__cxa_guard_", "thread-safe statics"),
    (r"^_ZTI|^_ZTS|^__dynamic_cast", "RTTI"),
]


def parse_run(path):
    """The firmware's output: {'rows': [(class, [bits])], 'calibration': (instructions, ticks), ...}."""
    run = {"rows": [], "calibration": None, "ticks": None, "stack": None, "done": False}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "calibration":
                run["calibration"] = (int(parts[1]), int(parts[2]))
            elif parts[0] == "ticks":
                run["ticks"] = int(parts[1])
            elif parts[0] == "stack":
                run["stack"] = int(parts[1])
            elif parts[0] == "done":
                run["done"] = True
            elif parts[0] == "error":
                run["error"] = line.strip()
            elif parts[0].isdigit():
                values = [struct.unpack("<f", struct.pack("<I", int(h, 16)))[0] for h in parts[2:]]
                run["rows"].append((int(parts[1]), values))
    return run


def read_floats(path):
    with open(path, "rb") as f:
        data = f.read()
    return list(struct.unpack(f"<{len(data) // 4}f", data))


def close(a, b, tol):
    return all(abs(x - y) <= tol[0] + tol[1] * abs(y) for x, y in zip(a, b))


def section_sizes(elf):
    out = subprocess.run(["arm-none-eabi-size", "-A", elf], check=True, capture_output=True, text=True).stdout
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


def link_check(elf):
    out = subprocess.run(["arm-none-eabi-nm", elf], check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        name = line.split()[-1]
        for pattern, what in FORBIDDEN:
            if re.search(pattern, name):
                found.append(f"{name} ({what})")
    return found


def map_members(map_path):
    """The archive members the linker pulled in ("libc_nano.a(lib_a-memcpy.o)"), from the link map's
    first section, which lists them each with the file and symbol that asked for it."""
    members = []
    with open(map_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("Discarded input sections", "Memory Configuration")):
                break
            m = re.match(r"^(\S+\.a)\((\S+)\)", line)
            if m:
                members.append(f"{os.path.basename(m.group(1))}({m.group(2)})")
    return members


# Libraries whose members would mean a hosted C++ runtime in the image.
FORBIDDEN_LIBRARIES = re.compile(r"^(libstdc\+\+|libsupc\+\+|libpthread|libnosys)")


def check_model(directory, name, firmware):
    meta = json.load(open(os.path.join(directory, name + ".meta.json")))
    gen = json.load(open(os.path.join(directory, "gen", name + ".json")))
    qemu = parse_run(os.path.join(directory, name + ".qemu.txt"))
    native = parse_run(os.path.join(directory, name + ".native.txt"))
    reference = read_floats(os.path.join(directory, name + ".reference.bin"))
    k = meta["output_size"]
    problems = []
    if not qemu["done"]:
        problems.append("the firmware did not finish: " + qemu.get("error", "no 'done' line"))
    if not native["done"]:
        problems.append("the native build did not finish: " + native.get("error", "no 'done' line"))
    # The int8 models' reference is ember's ONNX runtime (their meta.json says so), which computes
    # the same integer sums and f32 requantization: a tighter tolerance than PyTorch's.
    reference_name = meta.get("reference", "pytorch")
    tolerance = tuple(meta.get("tolerance", NATIVE_VS_PYTORCH))
    matches, worst_qemu, worst_ref = 0, 0.0, 0.0
    for i in range(meta["inputs"]):
        ref = reference[i * k:(i + 1) * k]
        ref_class = max(range(k), key=lambda j: ref[j])
        if i >= len(qemu["rows"]) or i >= len(native["rows"]):
            continue
        (qc, qv), (nc, nv) = qemu["rows"][i], native["rows"][i]
        worst_qemu = max(worst_qemu, max(abs(a - b) for a, b in zip(qv, nv)))
        worst_ref = max(worst_ref, max(abs(a - b) for a, b in zip(nv, ref)))
        ok = qc == nc == ref_class and close(qv, nv, QEMU_VS_NATIVE) and close(nv, ref, tolerance)
        if ok:
            matches += 1
        elif len(problems) < 5:
            problems.append(f"input {i}: class qemu {qc} native {nc} {reference_name} {ref_class}; "
                            f"outputs qemu {qv[:3]}... native {nv[:3]}... {reference_name} {ref[:3]}...")
    elf = os.path.join(firmware, name + ".elf")
    sizes = section_sizes(elf)
    flash = sum(sizes.get(s, 0) for s in (".vectors", ".text", ".ARM.exidx", ".data"))
    stack = qemu["stack"] or 0
    ram = sizes.get(".data", 0) + sizes.get(".bss", 0) + stack
    instructions = None
    if qemu["calibration"] and qemu["ticks"] is not None and qemu["rows"]:
        per_tick = qemu["calibration"][0] / qemu["calibration"][1]
        instructions = round(qemu["ticks"] * per_tick / len(qemu["rows"]))
    forbidden = link_check(elf)
    members = map_members(os.path.join(firmware, name + ".map"))
    forbidden += [m + " (hosted runtime library)" for m in members if FORBIDDEN_LIBRARIES.match(m)]
    if forbidden:
        problems.append("forbidden symbols in the image: " + ", ".join(forbidden[:10]))
    if matches != meta["inputs"]:
        problems.append(f"{meta['inputs'] - matches} of {meta['inputs']} inputs do not match")
    entry = {
        "name": name, "flash_bytes": flash, "ram_bytes": ram, "inputs": meta["inputs"], "matches": matches,
        "instructions_per_inference": instructions,
        "weight_bytes": gen["weight_bytes"], "arena_bytes": gen["arena_bytes"],
        "unplanned_arena_bytes": gen["unplanned_bytes"], "stack_bytes": stack,
        "code_bytes": flash - gen["weight_bytes"],
        "reference": reference_name, "max_abs_diff_qemu_native": worst_qemu,
        "max_abs_diff_native_reference": worst_ref,
        "forbidden_symbols": forbidden, "archive_members": members, "problems": problems,
    }
    return entry


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--firmware", help="where NAME.elf and NAME.map are (default: DIR)")
    p.add_argument("--node-report", help="tests/embedded/node_conformance.py's report, merged in as node_tests")
    p.add_argument("dir")
    p.add_argument("names", nargs="+")
    args = p.parse_args()
    models = [check_model(args.dir, n, args.firmware or args.dir) for n in args.names]
    report = {
        "models": models,
        "failed": sum(1 for m in models if m["problems"]),
        "target": "qemu-system-arm -M mps2-an386 (Cortex-M4F), arm-none-eabi-g++ -O2",
        "tolerance": {"qemu_vs_native": {"atol": QEMU_VS_NATIVE[0], "rtol": QEMU_VS_NATIVE[1]},
                      "native_vs_pytorch": {"atol": NATIVE_VS_PYTORCH[0], "rtol": NATIVE_VS_PYTORCH[1]},
                      "native_vs_ember_runtime_int8": {"atol": 1e-5, "rtol": 1e-5}},
        "instructions_measured_by": "SysTick ticks around each run() under qemu -icount shift=0 (1 ns of "
                                    "emulated time per instruction), scaled by a calibration loop of known "
                                    "instruction count; averaged over the inputs",
        "flash_bytes": ".vectors + .text (code, const weights) + .ARM.exidx + .data, not the test inputs",
        "ram_bytes": ".data + .bss (the activation arena) + the stack the firmware used",
    }
    if args.node_report and os.path.exists(args.node_report):
        node = json.load(open(args.node_report))
        report["node_tests"] = node
        report["failed"] += 1 if node["failed"] else 0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print(f"{'model':<18} {'flash':>8} {'ram':>7} {'instr/inference':>16} {'matches':>8}")
    for m in models:
        print(f"{m['name']:<18} {m['flash_bytes']:>8} {m['ram_bytes']:>7} {m['instructions_per_inference'] or 0:>16} "
              f"{m['matches']:>4}/{m['inputs']}")
        for problem in m["problems"]:
            print(f"   FAILED {m['name']}: {problem}")
    print(f"wrote {args.out}")
    checks = len(models) + (1 if "node_tests" in report else 0)
    print(f"embedded: {checks - report['failed']} passed, {report['failed']} failed")
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
