#!/usr/bin/env python3
#===- read-tfevents.py - Print the scalars of a TensorBoard event file ----===#
#
# Usage: read-tfevents.py FILE_OR_DIR
#
# Reads a TensorFlow record file of Event protocol buffers (every record:
# little-endian u64 length, masked CRC-32C of those 8 bytes, the bytes,
# masked CRC-32C of the bytes), checking both checksums, and prints
#   version brain.Event:2
#   step 3 train/loss 2.103675
# one line per scalar. A test-only reader (no TensorFlow or TensorBoard
# needed): exits 1 naming the record on a bad checksum or truncated file.
#
#===----------------------------------------------------------------------===#
import os
import struct
import sys


def crc32c(data):
    # Castagnoli, reflected polynomial 0x82F63B78 (RFC 3720, B.4).
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data):
    """(field number, wire type, value) of a protocol buffer message."""
    pos = 0
    while pos < len(data):
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(data, pos)
        elif wire == 1:
            value = data[pos:pos + 8]
            pos += 8
        elif wire == 2:
            size, pos = varint(data, pos)
            value = data[pos:pos + size]
            pos += size
        elif wire == 5:
            value = data[pos:pos + 4]
            pos += 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def main():
    path = sys.argv[1]
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path)
                       if n.startswith("events.out.tfevents."))
        if len(names) != 1:
            sys.exit(f"read-tfevents.py: {path} holds {len(names)} event "
                     "files, expected 1")
        path = os.path.join(path, names[0])
    data = open(path, "rb").read()
    pos, record = 0, 0
    while pos < len(data):
        if pos + 12 > len(data):
            sys.exit(f"read-tfevents.py: record {record}: truncated header")
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if masked(crc32c(header)) != length_crc:
            sys.exit(f"read-tfevents.py: record {record}: bad length CRC")
        body = data[pos + 12:pos + 12 + length]
        if len(body) != length or pos + 16 + length > len(data):
            sys.exit(f"read-tfevents.py: record {record}: truncated")
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:
                                               pos + 16 + length])
        if masked(crc32c(body)) != body_crc:
            sys.exit(f"read-tfevents.py: record {record}: bad data CRC")
        pos += 16 + length
        record += 1
        step = 0
        for number, wire, value in fields(body):
            if number == 2 and wire == 0:
                step = value
            elif number == 3 and wire == 2:
                print("version", value.decode())
            elif number == 5 and wire == 2:
                for n, w, v in fields(value):
                    if n != 1 or w != 2:
                        continue
                    tag, simple = None, None
                    for n2, w2, v2 in fields(v):
                        if n2 == 1 and w2 == 2:
                            tag = v2.decode()
                        elif n2 == 2 and w2 == 5:
                            (simple,) = struct.unpack("<f", v2)
                    print(f"step {step} {tag} {simple:.6g}")
    print(f"{record} records")


if __name__ == "__main__":
    main()
