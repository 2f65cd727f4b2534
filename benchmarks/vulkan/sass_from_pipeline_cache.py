#!/usr/bin/env python3
"""Machine code of the vulkan plugin's pipelines on NVIDIA, for reading what the driver compiled.

Run the plugin with QFORGE_VULKAN_DUMP_PIPELINES=<dir> (pipelines.cpp writes each pipeline's
driver cache data to <dir>/<shader>.cache), then:
    sass_from_pipeline_cache.py <dir> <out.txt> [name-filter ...]
Every ELF image found inside each cache blob is written next to it and disassembled with
cuobjdump --dump-sass (or nvdisasm); the text of all of them goes to out.txt, with a summary of
the instructions that matter for a GEMM (tensor-core ops, shared and global loads and stores,
local memory, barriers) per blob. A blob with no ELF image inside (a driver that compresses or
wraps its binaries differently) is reported as such.
"""
import collections
import os
import re
import struct
import subprocess
import sys


def elf_images(blob):
    """(offset, bytes) of each 64-bit little-endian ELF image in blob, sized from its header."""
    out, pos = [], 0
    while True:
        i = blob.find(b"\x7fELF\x02\x01", pos)
        if i < 0:
            return out
        pos = i + 4
        if i + 64 > len(blob):
            continue
        e_shoff, = struct.unpack_from("<Q", blob, i + 0x28)
        e_shentsize, e_shnum = struct.unpack_from("<HH", blob, i + 0x3A)
        end = e_shoff + e_shentsize * e_shnum
        e_phoff, = struct.unpack_from("<Q", blob, i + 0x20)
        e_phentsize, e_phnum = struct.unpack_from("<HH", blob, i + 0x36)
        end = max(end, e_phoff + e_phentsize * e_phnum)
        if 64 <= end <= len(blob) - i:
            out.append((i, blob[i:i + end]))


def disassemble(path):
    for cmd in (["cuobjdump", "--dump-sass", path], ["nvdisasm", "-c", path]):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            last = f"{cmd[0]}: {e}"
            continue
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout
        last = f"{cmd[0]} rc={r.returncode}: {r.stderr.strip()[:300]}"
    return f"(not disassembled: {last})\n"


def summary(sass):
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line)
        if m:
            ops[m.group(2).split(".")[0]] += 1
    keys = ["HMMA", "IMMA", "LDSM", "LDS", "STS", "LDG", "STG", "LDL", "STL", "BAR", "DEPBAR", "BRA"]
    total = sum(ops.values())
    return f"{total} instructions; " + ", ".join(f"{k} {ops[k]}" for k in keys if ops[k])


def main():
    src, out = sys.argv[1], sys.argv[2]
    filters = sys.argv[3:]
    with open(out, "w") as f:
        for name in sorted(os.listdir(src)):
            if not name.endswith(".cache") or (filters and not any(x in name for x in filters)):
                continue
            blob = open(os.path.join(src, name), "rb").read()
            images = elf_images(blob)
            f.write(f"===== {name}: {len(blob)} bytes, {len(images)} ELF image(s)\n")
            for k, (off, img) in enumerate(images):
                path = os.path.join(src, f"{name}.{k}.elf")
                open(path, "wb").write(img)
                sass = disassemble(path)
                f.write(f"--- image {k} at {off}, {len(img)} bytes: {summary(sass)}\n{sass}\n")
            print(f"{name}: {len(images)} ELF image(s)")


if __name__ == "__main__":
    main()
