"""The image pipeline: bytes in, one resized, re-encoded image out. Pure: no Django, no store.

Steps (each chosen for speed and memory, see bench/variants.py):

1. Open lazily: only the header is parsed, so the pixel cap is checked before any pixel is
   decoded (a decompression bomb never reaches ``load()``).
2. Read the EXIF orientation from the header; the target box is swapped for rotated images,
   and the small result is transposed at the end (cheaper than transposing the original).
3. JPEG: ask libjpeg to decode at 1/2, 1/4 or 1/8 scale (DCT scaling, ``draft``): the
   largest reduction that still leaves at least the target size. The DCT reduction is an
   8x8-block average, a proper antialiasing filter, so going all the way costs no visible
   quality (48 dB PSNR against a full decode + LANCZOS for a 12 MP photo to 256 px; stopping
   at 1/4 gives 54 dB for 35% more time). PNG: decoded by Wuffs (variants/wuffs.py, about
   2.5x Pillow's decoder, memory-safe) into Pillow's 4-byte layout without a copy; very large
   PNGs by libspng (variants/spng.py) row by row, box-reduced strip by strip; anything
   either refuses goes to Pillow, which then also says what is wrong with the bytes.
4. Resize with ``reducing_gap``: an integer box reduction first, then LANCZOS over the last
   factor of at most 2. For ``cover`` the crop is a ``box`` of the resize, so pixels that would
   be cut off are never resampled.
5. Convert the mode for the output format (alpha kept where the format has it, flattened on
   white for JPEG), encode (WebP at a low effort, WEBP_METHOD). Animated GIF/WebP: the first
   frame. No EXIF is copied (the pixels are already upright); the ICC profile is kept so
   colours stay right.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass, replace
from typing import IO, Any

from PIL import Image, UnidentifiedImageError

from variants import spng, wuffs

# Real types (sniffed from the stored bytes) a variant can be made from.
ELIGIBLE_TYPES = frozenset(
    {"image/jpeg", "image/png", "image/webp", "image/avif", "image/gif", "image/tiff"}
)
FITS = ("cover", "contain", "fill", "inside", "outside")
FORMATS: dict[str, tuple[str, str, str]] = {
    # format: (Pillow's name, content type, file extension)
    "webp": ("WEBP", "image/webp", "webp"),
    "jpeg": ("JPEG", "image/jpeg", "jpg"),
    "png": ("PNG", "image/png", "png"),
    "avif": ("AVIF", "image/avif", "avif"),
}
MAX_DIMENSION = 4096
# Where resize switches from box reduction to the resampling filter (as Image.thumbnail).
REDUCING_GAP = 2.0
# How much larger than the target a JPEG's reduced (DCT-scaled) decode must stay.
DRAFT_GAP = 1.0
# libwebp's effort (0 fastest to 6 smallest; Pillow's default is 4). For a 400x300 photo,
# 1 encodes in about 40% of 4's time with the same PSNR and a file within 3% of its size
# (docs/performance.md, "Images on demand"): the encode is a third of a first request's work.
WEBP_METHOD = 1
# PNGs up to this size are decoded whole by Wuffs (about 7 bytes a pixel while decoding:
# 112 MB at this size); larger ones strip by strip by libspng (see _decode_png).
WUFFS_MAX_PIXELS = 16_000_000

# EXIF orientation -> the transpose that makes the pixels upright (as ImageOps.exif_transpose).
_ORIENTATION = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
_ALPHA_FORMATS = {"webp", "png", "avif"}


class ImageRejected(Exception):
    """The bytes cannot be made into a variant: the reason is shown to the client."""


@dataclass(frozen=True)
class Params:
    width: int | None
    height: int | None
    fit: str = "cover"
    format: str = "webp"
    quality: int = 80

    @property
    def label(self) -> str:
        """``w<width>[_h<height>]_<fit>_<format>_q<quality>``: distinct parameters never share
        a label (``w0_h300_…`` when only a height is given)."""
        height = f"_h{self.height}" if self.height is not None else ""
        return f"w{self.width or 0}{height}_{self.fit}_{self.format}_q{self.quality}"

    @property
    def content_type(self) -> str:
        return FORMATS[self.format][1]

    @property
    def extension(self) -> str:
        return FORMATS[self.format][2]


@dataclass(frozen=True)
class Rendered:
    data: bytes
    width: int
    height: int
    content_type: str


@dataclass(frozen=True)
class Plan:
    """What to do with a source of a given (upright) size: resize to ``scaled`` (after cropping
    ``crop``, in the upright source's coordinates), then pad to ``canvas`` when it differs."""

    scaled: tuple[int, int]
    crop: tuple[float, float, float, float] | None
    canvas: tuple[int, int]


def plan(source: tuple[int, int], params: Params) -> Plan:
    sw, sh = source
    w, h = params.width, params.height
    if w is None and h is None:
        raise ValueError("a width or a height is required")
    if w is None or h is None:
        # One side given: every fit keeps the aspect ratio and derives the other side.
        scale = (w / sw) if w is not None else (h or 0) / sh
        size = (w or _side(sw * scale), h or _side(sh * scale))
        return Plan(scaled=size, crop=None, canvas=size)
    if params.fit == "fill":
        return Plan(scaled=(w, h), crop=None, canvas=(w, h))
    if params.fit == "cover":
        # Crop the source to the target's aspect ratio, centred, then scale that crop.
        scale = max(w / sw, h / sh)
        cw, ch = w / scale, h / scale
        left, top = (sw - cw) / 2, (sh - ch) / 2
        return Plan(
            scaled=(w, h), crop=_within((left, top, left + cw, top + ch), source), canvas=(w, h)
        )
    # contain and inside fit within the box; outside covers it (no crop).
    scale = min(w / sw, h / sh) if params.fit in {"contain", "inside"} else max(w / sw, h / sh)
    size = (_side(sw * scale), _side(sh * scale))
    if params.fit == "contain":
        size = (min(size[0], w), min(size[1], h))
        return Plan(scaled=size, crop=None, canvas=(w, h))
    return Plan(scaled=size, crop=None, canvas=size)


def _within(
    box: tuple[float, float, float, float], size: tuple[int, int]
) -> tuple[float, float, float, float]:
    """The box inside the image: the side a crop spans whole comes out of the float division
    a rounding error larger than the image (a 4000x3000 photo to 400x1032: a top of -2e-13),
    which resize refuses."""
    return (
        max(0.0, box[0]),
        max(0.0, box[1]),
        min(float(size[0]), box[2]),
        min(float(size[1]), box[3]),
    )


def _side(value: float) -> int:
    return max(1, round(value))


def sample_bytes(image: Image.Image) -> int:
    """Bytes per sample of the image as stored (read from the header): 2 for 16-bit PNGs and
    TIFFs, 4 for 32-bit integer or float ones, else 1. Their decoders hold (and Wuffs' work
    buffer holds the inflated rows of) that many bytes per sample, so the pixel cap counts such
    a pixel that many times."""
    if image.mode in {"I", "F"}:
        return 4
    if image.mode.startswith("I;16"):
        return 2
    tile = getattr(image, "tile", None)  # an ImageFile's: how its pixels are stored
    args = tile[0].args if tile else None
    rawmode = args[0] if isinstance(args, tuple) and args else args
    if isinstance(rawmode, str):
        if ";32" in rawmode:
            return 4
        if ";16" in rawmode:
            return 2
    return 1


def _scale(source: tuple[int, int], params: Params) -> float:
    """How much plan() scales the source up (above 1) or down, on its larger axis."""
    sw, sh = source
    w, h = params.width, params.height
    if w is None or h is None:
        return (w / sw) if w is not None else (h or 0) / sh
    if params.fit in {"contain", "inside"}:
        return min(w / sw, h / sh)
    return max(w / sw, h / sh)  # cover, outside; fill on its more stretched axis


def limit_upscale(source: tuple[int, int], params: Params, max_upscale: int) -> Params:
    """The parameters with the requested box shrunk, keeping its shape, so the source is never
    scaled up by more than ``max_upscale``: a 1x5 image asked for at 4096x4096 gives a 1x1
    cover (or a 1x5 inside), not sixteen million invented pixels. The variant's ``width`` and
    ``height`` say what was made."""
    scale = _scale(source, params)
    if scale <= max_upscale:
        return params
    factor = max_upscale / scale
    return replace(
        params,
        width=None if params.width is None else _side(params.width * factor),
        height=None if params.height is None else _side(params.height * factor),
    )


def render(
    source: bytes | IO[bytes], params: Params, *, max_pixels: int, max_upscale: int | None = None
) -> Rendered:
    """The variant of ``source``; raises ImageRejected for anything that is not a usable image.
    ``max_upscale`` (None: no limit) caps how much the source may be enlarged."""
    # A stream (the worker's spooled copy of the original) is parsed in place: only its header
    # is read before the pixel cap is checked.
    stream = io.BytesIO(source) if isinstance(source, bytes | bytearray) else source
    try:
        with warnings.catch_warnings():
            # Our own cap below replaces Pillow's warning; its hard error is still caught.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(stream) as image:
                return _render(image, stream, params, max_pixels, max_upscale)
    except ImageRejected:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageRejected(f"The image is too large to process: {exc}") from exc
    except UnidentifiedImageError as exc:
        raise ImageRejected(
            "The image is corrupt or in a format this service cannot read."
        ) from exc
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError, RuntimeError) as exc:
        # Truncated or corrupt data surfaces from the decoders as any of these.
        raise ImageRejected(f"The image is corrupt or truncated: {exc}") from exc


def _render(
    image: Image.Image,
    stream: IO[bytes],
    params: Params,
    max_pixels: int,
    max_upscale: int | None,
) -> Rendered:
    sw, sh = image.size
    weight = sample_bytes(image)
    if sw * sh * weight > max_pixels:
        counted = (
            f" ({8 * weight}-bit samples count each pixel {weight} times)" if weight > 1 else ""
        )
        raise ImageRejected(
            f"The image has {sw}x{sh} pixels{counted}, more than the {max_pixels} this "
            f"service decodes."
        )
    if image.format not in {"JPEG", "PNG", "WEBP", "AVIF", "GIF", "TIFF", "MPO"}:
        raise ImageRejected(f"Images in {image.format} format are not processed.")
    orientation = _orientation(image)
    swapped = orientation in {5, 6, 7, 8}
    upright = (sh, sw) if swapped else (sw, sh)
    if max_upscale is not None:
        params = limit_upscale(upright, params, max_upscale)
    steps = plan(upright, params)
    out_w, out_h = steps.scaled
    if out_w * out_h > max_pixels or steps.canvas[0] * steps.canvas[1] > max_pixels:
        raise ImageRejected(
            f"The output would be {out_w}x{out_h} pixels, more than the {max_pixels} allowed."
        )
    # Work in the stored (not upright) orientation; transpose the small result at the end.
    # Centre crops and scales commute with the transpose, so only the sizes need swapping.
    scaled = (steps.scaled[1], steps.scaled[0]) if swapped else steps.scaled
    crop = steps.crop
    if crop is not None and swapped:
        crop = (crop[1], crop[0], crop[3], crop[2])

    if image.format in {"JPEG", "MPO"}:
        crop_w = (crop[2] - crop[0]) if crop else sw
        crop_h = (crop[3] - crop[1]) if crop else sh
        # The whole image must still be at least DRAFT_GAP x the scaled crop after DCT scaling.
        need = (
            max(1, int(scaled[0] * DRAFT_GAP * sw / crop_w)),
            max(1, int(scaled[1] * DRAFT_GAP * sh / crop_h)),
        )
        mode = "L" if image.mode == "L" else "RGB"
        image.draft(mode, need)
        scale = sw / image.size[0]
        if crop is not None and scale != 1:
            crop = (crop[0] / scale, crop[1] / scale, crop[2] / scale, crop[3] / scale)
    work: Image.Image | None = None
    if image.format == "PNG":
        work, reduced_by = _decode_png(image, _all_bytes(stream), scaled, crop)
        if work is not None and reduced_by != (1, 1):
            # Already box-reduced while decoding, as resize's reducing_gap would have done;
            # the box follows the pixels (Image.resize does the same after its own reduce).
            full = crop or (0.0, 0.0, float(sw), float(sh))
            fx, fy = reduced_by
            crop = (full[0] / fx, full[1] / fy, full[2] / fx, full[3] / fy)
    if work is None:
        image.load()
        work = _working_mode(image)
    if crop is not None:
        crop = _within(crop, work.size)  # after the reduced decode's division, too
    out = work.resize(scaled, Image.Resampling.LANCZOS, box=crop, reducing_gap=REDUCING_GAP)
    if out.mode == "RGBX":
        out = out.convert("RGB")
    if orientation in _ORIENTATION:
        out = out.transpose(_ORIENTATION[orientation])
    if steps.canvas != out.size:
        out = _pad(out, steps.canvas, params.format)
    return _encode(out, params, icc=image.info.get("icc_profile"))


def _all_bytes(stream: IO[bytes]) -> bytes:
    """The whole source, for libspng (Pillow repositions the stream itself when it decodes)."""
    if isinstance(stream, io.BytesIO):
        return stream.getvalue()  # no copy of bytes the BytesIO was made from
    stream.seek(0)
    return stream.read()


def _decode_png(
    image: Image.Image,
    data: bytes,
    scaled: tuple[int, int],
    crop: tuple[float, float, float, float] | None,
) -> tuple[Image.Image | None, tuple[int, int]]:
    """The PNG decoded by Wuffs or libspng, and the box reduction already applied to it;
    (None, ...) leaves the PNG to Pillow.

    Up to WUFFS_MAX_PIXELS, Wuffs (fastest, memory-safe) decodes the whole image. Above, or
    without Wuffs, libspng decodes an opaque, non-interlaced PNG row by row and reduces it
    strip by strip (by the factor resize's reducing_gap would use), so the full-size pixels
    are never held: a 100-megapixel PNG would otherwise need about 700 MB at once.
    """
    opaque = image.mode in {"RGB", "L", "I", "I;16", "1"} and "transparency" not in image.info
    if image.size[0] * image.size[1] <= WUFFS_MAX_PIXELS:
        fast = wuffs.decode_rgba(data, image.size, opaque=opaque)
        if fast is not None:
            return fast, (1, 1)
    if image.mode not in {"RGB", "RGBA"} or "transparency" in image.info:
        return None, (1, 1)
    box_w = (crop[2] - crop[0]) if crop else image.size[0]
    box_h = (crop[3] - crop[1]) if crop else image.size[1]
    factor = (
        int(box_w / scaled[0] / REDUCING_GAP) or 1,
        int(box_h / scaled[1] / REDUCING_GAP) or 1,
    )
    if opaque and factor != (1, 1) and not image.info.get("interlace"):
        reduced = spng.decode_reduced(data, image.size, factor)
        if reduced is not None:
            return reduced, factor
    return spng.decode_rgba(data, image.size, opaque=opaque), (1, 1)


def _orientation(image: Image.Image) -> int:
    if image.format == "PNG" and "exif" not in image.info:
        # Pillow's PNG getexif() decodes the whole image to look for an eXIf chunk after the
        # pixels; the spec puts it before them, where open() has already read it.
        return 1
    try:
        value = image.getexif().get(0x0112)
    except Exception:  # a broken EXIF block is no reason to refuse the pixels
        return 1
    return value if isinstance(value, int) else 1


def _working_mode(image: Image.Image) -> Image.Image:
    """A mode the resampler handles well: L, LA, RGB or RGBA (alpha premultiplied by resize)."""
    mode = image.mode
    if mode in {"L", "LA", "RGB", "RGBA"}:
        return image
    has_alpha = mode in {"PA", "La", "RGBa"} or "transparency" in image.info
    if mode == "P" or mode == "PA":
        return image.convert("RGBA" if has_alpha else "RGB")
    if mode.startswith("I;16") or mode == "I":
        # 16-bit greyscale: scale to 8 bits rather than clip everything above 255 to white.
        return image.convert("I").point(lambda v: v * (1 / 256)).convert("L")
    if mode in {"1", "F"}:
        return image.convert("L")
    return image.convert("RGBA" if has_alpha else "RGB")


def _pad(image: Image.Image, canvas: tuple[int, int], fmt: str) -> Image.Image:
    transparent = fmt in _ALPHA_FORMATS
    mode = "RGBA" if transparent else "RGB"
    background: Any = (0, 0, 0, 0) if transparent else (255, 255, 255)
    padded = Image.new(mode, canvas, background)
    offset = ((canvas[0] - image.size[0]) // 2, (canvas[1] - image.size[1]) // 2)
    source = image.convert(mode) if image.mode != mode else image
    padded.paste(source, offset)
    return padded


def _encode(image: Image.Image, params: Params, *, icc: bytes | None) -> Rendered:
    pil_format, content_type, _ = FORMATS[params.format]
    if params.format == "jpeg" and image.mode not in {"L", "RGB"}:
        if image.mode in {"LA", "RGBA"}:
            flat = Image.new("RGB", image.size, (255, 255, 255))
            flat.paste(image.convert("RGBA"), mask=image.convert("RGBA").getchannel("A"))
            image = flat
        else:
            image = image.convert("RGB")
    options: dict[str, Any] = {"quality": params.quality}
    if icc:
        options["icc_profile"] = icc
    if params.format == "webp":
        options["method"] = WEBP_METHOD
    if params.format == "png":
        options = {"icc_profile": icc} if icc else {}  # lossless: quality does not apply
    buffer = io.BytesIO()
    image.save(buffer, pil_format, **options)
    return Rendered(
        data=buffer.getvalue(),
        width=image.size[0],
        height=image.size[1],
        content_type=content_type,
    )
