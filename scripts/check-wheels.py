#!/usr/bin/env python3
"""Checks the wheels in target/wheels (as `bash scripts/build-wheel.sh --all` leaves them) against
what their names claim, reading each binary's own headers:

- every wheel: the file name's tags equal the WHEEL file's, the version equals METADATA's, and the
  binary carries the release viewer of MEMVIZ_VIEWER_DIST (default dist/) byte for byte;
- manylinux2014 (Linux x86_64, aarch64): the ELF machine is the tag's, every versioned glibc
  symbol the binary needs is at most GLIBC_2.17 and it needs no library outside the policy's list
  (readelf);
- macOS: the Mach-O slices are the tag's architectures and each slice's minimum macOS is at most
  the tag's version;
- Windows: the PE machine is x86-64 and the binary imports no MinGW runtime DLL;
- the binaries that run here: the x86_64 one natively, the aarch64 one under qemu-user
  (`qemu-aarch64 -L /usr/aarch64-linux-gnu`): `memviz --version`, then `memviz stats` and
  `memviz trace` on fixtures, byte-identical to the reference outputs.

Prints one line per wheel (tag, size, what was checked) and exits 1 on the first wrong claim.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "target" / "wheels"
DIST = Path(os.environ.get("MEMVIZ_VIEWER_DIST", ROOT / "dist"))
# manylinux2014's policy (PEP 599): the glibc ceiling and the libraries a wheel may need.
GLIBC_MAX = (2, 17)
ALLOWED_LIBS = {
    "libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libc.so.6",
    "libnsl.so.1", "libutil.so.1", "libpthread.so.0", "libresolv.so.2", "libX11.so.6",
    "libXext.so.6", "libXrender.so.1", "libICE.so.6", "libSM.so.6", "libGL.so.1",
    "libgobject-2.0.so.0", "libgthread-2.0.so.0", "libglib-2.0.so.0",
    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
}
ELF_MACHINE = {62: "x86_64", 183: "aarch64"}
MACHO_CPU = {0x01000007: "x86_64", 0x0100000C: "arm64"}
# Fixtures with reference outputs made by PyTorch's CLI, in the repository.
FIXTURES = [
    ("tests/data/containers/oom.pickle.gz", "tests/data/containers/oom.ref.{}.txt"),
    ("tests/data/containers/state_only.pickle.zst", "tests/data/containers/state_only.ref.{}.txt"),
] + [  # the real snapshots that have reference outputs, where the repository has them
    (str(p.relative_to(ROOT)), str(p.relative_to(ROOT)).removesuffix(".pickle") + ".ref.{}.txt")
    for p in sorted((ROOT / "tests" / "data" / "real").glob("*.pickle"))
    if p.with_name(p.name.removesuffix(".pickle") + ".ref.stats.txt").is_file()
    and p.with_name(p.name.removesuffix(".pickle") + ".ref.trace.txt").is_file()
]


def fail(msg):
    print(f"check-wheels: {msg}", file=sys.stderr)
    sys.exit(1)


def wheel_tags(whl, zf):
    """The name's platform tags, after checking them against the WHEEL file's Tag lines."""
    m = re.fullmatch(r"(?P<name>[^-]+)-(?P<ver>[^-]+)-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl", whl.name)
    if not m:
        fail(f"{whl.name}: not a wheel file name")
    info = next(n for n in zf.namelist() if n.endswith(".dist-info/WHEEL"))
    declared = {line.split(":", 1)[1].strip() for line in zf.read(info).decode().splitlines() if line.startswith("Tag:")}
    named = {f"{py}-{abi}-{plat}" for py in m["py"].split(".") for abi in m["abi"].split(".") for plat in m["plat"].split(".")}
    if declared != named:
        fail(f"{whl.name}: the name's tags {sorted(named)} are not the WHEEL file's {sorted(declared)}")
    meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    version = re.search(r"^Version: (.+)$", zf.read(meta).decode(), re.M)
    if not version or version.group(1).strip() != m["ver"]:
        fail(f"{whl.name}: METADATA's version is not {m['ver']}")
    return m["ver"], m["plat"].split(".")


def binary_of(zf):
    names = [n for n in zf.namelist() if re.search(r"\.data/scripts/memviz(\.exe)?$", n)]
    if len(names) != 1:
        fail(f"expected one memviz binary in the wheel, found {names}")
    return names[0], zf.read(names[0])


def check_viewer(name, data):
    wasm = (DIST / "memviz-web_bg.wasm").read_bytes()
    mid = len(wasm) // 2
    if wasm[mid : mid + 4096] not in data or wasm[:64] not in data:
        fail(f"{name}: the binary does not carry {DIST}/memviz-web_bg.wasm")


def readelf(path, *args):
    return subprocess.run(["readelf", "--wide", *args, str(path)], capture_output=True, text=True, check=True).stdout


def check_elf(name, path, data, arch):
    if data[:4] != b"\x7fELF":
        fail(f"{name}: not an ELF binary")
    machine = struct.unpack_from("<H", data, 18)[0]
    if ELF_MACHINE.get(machine) != arch:
        fail(f"{name}: ELF machine {machine} is not {arch}")
    glibc = sorted({tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_(\d+(?:\.\d+)+)", readelf(path, "-V"))})
    if not glibc:
        fail(f"{name}: no versioned glibc symbols found")
    if glibc[-1][:2] > GLIBC_MAX:
        fail(f"{name}: needs GLIBC_{'.'.join(map(str, glibc[-1]))}, above manylinux2014's 2.17")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf(path, "-d"))
    extra = [lib for lib in needed if lib not in ALLOWED_LIBS]
    if extra:
        fail(f"{name}: needs libraries outside manylinux2014: {extra}")
    return f"ELF {arch}, newest glibc symbol GLIBC_{'.'.join(map(str, glibc[-1]))}, needs {', '.join(needed)}"


def macho_min_os(data, off):
    """The minimum macOS of one thin Mach-O at off (LC_BUILD_VERSION or LC_VERSION_MIN_MACOSX)."""
    magic, cpu, _, _, ncmds, _, _ = struct.unpack_from("<IiiIIII", data, off)
    if magic != 0xFEEDFACF:
        fail(f"not a 64-bit Mach-O at {off}")
    at = off + 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd in (0x32, 0x24):  # LC_BUILD_VERSION: platform then minos; LC_VERSION_MIN_MACOSX: version
            v = struct.unpack_from("<I", data, at + (12 if cmd == 0x32 else 8))[0]
            return MACHO_CPU.get(cpu & 0xFFFFFFFF, hex(cpu)), (v >> 16, (v >> 8) & 0xFF)
        at += size
    fail("a Mach-O slice has no minimum macOS version")


def check_macho(name, data, plats):
    if data[:4] == b"\xca\xfe\xba\xbe":
        n = struct.unpack_from(">I", data, 4)[0]
        slices = [macho_min_os(data, struct.unpack_from(">IiII", data, 8 + 20 * i)[2]) for i in range(n)]
    else:
        slices = [macho_min_os(data, 0)]
    claimed = {}
    for p in plats:
        m = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", p)
        if not m:
            fail(f"{name}: {p} is not a macOS tag")
        for arch in ("x86_64", "arm64") if m[3] == "universal2" else (m[3],):
            claimed[arch] = max(claimed.get(arch, (0, 0)), (int(m[1]), int(m[2])))
    archs = {a for a, _ in slices}
    if archs != set(claimed):
        fail(f"{name}: the binary's architectures {sorted(archs)} are not the tags' {sorted(claimed)}")
    for arch, min_os in slices:
        if min_os > claimed[arch]:
            fail(f"{name}: the {arch} slice needs macOS {min_os}, the tag claims {claimed[arch]}")
    return "Mach-O " + ", ".join(f"{a} (macOS {v[0]}.{v[1]}+)" for a, v in slices)


def check_pe(name, data):
    if data[:2] != b"MZ":
        fail(f"{name}: not a PE binary")
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    if data[pe : pe + 4] != b"PE\0\0" or struct.unpack_from("<H", data, pe + 4)[0] != 0x8664:
        fail(f"{name}: not an x86-64 PE binary")
    objdump = shutil.which("x86_64-w64-mingw32-objdump")
    if not objdump:
        return "PE x86-64 (imports not read: no x86_64-w64-mingw32-objdump)"
    with tempfile.NamedTemporaryFile(suffix=".exe") as f:
        f.write(data)
        f.flush()
        out = subprocess.run([objdump, "-p", f.name], capture_output=True, text=True, check=True).stdout
    dlls = sorted(set(re.findall(r"DLL Name: (\S+)", out)))
    runtime = [d for d in dlls if re.match(r"(libgcc|libwinpthread|libstdc\+\+)", d, re.I)]
    if runtime:
        fail(f"{name}: imports MinGW runtime DLLs that Windows does not have: {runtime}")
    return f"PE x86-64, imports {', '.join(dlls)}"


def run_checks(name, runner, version):
    """`--version`, then stats and trace of each fixture, byte-identical to PyTorch's output."""
    out = subprocess.run([*runner, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if out != f"memviz {version}":
        fail(f"{name}: `memviz --version` printed {out!r}, the wheel is {version}")
    for snapshot, ref in FIXTURES:
        for cmd in ("stats", "trace"):
            got = subprocess.run([*runner, cmd, str(ROOT / snapshot)], capture_output=True, check=True).stdout
            if got != (ROOT / ref.format(cmd)).read_bytes():
                fail(f"{name}: `memviz {cmd} {snapshot}` differs from {ref.format(cmd)}")
    return f"ran: --version, stats and trace of {len(FIXTURES)} fixtures byte-identical"


def main():
    wheels = sorted(WHEELS.glob("memviz-*.whl"))
    if not wheels:
        fail(f"no wheels in {WHEELS}")
    ran = {}
    with tempfile.TemporaryDirectory() as tmp:
        for whl in wheels:
            with zipfile.ZipFile(whl) as zf:
                version, plats = wheel_tags(whl, zf)
                member, data = binary_of(zf)
            check_viewer(whl.name, data)
            path = Path(tmp) / whl.name / Path(member).name
            path.parent.mkdir()
            path.write_bytes(data)
            path.chmod(0o755)
            notes = []
            plat = plats[0]
            if plat.startswith("manylinux2014_"):
                arch = plat.removeprefix("manylinux2014_")
                notes.append(check_elf(whl.name, path, data, arch))
                if arch == os.uname().machine:
                    notes.append(run_checks(whl.name, [str(path)], version))
                    ran["native"] = path
                elif arch == "aarch64":
                    qemu = shutil.which("qemu-aarch64")
                    sysroot = Path("/usr/aarch64-linux-gnu")
                    if not qemu or not sysroot.is_dir():
                        fail(f"{whl.name}: needs qemu-aarch64 and {sysroot} (Debian: qemu-user libc6-arm64-cross)")
                    notes.append("under qemu-aarch64: " + run_checks(whl.name, [qemu, "-L", str(sysroot), str(path)], version))
            elif plat.startswith("macosx_"):
                notes.append(check_macho(whl.name, data, plats) + "; not run (no macOS here)")
            elif plat == "win_amd64":
                notes.append(check_pe(whl.name, data) + "; not run (no Windows here)")
            else:
                fail(f"{whl.name}: unknown platform tag {plat}")
            size_mb = whl.stat().st_size / 1e6
            print(f"{whl.name}: {size_mb:.1f} MB ({whl.stat().st_size} bytes), viewer embedded; " + "; ".join(notes))
    print(f"check-wheels: {len(wheels)} wheels ok")


if __name__ == "__main__":
    main()
