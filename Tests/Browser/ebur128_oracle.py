#!/usr/bin/env python3
"""libebur128 as the oracle of recd's loudness reports: decodes a FLAC clip (flac -d, raw
signed little-endian) and measures it with libebur128 itself, through ctypes, every channel
weighted 1 as recd's LoudnessMeter weights them. Prints JSON: integrated (LUFS), range (LU),
truePeak (dBTP, the highest channel's). Run by Tests/EndToEndTests/ArchiveBrowserTests.swift."""
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile

MODE_M = 1 << 0
MODE_S = (1 << 1) | MODE_M
MODE_I = (1 << 2) | MODE_M
MODE_LRA = (1 << 3) | MODE_S
MODE_TRUE_PEAK = (1 << 5) | MODE_M | (1 << 4)


def main():
    clip = sys.argv[1]
    def show(tag):
        return int(subprocess.run(["metaflac", "--show-" + tag, clip], check=True, capture_output=True,
                                  text=True).stdout.strip())
    rate, channels, bits = show("sample-rate"), show("channels"), show("bps")
    with tempfile.TemporaryDirectory() as directory:
        raw = os.path.join(directory, "clip.raw")
        subprocess.run(["flac", "-d", "-s", "-f", "--force-raw-format", "--endian=little", "--sign=signed",
                        "-o", raw, clip], check=True)
        data = open(raw, "rb").read()
    width = bits // 8
    count = len(data) // width
    scale = 1.0 / (1 << (bits - 1))
    samples = (ctypes.c_float * count)()
    for index in range(count):
        samples[index] = int.from_bytes(data[index * width:(index + 1) * width], "little", signed=True) * scale
    library = ctypes.CDLL("libebur128.so.1")
    library.ebur128_init.restype = ctypes.c_void_p
    library.ebur128_init.argtypes = [ctypes.c_uint, ctypes.c_ulong, ctypes.c_int]
    state = library.ebur128_init(channels, rate, MODE_I | MODE_LRA | MODE_TRUE_PEAK)
    library.ebur128_set_channel.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int]
    for channel in range(channels):
        library.ebur128_set_channel(state, channel, 1)  # EBUR128_LEFT: weight 1
    library.ebur128_add_frames_float.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t]
    library.ebur128_add_frames_float(state, samples, count // channels)
    integrated, loudness_range, peak = ctypes.c_double(), ctypes.c_double(), ctypes.c_double()
    library.ebur128_loudness_global.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double)]
    library.ebur128_loudness_range.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double)]
    library.ebur128_true_peak.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_double)]
    library.ebur128_loudness_global(state, ctypes.byref(integrated))
    library.ebur128_loudness_range(state, ctypes.byref(loudness_range))
    highest = 0.0
    for channel in range(channels):
        library.ebur128_true_peak(state, channel, ctypes.byref(peak))
        highest = max(highest, peak.value)
    print(json.dumps({"integrated": integrated.value, "range": loudness_range.value,
                      "truePeak": 20 * math.log10(highest) if highest > 0 else None, "frames": count // channels}))


if __name__ == "__main__":
    main()
