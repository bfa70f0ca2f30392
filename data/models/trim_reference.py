#!/usr/bin/env python3
"""trim_reference.py — the committed parity fixture from make_reference.py's full output.

    python3 data/models/trim_reference.py OUT_DIR/reference.safetensors \
        tests/fixtures/trained/<model>.reference.safetensors

Keeps input_ids, logits and decode_logits (what tests/test_model_parity.c reads) and the
metadata, drops the per-layer outputs (several MB). Plain safetensors I/O, no dependencies.
"""
import json
import struct
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
src, dst = sys.argv[1], sys.argv[2]
b=open(src,'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); base=8+n
keep=['decode_logits','input_ids','logits']
meta=dict(h['__metadata__']); meta['trimmed']='layer outputs dropped for the committed fixture (full file: data/models/make_reference.py)'
out={'__metadata__':meta}; blobs=[]; off=0
for k in keep:
    v=h[k]; s,e=v['data_offsets']; blob=b[base+s:base+e]
    out[k]={'dtype':v['dtype'],'shape':v['shape'],'data_offsets':[off,off+len(blob)]}; off+=len(blob); blobs.append(blob)
hb=json.dumps(out,separators=(',',':')).encode(); hb+=b' '*((8-len(hb)%8)%8)
open(dst,'wb').write(struct.pack('<Q',len(hb))+hb+b''.join(blobs))
