"""PNG files read with the standard library only (no PIL): size, and the pixels of 8-bit RGB(A)
images, with every row's filter undone — enough to tell an image opens, how big it is, and
whether it shows anything."""
import struct
import zlib


def read(path):
    """(width, height, channels, rows) where rows[y] is a bytes of width*channels; raises
    ValueError when the file is not a whole PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if len(body) != n:
            raise ValueError(f"{path}: truncated {kind!r} chunk")
        if zlib.crc32(kind + body) != struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]:
            raise ValueError(f"{path}: bad CRC in {kind!r}")
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    w, h, depth, color = ihdr[:4]
    if depth != 8 or color not in (2, 6):
        raise ValueError(f"{path}: only 8-bit RGB/RGBA is read here (depth {depth}, colour type {color})")
    ch = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * ch
    if len(raw) != h * (stride + 1):
        raise ValueError(f"{path}: pixel data has {len(raw)} bytes, expected {h * (stride + 1)}")
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b = prev[i]
            c = prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, ch, rows


def size(path):
    data = open(path, "rb").read(24)
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    return struct.unpack(">II", data[16:24])


def colored_fraction(rows, ch, step=4):
    """Fraction of sampled pixels that are not gray (plot lines, bands, bars)."""
    n = colored = 0
    for row in rows[::step]:
        for x in range(0, len(row), ch * step):
            r, g, b = row[x], row[x + 1], row[x + 2]
            n += 1
            colored += max(r, g, b) - min(r, g, b) > 30
    return colored / max(n, 1)
