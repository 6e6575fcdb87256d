#!/usr/bin/env python
"""Where the training kernel spends its time, instruction by instruction (Linux perf).

    python benchmarks/profile_kernel.py                 # ML-100K, 1 thread, 10 s of samples
    python benchmarks/profile_kernel.py --threads 2 --seconds 20 --top 40

Fits warprec on the ML-100K split for ``--warm-epochs`` epochs (a trained state, where
negative trials are as frequent as in a real fit), then keeps training epoch after
epoch while ``perf record`` samples the process (software clock: it also works on VMs
without hardware counters). Numba's machine code is not in any file perf can read, so the
script writes ``/tmp/perf-PID.map`` (function addresses from Numba's code libraries) and
disassembles the epoch kernel's object code with objdump. The kernel is compiled in
this process (an empty ``NUMBA_CACHE_DIR``; about 15 s), because a cached kernel comes
without its object code.

Prints the share of samples in the epoch kernel's loop (the ``prange`` body), then its
hottest 128-byte blocks and instructions. Perf attributes a sample to the instruction
*after* the one that stalled (skid): a hot instruction right after a load usually means
that load missed the cache.
Uses private Numba attributes (``_final_module``, ``_get_compiled_object``), checked
with numba 0.68.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _symbols(dispatchers):
    """(address, name) of every function in the dispatchers' compiled code libraries, and
    the object code of the first library that still has it."""
    symbols, objects = [], {}
    for disp in dispatchers:
        for cres in disp.overloads.values():
            lib = cres.library
            for fn in lib._final_module.functions:
                if fn.is_declaration:
                    continue
                address = lib.get_pointer_to_function(fn.name)
                if address:
                    symbols.append((address, fn.name))
            try:
                objects.setdefault(disp.__name__, lib._get_compiled_object())
            except RuntimeError:   # loaded from a cache: no object code
                pass
    return sorted(symbols), objects


def _is_loop(name):
    """Whether a symbol is the epoch kernel's loop: the slice kernel itself
    (``...slice_variant...``, run once per thread). The other symbols are wrappers."""
    if name.startswith(("cfunc", "_ZN7cpython")):
        return False
    return "slice_variant" in name


def _disassemble(obj):
    """{offset from the function's start: instruction} of the epoch kernel's loop (see
    :func:`_is_loop`) in an object file's bytes."""
    with tempfile.NamedTemporaryFile(suffix=".o") as fh:
        fh.write(obj)
        fh.flush()
        text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", fh.name],
                              capture_output=True, text=True, check=True).stdout
    code, inside, base = {}, False, 0
    for line in text.splitlines():
        header = re.match(r"([0-9a-f]+) <(.*)>:$", line)
        if header:
            if inside:
                break
            inside = _is_loop(header.group(2))
            base = int(header.group(1), 16)
            continue
        m = re.match(r"\s*([0-9a-f]+):\s+(.*)", line)
        if inside and m:
            code[int(m.group(1), 16) - base] = re.sub(
                r"<[^>]*?(\+0x[0-9a-f]+)?>", lambda g: f"<{g.group(1) or ''}>", m.group(2))
    return code


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10.0, help="sampling time")
    parser.add_argument("--warm-epochs", type=int, default=30)
    parser.add_argument("--top", type=int, default=30, help="instructions to list")
    args = parser.parse_args(argv)
    missing = [tool for tool in ("perf", "objdump") if shutil.which(tool) is None]
    if missing:
        print(f"needs {' and '.join(missing)} on PATH (Linux perf, binutils)")
        return 2
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="warprec-profile-")

    import _data
    from warprec import WARPFactorizer
    from warprec._kernels import train

    ds = _data.load_ml100k()
    if ds is None:
        print(f"the ML-100K split is not at {_data.ML100K_SPLIT}")
        return 2
    model = WARPFactorizer(epochs=args.warm_epochs, n_threads=args.threads,
                           random_state=0).fit(ds.train)
    # the defaults' mode (ML-100K's parameters fit in cache: no prefetching)
    kernel = train.epoch_kernel(train.Mode(train.LOSS_WARP, exact_rank=False, adagrad=True,
                                           clip=False, prefetch=model._outgrows_cache()))
    symbols, objects = _symbols([kernel])
    if kernel.__name__ not in objects:
        print("no object code for the epoch kernel (was it loaded from a cache?)")
        return 2
    pid = os.getpid()
    perf_map = Path(f"/tmp/perf-{pid}.map")
    with perf_map.open("w") as fh:
        for k, (address, name) in enumerate(symbols):
            end = symbols[k + 1][0] if k + 1 < len(symbols) else address + (1 << 16)
            fh.write(f"{address:x} {max(end - address, 1):x} {name[-80:]}\n")
    start = next(a for a, n in symbols if _is_loop(n))
    model.set_params(epochs=1)
    done = threading.Event()

    def keep_training():
        while not done.is_set():
            model.partial_fit(ds.train)

    worker = threading.Thread(target=keep_training, daemon=True)
    worker.start()
    time.sleep(0.5)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        subprocess.run(["perf", "record", "-F", "10000", "-p", str(pid), "-o", str(data),
                        "--", "sleep", str(args.seconds)], capture_output=True, check=True)
        done.set()
        worker.join()
        ips = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip"],
                             capture_output=True, text=True, check=True).stdout.split()
    perf_map.unlink()
    code = _disassemble(objects[kernel.__name__])
    size = max(code) + 16
    hits = collections.Counter(int(ip, 16) - start for ip in ips
                               if 0 <= int(ip, 16) - start < size)
    total = sum(hits.values())
    print(f"{len(ips)} samples, {total} ({100 * total / max(len(ips), 1):.1f}%) in "
          f"the epoch kernel's loop ({args.threads} thread(s), ML-100K, after "
          f"{args.warm_epochs} epochs)")
    if not total:
        return 1
    blocks = collections.Counter()
    for offset, n in hits.items():
        blocks[offset // 128 * 128] += n
    print("\nhottest 128-byte blocks of the loop (offset: share of its samples)")
    for offset, n in blocks.most_common(args.top // 2):
        print(f"  {offset:6x}: {100 * n / total:5.1f}%")
    print("\nhottest instructions (a stall shows on the instruction after it)")
    for offset, n in hits.most_common(args.top):
        print(f"  {offset:6x} {100 * n / total:5.1f}%  {code.get(offset, '?')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
