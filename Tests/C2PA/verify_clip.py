#!/usr/bin/env python3
"""Reads a clip's C2PA Content Credentials with c2pa-python (PyPI: the C2PA reference
implementation, c2pa-rs, not recd's code) and prints what it found as one JSON line:

    verify_clip.py CLIP.wav TRUST_ANCHORS.pem
    verify_clip.py CLIP.flac TRUST_ANCHORS.pem CLIP.flac.c2pa     (a sidecar manifest store)

{"state": "Trusted" | "Valid" | "Invalid" | None, "failures": [codes], "successes": [codes],
 "generator": ..., "title": ..., "assertions": [labels], "sdk": version}

Exit 0 when the manifest was read (whatever it says), 2 when none could be read. The caller
(ContentCredentialsEndToEndTests) judges the codes. Trust: the anchors given only, as a
verifier who trusts that one box CA.
"""
import base64
import glob
import json
import os
import sys

# c2pa-python comes from PyPI into a virtual environment (scripts/lib.sh ensure_c2pa);
# RECD_C2PA_VENV names it, and this script runs under Debian's python3 with its packages.
for directory in glob.glob(os.path.join(os.environ.get("RECD_C2PA_VENV", ""), "lib", "python3*", "site-packages")):
    sys.path.insert(0, directory)
import c2pa  # noqa: E402


def main():
    clip, anchors_path = sys.argv[1], sys.argv[2]
    sidecar = None
    if len(sys.argv) > 3:
        with open(sys.argv[3], "rb") as f:
            sidecar = f.read()
    mime = "audio/flac" if clip.endswith(".flac") else "audio/wav"
    with open(anchors_path) as f:
        anchors = f.read()
    settings = c2pa.Settings.from_dict({
        "verify": {"verify_trust": True, "verify_after_reading": True},
        "trust": {"trust_anchors": anchors},
    })
    context = c2pa.Context(settings)
    try:
        with open(clip, "rb") as stream:
            reader = c2pa.Reader(mime, stream, manifest_data=sidecar, context=context)
            report = json.loads(reader.json())
            state = reader.get_validation_state()
            results = reader.get_validation_results() or {}
    except c2pa.C2paError as error:
        print(json.dumps({"state": None, "error": str(error)}))
        return 2
    active = report.get("manifests", {}).get(report.get("active_manifest", ""), {})
    codes = {"failures": [], "successes": [], "informational": []}
    for kind in codes:
        for item in (results.get("activeManifest") or {}).get(
                {"failures": "failure", "successes": "success", "informational": "informational"}[kind], []):
            codes[kind].append(item.get("code"))
    for item in report.get("validation_status") or []:
        if item.get("code") not in codes["failures"]:
            codes["failures"].append(item.get("code"))
    # The time-stamp tokens in recd.chain, written beside the clip (CLIP.ENTRIES.tsr) for
    # `openssl ts -verify`: c2pa-python gives CBOR byte strings as lists of numbers.
    tokens = []
    for assertion in active.get("assertions") or []:
        if assertion.get("label") != "recd.chain":
            continue
        for chain in (assertion.get("data") or {}).get("chains") or []:
            for stamp in chain.get("timeStamps") or []:
                token = stamp.get("token")
                raw = bytes(token) if isinstance(token, list) else base64.b64decode(token or "")
                path = f"{clip}.{stamp.get('entries')}.tsr"
                with open(path, "wb") as f:
                    f.write(raw)
                tokens.append({"chain": chain.get("chain"), "entries": stamp.get("entries"), "path": path})
    generator = active.get("claim_generator_info") or [{}]
    print(json.dumps({
        "state": state,
        "failures": codes["failures"],
        "successes": codes["successes"],
        "generator": generator[0] if isinstance(generator, list) else generator,
        "title": active.get("title"),
        "assertions": [a.get("label") for a in active.get("assertions") or []],
        "signer": (active.get("signature_info") or {}).get("issuer"),
        "tokens": tokens,
        "sdk": c2pa.sdk_version(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
