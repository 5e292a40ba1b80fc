#!/usr/bin/env python3
"""Joins the ember and PyTorch sides of ./bench.sh cuda into build/reports/bench-cuda.json (the
format of bench-cpu.json: name, ember_ms, peer, peer_ms, ratio = peer_ms / ember_ms, extras)
and prints a markdown table with the issue's targets.

Every row carries its correctness check (cuda_peer.py's check(): "check" is "ok", "mismatch" or
"missing", with "check_detail"). Exit status 1, after the report is written, when a row's check
failed, or when a row that neither side failed on was not checked."""
import json
import sys

ember_path, peer_path, out_path = sys.argv[1:4]
ember = {r["name"]: r for r in json.load(open(ember_path))}
peer = {r["name"]: r for r in json.load(open(peer_path))}
torch_version = sys.argv[4] if len(sys.argv) > 4 else "pytorch"

# target: (kind, value). ratio: peer/ember >= value; us: ember time <= value us;
# pct_copy: ember GB/s >= value * copy GB/s.
targets = {
    "matmul_bf16_8192": ("ratio", 0.98), "matmul_f32_4096": ("ratio", 0.98), "matmul_tf32_4096": ("ratio", 0.98),
    "add_f32_256M": ("pct_copy", 0.90), "softmax_f32_8192x4096": ("us", 70), "layernorm_f32_8192x4096": ("us", 70),
    "overhead_add_1": ("us", 4), "mlp_train_step_f32": ("ratio", 2.0), "attention_bf16": ("ratio", 1.0),
    "onnx_resnet18_b1": ("ratio", 1.0), "onnx_resnet18_b32": ("ratio", 1.0),
    "gelu_custom_f32": ("us", 67),
}

rows = []
for name, e in ember.items():
    p = peer.get(name, {})
    row = {"name": name, "ember_ms": e.get("ember_ms"), "peer": torch_version, "peer_ms": p.get("peer_ms")}
    row["ratio"] = (row["peer_ms"] / row["ember_ms"]) if row["ember_ms"] and row["peer_ms"] else None
    for k, v in e.items():
        if k not in row:
            row[k] = v
    for k, v in p.items():
        if k not in row:
            row[k] = v
    if name == "add_f32_256M" and row.get("gbps") and row.get("copy_gbps"):
        row["pct_of_copy_bandwidth"] = row["gbps"] / row["copy_gbps"]
    t = targets.get(name)
    if t:
        kind, val = t
        met = None
        if kind == "ratio" and row["ratio"] is not None:
            met = row["ratio"] >= val
            row["target"] = f"ratio >= {val}"
        elif kind == "us" and row["ember_ms"] is not None:
            met = row["ember_ms"] * 1e3 <= val
            row["target"] = f"<= {val} us"
        elif kind == "pct_copy" and row.get("pct_of_copy_bandwidth") is not None:
            met = row["pct_of_copy_bandwidth"] >= val
            row["target"] = f">= {int(val * 100)}% of copy bandwidth"
        row["target_met"] = met
    if name == "overhead_add_1" and row.get("driver_launch_us") is not None and row["peer_ms"]:
        row["peer_own_us"] = row["peer_ms"] * 1e3 - row["driver_launch_us"]
    if name == "attention_bf16" and row.get("peer_flash_ms") and row["ember_ms"]:
        row["ratio_vs_flash"] = row["peer_flash_ms"] / row["ember_ms"]
    if row.get("peer_compile_ms") and row["ember_ms"]:
        row["ratio_vs_compile"] = row["peer_compile_ms"] / row["ember_ms"]
    # issue 25's fusion targets: train steps on the fusion decorator against ember eager
    fusion_min = {"transformer_train_step_f32": 1.5, "mlp_train_step_f32": 1.5, "gpt2_small_train_step_tf32": 1.1}
    if name in fusion_min and row.get("speedup_fusion_vs_eager") is not None:
        row["fusion_target"] = f"fusion >= {fusion_min[name]}x eager"
        row["fusion_target_met"] = row["speedup_fusion_vs_eager"] >= fusion_min[name]
        # fusion plus a CUDA graph of forward and backward (the optimizer eager), where measured
        if row.get("speedup_graph_fusion_vs_eager") is not None:
            row["fusion_target"] = f"fusion + graph >= {fusion_min[name]}x eager"
            row["fusion_target_met"] = row["speedup_graph_fusion_vs_eager"] >= fusion_min[name]
    # issue 26's targets: tokens/s at least torch.compile's and 1.25x PyTorch eager's, peak memory
    # no higher than torch.compile's
    if name == "gpt2_small_train_bf16" and row["ember_ms"]:
        row["amp_target"] = "tokens/s >= torch.compile and >= 1.25x eager; peak <= torch.compile"
        met = row["ratio"] is not None and row["ratio"] >= 1.25
        met = met and (row.get("ratio_vs_compile") or 0) >= 1.0
        if row.get("peer_compile_peak_bytes") and row.get("peak_bytes"):
            met = met and row["peak_bytes"] <= row["peer_compile_peak_bytes"]
        row["amp_target_met"] = met
    if name == "mlp_train_step_f32" and "memory_growth_bytes" in row:
        row["no_memory_growth"] = row["memory_growth_bytes"] == 0
    if row.get("check") not in ("ok", "not applicable") and (
            row.get("check") == "mismatch" or not (row.get("error") or row.get("peer_error"))):
        row["check_failed"] = True
    rows.append(row)

own = {r["name"]: r for r in rows}
for custom, fused_primitive in (("softmax_custom_f32", "softmax_f32_8192x4096"),
                                ("rmsnorm_custom_f32", "layernorm_f32_8192x4096")):
    c, f = own.get(custom), own.get(fused_primitive)
    if c and f and c.get("ember_ms") and f.get("ember_ms"):
        c["ratio_vs_own_kernel"] = f["ember_ms"] / c["ember_ms"]
        c["fusion_target"] = f"within 10% of {fused_primitive} and >= torch.compile"
        c["fusion_target_met"] = c["ratio_vs_own_kernel"] >= 1 / 1.1 and (c.get("ratio_vs_compile") or 0) >= 1.0

with open(out_path + ".tmp", "w") as f:
    f.write("[\n" + ",\n".join("  " + json.dumps(r) for r in rows) + "\n]\n")
import os  # noqa: E402
os.replace(out_path + ".tmp", out_path)


def fmt(v, unit=""):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}{unit}"
    if v >= 1:
        return f"{v:.3g}{unit}"
    return f"{v:.3g}{unit}"


print(f"| benchmark | ember | {torch_version} | ratio | target |")
print("|---|---:|---:|---:|---|")
for r in rows:
    em = r["ember_ms"]
    pm = r["peer_ms"]
    tgt = r.get("target", "")
    if tgt:
        tgt += " " + ("✓" if r.get("target_met") else "✗")
    extra = ""
    if r["name"] == "add_f32_256M" and r.get("gbps"):
        extra = f" ({r['gbps']:.0f} GB/s; copy {r.get('copy_gbps', 0):.0f} GB/s)"
    if r["name"] == "overhead_add_1" and r.get("driver_launch_us") is not None:
        extra = f" (driver launch {r['driver_launch_us']:.2f} us + ember {r['ember_own_us']:.2f} us)"
    pextra = ""
    if r["name"] == "attention_bf16" and r.get("peer_backend"):
        pextra = f" ({r['peer_backend']}; flash {fmt(r['peer_flash_ms'] * 1e3, ' us')})" if r.get("peer_flash_ms") else ""
    print(f"| {r['name']} | {fmt(em * 1e3 if em else None, ' us')}{extra} | {fmt(pm * 1e3 if pm else None, ' us')}{pextra} | "
          f"{fmt(r['ratio'], 'x')} | {tgt} |")
    if r.get("error"):
        print(f"|  ember error: {r['error'][:150]} | | | | |")
    if r.get("check_failed"):
        print(f"|  CHECK FAILED ({r.get('check', 'not checked')}): {r.get('check_detail', '')[:150]} | | | | |")
cold = next((r for r in rows if r["name"] == "gpt2_cold_start" and "warm_s" in r), None)
if cold:
    print(f"\nGPT-2 first training step in a new process: {cold['cold_s']:.2f} s with an empty cache, "
          f"{cold['warm_s']:.2f} s warm (target <= 2 s {'✓' if cold['warm_s'] <= 2 else '✗'})")
mlp = next((r for r in rows if r["name"] == "mlp_train_step_f32"), None)
if mlp and "memory_growth_bytes" in mlp:
    print(f"\nmlp reserved bytes after step 100: {mlp['reserved_bytes_step_100']:.0f}, after 10,100: "
          f"{mlp['reserved_bytes_step_10100']:.0f} (growth {mlp['memory_growth_bytes']:.0f})")

fusion_rows = [r for r in rows if r.get("fusion_target")]
if fusion_rows:
    print("\n| fusion row | ember fused | fused + graph | ember eager / own kernel | speedup | target |")
    print("|---|---:|---:|---:|---:|---|")
    for r in fusion_rows:
        if "speedup_fusion_vs_eager" in r:
            best = r.get("speedup_graph_fusion_vs_eager", r["speedup_fusion_vs_eager"])
            graph = fmt(r["graph_fusion_ms"] * 1e3, " us") if "graph_fusion_ms" in r else r.get("graph_error", "-")
            cells = (fmt(r["fusion_ms"] * 1e3, " us"), graph, fmt(r["ember_ms"] * 1e3, " us"), fmt(best, "x"))
        else:
            cells = (fmt(r["ember_ms"] * 1e3, " us"), "-", fmt(r["ember_ms"] * 1e3 * r["ratio_vs_own_kernel"], " us"),
                     fmt(r["ratio_vs_own_kernel"], "x"))
        print(f"| {r['name']} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} | {r['fusion_target']} "
              f"{'✓' if r.get('fusion_target_met') else '✗'} |")

failed = [r for r in rows if r.get("check_failed")]
for r in failed:
    print(f"bench-cuda: {r['name']}: ember's result was not confirmed by PyTorch's: "
          f"{r.get('check', 'not checked')}: {r.get('check_detail', 'no check recorded')}", file=sys.stderr)
if failed:
    print(f"bench-cuda: {len(failed)} of {len(rows)} rows failed their correctness check ({out_path})", file=sys.stderr)
    sys.exit(1)
