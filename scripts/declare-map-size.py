#!/usr/bin/env python3
"""Rewrites a bundle with every map declared SIDE x SIDE texels (the latents and weights unchanged,
checksums made right): a small bundle that asks for large maps, as docs/reliability.md measures
decoding in bands with. Usage: declare-map-size.py IN.texset OUT.texset SIDE"""
import json, struct, zlib, sys
src, dst, side = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = open(src,'rb').read()
magic, (version, count) = b[:8], struct.unpack('<II', b[8:16])
secs = []
for i in range(count):
    e = b[16+24*i:16+24*(i+1)]
    tag, crc, off, size = e[:4], struct.unpack('<I', e[4:8])[0], struct.unpack('<Q', e[8:16])[0], struct.unpack('<Q', e[16:24])[0]
    secs.append([tag, b[off:off+size]])
man = json.loads(secs[0][1])
for m in man['materials']:
    for mp in m['maps']:
        mp['width'] = mp['height'] = side
secs[0][1] = json.dumps(man).encode()
header_len = 16 + 24*count + 4
out = bytearray(magic + struct.pack('<II', version, count))
off = header_len
for tag, data in secs:
    out += tag + struct.pack('<I', zlib.crc32(data)) + struct.pack('<QQ', off, len(data)); off += len(data)
out += struct.pack('<I', zlib.crc32(bytes(out)))
for _, data in secs: out += data
open(dst,'wb').write(out)
print(len(out), 'bytes;', [ (mp['kind'], mp['channels']) for mp in man['materials'][0]['maps']])
