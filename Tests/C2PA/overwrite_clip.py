#!/usr/bin/env python3
"""The attacker of ContentCredentialsEndToEndTests.forgedAudio: the caller who owns the clip's
file rewrites part of its audio, through a descriptor of their own, for as long as recd exports
into it, hoping recd signs what they wrote.

    overwrite_clip.py CLIP OFFSET STOP_FILE

Waits for CLIP to appear, then writes 64 bytes of 0x55 at OFFSET again and again until STOP_FILE
exists, then once more (so the last word on those bytes is the attacker's), and exits.
"""
import os
import sys
import time

clip, offset, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
deadline = time.monotonic() + 60
while not os.path.exists(clip):
    if time.monotonic() > deadline:
        sys.exit("the clip never appeared")
    time.sleep(0.001)
fd = os.open(clip, os.O_WRONLY)
forged = b"\x55" * 64
while not os.path.exists(stop) and time.monotonic() < deadline:
    if os.fstat(fd).st_size >= offset + len(forged):
        os.pwrite(fd, forged, offset)
os.pwrite(fd, forged, offset)
os.close(fd)
