#!/usr/bin/python3
"""Copies an HDF5 file with the stored bytes of one dataset damaged: NBYTES bytes in the middle
of its first chunk (or of its contiguous data) inverted, as a bad disk block or a torn copy
would leave them. The file's structure is untouched, so only the data's checksum (or, without
one, the values) tells. Exits 0, 1 (the dataset is missing or has no stored bytes), or 77 when
h5py is missing.
Usage: h5_damage.py IN.h5 DATASET OUT.h5 [NBYTES]"""
import shutil
import sys

try:
    import h5py
except ImportError as e:
    print(f"h5_damage.py: {e}: install python3-h5py", file=sys.stderr)
    sys.exit(77)


def main():
    src, name, out = sys.argv[1], sys.argv[2], sys.argv[3]
    nbytes = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    with h5py.File(src, "r") as f:
        if name not in f:
            print(f"h5_damage.py: {src} has no dataset {name}")
            return 1
        d = f[name]
        if d.chunks:
            info = d.id.get_chunk_info(0)
            offset, size = info.byte_offset, info.size
        else:
            offset, size = d.id.get_offset(), d.id.get_storage_size()
    if offset is None or size < nbytes:
        print(f"h5_damage.py: {name} in {src} has no stored bytes to damage")
        return 1
    shutil.copyfile(src, out)
    at = offset + (size - nbytes) // 2
    with open(out, "r+b") as g:
        g.seek(at)
        b = bytearray(g.read(nbytes))
        g.seek(at)
        g.write(bytes(x ^ 0xFF for x in b))
    print(f"h5_damage.py: {nbytes} bytes of {name} inverted at byte {at} of {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
