#!/usr/bin/env python3
#===- take-samples.py - The first samples of a safetensors data file -------===#
#
# Usage: take-samples.py IN OUT N
#
# Writes safetensors file OUT with the first N samples (rows of dim 0) of
# IN's 'input', 'labels' and 'output' tensors (those it has), nothing else;
# for making short data files in tests and comparing the first outputs of
# a prediction. Standard library only.
#
#===----------------------------------------------------------------------===#
import json
import struct
import sys


def main():
    src, dst, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = open(src, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    out_header, payload = {}, b""
    for name in ("input", "labels", "output"):
        if name not in header:
            continue
        info = header[name]
        begin, end = info["data_offsets"]
        row = (end - begin) // info["shape"][0]
        chunk = data[8 + size + begin:8 + size + begin + row * count]
        out_header[name] = {"dtype": info["dtype"],
                            "shape": [count] + info["shape"][1:],
                            "data_offsets": [len(payload),
                                             len(payload) + len(chunk)]}
        payload += chunk
    text = json.dumps(out_header).encode()
    text += b" " * (-len(text) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(text)) + text + payload)


if __name__ == "__main__":
    main()
