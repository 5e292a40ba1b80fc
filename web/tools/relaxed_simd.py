#!/usr/bin/env python3
"""Rewrites clang 14's prototype relaxed-SIMD `f32x4.fma` (bytes fd af 01) into the final
`f32x4.relaxed_madd` (fd 85 02) in a linked wasm module, in place (docs/web.md).

Emscripten 3.1.6's clang 14 has no relaxed_madd builtin; with -mrelaxed-simd it emits
__builtin_wasm_fma_f32x4 as the prototype opcode, which engines reject. Both encodings are three
bytes, so the rewrite changes no offset. The code section is decoded instruction by instruction,
so only opcodes are rewritten, never an immediate that happens to hold the same bytes; an opcode
this decoder does not know, or another prototype relaxed-SIMD opcode (which would need its own
translation), is an error. relaxed_madd computes a * b + c from its operands in stack order.

Usage: relaxed_simd.py MODULE.wasm [OUT.wasm]   (default: rewrite MODULE.wasm in place)
Exits 1, writing nothing, when the module holds no f32x4.fma or cannot be decoded.
"""
import sys

PROTOTYPE_FMA = 0xAF  # f32x4.fma in LLVM 14's relaxed-SIMD prototype: fd af 01
RELAXED_MADD = 0x105  # f32x4.relaxed_madd in the final proposal: fd 85 02
# The opcodes that final SIMD128 leaves unassigned below 0x100, where LLVM 14 put the rest of its
# relaxed-SIMD prototype (fms, laneselect, relaxed swizzle, min/max, trunc): none of those has a
# translation here, and an engine would reject them.
SIMD128_GAPS = {0x9A, 0xA2, 0xA5, 0xA6, 0xAF, 0xB0, 0xB2, 0xB3, 0xB4, 0xBB, 0xC2, 0xC5, 0xC6, 0xCF, 0xD0,
                0xD2, 0xD3, 0xD4, 0xE2, 0xEE}


class DecodeError(Exception):
    pass


def uleb(b, i):
    value = shift = 0
    while True:
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def skip_leb(b, i):
    while b[i] & 0x80:
        i += 1
    return i + 1


def skip_memarg(b, i):  # alignment, offset
    return skip_leb(b, skip_leb(b, i))


VALUE_TYPES = {0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F}


def skip_blocktype(b, i):
    if b[i] == 0x40 or b[i] in VALUE_TYPES:
        return i + 1
    return skip_leb(b, i)  # a type index, as a signed LEB


# Opcodes without immediates: control, parametric, the numeric and sign-extension ranges,
# ref.is_null.
NO_IMMEDIATE = {0x00, 0x01, 0x05, 0x0B, 0x0F, 0x19, 0x1A, 0x1B, 0xD1} | set(range(0x45, 0xC5))
ONE_INDEX = {0x07, 0x08, 0x09, 0x0C, 0x0D, 0x10, 0x18, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0xD2}


def rewrite_body(b, i, end):
    """Rewrites the function body b[i:end] (after its locals); returns the number of sites."""
    sites = 0
    while i < end:
        at = i
        op = b[i]
        i += 1
        if op in NO_IMMEDIATE:
            pass
        elif op in (0x02, 0x03, 0x04, 0x06):  # block, loop, if, try
            i = skip_blocktype(b, i)
        elif op in ONE_INDEX:  # catch, throw, rethrow, br, br_if, call, delegate, locals, globals, tables, ref.func
            i = skip_leb(b, i)
        elif op == 0x0E:  # br_table: a vector of labels and the default
            count, i = uleb(b, i)
            for _ in range(count + 1):
                i = skip_leb(b, i)
        elif op == 0x11:  # call_indirect: type, table
            i = skip_leb(b, skip_leb(b, i))
        elif op == 0x1C:  # select with types
            count, i = uleb(b, i)
            i += count
        elif 0x28 <= op <= 0x3E:  # loads and stores
            i = skip_memarg(b, i)
        elif op in (0x3F, 0x40, 0xD0):  # memory.size, memory.grow, ref.null
            i += 1
        elif op in (0x41, 0x42):  # i32.const, i64.const
            i = skip_leb(b, i)
        elif op == 0x43:  # f32.const
            i += 4
        elif op == 0x44:  # f64.const
            i += 8
        elif op == 0xFC:
            sub, i = uleb(b, i)
            if sub <= 7:  # saturating truncations
                pass
            elif sub == 8:  # memory.init: data index, memory
                i = skip_leb(b, i) + 1
            elif sub in (9, 13, 15, 16, 17):  # data.drop, elem.drop, table.grow/size/fill
                i = skip_leb(b, i)
            elif sub in (12, 14):  # table.init, table.copy
                i = skip_leb(b, skip_leb(b, i))
            elif sub == 10:  # memory.copy
                i += 2
            elif sub == 11:  # memory.fill
                i += 1
            else:
                raise DecodeError(f"unknown opcode fc {sub:#x} at byte {at}")
        elif op == 0xFD:
            sub, j = uleb(b, i)
            if sub == PROTOTYPE_FMA:
                if j - i != 2:
                    raise DecodeError(f"f32x4.fma with a padded opcode at byte {at}")
                b[i], b[i + 1] = 0x85, 0x02  # the LEB of RELAXED_MADD
                sites += 1
            elif sub in SIMD128_GAPS or sub > 0xFF:
                raise DecodeError(f"SIMD opcode fd {sub:#x} at byte {at} is not SIMD128's: a prototype "
                                  "relaxed-SIMD opcode without a rewrite here, or an unknown one")
            i = j
            if sub <= 11 or sub in (92, 93):  # v128 loads and stores, load32/64_zero
                i = skip_memarg(b, i)
            elif sub in (12, 13):  # v128.const, i8x16.shuffle
                i += 16
            elif 21 <= sub <= 34:  # extract_lane, replace_lane
                i += 1
            elif 84 <= sub <= 91:  # load/store lane: memarg, lane
                i = skip_memarg(b, i) + 1
        elif op == 0xFE:
            sub, i = uleb(b, i)
            i = i + 1 if sub == 3 else skip_memarg(b, i)  # atomic.fence has one zero byte
        else:
            raise DecodeError(f"unknown opcode {op:#x} at byte {at}")
    if i != end:
        raise DecodeError(f"a function body ends at byte {end} but its last instruction at {i}")
    return sites


def rewrite(b):
    """Rewrites every function body of the module b (a bytearray) in place; returns the count."""
    if b[:4] != b"\0asm" or b[4:8] != b"\1\0\0\0":
        raise DecodeError("not a version-1 wasm module")
    sites = 0
    i = 8
    while i < len(b):
        section = b[i]
        size, start = uleb(b, i + 1)
        if section == 10:  # code
            count, k = uleb(b, start)
            for _ in range(count):
                body_size, k = uleb(b, k)
                end = k + body_size
                groups, p = uleb(b, k)
                for _ in range(groups):  # locals: count, type
                    p = skip_leb(b, p) + 1
                sites += rewrite_body(b, p, end)
                k = end
            if k != start + size:
                raise DecodeError("the code section's size disagrees with its bodies")
        i = start + size
    return sites


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-2])
    src = argv[1]
    dst = argv[2] if len(argv) == 3 else src
    with open(src, "rb") as f:
        module = bytearray(f.read())
    try:
        sites = rewrite(module)
    except (DecodeError, IndexError) as e:
        sys.exit(f"relaxed_simd.py: {src}: {e if isinstance(e, DecodeError) else 'truncated module'}")
    if sites == 0:
        sys.exit(f"relaxed_simd.py: {src}: no f32x4.fma (fd af 01) found; was it built with -mrelaxed-simd "
                 "-DEMBER_WASM_RELAXED_SIMD, or rewritten already?")
    with open(dst, "wb") as f:
        f.write(module)
    print(f"relaxed_simd.py: {dst}: {sites} f32x4.fma rewritten as f32x4.relaxed_madd")


if __name__ == "__main__":
    main(sys.argv)
