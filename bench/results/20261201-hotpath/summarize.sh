#!/bin/bash
# summarize.sh DATA TICKS SECONDS CHANNELS: ms/s and ns per sample of recd's per-sample Swift symbols
f=$1; ticks=$2; secs=$3; ch=$4
perf report -i $f.data --no-children --sort sym --stdio -g none 2>/dev/null | grep -E "SampleQuantizer|SilenceDetector|FloatRing.*read|observeSilence|SegmentWriter" | \
awk -v t=$ticks -v s=$secs -v c=$ch '{p=$1; sub("%","",p); ms=p/100*t*10/s; name=$3; if (name ~ /SampleQuantizer/) n="quantize"; else if (name ~ /Silence/) n="silence"; else if (name ~ /FloatRing/) n="ring read"; else n=substr(name,1,60); printf "%-10s %6.2f%% %6.2f ms/s %6.2f ns/sample\n", n, p, ms, ms*1e6/(c*48000)}'
